"""WorkerPool as a ``concurrent.futures.Executor`` would be used, and the faults a job must keep to itself.

Each test runs on every backend (see tests/backends.py) unless it says why not:
classes, functions and enum members cross by import path; bound methods and
``functools.partial`` run; a job's ``SystemExit`` / ``KeyboardInterrupt``, or a
result whose pickling or unpickling exits, fails that job only; ``map`` keeps
no result alive once handed out; ``max_workers`` is ``size``.
"""

from __future__ import annotations

import functools
import gc
import pickle
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from robotlab.errors import ConfigurationError, Error, JobFailed, RactorBoundaryError, WireError
from robotlab.parallel import WorkerPool, freeze_deep
from robotlab.parallel.boundary import MAX_DEPTH
from tests import fault_jobs as jobs
from tests.test_boundary_wire import type_exact_equal, values

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pool(backend: str):
    with WorkerPool(size=2, backend=backend) as pool:
        assert pool.wait_until_ready(60)  # worker_ids are known from here on (a Ray worker's once it connects)
        yield pool


def test_classes_functions_and_enum_members_cross_as_themselves(pool):
    sent = (ValueError, jobs.Color, jobs.Color.RED, jobs.power, len, {"error": jobs.CustomError})
    assert pool.submit(jobs.describe, sent).result() == sent
    assert pool.submit(jobs.is_subclass, jobs.CustomError, Exception).result() is True
    assert pool.submit(jobs.call, jobs.power, 4).result() == 16


def test_an_exception_class_argument_is_raised_in_the_worker_as_itself(pool):
    with pytest.raises(jobs.CustomError, match="from the worker"):
        pool.submit(jobs.raise_it, jobs.CustomError, "from the worker").result()


def test_a_class_workers_cannot_import_is_refused_with_its_path(pool):
    class Local:
        pass

    with pytest.raises(RactorBoundaryError, match=r"at args\[1\]\['cls'\]: .*defined inside a function"):
        pool.submit(jobs.describe, 1, {"cls": Local})
    with pytest.raises(RactorBoundaryError, match=r"at kwargs\['fn'\]: cannot send lambda"):
        pool.submit(jobs.describe, value=1, fn=lambda: 1)


@pytest.mark.parametrize(("job", "raised"), [
    (jobs.exit_job, "SystemExit: 1"),
    (jobs.interrupt, "KeyboardInterrupt"),
    (jobs.generator_exit, "GeneratorExit"),
    (jobs.return_exit_at_pickle, "SystemExit: 1"),  # the result's pickling, in the worker, exits
])
def test_a_job_that_exits_fails_with_job_failed_and_the_pool_keeps_serving(pool, job, raised):
    with pytest.raises(JobFailed, match=f"{job.__name__} raised {raised} in the worker") as caught:
        pool.submit(job).result()
    assert isinstance(caught.value, Exception)
    assert caught.value.type_name == "builtins." + raised.split(":")[0]
    assert pickle.loads(pickle.dumps(caught.value)).type_name == caught.value.type_name
    assert pool.submit(jobs.power, 5).result() == 25


def test_a_result_whose_unpickling_exits_in_the_parent_fails_only_its_job(pool):
    with pytest.raises(WireError, match=r"return_exit_at_unpickle cannot be decoded here: .*SystemExit"):
        pool.submit(jobs.return_exit_at_unpickle).result()
    # The supervisor and the reading thread both survive: queued work and new work still run.
    futures = [pool.submit(jobs.return_exit_at_unpickle) for _ in range(4)] + [pool.submit(jobs.power, 6)]
    assert [type(f.exception()) for f in futures[:4]] == [WireError] * 4
    assert futures[-1].result() == 36


def test_a_job_whose_arguments_cannot_be_rebuilt_in_the_worker_fails_alone(pool):
    workers = pool.worker_ids
    futures = [pool.submit(jobs.describe, jobs.OnlyHere()) for _ in range(3)] + [pool.submit(jobs.power, 3)]
    for future in futures[:3]:
        with pytest.raises(WireError, match=r"cannot be decoded in this worker: .*OnlyHere cannot be rebuilt"):
            future.result()
    assert futures[-1].result() == 9
    assert pool.worker_ids == workers  # no worker died for it


def test_an_exception_that_cannot_be_pickled_still_fails_its_job(pool):
    with pytest.raises(Error, match="_UnpicklableError: odd"):
        pool.submit(jobs.raise_exit_at_pickle).result()
    assert pool.submit(jobs.power, 7).result() == 49


def test_values_as_deep_as_max_depth_cross_and_deeper_ones_are_refused(pool):
    deep = jobs.deep_result(MAX_DEPTH - 2)  # MAX_DEPTH containers: the lists and the argument tuple
    assert pool.submit(jobs.describe, deep).result() == freeze_deep(deep)
    with pytest.raises(RactorBoundaryError, match=f"nests deeper than {MAX_DEPTH} levels"):
        pool.submit(jobs.describe, jobs.deep_result(MAX_DEPTH - 1))
    # A result is not frozen first: one too deep for pickle fails its job with the same error type.
    with pytest.raises(RactorBoundaryError, match=r"result of tests.fault_jobs:deep_result cannot be sent back.*"
                                                  r"nests deeper than pickle can recurse"):
        pool.submit(jobs.deep_result, 100_000).result()
    assert pool.submit(jobs.power, 8).result() == 64


@pytest.mark.parametrize("chunksize", [1, 3])
def test_map_releases_each_result_as_it_hands_it_out(pool, chunksize):
    # CPython issue 14406: a long map over big results must run in bounded memory.
    seen = 0
    for obj in pool.map(jobs.payload, range(10), chunksize=chunksize):
        ref = weakref.ref(obj)
        assert obj.n == seen
        del obj
        gc.collect()
        assert ref() is None
        seen += 1
    assert seen == 10


def test_bound_methods_classmethods_and_partials_run(pool):
    assert pool.submit(jobs.Scale(3).times, 5).result() == 15
    assert pool.submit(jobs.Scale.unit, 5).result() == 5
    assert pool.submit(jobs.square_of_three).result() == 9
    assert pool.submit(functools.partial(jobs.power, exponent=3), 2).result() == 8
    assert pool.submit(functools.partial(functools.partial(jobs.power, 2), exponent=5)).result() == 32
    assert list(pool.map(jobs.Scale(2).times, range(5))) == [0, 2, 4, 6, 8]
    assert list(pool.map(functools.partial(jobs.power, exponent=3), range(5), chunksize=2)) == [0, 1, 8, 27, 64]


class Counter:
    """A mutable instance: its bound method cannot cross."""

    def __init__(self):
        self.count = 0

    def bump(self):
        self.count += 1


def test_a_bound_method_of_a_mutable_instance_is_refused_saying_so():
    with WorkerPool(size=1, backend="thread") as pool:
        with pytest.raises(RactorBoundaryError, match=r"at the instance of bound method Counter.bump: "
                                                      r"tests.test_pool_faults.Counter is not shareable"):
            pool.submit(Counter().bump)
        with pytest.raises(RactorBoundaryError, match=r"is a bound method.*f\(obj\) instead of obj.f"):
            pool.submit(jobs.describe, [].append)


def test_max_workers_is_size_and_bad_sizes_are_value_errors():
    with WorkerPool(max_workers=3, backend="thread") as pool:
        assert pool.size == 3 and len(pool.worker_ids) == 3
    for bad in (0, -1, 1.5, "many"):
        with pytest.raises(ConfigurationError, match="max_workers must be greater than 0") as caught:
            WorkerPool(max_workers=bad, backend="thread")
        assert isinstance(caught.value, ValueError)
        with pytest.raises(ValueError, match="size must be 'auto' or an integer >= 1"):
            WorkerPool(size=bad, backend="thread")
    with pytest.raises(ValueError, match="give size or max_workers, not both"):
        WorkerPool(2, max_workers=2, backend="thread")
    with pytest.raises(TypeError, match="not shareable"):  # RactorBoundaryError is a TypeError, as pickle's is
        freeze_deep(Counter())


@given(values)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_value_freeze_deep_accepts_arrives_equal(pool, value):
    frozen = freeze_deep(value)
    type_exact_equal(pool.submit(jobs.describe, value).result(), frozen)


@pytest.mark.parametrize("start_method", ["forkserver", "spawn"])
def test_a_script_without_a_main_guard_gets_one_clear_error(tmp_path, start_method):
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(f"""
        from robotlab.parallel import WorkerPool
        pool = WorkerPool(size=2, start_method={start_method!r})
        print(pool.submit(abs, -4).result())
    """))
    run = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path,
                         env={"PYTHONPATH": str(ROOT / "src"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert run.returncode != 0
    assert 'if __name__ == "__main__":' in run.stderr and str(script) in run.stderr
    assert run.stderr.count("Traceback") == 1, run.stderr  # the parent's; no worker printed one
    assert len(run.stderr.splitlines()) < 30
