"""The memory proxy: a job in a worker reads and writes the parent's Memory."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from robotlab import create_memory
from robotlab.errors import AwaitTimeout, ConfigurationError, Error, RactorBoundaryError, WorkerCrashed
from robotlab.parallel import FrozenDict, WorkerPool, memory
from tests import memory_jobs as jobs

# Tests that take the `backend` fixture (tests/conftest.py) run once per backend of tests/backends.py.


def test_every_write_of_four_workers_arrives_in_order_and_fires_subscriptions(backend):
    memory_ = create_memory()
    seen: list[tuple[str, int]] = []
    lock = threading.Lock()

    def record(change):
        with lock:
            seen.append((change.key, change.value))

    memory_.subscribe("*", record)
    with WorkerPool(size=4, backend=backend, memory=memory_) as pool:
        futures = [pool.submit(jobs.write_many, f"w{i}", 2000) for i in range(4)]
        assert [f.result(120) for f in futures] == [2000] * 4
    assert len(memory_.keys()) == 8000
    assert all(memory_.get(f"w{i}.{n}") == n for i in range(4) for n in range(2000))
    assert len(seen) == 8000
    for i in range(4):  # each worker's writes were applied in the order it made them
        assert [value for key, value in seen if key.startswith(f"w{i}.")] == list(range(2000))


# Process only: the worker dies by os._exit and SIGKILL, which would end a subinterpreter's whole process.
def test_confirmed_writes_stay_when_the_worker_dies_after_them():
    memory_ = create_memory()
    with WorkerPool(size=1, memory=memory_) as pool:
        with pytest.raises(WorkerCrashed):
            pool.submit(jobs.write_then_exit, "a", 500).result(60)
        assert [memory_.get(f"a.{n}") for n in range(500)] == list(range(500))
        hanging = pool.submit(jobs.write_then_hang, "b", 300)
        memory_.get("b.299", wait=30)  # its last write arrived: now kill it from outside
        (pid,) = pool.worker_ids
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(WorkerCrashed):
            hanging.result(60)
        assert [memory_.get(f"b.{n}") for n in range(300)] == list(range(300))
        assert pool.submit(jobs.write_many, "c", 3).result(60) == 3  # the pool still serves
        assert pool.worker_ids != [pid]


def test_a_blocking_read_in_the_parent_wakes_on_a_worker_write(backend):
    memory_ = create_memory()
    with WorkerPool(size=1, backend=backend, memory=memory_) as pool:
        pool.wait_until_ready(30)
        future = pool.submit(jobs.set_later, "ready", {"ids": [1, 2]}, 0.2)
        started = time.monotonic()
        assert memory_.get("ready", wait=30) == {"ids": (1, 2)}
        assert time.monotonic() - started < 10
        future.result(30)


def test_a_blocking_read_in_a_worker_wakes_on_a_parent_or_another_worker_write(backend):
    memory_ = create_memory()
    with WorkerPool(size=2, backend=backend, memory=memory_) as pool:
        pool.wait_until_ready(30)
        waiting = pool.submit(jobs.wait_for, "k", 30)
        time.sleep(0.3)
        assert not waiting.done()
        memory_.set("k", {"a": [1]})
        value = waiting.result(30)
        assert value == {"a": (1,)} and type(value) is FrozenDict
        waiting = pool.submit(jobs.wait_for_two, "x", "y", 30)
        pool.submit(jobs.set_later, "x", 1, 0.1).result(30)
        memory_.set("y", 2)
        assert waiting.result(30) == {"x": 1, "y": 2}


def test_a_worker_read_times_out_with_await_timeout(backend):
    with WorkerPool(size=1, backend=backend, memory=create_memory()) as pool:
        with pytest.raises(AwaitTimeout, match=r"Timeout waiting for 'never' after 0.2 seconds"):
            pool.submit(jobs.wait_for, "never", 0.2).result(30)
        assert pool.submit(jobs.wait_for, "never", False).result(30) is None


def test_the_whole_api_crosses_and_values_come_back_frozen(backend):
    memory_ = create_memory(data={"topic": ["billing"]})
    memory_.set("kept", 1)
    with WorkerPool(size=1, backend=backend, memory=memory_) as pool:
        seen = pool.submit(jobs.round_trip, "k", [1, {"a": 2}]).result(30)
    assert seen["get"] == seen["item"] == (1, FrozenDict({"a": 2}))
    assert seen["in"] is True and seen["keys"] == ["kept", "k"]
    assert seen["deleted"] == (1, {"a": 2}) and seen["after"] == "gone"
    assert seen["data"] == {"topic": ("billing",)}
    assert memory_.keys() == ["kept"]


def test_errors_keep_their_type_and_leave_memory_intact(backend):
    memory_ = create_memory()
    memory_.set("lock", threading.Lock())
    with WorkerPool(size=1, backend=backend, memory=memory_) as pool:
        with pytest.raises(ConfigurationError, match="reserved"):
            pool.submit(jobs.set_reserved).result(30)
        with pytest.raises(KeyError):
            pool.submit(jobs.get_missing_item, "nope").result(30)
        with pytest.raises(RactorBoundaryError, match=r"memory.*_thread.lock"):
            pool.submit(jobs.get_value, "lock").result(30)
        assert pool.submit(jobs.write_many, "ok", 2).result(30) == 2  # the worker still serves
    assert sorted(memory_.keys()) == ["lock", "ok.0", "ok.1"]


def test_memory_is_refused_outside_a_job_without_a_memory_or_after_its_job(backend):
    with pytest.raises(Error, match="only available inside a job"):
        memory()
    with WorkerPool(size=1, backend=backend) as pool:
        with pytest.raises(Error, match="this job has no memory"):
            pool.submit(jobs.ask_for_memory).result(30)
    with WorkerPool(size=1, backend=backend, memory=create_memory()) as pool:
        pool.submit(jobs.keep_proxy_after_the_job).result(30)
        with pytest.raises(Error, match="has ended"):
            pool.submit(jobs.use_kept_proxy).result(30)
    with pytest.raises(ConfigurationError, match="robotlab Memory"):
        WorkerPool(size=1, memory={"a": 1})


def test_a_tool_in_a_worker_sees_the_memory_as_self_memory(backend):
    pool_memory, robot_memory = create_memory(), create_memory()
    with WorkerPool(size=1, backend=backend, memory=pool_memory) as pool:
        assert pool.run_tool(jobs.Remember, {"key": "a", "value": "1"}) == ["a"]
        assert pool.run_tool(jobs.Remember, {"key": "b", "value": "2"}, memory=robot_memory) == ["b"]
    assert pool_memory.snapshot() == {"a": "1"} and robot_memory.snapshot() == {"b": "2"}


# -- atomic read-modify-write through the proxy -----------------------------------------------------------


def test_increments_from_eight_workers_are_never_lost(backend):
    memory_ = create_memory()
    seen = []
    memory_.subscribe("hits", lambda change: seen.append(change.value))
    with WorkerPool(size=8, backend=backend, memory=memory_) as pool:
        futures = [pool.submit(jobs.increment_many, "hits", 1000) for _ in range(8)]
        assert [f.result(120) for f in futures] == [1000] * 8
    assert memory_.get("hits") == 8000
    assert sorted(seen) == list(range(1, 8001))  # one notification per increment, each its own value


def test_compare_and_set_loops_from_workers_lose_nothing(backend):
    memory_ = create_memory()
    with WorkerPool(size=4, backend=backend, memory=memory_) as pool:
        futures = [pool.submit(jobs.add_with_compare_and_set, "n", 250) for _ in range(4)]
        for future in futures:
            future.result(120)
    assert memory_.get("n") == 1000


def test_compare_and_set_in_a_worker_compares_with_the_value_as_the_worker_reads_it(backend):
    memory_ = create_memory()
    memory_.set("cfg", {"ids": [1, 2]})  # the worker reads FrozenDict({'ids': (1, 2)})
    with WorkerPool(size=1, backend=backend, memory=memory_) as pool:
        assert pool.submit(jobs.compare_and_set, "cfg", {"ids": [1, 2]}, ["v", 2]).result(30) is True
        assert pool.submit(jobs.compare_and_set, "cfg", {"ids": [1, 2]}, "lost").result(30) is False
        assert pool.submit(jobs.compare_and_set, "new", None, 1).result(30) is True
    assert memory_.snapshot() == {"cfg": ("v", 2), "new": 1}


def test_increment_errors_cross_with_their_type_and_leave_the_value(backend):
    memory_ = create_memory()
    memory_.set("name", "ada")
    with WorkerPool(size=1, backend=backend, memory=memory_) as pool:
        with pytest.raises(ConfigurationError, match=r"cannot increment memory\['name'\]: it holds a str"):
            pool.submit(jobs.increment_once, "name").result(30)
        with pytest.raises(TypeError, match="by= must be an int or a float, got str"):
            pool.submit(jobs.increment_once, "n", "1").result(30)
        with pytest.raises(ConfigurationError, match="reserved"):
            pool.submit(jobs.increment_once, "data").result(30)
        assert pool.submit(jobs.increment_once, "n", 0.5).result(30) == 0.5
    assert memory_.snapshot() == {"name": "ada", "n": 0.5}


def test_atomic_writes_wake_readers_on_both_sides(backend):
    memory_ = create_memory()
    with WorkerPool(size=2, backend=backend, memory=memory_) as pool:
        pool.wait_until_ready(30)
        waiting = pool.submit(jobs.wait_for, "count", 30)  # a worker blocked on a key ...
        time.sleep(0.3)
        assert not waiting.done()
        memory_.increment("count")  # ... woken by a parent increment
        assert waiting.result(30) == 1
        threading.Timer(0.2, lambda: pool.submit(jobs.compare_and_set, "owner", None, "worker")).start()
        assert memory_.get("owner", wait=30) == "worker"  # a parent reader woken by a worker's compare_and_set
