"""MCP over SSE and WebSocket against tests/mcp_test_server.py (one subprocess serving every URL
transport), and server discovery from config files."""

from __future__ import annotations

import json
import sys

import pytest

import robotlab
from robotlab import ConfigurationError, MCPError
from robotlab.llm import ScriptedModel, call
from robotlab.mcp import MCPClient, MCPServer, discover_servers, load_servers, relevant_servers
from tests.test_mcp import TEST_SERVER, free_port, mcp_threads, start_http_server, stop, tool_names


@pytest.fixture(scope="module")
def base_url():
    proc, url = start_http_server()
    yield url.removesuffix("/mcp")
    stop(proc)


@pytest.fixture(autouse=True)
def _no_loop_threads():
    yield
    assert mcp_threads() == []


@pytest.mark.parametrize("kind", ["sse", "websocket"])
def test_a_robot_lists_and_calls_tools_over_sse_and_websocket(base_url, kind):
    url = f"{base_url}/sse" if kind == "sse" else f"{base_url.replace('http://', 'ws://')}/ws"
    server = {"name": "calc", "transport": {"type": "ws" if kind == "websocket" else kind, "url": url}}
    model = ScriptedModel([[call("add", a=2, b=3), call("fail", reason="no such account")],
                           call("shout", text="done"), "2 + 3 = 5"])
    robot = robotlab.build(name="r", model=model, mcp=[server])
    result = robot.run("What is 2 + 3?", mcp="inherit")
    assert tool_names(model.calls[0]) == ["add", "shout", "fail", "crash", "wait", "header"]
    added, failed, shouted = result.tool_calls
    assert (added.result, added.error) == ("5", None)
    assert failed.error.startswith("Error (fail): ") and failed.error.endswith("no such account")
    assert (shouted.result, shouted.error) == ("DONE", None)
    assert result.last_text_content == "2 + 3 = 5"
    assert robot.mcp_servers[0].transport == kind


def test_sse_sends_the_configured_headers(base_url):
    server = MCPServer.sse("calc", f"{base_url}/sse", headers={"X-Robotlab-Test": "over sse"})
    with MCPClient(server) as client:
        assert client.call_tool("header", {"key": "X-Robotlab-Test"}).text == "over sse"
        assert client.call_tool("add", {"a": 40, "b": 2}).structured == {"result": 42}


def test_websocket_calls_run_concurrently_over_one_connection(base_url):
    calls = [call("wait", seconds=0.4), *(call("add", a=i, b=1) for i in range(3))]
    server = MCPServer.websocket("calc", f"{base_url.replace('http://', 'ws://')}/ws")
    robot = robotlab.build(name="r", model=ScriptedModel([calls, "done"]), mcp=[server])
    result = robot.run("x", mcp="inherit")
    assert [c.result for c in result.tool_calls] == ["waited 0.4", "1", "2", "3"]
    assert max(c.duration for c in result.tool_calls[1:]) < 0.4  # the adds did not queue behind the wait


def test_unreachable_sse_and_websocket_servers_raise_retryable_mcp_errors():
    port = free_port()  # nothing listens there
    for server in (MCPServer.sse("legacy", f"http://127.0.0.1:{port}/sse", connect_timeout=5),
                   MCPServer.websocket("neon", f"ws://127.0.0.1:{port}/ws", connect_timeout=5)):
        robot = robotlab.build(name="r", model=ScriptedModel(["never"]), mcp=[server])
        with pytest.raises(MCPError) as caught:
            robot.run("x", mcp="inherit")
        assert str(caught.value).startswith(f"MCP server {server.name!r} ({server.describe()}): connecting failed: ")
        assert caught.value.retryable


def test_a_websocket_path_the_server_does_not_serve_is_not_retryable(base_url):
    client = MCPClient(MCPServer.websocket("neon", f"{base_url.replace('http://', 'ws://')}/nope"))
    with pytest.raises(MCPError, match="connecting failed: InvalidStatus") as caught:
        client.connect()
    assert not caught.value.retryable and not client.connected


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"name": "s", "transport": "sse"}, "a sse server needs url= with a http:// or https:// address"),
        ({"name": "s", "transport": "sse", "url": "ws://h/sse"}, "http:// or https://"),
        ({"name": "s", "transport": "websocket", "url": "http://h/ws"}, "a websocket server needs url= with a ws://"),
        ({"name": "s", "transport": "ws", "url": "ws://h/ws", "command": "x"},
         "belong to a stdio server, not websocket"),
        ({"name": "s", "transport": "sse", "url": "http://h/sse", "headers": {"A": 1}}, "headers must map strings"),
        ({"name": "s", "transport": "socket.io", "url": "ws://h"}, "'sse' or 'websocket' (alias 'ws')"),
    ],
)
def test_bad_sse_and_websocket_configs_raise_configuration_error(config, message):
    with pytest.raises(ConfigurationError) as caught:
        MCPServer.from_config(config)
    assert message in str(caught.value)


def test_url_only_configs_pick_the_transport_from_the_scheme():
    assert MCPServer.from_config({"name": "a", "url": "wss://h/ws"}).transport == "websocket"
    assert MCPServer.from_config({"name": "b", "url": "https://h/mcp"}).transport == "streamable_http"
    secret = MCPServer.websocket("c", "wss://u:hunter2@h/ws", headers={"Authorization": "Bearer tok"})
    assert secret.describe() == "websocket: wss://h/ws" and "hunter2" not in repr(secret)


# -- discovery ------------------------------------------------------------------------------------------


def write(path, document) -> str:
    path.write_text(json.dumps(document))
    return str(path)


def test_load_servers_reads_claude_desktop_and_robot_lab_files(tmp_path):
    claude = write(tmp_path / "claude_desktop_config.json", {"mcpServers": {
        "calc": {"command": sys.executable, "args": [str(TEST_SERVER)], "env": {"A": "b"}},
        "docs": {"type": "sse", "url": "http://127.0.0.1:8000/sse", "headers": {"X-Key": "k"}},
        "old": {"command": "gone", "disabled": True},
    }})
    [calc, docs] = load_servers(claude)
    assert (calc.name, calc.transport, calc.args, calc.env) == ("calc", "stdio", (str(TEST_SERVER),), {"A": "b"})
    assert (docs.name, docs.transport, docs.headers) == ("docs", "sse", {"X-Key": "k"})
    toml = tmp_path / "servers.toml"
    toml.write_text('[[mcp]]\nname = "neon"\ndescription = "Postgres databases"\n'
                    '[mcp.transport]\ntype = "ws"\nurl = "ws://127.0.0.1:8080/ws"\n')
    [neon] = load_servers(toml)
    assert (neon.transport, neon.url, neon.description) == ("websocket", "ws://127.0.0.1:8080/ws", "Postgres databases")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
        ('{"servers": {}}', "has neither an 'mcpServers' mapping"),
        ('{"mcpServers": ["time"]}', "mcpServers must map server names to configs"),
        ('{"mcpServers": {"t": {"type": "sse"}}}', "MCP server 't': a sse server needs url="),
        ('{"mcpServers": {"t": {"command": "x", "autoApprove": []}}}', "unknown option(s) 'autoApprove'"),
        ('{"mcp": {"name": "t"}}', "mcp must be a list of MCP server configs"),
    ],
)
def test_bad_config_files_raise_configuration_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "mcp.json"
    path.write_text(content)
    with pytest.raises(ConfigurationError) as caught:
        load_servers(path)
    assert str(caught.value).startswith(f"MCP config file {path}")
    assert message in str(caught.value)
    with pytest.raises(ConfigurationError, match="cannot be read"):
        load_servers(tmp_path / "missing.json")


def test_discover_servers_merges_user_and_project_files(tmp_path, monkeypatch):
    home, project = tmp_path / "config", tmp_path / "project"
    (home / "robotlab").mkdir(parents=True)
    project.mkdir()
    write(home / "robotlab" / "mcp.json", {"mcpServers": {"time": {"command": "user-time"},
                                                          "calc": {"command": "user-calc"}}})
    write(project / ".mcp.json", {"mcpServers": {"time": {"command": "project-time"}}})
    monkeypatch.delenv("ROBOTLAB_MCP_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.chdir(project)
    assert [(s.name, s.command) for s in discover_servers()] == [("calc", "user-calc"), ("time", "project-time")]
    only = write(tmp_path / "only.json", {"mcp": [{"name": "x", "command": "only-x"}]})
    monkeypatch.setenv("ROBOTLAB_MCP_CONFIG", only)
    assert [s.command for s in discover_servers()] == ["only-x"]
    monkeypatch.setenv("ROBOTLAB_MCP_CONFIG", str(tmp_path / "nope.json"))
    with pytest.raises(ConfigurationError, match=r"ROBOTLAB_MCP_CONFIG points to .*nope\.json, which is not a file"):
        discover_servers()


def test_relevance_selects_servers_by_description_and_falls_back_to_all():
    files = MCPServer.stdio("filesystem", "fs", description="Read, write, and search local files and directories")
    github = MCPServer.stdio("github", "gh", description="GitHub repos, issues, pull requests, code search")
    brew = MCPServer.stdio("brew", "brew", description="Install, update, and manage macOS packages via Homebrew")
    servers = (files, github, brew)
    assert relevant_servers("install imagemagick", servers) == (brew,)
    assert relevant_servers("open an issue about the failing pull request", servers) == (github,)
    assert relevant_servers("quantum chromodynamics", servers) == servers  # nothing relevant: all of them
    assert relevant_servers("   ", servers) == servers
    assert relevant_servers("install", [MCPServer.stdio("a", "a"), MCPServer.stdio("b", "b")])[0].name == "a"


def test_run_with_mcp_discover_connects_only_the_relevant_server(base_url):
    calc = {"name": "calc", "description": "add numbers and shout text", "url": f"{base_url}/sse",
            "transport": "sse"}
    broken = {"name": "weather", "description": "forecasts for cities", "command": "/nonexistent/weather-server"}
    model = ScriptedModel([call("add", a=1, b=2), "3"])
    robot = robotlab.build(name="r", model=model, mcp=[broken, calc])
    result = robot.run("please add these numbers", mcp="discover")
    assert result.tool_calls[0].result == "3"  # the weather server (which cannot start) was never connected
    with pytest.raises(MCPError, match="MCP server 'weather'"):
        robot.run("the forecast for Paris", mcp="discover")


def test_a_websocket_server_that_dies_mid_run_raises_a_retryable_mcp_error():
    proc, url = start_http_server()  # its own server: the call kills it
    try:
        ws_url = url.replace("http://", "ws://").replace("/mcp", "/ws")
        robot = robotlab.build(name="r", model=ScriptedModel([call("crash"), "never"]),
                               mcp=[MCPServer.websocket("remote", ws_url, call_timeout=20)])
        with pytest.raises(MCPError, match=r"MCP server 'remote' .*calling tool 'crash' failed") as caught:
            robot.run("x", mcp="inherit")
        assert caught.value.retryable
        assert proc.wait(10) == 3  # the server really died (os._exit(3))
    finally:
        stop(proc)


def test_without_websockets_a_websocket_server_raises_dependency_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "websockets.asyncio.client", None)  # what import sees when it is missing
    client = MCPClient(MCPServer.websocket("neon", "ws://127.0.0.1:1/ws"))
    with pytest.raises(robotlab.DependencyError, match=r"websockets package\) requires robotlab\[mcp\]"):
        client.connect()
    assert not client.connected
