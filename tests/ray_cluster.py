"""A real local Ray cluster for the tests that need one: started on first use, once per test session.

Use the ``ray_cluster`` fixture (``tests/conftest.py`` makes it available to
every test module; the ``backend`` fixture asks for it for ``"ray"``). The first test
that asks for it starts Ray (2 CPUs, a small object store, no dashboard)
with its session files in a temporary folder and a throwaway auth token in
the environment (so nothing is written to ``~/.ray`` or ``/tmp/ray``); the
end of the session shuts it down, checks with psutil that every process Ray
started is gone, restores the environment and deletes the folder. A session
whose tests never ask for the fixture never starts Ray.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from types import ModuleType

import psutil
import pytest

import robotlab
from robotlab.parallel.subinterpreter_backend import live_subinterpreters
from tests import backends

# The environment Ray's processes are started with; restored afterwards.
_ENV_KEYS = ("RAY_TMPDIR", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
_state: dict = {}


def ray_env(scratch: str) -> dict[str, str]:
    """Environment variables that keep a local Ray's files in *scratch* and its auth token out of ``~/.ray``.

    Ray turns token authentication on for a new local cluster by itself (and
    sets ``RAY_AUTH_MODE``); with ``RAY_AUTH_TOKEN`` given it writes no token file.
    """
    return {"RAY_TMPDIR": scratch, "RAY_AUTH_TOKEN": secrets.token_hex(32)}


@contextlib.contextmanager
def child_ray_env() -> Iterator[dict[str, str]]:
    """This process's environment for a child that may start a local Ray: its files in a short scratch folder
    (Ray's socket paths must stay under 108 bytes), deleted afterwards, and its token not in ``~/.ray``."""
    scratch = tempfile.mkdtemp(prefix="rl-ray-")
    try:
        yield {**os.environ, **ray_env(scratch)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def descendants() -> set[int]:
    """PIDs of every live descendant of this process."""
    return {p.pid for p in psutil.Process().children(recursive=True)}


def wait_gone(pids: set[int], within: float = 20.0) -> set[int]:
    """Wait until none of *pids* is a live (non-zombie) process; kill and return those that remain."""
    deadline = time.monotonic() + within
    alive = set(pids)
    while alive and time.monotonic() < deadline:
        for pid in list(alive):
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    alive.discard(pid)
            except psutil.NoSuchProcess:
                alive.discard(pid)
        if alive:
            time.sleep(0.1)
    for pid in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(pid).kill()
    return alive


def start() -> ModuleType:
    """Start the local cluster of the session."""
    import ray

    if ray.is_initialized():
        raise RuntimeError("Ray is already initialised in the test process: the ray_cluster fixture must start it")
    # Earlier tests may have left default subinterpreter pools (networks and robots share them); while any
    # subinterpreter exists, the children Ray forks abort (see robotlab.parallel.subinterpreter_backend).
    robotlab.shutdown_pool()
    if count := live_subinterpreters():
        raise RuntimeError(f"{count} subinterpreter(s) still exist: Ray cannot start beside them; "
                           "a test before this one left a subinterpreter pool running")
    scratch = tempfile.mkdtemp(prefix="rl-ray-")  # short: Ray's socket paths live under it
    saved = {key: os.environ.get(key) for key in _ENV_KEYS}
    os.environ.update(ray_env(scratch))
    before = descendants()
    try:
        ray.init(num_cpus=2, object_store_memory=80 * 1024 * 1024, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    except BaseException:
        ray.shutdown()
        wait_gone(descendants() - before)
        _restore(saved, scratch)
        raise
    _state.update(scratch=scratch, saved=saved, started=descendants() - before)
    return ray


def stop() -> None:
    """Shut Ray down; fail if any of its processes survives."""
    import ray

    ray_processes = set(_state["started"])
    for pid in _state["started"]:  # and the workers the raylet started since
        with contextlib.suppress(psutil.NoSuchProcess):
            ray_processes |= {p.pid for p in psutil.Process(pid).children(recursive=True)}
    ray.shutdown()
    left = wait_gone(ray_processes)
    _restore(_state["saved"], _state["scratch"])
    if left:
        pytest.fail(f"Ray processes outlived ray.shutdown() and were killed: {sorted(left)}")


def _restore(saved: dict[str, str | None], scratch: str) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[ModuleType]:
    """The ``ray`` module, initialised to a local 2-CPU cluster shared by the whole test session.

    Without Ray the test is skipped with the DependencyError (failed when ``ROBOTLAB_REQUIRE_RAY=1``).
    """
    backends.use("ray")
    ray = start()
    try:
        yield ray
    finally:
        stop()
