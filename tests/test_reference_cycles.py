"""Robots, their tools and networks are freed by reference counting, not left to the cyclic GC.

A reference cycle keeps a whole robot (its memory, conversation, results) alive
until a full collection, and every full collection walks it: a 1,000-task
network spent a fifth of its wall time there (docs/performance.md).
"""

from __future__ import annotations

import gc
import time
import weakref

import robotlab
from robotlab.llm import ScriptedModel, call


@robotlab.tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


def freed_without_gc(make) -> bool:
    """Whether the object *make()* returns is freed by reference counting alone once dropped.

    A sync tool's helper thread may still hold its finished work item (and through its
    context the run) for a moment after the result is back: wait for that, with the
    cyclic GC off, so only reference counting can free the object.
    """
    gc.collect()
    gc.disable()
    try:
        ref = weakref.ref(make())
        deadline = time.monotonic() + 2
        while ref() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        return ref() is None
    finally:
        gc.enable()


def robot_with_tool() -> robotlab.Robot:
    return robotlab.build(name="r", model=ScriptedModel([call("lookup", key="a"), "done"]), local_tools=[lookup])


def test_a_robot_with_tools_is_freed_after_a_run():
    def make():
        robot = robot_with_tool()
        assert robot.run("go", tools="inherit").tool_calls[0].result == "A"
        return robot

    assert freed_without_gc(make)


def test_a_network_is_freed_after_a_run():
    def make():
        network = robotlab.create_network(name="n")
        network.task("a", robot_with_tool(), tools="inherit")
        network.task("b", robotlab.build(name="s", model=ScriptedModel(["ok"])), depends_on=["a"])
        assert network.run("go").ok
        return network

    assert freed_without_gc(make)


def test_a_tool_knows_its_robot_while_the_robot_lives():
    robot = robot_with_tool()
    tool = robot.tools.resolve("lookup")
    assert tool.robot is robot
    del robot
    gc.collect()
    assert tool.robot is None  # a weak back reference: the robot owns its tools, not the other way round
