"""Agent skills (seed 003, Skills API 0.3.0): SKILL.md bundles, the catalog, capabilities, script tools.

Every test writes real bundles to tmp_path and runs real scripts as real subprocesses.
"""

from __future__ import annotations

import doctest
import logging
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robotlab
from robotlab import ConfigurationError
from robotlab.llm import ScriptedModel, call
from robotlab.skills import AgentSkill, AgentSkillCatalog, Capabilities, ScriptTool, TimeoutExecutor, resolve_skills
from robotlab.skills.front_matter import split_front_matter
from tests.doc_blocks import python_blocks, run_block

SEED_FRONT_MATTER = """\
name: deploy-checker
description: Verifies a deployment's health before promoting it.
fs_read: ["./data", "/etc/hosts"]
fs_write: ["./out"]
network: true
timeout: 30
trust: external   # or "core" for trusted, always-unconfined skills
"""


@pytest.fixture(autouse=True)
def _no_global_skill_state():
    """Each test starts and ends with the core executor and no shared catalog."""
    ScriptTool.executor = None
    AgentSkillCatalog.reset()
    yield
    ScriptTool.executor = None
    AgentSkillCatalog.reset()


def write_script(path: Path, text: str, *, executable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    path.chmod(0o755 if executable else 0o644)
    return path


def write_skill(root: Path, dirname: str, front: str, body: str = "Follow the checklist.\n",
                scripts: dict[str, str] | None = None) -> Path:
    """A bundle directory with SKILL.md (front matter + body) and executable scripts."""
    directory = root / dirname
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(f"---\n{textwrap.dedent(front)}---\n{body}")
    for name, text in (scripts or {}).items():
        write_script(directory / "scripts" / name, text)
    return directory


def gone(pid: int) -> bool:
    """True when *pid* no longer runs (exited, or a zombie nobody has reaped yet)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_all_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if not gone(p)]
        if not alive:
            return []
        time.sleep(0.05)
    return [p for p in pids if not gone(p)]


# ---------------------------------------------------------------------------
# Front matter
# ---------------------------------------------------------------------------


def test_seed_front_matter_parses_to_its_documented_values():
    front, body, body_line = split_front_matter(f"---\n{SEED_FRONT_MATTER}---\n\n# Deploy\n", "SKILL.md")
    assert front.present
    assert front.data == {
        "name": "deploy-checker",
        "description": "Verifies a deployment's health before promoting it.",
        "fs_read": ["./data", "/etc/hosts"],
        "fs_write": ["./out"],
        "network": True,
        "timeout": 30,
        "trust": "external",
    }
    assert front.line_of("name") == 2 and front.line_of("trust") == 8
    assert body == "\n# Deploy\n" and body_line == 10


def test_front_matter_subset_block_lists_nested_mappings_block_strings_and_comments():
    text = textwrap.dedent(
        """\
        ---
        # a comment line
        name: 'it''s'
        description: >
          Folded text
          over lines.

          Second paragraph.
        notes: |-
          line one
            indented
        tags:
        - a
        - "b\\tc"   # trailing comment
        capabilities:
          fs_read:
            - ./data
          timeout: 5
        url: http://example.com/x#y
        empty:
        tilde: ~
        flow: [1, 2.5, true, null, "x, y",]
        ---
        body
        """
    )
    front, body, _ = split_front_matter(text, "SKILL.md")
    assert front.data == {
        "name": "it's",
        "description": "Folded text over lines.\nSecond paragraph.\n",
        "notes": "line one\n  indented",
        "tags": ["a", "b\tc"],
        "capabilities": {"fs_read": ["./data"], "timeout": 5},
        "url": "http://example.com/x#y",
        "empty": None,
        "tilde": None,
        "flow": [1, 2.5, True, None, "x, y"],
    }
    assert front.line_of("capabilities.timeout") == 18
    assert body == "body\n"


def test_text_without_front_matter_is_all_body():
    front, body, line = split_front_matter("# Just markdown\n", "SKILL.md")
    assert not front.present and front.data == {} and body == "# Just markdown\n" and line == 1


@pytest.mark.parametrize(
    ("front", "line", "fragment"),
    [
        ("name: a\n  more: b\n", 3, "unexpected indentation"),
        ("name: a\ndescription: long\n  continued\n", 4, "write 'key: >'"),
        ("name: a: b\n", 2, "contains ': '; put it in quotes"),
        ("name: a\nname: b\n", 3, "duplicate key 'name' (first on line 2)"),
        ("name: &anchor a\n", 2, "anchors (&), aliases (*) and tags (!) are not supported"),
        ("name: {a: 1}\n", 2, "flow mappings ({...}) are not supported"),
        ("tags: [a, b\n", 2, "closed with ']'"),
        ("tags: [a, , b]\n", 2, "empty item"),
        ('name: "abc\n', 2, "must end on the same line"),
        ('name: "a\\q"\n', 2, "unknown escape"),
        ("\tname: a\n", 2, "tab characters"),
        ("items:\n  - key: v\n", 3, "lists of mappings"),
        ("- a\n", 2, "not a list"),
        ("just words\n", 2, "expected 'key: value'"),
        ("text: |2\n  a\n", 2, "unsupported block string header"),
    ],
)
def test_bad_front_matter_names_file_and_line(tmp_path, front, line, fragment):
    skill_md = tmp_path / "SKILL.md"
    skill_md.write_text(f"---\n{front}---\nbody\n")
    with pytest.raises(ConfigurationError) as info:
        AgentSkill(skill_md)
    message = str(info.value)
    assert message.startswith(f"{skill_md}:{line}: invalid front matter: ")
    assert fragment in message


def test_unclosed_front_matter_is_an_error(tmp_path):
    (tmp_path / "SKILL.md").write_text("---\nname: a\ndescription: b\n")
    with pytest.raises(ConfigurationError, match=r"SKILL\.md:1: .*never closed"):
        AgentSkill(tmp_path)


_keys = st.from_regex(r"k_[a-z0-9_]{0,6}", fullmatch=True)
_texts = st.text(alphabet=st.sampled_from(list("abcXYZ yesno:#-'\"!&*.,[]{}|>%@`~")), max_size=12)
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32), _texts,
)
_values = st.one_of(_scalars, st.lists(_scalars, max_size=4))
_documents = st.dictionaries(
    _keys, st.one_of(_values, st.dictionaries(_keys, _values, min_size=1, max_size=3)), max_size=5
)


def _render(mapping, yaml, *, flow_lists, indent=0):
    """Block-style YAML for *mapping*; PyYAML writes each scalar and flow list (its quoting is the point)."""

    def inline(value):
        text = yaml.safe_dump(value, default_flow_style=True, width=10**6)
        return text.removesuffix("\n...\n").removesuffix("\n")

    pad, lines = " " * indent, []
    for key, value in mapping.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            lines.extend(_render(value, yaml, flow_lists=flow_lists, indent=indent + 2))
        elif isinstance(value, list) and value and not flow_lists:
            lines.append(f"{pad}{key}:")
            lines.extend(f"{pad}  - {inline(item)}" for item in value)
        else:
            lines.append(f"{pad}{key}: {inline(value)}")
    return lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_documents, flow_lists=st.booleans())
def test_front_matter_agrees_with_pyyaml(document, flow_lists):
    yaml = pytest.importorskip("yaml")  # only an oracle here; robotlab does not depend on PyYAML
    text = "".join(f"{line}\n" for line in _render(document, yaml, flow_lists=flow_lists))
    front, _, _ = split_front_matter(f"---\n{text}---\n", "SKILL.md")
    assert front.data == (yaml.safe_load(text) or {}) == document


# ---------------------------------------------------------------------------
# Capabilities
# ---------------------------------------------------------------------------


def test_capabilities_defaults_and_core():
    caps = Capabilities()
    assert (caps.fs_read, caps.fs_write, caps.network, caps.timeout, caps.trust) == ((), (), False, 60, "external")
    assert Capabilities.DEFAULT_TIMEOUT == 60 and Capabilities.TRUST_LEVELS == ("core", "external")
    assert not caps.core and Capabilities(trust="core").core
    assert Capabilities(fs_read="./data", fs_write=[Path("/tmp/out")]).fs_read == ("./data",)
    assert Capabilities(fs_write=[Path("/tmp/out")]).fs_write == ("/tmp/out",)
    with pytest.raises(AttributeError):
        caps.timeout = 5  # frozen


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"network": "yes"}, "network must be true or false, got 'yes'"),
        ({"timeout": 0}, "timeout must be a positive number of seconds, got 0"),
        ({"timeout": "30"}, "timeout must be a positive number of seconds, got '30'"),
        ({"timeout": True}, "timeout must be a positive number"),
        ({"trust": "admin"}, "trust must be one of 'core', 'external', got 'admin'"),
        ({"fs_read": 5}, "fs_read must be a list of paths, got 5"),
        ({"fs_write": ["ok", 7]}, "fs_write must be a list of paths, got the entry 7"),
    ],
)
def test_bad_capability_values_raise_naming_the_field(kwargs, message):
    with pytest.raises(ConfigurationError) as info:
        Capabilities(**kwargs)
    assert message in str(info.value)


def test_intersect_clamps_paths_network_and_timeout_and_keeps_trust(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    home = Path(os.path.expanduser("~"))
    declared = Capabilities(
        fs_read=["./data/in", "/etc/hosts", "/srv/data2", "~/notes"],
        fs_write=["./out", "/tmp/x"],
        network=True,
        timeout=120,
        trust="core",
    )
    ceiling = Capabilities(fs_read=[".", "/srv/data", "~"], fs_write=["./out"], network=False, timeout=30)
    grant = declared.intersect(ceiling)
    assert grant.fs_read == (str(tmp_path / "data" / "in"), str(home / "notes"))  # /srv/data2 is not under /srv/data
    assert grant.fs_write == (str(tmp_path / "out"),)
    assert (grant.network, grant.timeout, grant.trust) == (False, 30, "core")
    assert Capabilities(network=True).intersect(Capabilities(network=True)).network is True
    assert Capabilities(timeout=5).intersect(Capabilities(timeout=30)).timeout == 5
    assert Capabilities(fs_read=["/etc"]).intersect(Capabilities(fs_read=["/"])).fs_read == ("/etc",)
    assert Capabilities(fs_read=["/etc"]).intersect(Capabilities()).fs_read == ()
    with pytest.raises(ConfigurationError, match="needs a Capabilities ceiling"):
        declared.intersect({"timeout": 5})


def test_capabilities_from_front_matter_top_level_or_nested():
    assert Capabilities.from_front_matter(None) == Capabilities()
    assert Capabilities.from_front_matter({"timeout": 5, "network": None, "name": "x"}) == Capabilities(timeout=5)
    nested = Capabilities.from_front_matter({"capabilities": {"fs_read": ["a"], "trust": "core"}})
    assert nested == Capabilities(fs_read=["a"], trust="core")
    with pytest.raises(ConfigurationError, match="timeout is given both at the top level and under capabilities"):
        Capabilities.from_front_matter({"timeout": 5, "capabilities": {"timeout": 6}})
    with pytest.raises(ConfigurationError, match=r"unknown key.*under capabilities: sandbox"):
        Capabilities.from_front_matter({"capabilities": {"sandbox": True}})


# ---------------------------------------------------------------------------
# AgentSkill
# ---------------------------------------------------------------------------


def test_agent_skill_reads_a_bundle(tmp_path):
    directory = write_skill(
        tmp_path, "deploy",
        SEED_FRONT_MATTER + "license: MIT\nmetadata:\n  author: ada\n",
        body="\n\n# Deploy checks\n\nRun check-deploy first.\n\n",
        scripts={"check-deploy.sh": "#!/bin/sh\necho ok\n", "a-first.sh": "#!/bin/sh\necho a\n"},
    )
    (directory / "scripts" / "lib").mkdir()  # not recursive: subdirectories are not scripts
    write_script(directory / "scripts" / "lib" / "helper.sh", "#!/bin/sh\n")
    for where in (directory, directory / "SKILL.md", str(directory / "SKILL.md")):
        skill = AgentSkill(where)
        assert skill.name == "deploy-checker"
        assert skill.description == "Verifies a deployment's health before promoting it."
        assert skill.path == directory and skill.skill_md == directory / "SKILL.md"
        assert skill.instructions == "# Deploy checks\n\nRun check-deploy first."
        assert skill.capabilities == Capabilities(
            fs_read=["./data", "/etc/hosts"], fs_write=["./out"], network=True, timeout=30
        )
        assert skill.front_matter["license"] == "MIT" and skill.front_matter["metadata"] == {"author": "ada"}
        assert skill.scripts == (directory / "scripts" / "a-first.sh", directory / "scripts" / "check-deploy.sh")
        assert [t.name for t in skill.script_tools] == ["a_first", "check_deploy"]
        assert skill.script_tools is skill.script_tools  # built once
        assert all(t.capabilities is skill.capabilities and t.skill_dir == directory for t in skill.script_tools)
    assert repr(skill) == f"AgentSkill(name='deploy-checker', path={str(directory)!r})"


def test_a_bundle_without_scripts_has_no_tools(tmp_path):
    skill = AgentSkill(write_skill(tmp_path, "plain", "name: plain\ndescription: Just text.\n"))
    assert skill.scripts == () and skill.script_tools == ()


def test_non_executable_scripts_are_skipped_with_a_warning(tmp_path, caplog):
    directory = write_skill(tmp_path, "s", "name: s\ndescription: d\n", scripts={"run.sh": "#!/bin/sh\necho hi\n"})
    write_script(directory / "scripts" / "notes.txt", "just notes\n", executable=False)
    skill = AgentSkill(directory)
    with caplog.at_level(logging.WARNING, logger="robotlab.skills"):
        tools = skill.script_tools
    assert len(skill.scripts) == 2 and [t.name for t in tools] == ["run"]
    assert "ScriptTool: notes.txt is not executable, skipping" in caplog.messages


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("---\ndescription: d\n---\nbody\n", "SKILL.md at {md} missing 'name'"),
        ("---\nname: '  '\ndescription: d\n---\n", "SKILL.md at {md} missing 'name'"),
        ("---\nname: n\n---\nbody\n", "SKILL.md at {md} missing 'description'"),
        ("# No front matter\n", "SKILL.md at {md} has no front matter: it must start with a '---' line"),
        ("---\nname: 42\ndescription: d\n---\n", "{md}:2: 'name' must be text, got 42; quote it"),
        ("---\nname: n\ndescription: d\n\nnetwork: yes\n---\n", "{md}:5: network must be true or false, got 'yes'"),
        ("---\nname: n\ndescription: d\ncapabilities:\n  timeout: -1\n---\n", "{md}:5: timeout must be a positive"),
        ("---\nname: n\ndescription: d\ntrust: root\n---\n", "{md}:4: trust must be one of 'core', 'external'"),
    ],
)
def test_invalid_bundles_raise_configuration_errors(tmp_path, content, message):
    skill_md = tmp_path / "SKILL.md"
    skill_md.write_text(content)
    with pytest.raises(ConfigurationError) as info:
        AgentSkill(skill_md)
    assert message.format(md=skill_md) in str(info.value)


def test_missing_files_are_configuration_errors(tmp_path):
    with pytest.raises(ConfigurationError, match=f"no SKILL.md in {re.escape(str(tmp_path))}"):
        AgentSkill(tmp_path)
    with pytest.raises(ConfigurationError, match="is not a file"):
        AgentSkill(tmp_path / "missing" / "SKILL.md")
    (tmp_path / "SKILL.md").write_bytes(b"---\nname: \xff\n---\n")
    with pytest.raises(ConfigurationError, match="is not UTF-8 text"):
        AgentSkill(tmp_path)


# ---------------------------------------------------------------------------
# AgentSkillCatalog
# ---------------------------------------------------------------------------


def test_catalog_is_lazy_scans_once_and_finds_by_front_matter_name(tmp_path):
    catalog = AgentSkillCatalog(tmp_path)
    write_skill(tmp_path, "folder-a", "name: alpha\ndescription: A.\n")  # written after construction
    assert catalog.find("alpha").path == tmp_path / "folder-a"
    assert catalog.find("folder-a") is None  # the directory name is not the key
    write_skill(tmp_path, "folder-b", "name: beta\ndescription: B.\n")  # written after the scan
    assert catalog.names() == ["alpha"] and catalog.find("beta") is None
    assert AgentSkillCatalog(tmp_path).names() == ["alpha", "beta"]  # a new catalog scans again


def test_catalog_skips_bad_bundles_with_a_warning(tmp_path, caplog):
    write_skill(tmp_path, "a-good", "name: good\ndescription: Fine.\n")
    write_skill(tmp_path, "b-nameless", "description: no name\n")
    write_skill(tmp_path, "c-broken", "name: [oops\n")
    write_skill(tmp_path, "d-dupe", "name: good\ndescription: Same name.\n")
    (tmp_path / "e-no-skill-md").mkdir()
    (tmp_path / "stray-file.md").write_text("not a bundle")
    with caplog.at_level(logging.WARNING, logger="robotlab.skills"):
        skills = AgentSkillCatalog(tmp_path).all()
    assert [(s.name, s.path.name) for s in skills] == [("good", "a-good")]
    nameless = tmp_path / "b-nameless" / "SKILL.md"
    assert f"AgentSkillCatalog: SKILL.md at {nameless} missing 'name', skipping b-nameless" in caplog.messages
    assert any(m.startswith("AgentSkillCatalog: ") and m.endswith("skipping c-broken") for m in caplog.messages)
    assert any("'good'" in m and m.endswith("skipping d-dupe") for m in caplog.messages)
    assert len(caplog.messages) == 3


def test_catalog_over_a_missing_directory_is_empty(tmp_path):
    assert AgentSkillCatalog(tmp_path / "nowhere").all() == []


def test_catalog_loads_once_under_concurrent_first_use(tmp_path):
    for i in range(5):
        write_skill(tmp_path, f"s{i}", f"name: s{i}\ndescription: d\n")
    catalog = AgentSkillCatalog(tmp_path)
    barrier = threading.Barrier(8)
    found = []

    def look():
        barrier.wait()
        found.append(catalog.find("s3"))

    threads = [threading.Thread(target=look) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(found) == 8 and all(s is found[0] for s in found)  # one scan: the same object everywhere


def test_shared_catalog_follows_the_skills_dir_setting(tmp_path, monkeypatch):
    home, configured, from_env = tmp_path / "home", tmp_path / "configured", tmp_path / "env"
    write_skill(home / ".prompts" / "skills", "h", "name: from-home\ndescription: d\n")
    write_skill(configured, "c", "name: from-configure\ndescription: d\n")
    write_skill(from_env, "e", "name: from-env\ndescription: d\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ROBOTLAB_SKILLS_DIR", raising=False)
    robotlab.reload_config()
    assert str(AgentSkillCatalog.SKILLS_ROOT) == "~/.prompts/skills"
    assert AgentSkillCatalog.instance().names() == ["from-home"]
    assert AgentSkillCatalog.instance() is AgentSkillCatalog.instance()

    robotlab.configure(skills_dir=str(configured))
    assert AgentSkillCatalog.instance().root == configured
    assert AgentSkillCatalog.instance().names() == ["from-configure"]

    monkeypatch.setenv("ROBOTLAB_SKILLS_DIR", str(from_env))
    robotlab.reload_config()
    assert AgentSkillCatalog.instance().names() == ["from-env"]

    write_skill(from_env, "later", "name: later\ndescription: d\n")
    assert AgentSkillCatalog.instance().find("later") is None  # scanned once
    AgentSkillCatalog.reset()
    assert AgentSkillCatalog.instance().find("later") is not None


def test_resolve_skills(tmp_path):
    write_skill(tmp_path, "a", "name: alpha\ndescription: d\n")
    catalog = AgentSkillCatalog(tmp_path)
    direct = AgentSkill(write_skill(tmp_path / "elsewhere", "b", "name: beta\ndescription: d\n"))
    assert [s.name for s in resolve_skills(["alpha", direct], catalog=catalog)] == ["alpha", "beta"]
    with pytest.raises(ConfigurationError) as info:
        resolve_skills(["gamma"], catalog=catalog, where="robot 'r'")
    assert str(info.value).startswith(f"robot 'r': skill 'gamma' not found in {tmp_path} (available: alpha).")
    assert "robotlab.configure(skills_dir=...)" in str(info.value)
    with pytest.raises(ConfigurationError, match="skills must be a list"):
        resolve_skills("alpha", catalog=catalog)
    with pytest.raises(ConfigurationError, match="entries must be AgentSkill objects or names, got 3"):
        resolve_skills([3], catalog=catalog)
    with pytest.raises(ConfigurationError, match="skill 'alpha' is listed twice"):
        resolve_skills(["alpha", catalog.find("alpha")], catalog=catalog)


# ---------------------------------------------------------------------------
# ScriptTool
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "name"),
    [("check-deploy.sh", "check_deploy"), ("run", "run"), ("my.tool.py", "my_tool"), ("__x  y__.rb", "x_y"),
     ("Fetch URL.v2.sh", "Fetch_URL_v2")],
)
def test_derive_name(filename, name):
    assert ScriptTool.derive_name(Path("/any") / filename) == name


def test_extract_description(tmp_path):
    script = write_script(tmp_path / "a.sh", "#!/bin/sh\n#\n##   Verifies a deployment.  \n# second\n")
    assert ScriptTool.extract_description(script) == "Verifies a deployment."
    bare = write_script(tmp_path / "no-comment.sh", "#!/bin/sh\necho hi\n")
    assert ScriptTool.extract_description(bare) == "no_comment"
    assert ScriptTool.extract_description(tmp_path / "missing-file.sh") == "missing_file"


def test_from_path_builds_a_tool_class_with_one_optional_args_parameter(tmp_path):
    script = write_script(tmp_path / "list-files.sh", "#!/bin/sh\n# Lists files.\nls\n")
    tool_class = ScriptTool.from_path(script)
    assert issubclass(tool_class, ScriptTool) and issubclass(tool_class, robotlab.Tool)
    assert tool_class.schema() == {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "Lists files.",
            "parameters": {
                "type": "object",
                "properties": {"args": {"type": "string", "description": "Optional command-line arguments"}},
                "required": [],
            },
        },
    }
    assert tool_class.script == script and tool_class.skill_dir == tmp_path
    assert tool_class.capabilities == Capabilities()
    assert not tool_class.parallel_safe  # runs in the robot's process, where its class lives


def test_from_path_returns_none_for_what_cannot_be_a_tool(tmp_path, caplog):
    plain = write_script(tmp_path / "plain.sh", "#!/bin/sh\n", executable=False)
    unnamed = write_script(tmp_path / "___.sh", "#!/bin/sh\n")
    with caplog.at_level(logging.WARNING, logger="robotlab.skills"):
        assert ScriptTool.from_path(plain) is None
        assert ScriptTool.from_path(tmp_path / "missing.sh") is None
        assert ScriptTool.from_path(unnamed) is None
    assert caplog.messages[0] == "ScriptTool: plain.sh is not executable, skipping"
    assert "ScriptTool: ___.sh has no letters or digits" in caplog.messages[2]


def test_script_runs_as_a_real_subprocess_with_shell_split_args_and_combined_output(tmp_path):
    script = write_script(
        tmp_path / "show.py",
        f"""
        #!{sys.executable}
        # Shows its arguments.
        import os, sys
        print("argv", sys.argv[1:], flush=True)
        print("to stderr", file=sys.stderr, flush=True)
        print("pid differs", os.getpid() != {os.getpid()}, flush=True)
        print("stdin", repr(sys.stdin.read()), flush=True)
        """,
    )
    tool = ScriptTool.from_path(script)()
    assert tool.call({"args": "one 'two words' \"three\"  four"}) == (
        "argv ['one', 'two words', 'three', 'four']\nto stderr\npid differs True\nstdin ''\n"
    )
    assert tool.call({}) == tool.call({"args": "   "}) == "argv []\nto stderr\npid differs True\nstdin ''\n"


def test_failures_come_back_as_text_for_the_model(tmp_path):
    fails = ScriptTool.from_path(write_script(tmp_path / "fails.sh", "#!/bin/sh\necho partial\necho bad >&2\nexit 3\n"))
    assert fails().call({}) == "Error (exit 3):\npartial\nbad\n"
    killed = ScriptTool.from_path(write_script(tmp_path / "killed.sh", "#!/bin/sh\necho before\nkill -TERM $$\n"))
    assert killed().call({}) == "Error (killed by SIGTERM):\nbefore\n"
    assert fails().call({"args": "'unbalanced"}) == (
        "Error (fails): cannot split args \"'unbalanced\" like a shell command line: No closing quotation"
    )
    assert fails().call({"args": 5}) == "Error (fails): invalid arguments: 'args' must be string, got int"
    no_shebang = ScriptTool.from_path(write_script(tmp_path / "no-shebang", "echo hi\n"))
    result = no_shebang().call({})
    assert result.startswith(f"Error (no_shebang): cannot start {tmp_path / 'no-shebang'}: Exec format error")
    assert "'#!' interpreter line" in result


def test_format_result():
    assert ScriptTool.format_result("out\n", 0) == "out\n"
    assert ScriptTool.format_result("out\n", 2) == "Error (exit 2):\nout\n"
    assert ScriptTool.format_result("out\n", None) == "Error (timed out):\nout\n"
    assert ScriptTool.format_result("", -9) == "Error (killed by SIGKILL):\n"


def test_core_default_has_no_timeout_even_when_one_is_declared(tmp_path):
    script = write_script(tmp_path / "slow.sh", "#!/bin/sh\nsleep 1.5\necho finished\n")
    tool_class = ScriptTool.from_path(script, capabilities=Capabilities(timeout=0.2))
    assert ScriptTool.executor is None
    assert tool_class().call({}) == "finished\n"


def test_an_installed_executor_receives_everything_and_decides_the_result(tmp_path):
    caps = Capabilities(fs_read=["./data"], timeout=9)
    script = write_script(tmp_path / "s" / "scripts" / "tool.sh", "#!/bin/sh\necho real\n")
    tool_class = ScriptTool.from_path(script, capabilities=caps, skill_dir=tmp_path / "s")
    seen = []

    def recording(cmd, *, capabilities, skill_dir):
        seen.append((list(cmd), capabilities, skill_dir))
        return f"confined: {subprocess.run(cmd, capture_output=True, text=True, check=True).stdout}"

    ScriptTool.executor = recording
    assert tool_class().call({"args": "--flag 'x y'"}) == "confined: real\n"
    assert seen == [([str(script), "--flag", "x y"], caps, tmp_path / "s")]

    tool_class.executor = lambda cmd, **_: "per-tool override"  # set on one generated class only
    assert tool_class().call({}) == "per-tool override"
    assert ScriptTool.from_path(script)().call({}) == "confined: real\n"


# ---------------------------------------------------------------------------
# TimeoutExecutor
# ---------------------------------------------------------------------------


def test_timeout_executor_runs_scripts_that_finish_like_core(tmp_path):
    ScriptTool.executor = TimeoutExecutor()
    ok = ScriptTool.from_path(write_script(tmp_path / "ok.sh", "#!/bin/sh\necho out\necho err >&2\n"))
    bad = ScriptTool.from_path(write_script(tmp_path / "bad.sh", "#!/bin/sh\necho no\nexit 4\n"))
    assert ok().call({}) == "out\nerr\n"
    assert bad().call({}) == "Error (exit 4):\nno\n"
    missing = ScriptTool.from_path(write_script(tmp_path / "gone.sh", "#!/bin/sh\n"))
    (tmp_path / "gone.sh").unlink()
    assert missing().call({}).startswith("Error (gone): cannot start")


def test_timeout_kills_the_whole_process_group_and_leaves_no_process(tmp_path):
    pids_file = tmp_path / "pids"
    script = write_script(
        tmp_path / "hang.sh",
        """
        #!/bin/sh
        # Starts a child that starts a grandchild, then hangs.
        sh -c 'sleep 300 & echo $! >> "$1"; echo $$ >> "$1"; wait' child "$1" &
        echo $$ >> "$1"
        while [ "$(wc -l < "$1")" -lt 3 ]; do sleep 0.05; done
        echo started
        wait
        """,
    )
    ScriptTool.executor = TimeoutExecutor()
    tool_class = ScriptTool.from_path(script, capabilities=Capabilities(timeout=3))
    result = tool_class().call({"args": str(pids_file)})
    assert result == "Error (timed out):\nstarted\n\n[killed: exceeded 3s]"
    pids = [int(line) for line in pids_file.read_text().split()]
    assert len(pids) == 3  # script, child, grandchild
    assert wait_all_gone(pids) == []


def test_a_script_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path):
    pids_file = tmp_path / "pids"
    script = write_script(
        tmp_path / "stubborn.sh",
        """
        #!/bin/sh
        trap '' TERM
        sleep 300 >/dev/null 2>&1 &
        echo $! >> "$1"
        echo $$ >> "$1"
        echo stubborn
        wait
        """,
    )
    ScriptTool.executor = TimeoutExecutor(grace=0.5)
    result = ScriptTool.from_path(script, capabilities=Capabilities(timeout=2))().call({"args": str(pids_file)})
    assert result == "Error (timed out):\nstubborn\n\n[killed: exceeded 2s]"
    pids = [int(line) for line in pids_file.read_text().split()]
    assert len(pids) == 2 and wait_all_gone(pids) == []


def test_timeout_executor_ceiling_lowers_the_timeout(tmp_path):
    script = write_script(tmp_path / "slow.sh", "#!/bin/sh\necho begun\nexec sleep 300\n")
    ScriptTool.executor = TimeoutExecutor(ceiling=Capabilities(timeout=1))
    tool_class = ScriptTool.from_path(script, capabilities=Capabilities(timeout=600))
    assert tool_class().call({}) == "Error (timed out):\nbegun\n\n[killed: exceeded 1s]"


def test_timeout_executor_validates_its_settings():
    with pytest.raises(ConfigurationError, match="ceiling must be a Capabilities"):
        TimeoutExecutor(ceiling={"timeout": 1})
    with pytest.raises(ConfigurationError, match="grace must be a number of seconds >= 0, got -1"):
        TimeoutExecutor(grace=-1)


# ---------------------------------------------------------------------------
# Robots with skills
# ---------------------------------------------------------------------------


def test_a_robot_gets_skill_instructions_in_its_prompt_and_scripts_as_tools(tmp_path):
    skills_dir = tmp_path / "skills"
    write_skill(
        skills_dir, "release", "name: release-notes\ndescription: Drafts release notes.\n",
        body="Always list breaking changes first.\n",
        scripts={"count-commits.sh": '#!/bin/sh\n# Counts commits since a tag.\necho "12 commits since $1"\n'},
    )
    other = AgentSkill(write_skill(
        tmp_path / "elsewhere", "tone", "name: tone\ndescription: Sets the tone.\n", body="Be cheerful.\n"
    ))
    robotlab.configure(skills_dir=str(skills_dir))
    model = ScriptedModel([call("count_commits", args="v1.2"), "Release 1.3: 12 commits."])
    robot = robotlab.build(name="writer", model=model, system_prompt="You write release notes.",
                           skills=["release-notes", other])
    assert [s.name for s in robot.skills] == ["release-notes", "tone"]
    assert robot.tools.names() == ["count_commits"]
    result = robot.run("Draft the notes", tools="inherit")
    assert result.last_text_content == "Release 1.3: 12 commits."
    assert [(c.name, c.result) for c in result.tool_calls] == [("count_commits", "12 commits since v1.2\n")]
    system = model.calls[0].messages[0]
    assert system == {
        "role": "system",
        "content": "Always list breaking changes first.\n\nBe cheerful.\n\nYou write release notes.",
    }
    assert model.calls[0].tools[0]["function"]["description"] == "Counts commits since a tag."


def test_skill_tools_are_opt_in_per_run_like_every_tool(tmp_path):
    skill = AgentSkill(write_skill(tmp_path, "s", "name: s\ndescription: d\n", scripts={"go.sh": "#!/bin/sh\n"}))
    model = ScriptedModel(["no tools offered"])
    robotlab.build(name="r", model=model, skills=[skill]).run("hi")
    assert model.calls[0].tools in (None, [])
    assert model.calls[0].messages[0]["content"] == "Follow the checklist."


def test_a_timed_out_skill_script_reaches_the_model_as_an_error_text(tmp_path):
    skill = AgentSkill(write_skill(
        tmp_path, "s", "name: slow\ndescription: d\ntimeout: 1\n", scripts={"crawl.sh": "#!/bin/sh\nexec sleep 300\n"}
    ))
    ScriptTool.executor = TimeoutExecutor()
    model = ScriptedModel([call("crawl"), "It timed out."])
    result = robotlab.build(name="r", model=model, skills=[skill]).run("crawl", tools=["crawl"])
    assert result.tool_calls[0].result == "Error (timed out):\n\n[killed: exceeded 1s]"
    assert model.calls[1].messages[-1]["content"] == "Error (timed out):\n\n[killed: exceeded 1s]"


def test_robot_skill_errors(tmp_path):
    robotlab.configure(skills_dir=str(tmp_path))
    write_skill(tmp_path, "a", "name: alpha\ndescription: d\n", scripts={"lookup.sh": "#!/bin/sh\n"})
    with pytest.raises(ConfigurationError, match=r"robot 'r': skill 'beta' not found in .* \(available: alpha\)"):
        robotlab.build(name="r", model=ScriptedModel([]), skills=["beta"])
    with pytest.raises(ConfigurationError, match="robot 'r': skills must be a list"):
        robotlab.build(name="r", model=ScriptedModel([]), skills="alpha")

    @robotlab.tool
    def lookup() -> str:
        """A local tool whose name collides with the skill's script."""
        return "x"

    with pytest.raises(ConfigurationError, match="two tools are named 'lookup'"):
        robotlab.build(name="r", model=ScriptedModel([]), local_tools=[lookup], skills=["alpha"])


def test_skills_are_exported_lazily_and_robots_without_skills_do_not_load_them():
    assert robotlab.AgentSkill is AgentSkill and robotlab.TimeoutExecutor is TimeoutExecutor
    assert {"AgentSkill", "AgentSkillCatalog", "Capabilities", "ScriptTool", "TimeoutExecutor"} <= set(dir(robotlab))
    code = (
        "import sys, robotlab; from robotlab.llm import EchoModel; "
        "robotlab.build(name='r', model=EchoModel()).run('x'); print('robotlab.skills' in sys.modules)"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, timeout=60)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------
# Documentation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "module",
    ["front_matter", "capabilities", "script_tool", "timeout_executor", "bundle", "catalog", "__init__"],
)
def test_module_docstring_examples_run(module, tmp_path, monkeypatch):
    import importlib

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the examples' temporary files go here
    name = "robotlab.skills" if module == "__init__" else f"robotlab.skills.{module}"
    failures, _ = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failures == 0


@pytest.mark.parametrize("index", range(len(python_blocks("docs/skills.md"))))
def test_docs_skills_examples_run(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_block("docs/skills.md", index)


def test_skills_demo_example_output():
    path = Path(__file__).parent.parent / "examples" / "skills_demo.py"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, env=env, check=False)
    assert out.returncode == 0, out.stderr
    assert "tool count_commits('v1.2') -> '3 commits since v1.2\\n'" in out.stdout
    assert "[killed: exceeded 1s]" in out.stdout
