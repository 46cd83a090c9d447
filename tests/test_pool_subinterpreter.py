"""WorkerPool(backend="subinterpreter"): real isolated interpreters on CPython 3.13+.

On older Pythons (or without the backport) the backend must refuse with a
DependencyError naming what to install; these tests then check that refusal
instead of skipping, and ROBOTLAB_REQUIRE_SUBINTERPRETERS=1 turns a missing
backend into a failure.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import sys
import time

import pytest

from robotlab.errors import DependencyError, JobTimeout, RactorBoundaryError, ToolError
from robotlab.parallel import WorkerPool
from robotlab.parallel.subinterpreter_backend import load_interpreters
from tests import parallel_jobs as jobs

try:
    load_interpreters()
    UNAVAILABLE = None
except DependencyError as exc:
    UNAVAILABLE = str(exc)

needs_subinterpreters = pytest.mark.skipif(UNAVAILABLE is not None and
                                           os.environ.get("ROBOTLAB_REQUIRE_SUBINTERPRETERS") != "1",
                                           reason=f"DependencyError: {UNAVAILABLE}")


@pytest.mark.skipif(UNAVAILABLE is None, reason="subinterpreters are available here")
def test_the_backend_refuses_with_what_to_install():
    with pytest.raises(DependencyError, match=r"CPython 3\.13|robotlab\[subinterpreters\]"):
        WorkerPool(size=1, backend="subinterpreter")


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(size=2, backend="subinterpreter") as shared:
        assert shared.wait_until_ready(30)
        yield shared


@needs_subinterpreters
def test_jobs_run_in_other_interpreters_of_this_process(pool):
    state = pool.submit(jobs.worker_state).result(10)
    assert state["pid"] == os.getpid()
    assert state["path"] == sys.path and state["litellm"] is False
    assert pool.submit(jobs.add, 2, b=3).result(10) == 5
    assert list(pool.map(jobs.add, range(50), range(50))) == [2 * i for i in range(50)]
    assert sorted(f.result() for f in cf.as_completed([pool.submit(jobs.sleep, s) for s in (0.2, 0.01)])) == [0.01, 0.2]


@needs_subinterpreters
def test_errors_cross_as_in_the_process_backend(pool):
    with pytest.raises(ValueError, match="boom") as info:
        pool.submit(jobs.raise_value_error, "boom").result(10)
    assert "raise_value_error" in info.value.remote_traceback
    with pytest.raises(ToolError, match="failed in worker: negative input"):
        pool.run_tool(jobs.Multiply, {"a": -1, "b": 2})
    with pytest.raises(RactorBoundaryError, match=r"__main__|lambda"):
        pool.submit(lambda: 1)


@needs_subinterpreters
def test_a_module_that_refuses_subinterpreters_fails_the_job_not_the_worker(pool):
    ids = pool.worker_ids
    with pytest.raises(DependencyError, match=r"msgspec\._core cannot be imported in a subinterpreter.*'process'"):
        pool.submit("msgspec:json.encode", 1).result(10)
    assert pool.submit(jobs.add, 1, 1).result(10) == 2
    assert pool.worker_ids == ids


@needs_subinterpreters
def test_a_timed_out_job_is_abandoned_and_its_interpreter_replaced():
    with WorkerPool(size=1, backend="subinterpreter") as one:
        old = one.worker_ids
        started = time.monotonic()
        with pytest.raises(JobTimeout, match="abandoned"):
            one.submit(jobs.sleep, 1.0, timeout=0.2).result(10)
        assert time.monotonic() - started < 0.9
        assert one.submit(jobs.add, 1, 2).result(10) == 3
        assert one.worker_ids != old


@needs_subinterpreters
def test_start_method_is_refused_for_subinterpreters():
    from robotlab.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="start_method"):
        WorkerPool(size=1, backend="subinterpreter", start_method="spawn")
