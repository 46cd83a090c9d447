"""The WorkerPool backends the pool tests run on: one list, and what tests need to know about each.

Tests take the ``backend`` fixture (``tests/conftest.py``) to run once per
backend in :data:`BACKENDS`; adding a backend is one line there. A backend
this interpreter cannot run is skipped with its ``DependencyError`` text as
the reason (shown by ``pytest -ra``), or fails the test when its
``require_env`` variable is ``1`` (CI sets ``ROBOTLAB_REQUIRE_SUBINTERPRETERS=1``
on 3.13, so a broken install cannot pass as a skip).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from dataclasses import dataclass

import psutil
import pytest

from robotlab.errors import DependencyError
from robotlab.parallel import resolve
from robotlab.parallel.thread_backend import THREAD_NAME


@dataclass(frozen=True)
class Backend:
    """A WorkerPool backend as the tests see it.

    probe: import path of a function that raises DependencyError where the backend cannot run (None: always runs).
    require_env: environment variable that turns "cannot run here" into a failure when set to ``1``.
    in_process: workers run in the test process (worker ids are interpreter or thread-worker ids, not pids).
    killable: a timed-out job's worker is stopped; otherwise it is abandoned and ends when its job returns.
    fixture: name of a fixture the backend needs set up first (say, a running cluster), or None.
    """

    name: str
    probe: str | None = None
    require_env: str | None = None
    in_process: bool = False
    killable: bool = True
    fixture: str | None = None


BACKENDS: dict[str, Backend] = {backend.name: backend for backend in (
    Backend("process"),
    Backend("subinterpreter", "robotlab.parallel.subinterpreter_backend:load_interpreters",
            "ROBOTLAB_REQUIRE_SUBINTERPRETERS", in_process=True, killable=False),
    Backend("thread", in_process=True, killable=False),
    Backend("ray", "robotlab.parallel.ray_backend:load_ray", "ROBOTLAB_REQUIRE_RAY", fixture="ray_cluster"),
)}


@functools.cache
def unavailable(name: str) -> str | None:
    """Why backend *name* cannot run in this interpreter (``"DependencyError: ..."``), or None if it can."""
    probe = BACKENDS[name].probe
    if probe is None:
        return None
    try:
        resolve(probe)()
    except DependencyError as exc:
        return f"DependencyError: {exc}"
    return None


def use(name: str) -> str:
    """*name* if this interpreter runs that backend; else skip the test, or fail it when the backend is required."""
    reason = unavailable(name)
    if reason is not None:
        variable = BACKENDS[name].require_env
        if variable is not None and os.environ.get(variable) == "1":
            pytest.fail(f"{variable}=1 but backend={name!r} cannot run here: {reason}")
        pytest.skip(reason)
    return name


def prepared(request: pytest.FixtureRequest, name: str) -> str:
    """:func:`use` *name*, then set up the fixture it needs (the session's Ray cluster, say); returns *name*."""
    use(name)
    if BACKENDS[name].fixture is not None:
        request.getfixturevalue(BACKENDS[name].fixture)
    return name


def until(condition, seconds: float = 10.0) -> bool:
    """Poll *condition* until it holds (True) or *seconds* pass (False)."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.002)
    return True


def gone(pids: list[int], within: float = 10.0) -> bool:
    """True once none of *pids* is a live (non-zombie) process; kills any that remain (so a failing
    test does not leave them behind for the rest of the run)."""
    # psutil.Process(None) is this very process: a worker id that is not a pid yet (a Ray worker
    # still connecting has None) would make this wait for, then kill, the test run itself.
    if not all(isinstance(pid, int) for pid in pids):
        raise TypeError(f"gone() takes process ids; got {pids!r}")
    deadline = time.monotonic() + within
    while True:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return True
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    for pid in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(pid).kill()
    return False


def interpreter_ids() -> set[int]:
    """Ids of the interpreters that exist in this process now."""
    from robotlab.parallel.subinterpreter_backend import load_interpreters

    return {interp.id for interp in load_interpreters().list_all()}


def thread_worker_ids() -> set[int]:
    """Ids of the thread workers (``backend="thread"``) whose threads are running now."""
    prefix = THREAD_NAME.format("")
    return {int(thread.name[len(prefix):]) for thread in threading.enumerate() if thread.name.startswith(prefix)}


def live_in_process_workers(backend: str) -> set[int]:
    """Ids of the workers of an in-process *backend* that exist now: interpreters, or running thread workers."""
    return thread_worker_ids() if backend == "thread" else interpreter_ids()


def workers_gone(backend: str, ids: list[int], within: float = 10.0) -> bool:
    """True once the workers *ids* of a *backend* pool no longer exist: their processes were reaped,
    their interpreters closed, or their threads ended."""
    if not BACKENDS[backend].in_process:
        return gone(ids, within)
    deadline = time.monotonic() + within
    while live_in_process_workers(backend) & set(ids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True
