"""MCP demo: a robot uses the tools of a real MCP server (mcp-server-time, over stdio). Offline.

The server is a subprocess the run starts and stops; a scripted model stands in
for the LLM and calls one of the server's tools.

Needs the mcp extra and the time server: pip install -e '.[mcp]' mcp-server-time (in a checkout)
Run: python examples/mcp_demo.py
"""

import json
import sys

import robotlab
from robotlab.llm import ScriptedModel, call

TIME_SERVER = {
    "name": "time",
    "transport": {
        "type": "stdio",
        # `python -m mcp_server_time` rather than the `mcp-server-time` script: works without the venv on PATH
        "command": sys.executable,
        "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    },
}


def scripted_llm(messages, tools):
    """First turn: call the MCP tool. Second turn: answer from what it returned."""
    if messages[-1]["role"] == "user":
        print("tools offered:", [t["function"]["name"] for t in tools])
        return call("convert_time", source_timezone="Europe/Paris", time="09:30", target_timezone="Asia/Tokyo")
    converted = json.loads(messages[-1]["content"])
    return f"09:30 in Paris is {converted['target']['datetime'][11:16]} in Tokyo."


class ShowToolCalls(robotlab.Hook):
    @classmethod
    def after_tool_call(cls, ctx):
        print(f"  hook: {ctx.tool_name}({ctx.tool_args}) -> {len(str(ctx.tool_result))} characters")


def main() -> None:
    robot = robotlab.build(
        name="scheduler",
        model=ScriptedModel(scripted_llm),
        system_prompt="You schedule meetings across time zones.",
        mcp=[TIME_SERVER],
    )
    try:
        # mcp="inherit" connects the robot's servers for this run; tools=[...] narrows what the model sees.
        result = robot.run(
            "When is 09:30 Paris time in Tokyo?", mcp="inherit", tools=["convert_time"], hooks=ShowToolCalls
        )
    except robotlab.DependencyError as exc:  # the mcp extra is not installed
        print(f"skipped: {exc}")
        return
    print("robot:", result.last_text_content)
    print("tool calls:", [(c.name, c.error) for c in result.tool_calls])


if __name__ == "__main__":
    main()
