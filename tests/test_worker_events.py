"""What happens in workers reaches the parent: Narrator lines of worker tasks, and where each tool call ran."""

from __future__ import annotations

import io
import os
import re

import pytest

import robotlab
from robotlab.llm import ScriptedModel, call
from robotlab.parallel import default_pool, shutdown_pool
from tests import network_jobs, tool_jobs

MODES = ["thread", "process", "subinterpreter"]


@pytest.fixture(autouse=True, scope="module")
def _stop_pools():
    yield
    shutdown_pool()


def two_tasks(mode):
    net = robotlab.create_network(name="n", parallel_mode=mode)
    net.task("a", robotlab.build(name="ra", model=ScriptedModel([call("where"), "a done"]),
                                 local_tools=[network_jobs.where]), tools="inherit")
    net.task("b", robotlab.build(name="rb", model=ScriptedModel(["b done"])), depends_on=["a"])
    return net


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_the_narrators_stream_shows_what_worker_tasks_do_in_order(mode):
    stream = io.StringIO()
    robotlab.Narrator.enable(stream=stream)
    result = two_tasks(mode).run("go")
    assert result.ok
    lines = [re.sub(r" \([\d.]+ ms\)$", "", line) for line in stream.getvalue().splitlines()]  # no timings
    pid = result["a"].result.tool_calls[0].result
    assert lines == [
        "[network_run] network=n starting",
        "[task] a starting (robot=ra)",
        "[run] robot=ra request='go'",
        "[llm_generation] robot=ra iteration=0",
        "[llm_generation] robot=ra -> tool calls ['where']",
        f"[tool_call] where args={{}} -> {pid}",
        "[llm_generation] robot=ra iteration=1",
        "[llm_generation] robot=ra -> 'a done'",
        "[run] robot=ra -> 'a done'",
        "[task] a done",
        "[task] b starting (robot=rb)",
        "[run] robot=rb request='go\\n\\nResults from earlier tasks:\\n[a] a done'",
        "[llm_generation] robot=rb iteration=0",
        "[llm_generation] robot=rb -> 'b done'",
        "[run] robot=rb -> 'b done'",
        "[task] b done",
        "[network_run] network=n done",
    ]


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_a_network_tasks_tool_call_says_which_backend_and_worker_ran_it(mode):
    record = two_tasks(mode).run("go")["a"].result.tool_calls[0]
    assert record.where == mode
    if mode == "thread":
        assert record.worker is None and record.result == os.getpid()
    else:  # the robot's worker ran it, in-process there
        assert record.worker in default_pool(mode).worker_ids
        assert record.result == (record.worker if mode == "process" else os.getpid())
    assert record.queued_s == 0.0 and record.run_s == record.duration > 0


@pytest.mark.parametrize("backend", ["process", "subinterpreter"], indirect=True)
def test_pool_tool_calls_split_their_time_into_queued_and_run(backend):
    # One worker, two 0.2 s calls in one reply: the second waits for the first.
    default_pool(backend, 1).run_tool(tool_jobs.nap, {"seconds": 0})  # started, the tool imported
    robot = robotlab.build(name="r", model=ScriptedModel([[call("nap", seconds=0.2), call("nap", seconds=0.2)],
                                                          "done"]),
                           local_tools=[tool_jobs.nap], pool_backend=backend, pool_size=1)
    first, second = sorted(robot.run("go", tools="inherit").tool_calls, key=lambda c: c.queued_s)
    for record in (first, second):
        assert record.where == backend and record.worker == default_pool(backend, 1).worker_ids[0]
        assert 0.2 <= record.run_s < 0.35
        assert record.queued_s + record.run_s == pytest.approx(record.duration)
    assert first.queued_s < 0.1 <= 0.18 <= second.queued_s


def test_in_process_tool_calls_ran_where_the_robot_runs():
    robot = robotlab.build(name="r", model=ScriptedModel([call("word_count_in_process", text="a b"), "done"]),
                           local_tools=[tool_jobs.word_count_in_process])
    (record,) = robot.run("go", tools="inherit").tool_calls
    assert (record.where, record.worker, record.queued_s) == ("thread", None, 0.0)
    assert record.run_s == record.duration > 0
