"""How callers wait on a WorkerPool: each ``result()`` reads its own worker's pipe.

The pool hands a job's result straight to the thread blocked in
``future.result()`` when that thread is the only one reading the job's worker;
other waiters (``as_completed``, ``wait``, a second thread on the same worker)
are served by the supervisor. These tests mix both paths.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading

import pytest

from robotlab.errors import Error, JobTimeout, WorkerCrashed
from robotlab.parallel import WorkerPool
from tests import parallel_jobs as jobs


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(size=2) as shared:
        assert shared.wait_until_ready(30)
        yield shared


def test_many_threads_waiting_on_the_same_workers_all_get_their_own_results(pool):
    results: dict[int, object] = {}

    def caller(n: int) -> None:
        for i in range(50):
            results[n * 1000 + i] = pool.submit(jobs.add, n, i).result(30)

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == {n * 1000 + i: n + i for n in range(6) for i in range(50)}


def test_a_result_wait_that_times_out_leaves_the_job_to_finish(pool):
    future = pool.submit(jobs.sleep, 0.5)
    with pytest.raises(cf.TimeoutError):
        future.result(0.05)
    assert future.result(10) == 0.5  # read later, by the same or another path
    assert pool.submit(jobs.add, 1, 1).result(10) == 2


def test_direct_readers_and_as_completed_share_one_pool(pool):
    futures = [pool.submit(jobs.sleep, 0.05 * (i % 3)) for i in range(12)]
    first = futures[0].result(10)
    assert first == 0.0
    assert sorted(f.result() for f in cf.as_completed(futures, timeout=30)) == sorted(0.05 * (i % 3)
                                                                                   for i in range(12))


def test_a_worker_killed_while_its_caller_reads_fails_that_job_only(pool):
    with pytest.raises(WorkerCrashed, match="died"):
        pool.submit(jobs.kill_self).result(30)
    assert pool.submit(jobs.add, 2, 3).result(30) == 5


def test_a_job_timeout_reaches_a_caller_blocked_in_result():
    with WorkerPool(size=1) as single:
        with pytest.raises(JobTimeout, match=r"timeout of 0\.3 s"):
            single.submit(jobs.sleep, 30, timeout=0.3).result(30)
        assert single.submit(jobs.add, 1, 2).result(30) == 3


def test_wait_until_ready_raises_when_the_pool_breaks_instead_of_blocking():
    with WorkerPool(size=1, initializer=jobs.fail_init) as broken:
        with pytest.raises(Error, match="initializer failed"):
            broken.wait_until_ready()  # no timeout: it must not block forever
