"""WorkerPool with real workers: the Executor contract, errors, and supervision.

Every test that takes the ``backend`` fixture runs once per backend of
``tests/backends.py`` (worker processes, Ray actors on the session's local
Ray cluster, threads of the test process, and subinterpreters on CPython
3.13+; where a backend cannot run, its tests skip with the DependencyError).
The crash tests run on the backends whose workers are processes of their own
(``OWN_PROCESSES``); the rest are about what only the process backend has,
each marked ``# Process only:`` with the reason.
"""

from __future__ import annotations

import concurrent.futures as cf
import io
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from robotlab.errors import (
    ConfigurationError,
    Error,
    JobTimeout,
    RactorBoundaryError,
    ToolError,
    WireError,
    WorkerCrashed,
)
from robotlab.parallel import RemoteTraceback, WorkerPool, scheduling
from tests import parallel_jobs as jobs
from tests import pool_owner
from tests.backends import BACKENDS, gone, live_in_process_workers, until, workers_gone

# Backends whose workers are processes of their own, so a job may crash or kill one without ending this one.
OWN_PROCESSES = [name for name, spec in BACKENDS.items() if not spec.in_process]


def died_with(backend: str, cause: str) -> str:
    """What WorkerCrashed names as the cause of a worker's death by *cause* (an exit code or signal): Ray does
    not tell a lost actor's exit status to the driver, only that the actor was lost."""
    return "the loss of its Ray actor" if backend == "ray" else cause


@pytest.fixture(scope="module")
def pool(backend):
    """One pool per backend for the tests that leave it healthy."""
    with WorkerPool(size=2, backend=backend) as shared:
        assert shared.wait_until_ready(30)
        yield shared


# -- the concurrent.futures contract ------------------------------------------------------


def test_submit_by_object_or_path_with_args_and_kwargs(pool):
    assert pool.submit(jobs.add, 2, b=3).result(10) == 5
    assert pool.submit("tests.parallel_jobs:add", "a", "b").result(10) == "ab"
    assert pool.submit("math:factorial", 10).result(10) == 3628800


def test_types_survive_the_round_trip(pool):
    value = {"ids": [1, 2], "tags": {"x"}, "when": (1.5, None)}
    result = pool.submit(jobs.echo, value).result(10)
    assert result == {"ids": (1, 2), "tags": frozenset({"x"}), "when": (1.5, None)}
    assert type(result["ids"]) is tuple


def test_map_keeps_input_order_for_any_chunksize(pool):
    expected = [i + i for i in range(200)]
    assert list(pool.map(jobs.add, range(200), range(200))) == expected
    assert list(pool.map(jobs.add, range(200), range(200), chunksize=1)) == expected
    assert list(pool.map(jobs.add, range(200), range(200), chunksize=7)) == expected
    assert list(pool.map(jobs.add, [], [])) == []
    # like the builtin map: as many calls as the shortest iterable has items
    assert list(pool.map(jobs.add, range(10), range(5), chunksize=2)) == list(map(jobs.add, range(10), range(5)))
    assert list(pool.map(jobs.add, iter(range(9)), (1 for _ in range(20)))) == [i + 1 for i in range(9)]


def test_map_timeout_raises_and_cancels_the_rest(backend):
    with WorkerPool(size=1, backend=backend) as one:
        assert one.wait_until_ready(30)  # the timeout is for the jobs, not the worker's start-up
        results = one.map(jobs.sleep, [0.05, 0.5, 0.5, 0.5, 0.5], timeout=0.25, chunksize=1)
        assert next(results) == 0.05
        with pytest.raises(cf.TimeoutError):
            next(results)
        assert one.submit(jobs.add, 1, 1).result(10) == 2


def test_map_raises_the_exception_of_its_chunk(pool):
    results = pool.map(jobs.raise_value_error, ["first"], chunksize=1)
    with pytest.raises(ValueError, match="first"):
        list(results)


def test_as_completed_and_wait(pool):
    futures = [pool.submit(jobs.sleep, s) for s in (0.4, 0.01, 0.2)]
    finished = [f.result() for f in cf.as_completed(futures, timeout=10)]
    assert sorted(finished) == [0.01, 0.2, 0.4]
    first = [pool.submit(jobs.sleep, 0.5), pool.submit(jobs.sleep, 0.01)]
    done, not_done = cf.wait(first, timeout=10, return_when=cf.FIRST_COMPLETED)
    assert first[1] in done
    done, not_done = cf.wait(first, timeout=10)
    assert not not_done


def test_cancel_a_pending_future(backend):
    with WorkerPool(size=1, backend=backend) as one:
        blocker = one.submit(jobs.sleep, 0.5)
        behind = one.submit(jobs.sleep, 0.0)  # pipelined into the worker: already running
        pending = one.submit(jobs.add, 1, 1)
        assert pending.cancel()
        assert pending.cancelled()
        assert blocker.result(10) == 0.5
        assert behind.result(10) == 0.0
        assert one.submit(jobs.add, 2, 2).result(10) == 4


def test_shutdown_cancel_futures_cancels_only_what_has_not_started(backend):
    one = WorkerPool(size=1, backend=backend)
    assert one.wait_until_ready(30)
    running = one.submit(jobs.sleep, 0.3)
    queued = [one.submit(jobs.add, i, i) for i in range(5)]
    one.shutdown(wait=True, cancel_futures=True)
    assert running.result() == 0.3
    cancelled = [f for f in queued if f.cancelled()]
    assert len(cancelled) >= 4  # at most one rode in the worker's pipe behind the running job
    assert all(f.result() == 2 * i for i, f in enumerate(queued) if not f.cancelled())
    with pytest.raises(RuntimeError, match="after shutdown"):
        one.submit(jobs.add, 1, 1)


def test_shutdown_without_cancel_finishes_queued_jobs_and_reaps_workers(backend):
    one = WorkerPool(size=2, backend=backend)
    futures = [one.submit(jobs.sleep, 0.05) for _ in range(6)]
    assert one.wait_until_ready(60)  # a Ray worker's id (its pid) is None until it has connected
    ids = one.worker_ids
    one.shutdown(wait=True)
    assert all(f.result() == 0.05 for f in futures)
    assert workers_gone(backend, ids)  # processes reaped, or interpreters closed


def test_done_callbacks_may_submit_more_work(pool):
    chained: cf.Future = cf.Future()
    first = pool.submit(jobs.add, 1, 1)
    first.add_done_callback(lambda f: chained.set_result(pool.submit(jobs.add, f.result(), 1)))
    assert chained.result(10).result(10) == 3


# -- errors --------------------------------------------------------------------------------


def test_an_exception_keeps_its_type_and_carries_the_remote_traceback(pool):
    with pytest.raises(ValueError, match="boom") as info:
        pool.submit(jobs.raise_value_error, "boom").result(10)
    assert isinstance(info.value.__cause__, RemoteTraceback)
    assert "raise_value_error" in info.value.remote_traceback
    assert 'raise ValueError(message)' in str(info.value.__cause__)


def test_an_exception_that_cannot_be_rebuilt_becomes_a_robotlab_error(pool):
    with pytest.raises(Error, match=r"parallel_jobs\.NeedsTwoArgs: x/y") as info:
        pool.submit(jobs.raise_unrebuildable).result(10)
    assert "raise NeedsTwoArgs" in info.value.remote_traceback


def test_a_result_that_cannot_cross_fails_only_its_job(pool):
    with pytest.raises(WireError, match="cannot be sent back"):
        pool.submit(jobs.return_lock).result(10)
    assert pool.submit(jobs.add, 1, 2).result(10) == 3


def test_bad_arguments_raise_synchronously_from_submit(pool):
    with pytest.raises(RactorBoundaryError, match=r"at args\[0\]: _io\.StringIO is not shareable"):
        pool.submit(jobs.echo, io.StringIO())
    with pytest.raises(RactorBoundaryError, match=r"kwargs\['value'\]\[1\]"):
        pool.submit(jobs.echo, value=[1, io.BytesIO()])
    with pytest.raises(RactorBoundaryError, match="lambda"):
        pool.submit(lambda: 1)
    with pytest.raises(RactorBoundaryError, match="cannot import module"):
        pool.submit("no_such_module_xyz:f")
    with pytest.raises(ConfigurationError, match="timeout"):
        pool.submit(jobs.add, 1, 2, timeout=0)


def test_tools_run_fresh_in_a_worker_and_fail_as_tool_errors(pool):
    assert pool.run_tool(jobs.Multiply, {"a": 6, "b": 7}) == 42
    assert pool.submit_tool("tests.parallel_jobs:Multiply", {"a": 2, "b": 3}).result(10) == 6
    with pytest.raises(ToolError) as info:
        pool.run_tool(jobs.Multiply, {"a": -1, "b": 2})
    assert str(info.value) == "Tool 'tests.parallel_jobs:Multiply' failed in worker: negative input"
    assert info.value.retryable is True
    assert "negative input" in info.value.remote_traceback
    with pytest.raises(RactorBoundaryError, match=r"Cannot make value shareable at args\['io'\]: _io.StringIO"):
        pool.run_tool(jobs.Multiply, {"io": io.StringIO()})


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"start_method": "fork"}, ConfigurationError),
        ({"start_method": "threads"}, ConfigurationError),
        ({"size": 0}, ConfigurationError),
        ({"size": True}, ConfigurationError),
        ({"max_tasks_per_child": 0}, ConfigurationError),
        ({"backend": "gpu"}, ConfigurationError),
        ({"backend": "subinterpreter", "start_method": "spawn"}, ConfigurationError),
        ({"backend": "thread", "start_method": "spawn"}, ConfigurationError),
        ({"backend": "thread", "address": "auto"}, ConfigurationError),
    ],
)
def test_bad_pool_options_are_configuration_errors(kwargs, error):
    with pytest.raises(error):
        WorkerPool(**kwargs)


# -- the worker environment ------------------------------------------------------------------


def test_workers_get_the_parent_sys_path_and_no_litellm(pool, backend):
    state = pool.submit(jobs.worker_state).result(10)
    if backend == "ray":  # the driver's path first, then Ray's own entries (runtime_env working_dir, py_modules)
        assert state["path"][:len(sys.path)] == sys.path
    else:
        assert state["path"] == sys.path  # given explicitly: a subinterpreter does not inherit it
    if backend != "thread":  # a thread worker shares the test process's interpreter: whatever it imported
        assert state["litellm"] is False
    assert state["cost_map"] == "True"
    assert state["worker"] in pool.worker_ids
    if BACKENDS[backend].in_process:
        assert state["pid"] == os.getpid() and state["worker"] != 0  # not the main interpreter
    else:
        assert state["pid"] == state["worker"] != os.getpid()


def test_worker_log_records_reach_the_parent_handlers(pool, backend, caplog):
    with caplog.at_level(logging.WARNING, logger="tests.worker"):
        worker = pool.submit(jobs.log_from_worker, "hello").result(10)
        deadline = time.monotonic() + 5
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.01)  # the record travels just ahead of the result; allow for scheduling
    record = next(r for r in caplog.records if r.name == "tests.worker")
    assert record.getMessage() == f"hello from {worker}"
    assert record.levelno == logging.WARNING
    assert worker in pool.worker_ids
    assert record.process == (os.getpid() if BACKENDS[backend].in_process else worker)


def test_initializer_runs_in_every_worker(backend):
    with WorkerPool(size=2, backend=backend, initializer=jobs.set_flag, initargs=("set",)) as flagged:
        assert {flagged.submit(jobs.read_flag).result(10) for _ in range(4)} == {"set"}


def test_a_failing_initializer_breaks_the_pool_with_its_traceback(backend):
    # The initializer fails after the submit below, however fast the backend starts (a thread in microseconds).
    with WorkerPool(size=1, backend=backend, initializer=jobs.fail_init, initargs=(0.5,)) as broken:
        future = broken.submit(jobs.add, 1, 1)
        with pytest.raises(Error, match=r"(?s)initializer failed.*initializer refused"):
            future.result(30)
        with pytest.raises(Error, match="initializer failed"):
            broken.submit(jobs.add, 1, 1)


def test_max_tasks_per_child_replaces_workers(backend):
    with WorkerPool(size=1, backend=backend, max_tasks_per_child=2) as recycled:
        ids = [recycled.submit(jobs.worker_id).result(10) for _ in range(6)]
        retired = ids[:4]
        assert [ids.count(i) for i in dict.fromkeys(ids)] == [2, 2, 2]
        assert workers_gone(backend, retired)  # while the pool still runs: retired workers are reaped


def shut_down_within(pool: WorkerPool, seconds: float) -> bool:
    """Whether ``pool.shutdown(wait=True)`` returns within *seconds* (it runs on a helper thread)."""
    closer = threading.Thread(target=pool.shutdown, daemon=True)
    closer.start()
    closer.join(seconds)
    return not closer.is_alive()


def test_jobs_queued_at_shutdown_run_even_when_their_worker_retires_meanwhile(backend):
    # The one worker retires after each job: the queued ones need its successors, shutting down or not.
    recycled = WorkerPool(size=1, backend=backend, max_tasks_per_child=1)
    futures = [recycled.submit(jobs.add, i, 1) for i in range(4)]
    assert shut_down_within(recycled, 60), "shutdown(wait=True) hung: the queued jobs had no worker left"
    assert [f.result(0) for f in futures] == [1, 2, 3, 4]


def test_jobs_cancelled_at_shutdown_need_no_worker(backend):
    recycled = WorkerPool(size=1, backend=backend, max_tasks_per_child=1)
    running = recycled.submit(jobs.sleep, 0.3)
    assert until(running.running)
    queued = [recycled.submit(jobs.add, i, 1) for i in range(4)]
    assert all(f.cancel() for f in queued)
    assert shut_down_within(recycled, 60)
    assert running.result(0) == 0.3


# -- supervision ---------------------------------------------------------------------------


def test_large_arguments_and_results_cross_intact(pool):
    blob = bytes(range(256)) * 32_768  # 8 MiB: many times any pipe or socket buffer, both ways
    assert pool.submit(jobs.echo, blob).result(60) == blob
    assert pool.submit(jobs.add, 1, 2).result(10) == 3  # the framing is still in step


def test_a_job_never_waits_behind_a_job_known_to_be_slow(backend, tmp_path):
    release = tmp_path / "release"
    with WorkerPool(size=2, backend=backend) as two:
        for _ in range(3):  # learn that sleep takes more than a millisecond
            assert two.submit(jobs.sleep, 0.01).result(30) == 0.01
        slow = two.submit(jobs.wait_for_file, str(release), 60)
        quick = [two.submit(jobs.sleep, 0.01) for _ in range(6)]
        # all run on the other worker, one after another, while the slow job still runs
        assert [f.result(30) for f in quick] == [0.01] * 6
        assert not slow.done()
        release.touch()
        assert slow.result(30) is True


def test_a_busy_worker_gets_its_next_job_before_a_job_of_consistent_length_ends(backend, monkeypatch):
    monkeypatch.setattr(scheduling, "HANDOVER_LEAD", 60.0)  # hand over at once instead of 2 ms before the end
    with WorkerPool(size=1, backend=backend) as one:
        for _ in range(10):  # sleep(0.1) takes a consistent time (enough runs to outweigh a slow one)
            assert one.submit(jobs.sleep, 0.1).result(30) == 0.1
        running = one.submit(jobs.sleep, 0.5)
        behind = one.submit(jobs.sleep, 0.05)
        # handed to the worker while the first still runs: it waits in the worker's pipe and cannot be cancelled
        assert until(behind.running)
        assert not running.done() and not behind.cancel()
        timed = one.submit(jobs.sleep, 0.05, timeout=5)  # a timeout's clock starts with the job: never handed over
        time.sleep(0.2)
        assert not timed.running() and not running.done()
        assert running.result(30) == 0.5 and behind.result(30) == 0.05 and timed.result(30) == 0.05


def test_no_job_is_handed_over_behind_a_job_whose_length_varies(backend, monkeypatch):
    monkeypatch.setattr(scheduling, "HANDOVER_LEAD", 60.0)
    with WorkerPool(size=1, backend=backend) as one:
        for seconds in (0.01, 0.2, 0.01, 0.2, 0.01, 0.2):
            assert one.submit(jobs.sleep, seconds).result(30) == seconds
        running = one.submit(jobs.sleep, 0.5)
        behind = one.submit(jobs.sleep, 0.01)
        time.sleep(0.2)
        assert not behind.running() and not running.done()
        assert behind.cancel()  # still the pool's to give: the worker never saw it
        assert running.result(30) == 0.5


def test_a_job_past_its_timeout_raises_and_its_worker_is_replaced(backend, tmp_path):
    release = tmp_path / "release"
    with WorkerPool(size=1, backend=backend) as supervised:
        old = supervised.submit(jobs.worker_id).result(30)
        started = time.monotonic()
        with pytest.raises(JobTimeout, match=r"timeout of 0\.3 s") as info:
            supervised.submit(jobs.wait_for_file, str(release), 60, timeout=0.3).result(30)
        assert isinstance(info.value, TimeoutError)
        assert time.monotonic() - started < 30  # the job itself would have run 60 s
        new = supervised.submit(jobs.worker_id).result(30)
        assert new != old and supervised.worker_ids == [new]
        if BACKENDS[backend].killable:
            assert "was stopped and replaced" in str(info.value)
        else:  # a running interpreter or thread cannot be stopped: it is abandoned and ends when its job returns
            assert "was abandoned" in str(info.value)
            assert old in live_in_process_workers(backend)
            release.touch()
        assert workers_gone(backend, [old])
        assert supervised.submit(jobs.sleep, 0.05, timeout=5).result(30) == 0.05


# -- workers that are processes: crashes; the process backend only: Ctrl-C, parent death --------------
# A SIGKILL, segfault or os._exit in a subinterpreter or thread worker ends the whole test process, and
# neither can outlive its process; test_pool_subinterpreter.py and test_pool_thread.py cover what those
# backends do instead.


@pytest.mark.parametrize("backend", OWN_PROCESSES, indirect=True)
@pytest.mark.parametrize(
    ("job", "cause"),
    [(jobs.kill_self, "signal SIGKILL"), (jobs.segfault, "signal SIGSEGV"), (jobs.exit_now, "exit code 3")],
)
def test_a_dying_worker_fails_only_its_job_and_is_replaced(backend, job, cause):
    with WorkerPool(size=2, backend=backend) as supervised:
        assert supervised.wait_until_ready(60)
        before = set(supervised.worker_ids)
        with pytest.raises(WorkerCrashed, match=died_with(backend, cause)) as info:
            supervised.submit(job).result(30)
        assert job.__name__ in str(info.value)
        assert supervised.submit(jobs.add, 1, 2).result(30) == 3
        after = set(supervised.worker_ids)
        assert len(after) == 2 and len(before - after) == 1
        assert gone(list(before - after))


@pytest.mark.parametrize("backend", OWN_PROCESSES, indirect=True)
def test_jobs_queued_behind_crashes_at_shutdown_still_run(backend):
    # CPython's test_crash_big_data hung this way: every worker crashed during shutdown(wait=True),
    # none was replaced, and the jobs still queued waited for a worker forever.
    supervised = WorkerPool(size=2, backend=backend)
    crashes = [supervised.submit(jobs.exit_now) for _ in range(2)]
    queued = [supervised.submit(jobs.add, i, 1) for i in range(4)]
    assert shut_down_within(supervised, 60), "shutdown(wait=True) hung: the queued jobs had no worker left"
    for crash in crashes:
        with pytest.raises(WorkerCrashed):
            crash.result(0)
    assert [f.result(0) for f in queued] == [1, 2, 3, 4]


@pytest.mark.parametrize("backend", OWN_PROCESSES, indirect=True)
def test_a_kill_while_other_jobs_are_in_flight_fails_only_the_killed_job(backend, tmp_path):
    pidfile = tmp_path / "pid"
    with WorkerPool(size=2, backend=backend) as supervised:
        victim_job = supervised.submit(jobs.sleep_with_pidfile, str(pidfile), 30)
        others = [supervised.submit(jobs.sleep, 0.01) for _ in range(40)]
        deadline = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        victim = int(pidfile.read_text())
        os.kill(victim, 9)
        with pytest.raises(WorkerCrashed, match=rf"pid {victim}\b.* died with {died_with(backend, 'signal SIGKILL')}"):
            victim_job.result(30)
        assert [f.result(30) for f in others] == [0.01] * 40
        assert victim not in supervised.worker_ids
        assert gone([victim])


@pytest.mark.parametrize("backend", OWN_PROCESSES, indirect=True)
def test_a_crash_mid_batch_requeues_the_jobs_queued_behind_it(backend):
    with WorkerPool(size=2, backend=backend) as supervised:
        futures = [supervised.submit(jobs.add, i, 0) for i in range(20)]
        futures.insert(10, supervised.submit(jobs.kill_self))
        futures += [supervised.submit(jobs.add, i, 0) for i in range(20, 40)]
        outcomes = []
        for f in futures:
            try:
                outcomes.append(f.result(30))
            except WorkerCrashed:
                outcomes.append("crashed")
        assert outcomes.count("crashed") == 1
        assert [o for o in outcomes if o != "crashed"] == list(range(40))


@pytest.mark.parametrize("backend", OWN_PROCESSES, indirect=True)
def test_a_crash_behind_a_deep_pipeline_of_short_jobs_requeues_all_of_them(backend):
    with WorkerPool(size=2, backend=backend) as supervised:
        assert [supervised.submit(jobs.add_or_die, i, 0).result(30) for i in range(20)] == list(range(20))
        # add_or_die is now known to be short: workers hold several of them at once
        futures = [supervised.submit(jobs.add_or_die, i, 0) for i in range(30)]
        futures.insert(15, supervised.submit(jobs.add_or_die, 0, 0, die=True))
        futures += [supervised.submit(jobs.add_or_die, i, 0) for i in range(30, 60)]
        outcomes = []
        for f in futures:
            try:
                outcomes.append(f.result(30))
            except WorkerCrashed:
                outcomes.append("crashed")
        assert outcomes.count("crashed") == 1
        assert [o for o in outcomes if o != "crashed"] == list(range(60))


# Process only: each crash is an os._exit of the worker process. (On Ray each replacement is a new actor,
# about 0.7 s to start here: 100 would take over a minute; the crash tests above cover Ray's replacement.)
def test_one_hundred_consecutive_crashes_and_the_pool_still_serves():
    with WorkerPool(size=2) as supervised:
        crashes = [supervised.submit(jobs.exit_now, 1) for _ in range(100)]
        for f in crashes:
            with pytest.raises(WorkerCrashed, match="exit code 1"):
                f.result(60)
        assert list(supervised.map(jobs.add, range(10), range(10))) == [2 * i for i in range(10)]
        assert len(supervised.worker_ids) == 2


def test_the_forkserver_preloads_the_worker_runtime_and_keeps_the_users_preloads():
    # A fresh interpreter, so that this pool is the first to start the forkserver.
    code = (
        "import multiprocessing as mp\n"
        "from multiprocessing import forkserver\n"
        "from robotlab.parallel import WorkerPool\n"
        "mp.set_forkserver_preload(['tests.parallel_jobs'])\n"
        "with WorkerPool(size=1) as pool:\n"
        "    print(forkserver._forkserver._preload_modules)\n"
        "    print(pool.submit('tests.parallel_jobs:imported_by').result(30))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                         capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert out[0] == "['tests.parallel_jobs', 'robotlab.parallel._worker']"
    imported_in, forkserver_pid, worker_pid = eval(out[1])
    assert imported_in == forkserver_pid != worker_pid  # the forkserver imported what it preloads, before forking


def start_owner(mode: str, scratch: Path) -> tuple[subprocess.Popen, list[int]]:
    owner = pool_owner.launch(mode, scratch)
    descendants = [p.pid for p in psutil.Process(owner.pid).children(recursive=True)]
    assert len(descendants) >= 2  # the two workers (and the forkserver)
    return owner, descendants


# Process only: checks for orphaned worker processes (see test_pool_subinterpreter.py for Ctrl-C there,
# and test_pool_ray.py for a killed owner of Ray workers: Ray's own processes, not the owner's, host them).
@pytest.mark.parametrize("mode", ["with", "bare"])
def test_ctrl_c_in_the_parent_ends_every_worker(mode, tmp_path):
    owner, descendants = start_owner(mode, tmp_path)
    os.killpg(owner.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
    assert owner.wait(30) != 0
    assert "KeyboardInterrupt" in owner.stderr.read()
    assert gone(descendants), f"left behind: {descendants}"


# Process only: subinterpreters are part of the parent process and die with it.
def test_workers_exit_by_themselves_when_the_parent_dies(tmp_path):
    owner, descendants = start_owner("with", tmp_path)
    owner.kill()  # SIGKILL: no cleanup code runs in the parent
    owner.wait(30)
    assert gone(descendants), f"left behind: {descendants}"
