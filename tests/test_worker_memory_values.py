"""What a worker's memory write reads back as in the parent (docs/networks.md, "Memory written from workers")."""

import pytest

import robotlab
from robotlab.llm import ScriptedModel, call
from robotlab.parallel import FrozenDict, shutdown_pool
from robotlab.parallel.boundary import thaw_json
from tests.stored_value_jobs import RememberProfile


def stored_profile(mode: str):
    net = robotlab.create_network(name="profiles", parallel_mode=mode)
    robot = robotlab.build(name="clerk", model=ScriptedModel([call("remember_profile", customer="ada"), "ok"]),
                           local_tools=[RememberProfile])
    net.task("remember", robot, tools="inherit")
    try:
        result = net.run("remember ada")
    finally:
        if mode != "thread":
            shutdown_pool()
    assert result.ok, result.errors
    return result.memory.get("profile")


def test_thread_mode_stores_the_object_the_tool_wrote():
    profile = stored_profile("thread")
    assert type(profile) is dict and profile == {"name": "ada", "tags": ["new", "vip"], "seen": {"web"}}


def test_a_worker_write_reads_back_frozen():
    profile = stored_profile("process")
    assert type(profile) is FrozenDict and isinstance(profile, dict)
    assert profile == {"name": "ada", "tags": ("new", "vip"), "seen": frozenset({"web"})}
    assert profile != {"name": "ada", "tags": ["new", "vip"], "seen": {"web"}}  # lists came back as tuples
    with pytest.raises(TypeError):
        profile["name"] = "bob"
    thawed = thaw_json(profile)  # plain dicts and lists again: equal to what thread mode stores
    assert type(thawed) is dict and thawed == {"name": "ada", "tags": ["new", "vip"], "seen": {"web"}}
