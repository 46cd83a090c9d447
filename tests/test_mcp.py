"""MCP servers as tool sources, against real servers: mcp-server-time (PyPI) over stdio, and
tests/mcp_test_server.py over stdio and over streamable HTTP in a subprocess."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

import robotlab
from robotlab import ConfigurationError, DependencyError, MCPError, ToolNotFoundError
from robotlab.hooks import Hook
from robotlab.llm import ScriptedModel, call
from robotlab.mcp import MCPClient, MCPServer, parse_servers
from tests.doc_blocks import python_blocks, run_block

TEST_SERVER = Path(__file__).with_name("mcp_test_server.py")
TIME_SERVER = {
    "name": "time",
    "transport": {"type": "stdio", "command": sys.executable,
                  "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
}


def calc_server(name: str = "calc", **options) -> dict:
    """tests/mcp_test_server.py over stdio (flat config shape)."""
    return {"name": name, "transport": "stdio", "command": sys.executable, "args": [str(TEST_SERVER)], **options}


def server_processes() -> list[psutil.Process]:
    """Our stdio MCP server subprocesses that are alive now."""
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            cmdline = " ".join(child.cmdline())
            if ("mcp_server_time" in cmdline or "mcp_test_server" in cmdline) and "--http" not in cmdline:
                alive.append(child)
        except psutil.NoSuchProcess:
            pass
    return alive


def mcp_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("robotlab-mcp")]


def tool_names(request) -> list[str]:
    return [t["function"]["name"] for t in request.tools]


@pytest.fixture(autouse=True)
def _no_leaks():
    """Every test must leave no MCP server subprocess and no MCP loop thread behind."""
    yield
    assert server_processes() == []
    assert mcp_threads() == []


# -- configs ------------------------------------------------------------------------------------------


def test_server_configs_in_robot_lab_nested_and_flat_shapes():
    nested = MCPServer.from_config(TIME_SERVER)
    assert (nested.name, nested.transport, nested.command) == ("time", "stdio", sys.executable)
    assert nested.args == ("-m", "mcp_server_time", "--local-timezone", "UTC")
    assert MCPServer.from_config({"name": "time", "transport": "stdio", "command": sys.executable,
                                  "args": list(nested.args)}) == nested
    assert MCPServer.stdio("time", sys.executable, nested.args) == nested
    for kind in ("streamable_http", "streamable-http", "http"):
        server = MCPServer.from_config({"name": "s", "transport": {"type": kind, "url": "http://127.0.0.1:1/mcp"}})
        assert server.transport == "streamable_http" and server.url == "http://127.0.0.1:1/mcp"
    # without transport: stdio when a command is given, streamable_http when a url is
    assert MCPServer.from_config({"name": "a", "command": "srv"}).transport == "stdio"
    assert MCPServer.from_config({"name": "b", "url": "https://h/mcp", "headers": {"A": "b"}}).headers == {"A": "b"}
    timed = MCPServer.from_config(calc_server(connect_timeout=5, call_timeout=0.5))
    assert (timed.connect_timeout, timed.call_timeout) == (5, 0.5)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"transport": "stdio", "command": "x"}, "name must be a non-empty string"),
        ({"name": "s", "transport": "grpc", "url": "http://h/rpc"}, "transport 'grpc' is not supported"),
        ({"name": "s"}, "say which transport"),
        ({"name": "s", "transport": "stdio"}, "needs command="),
        ({"name": "s", "transport": "stdio", "command": "x", "args": "--flag"}, "args must be a list of strings"),
        ({"name": "s", "transport": "stdio", "command": "x", "env": {"A": 1}}, "env must map strings to strings"),
        ({"name": "s", "transport": "stdio", "command": "x", "url": "http://h/mcp"}, "belong to a URL server"),
        ({"name": "s", "transport": "http"}, "needs url="),
        ({"name": "s", "transport": "http", "url": "ftp://h/mcp"}, "http:// or https://"),
        ({"name": "s", "transport": "http", "url": "http://h/mcp", "command": "x"}, "belong to a stdio server"),
        ({"name": "s", "command": "x", "timeout": 3}, "unknown option(s) 'timeout'"),
        ({"name": "s", "command": "x", "call_timeout": 0}, "call_timeout must be a positive number"),
        ({"name": "s", "transport": {"type": "stdio", "command": "x"}, "command": "y"}, "both inside and outside"),
        ("mcp-server-time", "must be a mapping"),
    ],
)
def test_bad_server_configs_raise_configuration_error(config, message):
    with pytest.raises(ConfigurationError) as caught:
        MCPServer.from_config(config)
    assert message in str(caught.value)


def test_build_validates_the_server_list():
    with pytest.raises(ConfigurationError, match="mcp must be a list of MCP server configs"):
        robotlab.build(name="r", mcp=TIME_SERVER)
    with pytest.raises(ConfigurationError, match="two MCP servers are named 'time'"):
        robotlab.build(name="r", mcp=[TIME_SERVER, TIME_SERVER])
    robot = robotlab.build(name="r", mcp=[TIME_SERVER, calc_server()])
    assert [s.name for s in robot.mcp_servers] == ["time", "calc"]
    assert robotlab.build(name="plain").mcp_servers == ()


def test_descriptions_in_messages_never_show_secrets():
    server = MCPServer.http("s", "https://user:hunter2@mcp.example.com/mcp", headers={"Authorization": "Bearer tok"})
    assert server.describe() == "streamable_http: https://mcp.example.com/mcp"
    stdio = MCPServer.stdio("t", "srv", ["--flag"], env={"API_KEY": "hunter2"})
    assert stdio.describe() == "stdio: srv --flag"
    assert repr(server) == "MCPServer('s', 'streamable_http: https://mcp.example.com/mcp')"
    assert "hunter2" not in repr(stdio) and "hunter2" not in repr(robotlab.build(name="r", mcp=[stdio]).mcp_servers)


# -- choosing servers and tools for a run ---------------------------------------------------------


def test_mcp_is_opt_in_per_run_and_connects_nothing_by_default():
    broken = {"name": "broken", "transport": "stdio", "command": "/nonexistent/robotlab-mcp-server"}
    model = ScriptedModel(["plain answer"])
    robot = robotlab.build(name="r", model=model, mcp=[broken])
    assert robot.run("hi").last_text_content == "plain answer"  # mcp="none": the server is never started
    assert model.calls[0].tools == []
    with pytest.raises(MCPError) as caught:
        robot.run("hi", mcp="inherit")
    message = str(caught.value)
    assert "MCP server 'broken'" in message and "command not found" in message
    assert not caught.value.retryable and not robotlab.retryable(caught.value)


def test_mcp_argument_is_validated():
    robot = robotlab.build(name="r", model=ScriptedModel(["ok"]), mcp=[TIME_SERVER])
    with pytest.raises(ConfigurationError,
                       match="mcp must be 'none', 'inherit', 'discover' or a list of MCP server names"):
        robot.run("hi", mcp="all")
    with pytest.raises(ConfigurationError, match="robot 'r' has no MCP server named 'github'; configured: time"):
        robot.run("hi", mcp=["github"])
    plain = robotlab.build(name="plain", model=ScriptedModel(["ok"]))
    assert plain.run("hi", mcp="inherit").last_text_content == "ok"  # no servers configured: nothing to connect


def test_a_robot_calls_a_real_mcp_server_over_stdio():
    seen = {}

    def script(messages, tools):
        if len(messages) == 1:  # the first LLM call happens while the server runs
            seen["servers"] = [p.pid for p in server_processes()]
            seen["threads"] = mcp_threads()
            return call("get_current_time", timezone="Europe/Paris")
        return f"The tool said: {messages[-1]['content']}"

    class Recorder(Hook):
        @classmethod
        def after_tool_call(cls, ctx):
            seen["hook"] = (ctx.tool_name, ctx.tool_args, ctx.tool_result)

    model = ScriptedModel(script)
    robot = robotlab.build(name="clock", model=model, mcp=[TIME_SERVER])
    result = robot.run("What time is it in Paris?", mcp="inherit", hooks=Recorder)

    assert tool_names(model.calls[0]) == ["get_current_time", "convert_time"]
    schema = model.calls[0].tools[0]["function"]["parameters"]
    assert schema["required"] == ["timezone"] and schema["properties"]["timezone"]["type"] == "string"
    [record] = result.tool_calls
    assert (record.name, record.arguments, record.error) == ("get_current_time", {"timezone": "Europe/Paris"}, None)
    answer = json.loads(record.result)
    assert answer["timezone"] == "Europe/Paris" and answer["datetime"][-6:] in ("+01:00", "+02:00")
    assert seen["hook"] == ("get_current_time", {"timezone": "Europe/Paris"}, record.result)
    assert model.calls[1].messages[-1] == {"role": "tool", "tool_call_id": record.id, "content": record.result}
    assert result.last_text_content == f"The tool said: {record.result}"
    # the server ran during the run, on its own loop thread, and both are gone after it
    assert len(seen["servers"]) == 1 and seen["threads"] == ["robotlab-mcp-time"]
    assert not psutil.pid_exists(seen["servers"][0])


def test_a_tool_error_reported_by_the_server_reaches_the_model_as_error_text():
    model = ScriptedModel([call("get_current_time", timezone="Mars/Olympus_Mons"), "Sorry, unknown place."])
    robot = robotlab.build(name="clock", model=model, mcp=[TIME_SERVER])
    result = robot.run("Time on Mars?", mcp="inherit")
    [record] = result.tool_calls
    assert record.error is not None and record.error.startswith("Error (get_current_time): ")
    assert "Mars/Olympus_Mons" in record.error
    assert model.calls[1].messages[-1]["content"] == record.error
    assert result.last_text_content == "Sorry, unknown place."


def test_tools_allowlist_narrows_local_and_mcp_tools():
    @robotlab.tool
    def local_note(text: str) -> str:
        """Write a note."""
        return f"noted {text}"

    model = ScriptedModel(["a", "b", "c", [call("convert_time", source_timezone="UTC", time="12:00",
                                               target_timezone="Asia/Tokyo"), call("local_note", text="x")], "d"])
    robot = robotlab.build(name="r", model=model, local_tools=[local_note], mcp=[TIME_SERVER])
    robot.run("1", mcp="inherit")                     # tools="none": MCP tools only (mcp= is their opt-in)
    robot.run("2", mcp="inherit", tools="inherit")    # local and MCP tools
    robot.run("3", tools="inherit")                    # mcp="none": local tools only
    result = robot.run("4", mcp="inherit", tools=["convert_time", "local_note"])
    assert [tool_names(r) for r in model.calls] == [
        ["get_current_time", "convert_time"],
        ["local_note", "get_current_time", "convert_time"],
        ["local_note"],
        ["convert_time", "local_note"],
        ["convert_time", "local_note"],
    ]
    assert [c.name for c in result.tool_calls] == ["convert_time", "local_note"]
    assert json.loads(result.tool_calls[0].result)["target"]["timezone"] == "Asia/Tokyo"
    assert result.tool_calls[1].result == "noted x"
    with pytest.raises(ToolNotFoundError) as caught:
        robot.run("5", mcp="inherit", tools=["search_repositories"])
    assert str(caught.value) == (
        "Tool 'search_repositories' not found. Available tools: local_note, get_current_time, convert_time"
    )


def test_a_tool_name_offered_twice_is_a_configuration_error():
    @robotlab.tool
    def get_current_time(timezone: str) -> str:
        """A local clock."""
        return "noon"

    model = ScriptedModel(["only convert_time offered"])
    robot = robotlab.build(name="r", model=model, local_tools=[get_current_time], mcp=[TIME_SERVER])
    with pytest.raises(ConfigurationError, match="'get_current_time' is offered by both local_tools and MCP server"):
        robot.run("x", mcp="inherit", tools="inherit")
    robot.run("x", mcp="inherit", tools=["convert_time"])  # no clash among the offered tools
    assert tool_names(model.calls[0]) == ["convert_time"]


def test_mcp_list_chooses_servers():
    seen = []

    def script(messages, tools):
        seen.append(sorted(" ".join(p.cmdline()) for p in server_processes()))
        return "ok"

    model = ScriptedModel(script)
    robot = robotlab.build(name="r", model=model, mcp=[TIME_SERVER, calc_server()])
    robot.run("x", mcp=["calc"])
    robot.run("y", mcp="inherit")
    assert tool_names(model.calls[0]) == ["add", "shout", "fail", "crash", "wait", "header"]
    assert tool_names(model.calls[1]) == ["get_current_time", "convert_time", *tool_names(model.calls[0])]
    assert len(seen[0]) == 1 and "mcp_test_server" in seen[0][0]  # the time server was not started
    assert len(seen[1]) == 2


def test_several_calls_in_one_reply_run_concurrently_over_one_connection():
    calls = [call("add", a=i, b=10) for i in range(4)] + [call("wait", seconds=0.5)]
    robot = robotlab.build(name="r", model=ScriptedModel([calls, "done"]), mcp=[calc_server()])
    result = robot.run("sum", mcp="inherit")
    assert [c.result for c in result.tool_calls] == ["10", "11", "12", "13", "waited 0.5"]
    assert all(c.error is None for c in result.tool_calls)


def test_arguments_are_checked_against_the_required_list_before_the_call():
    model = ScriptedModel([call("add", a=1), call("fail", reason="bad input"), "done"])
    robot = robotlab.build(name="r", model=model, mcp=[calc_server()])
    result = robot.run("x", mcp="inherit")
    missing, failed = (c.error for c in result.tool_calls)
    assert missing == "Error (add): invalid arguments: missing required parameter 'b'"
    assert failed.startswith("Error (fail): ") and failed.endswith("bad input")  # the server's own wording between


def test_a_network_task_can_use_mcp():
    robot = robotlab.build(name="clock", model=ScriptedModel([call("get_current_time", timezone="UTC"), "noted"]),
                           mcp=[TIME_SERVER])
    network = robotlab.create_network(name="n")
    network.task("clock", robot, mcp="inherit")
    outcome = network.run("What time is it?")
    assert outcome.tasks["clock"].status == "ok", outcome.tasks["clock"].error
    assert json.loads(outcome.tasks["clock"].result.tool_calls[0].result)["timezone"] == "UTC"


# -- transport failures --------------------------------------------------------------------------


def test_a_server_that_dies_mid_run_raises_a_retryable_mcp_error():
    errors = []

    class OnError(Hook):
        @classmethod
        def on_error(cls, ctx):
            errors.append(ctx.error)

    robot = robotlab.build(name="r", model=ScriptedModel([call("crash"), "never"]), mcp=[calc_server()])
    with pytest.raises(MCPError) as caught:
        robot.run("crash it", mcp="inherit", hooks=OnError)
    message = str(caught.value)
    assert message.startswith("MCP server 'calc' (stdio: ") and "calling tool 'crash' failed" in message
    assert caught.value.retryable and robotlab.retryable(caught.value)
    assert errors == [caught.value]  # the run's on_error hooks saw it


def test_a_tool_call_that_outlives_call_timeout_raises_a_retryable_mcp_error():
    robot = robotlab.build(name="r", model=ScriptedModel([call("wait", seconds=60), "never"]),
                           mcp=[calc_server(call_timeout=1)])
    with pytest.raises(MCPError, match=r"MCP server 'calc' .*calling tool 'wait' timed out after 1 s") as caught:
        robot.run("wait", mcp="inherit")
    assert caught.value.retryable


def test_a_server_that_never_answers_the_handshake_times_out_and_is_stopped():
    silent = {"name": "silent", "command": sys.executable, "args": ["-c", "import time; time.sleep(120)"],
              "connect_timeout": 1}
    robot = robotlab.build(name="r", model=ScriptedModel(["never"]), mcp=[silent])
    with pytest.raises(MCPError, match=r"MCP server 'silent' .*connecting timed out after 1 s") as caught:
        robot.run("x", mcp="inherit")
    assert caught.value.retryable
    assert [p for p in psutil.Process().children(recursive=True) if "time.sleep(120)" in " ".join(p.cmdline())] == []


def test_one_failing_server_closes_the_others():
    broken = {"name": "broken", "command": "/nonexistent/robotlab-mcp-server"}
    robot = robotlab.build(name="r", model=ScriptedModel(["never"]), mcp=[TIME_SERVER, broken])
    with pytest.raises(MCPError, match="MCP server 'broken'"):
        robot.run("x", mcp="inherit")
    # the autouse fixture checks that the time server, which did start, is gone


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_is_retryable():
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there any more
    robot = robotlab.build(name="r", model=ScriptedModel(["never"]), mcp=[MCPServer.http("remote", url)])
    with pytest.raises(MCPError) as caught:
        robot.run("x", mcp="inherit")
    assert str(caught.value).startswith(f"MCP server 'remote' (streamable_http: {url}): connecting failed: ")
    assert caught.value.retryable


# -- streamable HTTP against a real server in a subprocess ------------------------------------


def start_http_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(TEST_SERVER), "--http"], stdout=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(60)
    if not lines or not lines[0].startswith("PORT "):
        stop(proc)
        pytest.fail(f"the test MCP server did not report its port: {lines!r}")
    return proc, f"http://127.0.0.1:{int(lines[0].split()[1])}/mcp"


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    proc.stdout.close()


@pytest.fixture(scope="module")
def http_url():
    proc, url = start_http_server()
    yield url
    stop(proc)


def test_a_robot_calls_tools_over_streamable_http(http_url):
    server = {"name": "calc", "transport": {"type": "streamable_http", "url": http_url,
                                             "headers": {"X-Robotlab-Test": "sent"}}}
    model = ScriptedModel([[call("add", a=2, b=3), call("fail", reason="no such account")],
                           call("header", key="X-Robotlab-Test"), "2 + 3 = 5"])
    robot = robotlab.build(name="r", model=model, mcp=[server])
    result = robot.run("What is 2 + 3?", mcp="inherit", tools=["add", "fail", "header"])
    assert tool_names(model.calls[0]) == ["add", "fail", "header"]
    added, failed, header = result.tool_calls
    assert (added.result, added.error) == ("5", None)
    assert failed.error == failed.result and failed.error.startswith("Error (fail): ")
    assert failed.error.endswith("no such account")
    assert (header.result, header.error) == ("sent", None)  # the configured header reached the server
    assert result.last_text_content == "2 + 3 = 5"


def test_mcp_client_lifecycle(http_url):
    client = MCPClient({"name": "calc", "url": http_url})
    assert not client.connected
    with client:
        assert client.connected and mcp_threads() == ["robotlab-mcp-calc"]
        assert [t.name for t in client.list_tools()][:2] == ["add", "shout"]
        added = client.call_tool("add", {"a": 20, "b": 22})
        assert (added.text, added.is_error, added.structured) == ("42", False, {"result": 42})
        unknown = client.call_tool("no_such_tool", {})
        assert unknown.is_error and "no_such_tool" in unknown.text
    assert not client.connected and mcp_threads() == []
    with pytest.raises(MCPError, match="not connected; call connect"):
        client.call_tool("add", {"a": 1, "b": 2})
    with client.connect():  # a closed client connects again
        assert client.call_tool("shout", {"text": "again"}).text == "AGAIN"


def test_a_client_whose_server_died_says_so_and_reconnects():
    with MCPClient(calc_server()) as client:
        [first] = server_processes()
        with pytest.raises(MCPError, match="calling tool 'crash' failed: the connection closed") as caught:
            client.call_tool("crash")
        assert caught.value.retryable and not client.connected
        with pytest.raises(MCPError, match="the connection was lost earlier"):
            client.call_tool("add", {"a": 1, "b": 2})
        client.connect()  # a new server process, a new session
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
        assert [p.pid for p in server_processes()] != [first.pid]


def test_a_wrong_http_path_is_not_retryable(http_url):
    client = MCPClient(MCPServer.http("calc", http_url.replace("/mcp", "/nope")))
    with pytest.raises(MCPError, match="connecting failed: the server answered with error") as caught:
        client.connect()
    assert not caught.value.retryable and not client.connected


def test_an_http_server_that_dies_mid_run_raises_a_retryable_mcp_error():
    proc, url = start_http_server()
    try:
        robot = robotlab.build(name="r", model=ScriptedModel([call("crash"), "never"]),
                               mcp=[MCPServer.http("remote", url, call_timeout=20)])
        # mcp 2.x notices the dropped stream at once; 1.x clients only time out
        with pytest.raises(MCPError, match=r"MCP server 'remote' .*calling tool 'crash' (failed|timed out)") as caught:
            robot.run("x", mcp="inherit")
        assert caught.value.retryable
        assert proc.wait(10) == 3  # the server really died (os._exit(3))
    finally:
        stop(proc)


# -- without the SDK ----------------------------------------------------------------------------------


def test_without_the_mcp_package_using_mcp_raises_dependency_error(monkeypatch):
    robot = robotlab.build(name="r", model=ScriptedModel(["plain"]), mcp=[TIME_SERVER])  # configs need no SDK
    monkeypatch.setitem(sys.modules, "mcp", None)  # what `import mcp` sees when the package is missing
    assert robot.run("hi").last_text_content == "plain"
    for attempt in (lambda: robot.run("hi", mcp="inherit"), lambda: MCPClient(TIME_SERVER).connect()):
        with pytest.raises(DependencyError) as caught:
            attempt()
        assert "pip install 'robotlab[mcp]'" in str(caught.value)
    assert parse_servers([TIME_SERVER])[0].name == "time"


# -- docs/mcp.md ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(len(python_blocks("docs/mcp.md"))))
def test_docs_mcp_examples_run(index):
    run_block("docs/mcp.md", index, __name__="docs_mcp")
