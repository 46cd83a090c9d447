"""What only the thread backend does (the shared WorkerPool suites run on it too, see tests/backends.py).

Thread workers share this interpreter with the test and with each other: these
tests check that one worker's job never sees another's memory, that the
parent's logging and global hooks are left as they were, that a timed-out job
is abandoned rather than killed, and that sleeping (I/O) jobs overlap.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import robotlab
from robotlab import create_memory
from robotlab.errors import Error, JobTimeout
from robotlab.hooks import Hook, ScopedThreadPoolExecutor
from robotlab.parallel import WorkerPool, memory
from robotlab.tools import Tool
from tests import parallel_jobs as jobs
from tests.backends import thread_worker_ids, workers_gone

# Jobs below run on thread workers, so they may meet through objects of this module.
_in_step = threading.Barrier(2, timeout=30)


def write_in_step(prefix: str, rounds: int) -> list[str]:
    """Write one key per round, each right after the other pool's job reached the same round."""
    for n in range(rounds):
        _in_step.wait()
        memory().set(f"{prefix}.{n}", n)
    return memory().keys()


def memory_from_threads() -> dict[str, str]:
    """What ``memory()`` gives in a bare thread and in a robotlab scoped executor the job starts."""
    seen: dict[str, str] = {}

    def bare() -> None:
        try:
            memory()
            seen["bare"] = "reached"
        except Error as exc:
            seen["bare"] = str(exc)

    thread = threading.Thread(target=bare)
    thread.start()
    thread.join()
    with ScopedThreadPoolExecutor(1) as executor:
        executor.submit(lambda: memory().set("scoped", 1)).result()
    seen["scoped"] = "reached"
    return seen


class Remember(Tool):
    """Store a value in self.memory once the other call got here too, and list the keys."""

    def execute(self, key: str) -> list:
        _in_step.wait()
        self.memory.set(key, key)
        return self.memory.keys()


class CountCalls(Hook):
    calls: list[str] = []  # the tool names it saw, read by the test

    @classmethod
    def before_tool_call(cls, ctx):
        cls.calls.append(ctx.tool_name)
        ctx.local.thread = threading.current_thread().name


def test_two_workers_running_jobs_at_once_each_reach_their_own_memory():
    first, second = create_memory(), create_memory()
    with WorkerPool(size=1, backend="thread", memory=first) as one, \
            WorkerPool(size=1, backend="thread", memory=second) as other:
        for _ in range(5):  # each round: both jobs inside their job at once, writing in lockstep
            a, b = one.submit(write_in_step, "a", 20), other.submit(write_in_step, "b", 20)
            assert a.result(60) == [f"a.{n}" for n in range(20)]
            assert b.result(60) == [f"b.{n}" for n in range(20)]
    assert first.keys() == [f"a.{n}" for n in range(20)]
    assert second.keys() == [f"b.{n}" for n in range(20)]


def test_two_tool_calls_of_one_pool_at_once_each_reach_the_memory_they_were_given():
    mine, yours = create_memory(), create_memory()
    with WorkerPool(size=2, backend="thread") as pool:
        for n in range(5):
            a = pool.submit_tool(Remember, {"key": f"mine{n}"}, memory=mine)
            b = pool.submit_tool(Remember, {"key": f"yours{n}"}, memory=yours)
            assert a.result(60)[-1] == f"mine{n}" and b.result(60)[-1] == f"yours{n}"
    assert mine.keys() == [f"mine{n}" for n in range(5)]
    assert yours.keys() == [f"yours{n}" for n in range(5)]


def test_a_job_reaches_the_memory_from_scoped_executors_but_not_from_bare_threads():
    shared = create_memory()
    with WorkerPool(size=1, backend="thread", memory=shared) as pool:
        seen = pool.submit(memory_from_threads).result(30)
    assert "only available inside a job" in seen["bare"]  # documented: pass the proxy to a bare thread
    assert seen["scoped"] == "reached" and shared.get("scoped") == 1


def test_the_parent_logging_is_left_alone_and_gets_each_record_once():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    records: list[logging.LogRecord] = []
    catcher = logging.Handler(logging.WARNING)
    catcher.emit = records.append  # type: ignore[method-assign]
    root.addHandler(catcher)
    try:
        with WorkerPool(size=2, backend="thread") as pool:
            worker = pool.submit(jobs.log_from_worker, "hello").result(30)
            assert root.handlers == [*handlers, catcher] and root.level == level
    finally:
        root.removeHandler(catcher)
    assert root.handlers == handlers and root.level == level
    mine = [r for r in records if r.name == "tests.worker"]
    assert [r.getMessage() for r in mine] == [f"hello from {worker}"]
    assert mine[0].threadName == f"robotlab-thread-worker-{worker}"


def test_a_global_tool_call_hook_fires_once_per_call():
    CountCalls.calls = []
    robotlab.on(CountCalls)
    with WorkerPool(size=2, backend="thread") as pool:
        futures = [pool.submit_tool(jobs.Multiply, {"a": n, "b": 2}) for n in range(6)]
        assert [f.result(30) for f in futures] == [2 * n for n in range(6)]
        assert CountCalls.calls == ["multiply"] * 6
        assert {f.hook_metadata["count_calls"]["thread"] for f in futures} <= {
            f"robotlab-thread-worker-{ident}" for ident in pool.worker_ids}
        assert pool.submit_tool(jobs.Multiply, {"a": 1, "b": 1}, hooks=None).result(30) == 1
    assert CountCalls.calls == ["multiply"] * 6  # hooks=None: no hook at all, not the global ones


def test_n_workers_run_n_sleeping_jobs_at_once():
    size, seconds = 4, 0.5
    with WorkerPool(size=size, backend="thread") as pool:
        assert pool.wait_until_ready(30)
        started = time.monotonic()
        assert [f.result(30) for f in [pool.submit(jobs.sleep, seconds) for _ in range(size)]] == [seconds] * size
        elapsed = time.monotonic() - started
    assert elapsed < size * seconds / 2, f"{size} sleeps of {seconds} s took {elapsed:.2f} s"


def test_a_timed_out_job_is_abandoned_its_thread_left_to_finish_and_replaced(tmp_path, caplog):
    release = tmp_path / "release"
    pool = WorkerPool(size=1, backend="thread")
    (old,) = pool.worker_ids
    with pytest.raises(JobTimeout, match="was abandoned"):
        pool.submit(jobs.wait_for_file, str(release), 60, timeout=0.2).result(30)
    (new,) = pool.worker_ids
    assert new != old and {old, new} <= thread_worker_ids()  # the old thread still runs its job
    assert pool.submit(jobs.add, 1, 2).result(30) == 3  # while its successor serves
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="robotlab.parallel"):
        pool.shutdown(wait=True)
    assert time.monotonic() - started < 10  # two seconds for the abandoned thread, then it is left
    assert f"worker thread {old} is still running a job at shutdown" in caplog.text
    assert old in thread_worker_ids() and workers_gone("thread", [new])
    release.touch()
    assert workers_gone("thread", [old])  # it ended once its job returned


def test_a_function_of_the_main_script_can_be_sent():
    script = textwrap.dedent("""
        from robotlab.parallel import WorkerPool

        def double(x):
            return 2 * x

        with WorkerPool(size=1, backend="thread") as pool:
            print(pool.submit(double, 21).result(30))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"
