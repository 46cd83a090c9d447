"""MCP transports demo: one robot, one MCP server, reached over SSE and over WebSocket. Offline.

Starts tests/mcp_test_server.py (streamable HTTP at /mcp, HTTP+SSE at /sse, WebSocket
at /ws) on a free local port, writes a Claude-Desktop-style mcpServers file for it,
loads the servers from that file, and lets a scripted model call a tool over each
transport. Then run(mcp="discover") picks the server whose description fits the message.

Needs the mcp extra: pip install 'robotlab[mcp]'
Run: python examples/mcp_transports_demo.py
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import robotlab
from robotlab.llm import ScriptedModel, call
from robotlab.mcp import load_servers, relevant_servers

SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp_test_server.py"


def main() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("skipped: pip install 'robotlab[mcp]'")
        return
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http"], stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.DEVNULL)
    try:
        port = int(proc.stdout.readline().split()[1])
        with tempfile.TemporaryDirectory() as folder:
            config = Path(folder) / "mcp.json"
            config.write_text(json.dumps({"mcpServers": {
                "calc-sse": {"type": "sse", "url": f"http://127.0.0.1:{port}/sse",
                             "description": "add numbers"},
                "calc-ws": {"type": "websocket", "url": f"ws://127.0.0.1:{port}/ws",
                            "description": "shout text in capitals"},
            }}))
            servers = load_servers(config)
        print("servers from the config file:", [s.describe() for s in servers])
        model = ScriptedModel([call("add", a=20, b=22), "20 + 22 = 42", call("shout", text="hello"), "HELLO"])
        robot = robotlab.build(name="calc", model=model, mcp=servers)
        for name, question in (("calc-sse", "What is 20 + 22?"), ("calc-ws", "Shout hello")):
            result = robot.run(question, mcp=[name])
            record = result.tool_calls[0]
            print(f"over {name}: {record.name}({record.arguments}) -> {record.result!r}; robot: {result}")
        # mcp="discover": only the servers whose description matches the message are connected
        offered = ScriptedModel(lambda messages, tools: f"offered: {sorted(t['function']['name'] for t in tools)}")
        picky = robotlab.build(name="picky", model=offered, mcp=servers)
        question = "please add two numbers"
        print(f"discover {question!r}: relevant {[s.name for s in relevant_servers(question, servers)]};",
              picky.run(question, mcp="discover"))
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
