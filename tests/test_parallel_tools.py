"""Robots run parallel_safe tools on the default worker pool: same results, hooks and memory, other cores."""

from __future__ import annotations

import os

import psutil
import pytest

import robotlab
from robotlab.errors import RactorBoundaryError
from robotlab.hooks import Hook
from robotlab.llm import ScriptedModel, call
from robotlab.parallel import default_pool, shutdown_pool
from robotlab.testing import assert_parallel_safe, available_backends
from tests import tool_jobs

BACKENDS = available_backends()


@pytest.fixture(autouse=True)
def _fresh_pools():
    yield
    shutdown_pool()


def run(robot_tools, replies, **options):
    robot = robotlab.build(name="worker_bot", model=ScriptedModel(replies), local_tools=robot_tools, **options)
    return robot, robot.run("go", tools="inherit")


@pytest.mark.parametrize("backend", BACKENDS)
def test_parallel_safe_tools_run_on_the_pool_and_others_in_process(backend):
    _, result = run([tool_jobs.WhereAmI, tool_jobs.word_count, tool_jobs.word_count_in_process],
                        [[call("where_am_i", tag="a"), call("word_count", text="one two three"),
                          call("word_count_in_process", text="x y")], "done"], pool_backend=backend)
    where, words, local_words = result.tool_calls
    assert where.where == words.where == backend and local_words.where == "thread"
    assert words.result == 3 and local_words.result == 2 and where.result["tag"] == "a"
    if backend == "process":
        assert where.result["pid"] != os.getpid()
        assert where.result["pid"] in default_pool(backend).worker_ids
    else:  # a subinterpreter is a thread of this process
        assert where.result["pid"] == os.getpid()
    assert result.last_text_content == "done"


def test_several_calls_in_one_reply_run_at_the_same_time_on_different_workers():
    # Each call waits (through the robot's memory) for the other to arrive: run one after the
    # other, the first would wait 30 s and fail.
    robot, result = run([tool_jobs.Rendezvous],
                        [[call("rendezvous", me="a", partner="b"), call("rendezvous", me="b", partner="a")],
                         "met"], pool_size=2)
    a, b = result.tool_calls
    assert a.error is None and b.error is None
    assert a.result != b.result and {a.result, b.result} == set(default_pool().worker_ids)
    assert robot.memory.get("at.a") == b.result and robot.memory.get("at.b") == a.result


def test_the_robot_cannot_tell_the_difference_except_by_speed():
    replies = [[call("word_count", text="a b"), call("explode", reason="no input")], "fine"]
    _, on_pool = run([tool_jobs.word_count, tool_jobs.Explode], list(replies))
    _, in_process = run([tool_jobs.word_count, tool_jobs.Explode], list(replies), parallel_tools=False)
    assert [c.where for c in on_pool.tool_calls] == ["process", "process"]
    assert [c.where for c in in_process.tool_calls] == ["thread", "thread"]
    assert on_pool.messages == in_process.messages
    assert on_pool.tool_calls[1].result == "Error (explode): no input" == on_pool.tool_calls[1].error


def test_pool_backend_thread_runs_parallel_safe_tools_in_process():
    _, result = run([tool_jobs.WhereAmI], [call("where_am_i", tag="t"), "ok"], pool_backend="thread")
    assert result.tool_calls[0].where == "thread" and result.tool_calls[0].result["pid"] == os.getpid()


def test_tool_call_hooks_of_every_level_fire_in_the_worker_and_their_metadata_returns():
    robotlab.on(tool_jobs.PidStamp)
    robot = robotlab.build(name="hooked", model=ScriptedModel([call("word_count", text="a b c"), "ok"]),
                           local_tools=[tool_jobs.word_count])
    robot.on(tool_jobs.Suffix, {"text": "?"})
    result = robot.run("go", tools="inherit")
    record = result.tool_calls[0]
    assert record.where == "process"
    assert record.result == "3?"  # the robot-level around hook wrapped the call in the worker
    assert record.hook_metadata["pid_stamp"]["pid"] != os.getpid()
    assert record.hook_metadata["pid_stamp"]["result"] == "3?"


def test_per_run_hooks_reach_the_worker_too():
    robot = robotlab.build(name="per_run", model=ScriptedModel([call("word_count", text="a"), "ok"]),
                           local_tools=[tool_jobs.word_count])
    result = robot.run("go", tools="inherit", hooks=[tool_jobs.Suffix])
    assert result.tool_calls[0].result == "1!" and result.tool_calls[0].where == "process"


def test_in_process_tool_calls_return_their_hook_metadata_too():
    robotlab.on(tool_jobs.PidStamp)
    _, result = run([tool_jobs.word_count_in_process], [call("word_count_in_process", text="a b"), "ok"])
    assert result.tool_calls[0].hook_metadata == {"pid_stamp": {"pid": os.getpid(), "result": 2}}


def test_a_hook_workers_cannot_import_fails_the_run_before_dispatch():
    class LocalStamp(Hook):
        @classmethod
        def before_tool_call(cls, ctx):
            ctx.local.seen = True

    robotlab.on(LocalStamp)
    robot = robotlab.build(name="local_hook", model=ScriptedModel([call("word_count", text="a"), "ok"]),
                           local_tools=[tool_jobs.word_count])
    with pytest.raises(RactorBoundaryError, match=r"Hook .*LocalStamp cannot be registered in a worker: .*inside a"):
        robot.run("go", tools="inherit")


def test_a_worker_dying_in_a_tool_call_is_a_tool_error_for_the_model_and_the_pool_recovers():
    _, result = run([tool_jobs.DieHard, tool_jobs.word_count],
                        [call("die_hard", how="now"), call("word_count", text="still here"), "recovered"])
    died, counted = result.tool_calls
    assert died.error.startswith("Error (die_hard): Worker pid ") and "signal SIGKILL" in died.error
    assert died.error.endswith("(retryable)")
    assert counted.result == 2 and result.last_text_content == "recovered"


def test_default_pools_are_shared_sized_by_run_config_and_shut_down_on_request():
    robotlab.configure(pool_size=1)
    pool = default_pool()
    assert pool is default_pool() and pool.size == 1 and pool.backend == "process"
    children = [psutil.Process(pid) for pid in pool.worker_ids]
    robotlab.shutdown_pool()
    assert all(not child.is_running() or child.status() == psutil.STATUS_ZOMBIE for child in children)
    again = default_pool()
    assert again is not pool and again.submit(len, "abc").result(30) == 3
    assert default_pool(size=2) is not again and default_pool(size=2).size == 2
    with pytest.raises(robotlab.ConfigurationError, match="in-process"):
        default_pool("thread")


def test_assert_parallel_safe_passes_for_a_tool_that_ships():
    results = assert_parallel_safe(tool_jobs.word_count, {"text": "a b c"}, expected=3)
    assert results == dict.fromkeys(BACKENDS, 3)


@pytest.mark.parametrize(("tool", "args", "reason"), [
    (tool_jobs.word_count_in_process, {"text": "a"}, "not marked parallel_safe = True"),
    (tool_jobs.Explode, {"reason": "kaboom"}, "ToolError: Tool 'tests.tool_jobs:Explode' failed in worker: kaboom"),
    (tool_jobs.Unshippable, {"n": 1}, "cannot be sent back to the parent"),
    (tool_jobs.word_count, {"text": "a b"}, "returned 2, expected 5"),
])
def test_assert_parallel_safe_names_the_reason(tool, args, reason):
    with pytest.raises(AssertionError, match="is not parallel-safe") as caught:
        assert_parallel_safe(tool, args, expected=5 if tool is tool_jobs.word_count else tool_jobs.__name__)
    assert reason in str(caught.value)


def test_assert_parallel_safe_refuses_what_cannot_cross_at_all():
    class Nested(tool_jobs.WhereAmI):
        pass

    with pytest.raises(AssertionError, match=r"cannot be shipped to a worker: .*inside a function"):
        assert_parallel_safe(Nested, {"tag": "x"})
    with pytest.raises(AssertionError, match=r"sample_args\['tag'\]: _io.StringIO is not shareable"):
        import io

        assert_parallel_safe(tool_jobs.WhereAmI, {"tag": io.StringIO()})


@pytest.mark.skipif("subinterpreter" not in BACKENDS, reason="subinterpreters need CPython 3.13+")
def test_assert_parallel_safe_reports_a_module_subinterpreters_refuse():
    with pytest.raises(AssertionError) as caught:
        assert_parallel_safe(tool_jobs.NeedsMsgspec, {"text": "hi"})
    assert "backend='subinterpreter': DependencyError: msgspec" in str(caught.value)
    assert "backend='process'" in str(caught.value)
    assert assert_parallel_safe(tool_jobs.NeedsMsgspec, {"text": "hi"}, backends=["process"]) == {"process": 4}
