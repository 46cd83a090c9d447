"""Skills demo: a SKILL.md bundle gives a robot instructions and a script tool. Offline.

The demo writes a skills directory to a temporary folder: a "release-notes"
skill whose instructions go into the robot's system prompt and whose
``scripts/count-commits.sh`` becomes the tool ``count_commits``, plus a
"crawler" skill whose script never ends. A scripted model calls both tools;
the first runs as a real subprocess, the second is stopped by robotlab's
TimeoutExecutor after the one second its SKILL.md declares.

Run: python examples/skills_demo.py
"""

import tempfile
from pathlib import Path

import robotlab
from robotlab import ScriptTool, TimeoutExecutor
from robotlab.llm import ScriptedModel, call

RELEASE_SKILL = """\
---
name: release-notes
description: Drafts release notes from the commit history.
timeout: 10
---
List breaking changes first. Count the commits with count_commits.
"""

COUNT_COMMITS = """\
#!/bin/sh
# Counts the commits since a tag.
echo "3 commits since $1"
"""

CRAWLER_SKILL = """\
---
name: crawler
description: Crawls a site (slowly).
timeout: 1
---
Crawl only when asked.
"""

CRAWL = """\
#!/bin/sh
# Crawls the site; never finishes.
echo "crawling $1"
sleep 300 &
wait
"""


def write_bundle(root: Path, folder: str, skill_md: str, scripts: dict[str, str]) -> None:
    (root / folder / "scripts").mkdir(parents=True)
    (root / folder / "SKILL.md").write_text(skill_md)
    for name, text in scripts.items():
        script = root / folder / "scripts" / name
        script.write_text(text)
        script.chmod(0o755)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        skills_dir = Path(tmp)
        write_bundle(skills_dir, "release", RELEASE_SKILL, {"count-commits.sh": COUNT_COMMITS})
        write_bundle(skills_dir, "crawler", CRAWLER_SKILL, {"crawl.sh": CRAWL})
        robotlab.configure(skills_dir=str(skills_dir))  # or ROBOTLAB_SKILLS_DIR; default ~/.prompts/skills

        catalog = robotlab.AgentSkillCatalog.instance()
        for skill in catalog.all():
            tools = ", ".join(t.name for t in skill.script_tools)
            print(f"skill {skill.name}: {skill.description} (tools: {tools}; timeout {skill.capabilities.timeout}s)")

        ScriptTool.executor = TimeoutExecutor()  # core default is None: unconfined, no timeout
        model = ScriptedModel([
            call("count_commits", args="v1.2"),
            call("crawl", args="https://example.com"),
            "Release 1.3: 3 commits. (The crawl timed out.)",
        ])
        robot = robotlab.build(
            name="writer", model=model, system_prompt="You write release notes.",
            skills=["release-notes", "crawler"],
        )
        result = robot.run("Draft the notes for 1.3", tools="inherit")

        print("system prompt:", model.calls[0].messages[0]["content"].replace("\n", " | "))
        for record in result.tool_calls:
            print(f"tool {record.name}({record.arguments['args']!r}) -> {record.result!r}")
        print("robot:", result.last_text_content)
        ScriptTool.executor = None


if __name__ == "__main__":
    main()
