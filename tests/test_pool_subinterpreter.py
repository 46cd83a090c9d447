"""What only the subinterpreter backend does (the shared WorkerPool suite runs on it in test_pool.py).

On Pythons without subinterpreters the backend must refuse with a
DependencyError naming what to install: that refusal is tested there, and the
other tests skip with it as the reason (ROBOTLAB_REQUIRE_SUBINTERPRETERS=1
turns the skip into a failure). The framing channel a subinterpreter worker
uses is plain Python over a socket, so its tests run everywhere.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from robotlab.errors import DependencyError
from robotlab.parallel import WorkerPool
from robotlab.parallel._worker import _FdChannel
from robotlab.parallel.subinterpreter_backend import live_subinterpreters
from tests import backends, pool_owner
from tests import parallel_jobs as jobs


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(size=2, backend=backends.use("subinterpreter")) as shared:
        assert shared.wait_until_ready(30)
        yield shared


def test_the_backend_refuses_with_what_to_install_where_it_cannot_run():
    if backends.unavailable("subinterpreter") is None:
        pytest.skip("subinterpreters are available here: nothing to refuse")
    with pytest.raises(DependencyError, match=r"CPython 3\.13|robotlab\[subinterpreters\]"):
        WorkerPool(size=1, backend="subinterpreter")


def test_jobs_run_in_other_interpreters_of_this_process(pool):
    states = [pool.submit(jobs.worker_state).result(10) for _ in range(4)]
    assert {state["pid"] for state in states} == {os.getpid()}
    assert {state["worker"] for state in states} <= set(pool.worker_ids)
    assert not set(pool.worker_ids) & {0}  # never the main interpreter
    assert set(pool.worker_ids) <= backends.interpreter_ids()


def test_a_module_that_refuses_subinterpreters_fails_the_job_not_the_worker(pool):
    ids = pool.worker_ids
    with pytest.raises(DependencyError, match=r"msgspec\._core cannot be imported in a subinterpreter.*'process'"):
        pool.submit("msgspec:json.encode", 1).result(10)
    assert pool.submit(jobs.add, 1, 1).result(10) == 2
    assert pool.worker_ids == ids


def test_ctrl_c_ends_the_process_while_subinterpreters_run_jobs(tmp_path):
    backends.use("subinterpreter")
    owner = pool_owner.launch("with", tmp_path, "subinterpreter")
    try:
        os.killpg(owner.pid, signal.SIGINT)
        # Running interpreters cannot be stopped: the pool gives them two seconds, then the
        # process exits without them (no hang until the 60 s jobs end, no crash at exit).
        assert owner.wait(30) in (-signal.SIGINT, 130)
        errors = owner.stderr.read()
        assert "KeyboardInterrupt" in errors and "Fatal Python error" not in errors
        assert "was left to finish" in errors
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def test_live_subinterpreters_counts_a_pools_interpreters_until_it_shuts_down():
    backends.use("subinterpreter")
    before = live_subinterpreters()  # the module's shared pool, and whatever other tests left
    with WorkerPool(size=2, backend="subinterpreter") as pool:
        assert pool.wait_until_ready(30)
        assert live_subinterpreters() == before + 2
    assert live_subinterpreters() == before


def test_a_local_ray_start_is_refused_while_subinterpreters_exist():
    # While a subinterpreter exists, a child that runs Python after fork() aborts (CPython 3.13): a local
    # Ray start would wait a minute for processes that died. A fresh process, so Ray is not yet initialised.
    backends.use("subinterpreter")
    backends.use("ray")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import ray
        from robotlab.errors import ConfigurationError
        from robotlab.parallel import WorkerPool

        with WorkerPool(size=1, backend="subinterpreter") as pool:
            try:
                WorkerPool(size=1, backend="ray")
            except ConfigurationError as exc:
                print(exc)
            print("ray initialised:", ray.is_initialized())
    """)], cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=60, check=True)
    refusal, initialised = out.stdout.splitlines()
    assert refusal.startswith("backend='ray' cannot start a local Ray instance while 1 subinterpreter(s) exist")
    assert "robotlab.shutdown_pool()" in refusal and "ray.init(...) before" in refusal
    assert initialised == "ray initialised: False"


# -- the subinterpreter worker's end of its socket -------------------------------------------------


@pytest.fixture
def channel_pair():
    """A worker-side _FdChannel and the parent-side Connection on a real socket pair."""
    from multiprocessing.connection import Connection

    ours, theirs = socket.socketpair()
    parent, fd = Connection(ours.detach()), theirs.detach()
    yield _FdChannel(fd), parent
    parent.close()
    os.close(fd)


def test_the_channel_reads_frames_however_the_bytes_arrive(channel_pair):
    worker, parent = channel_pair
    frames = [b"", b"x", b"y" * 70_000, bytes(range(256)) * 10]
    for frame in frames:  # several frames in the socket at once: one read may take more than one
        parent.send_bytes(frame)
    assert [worker.recv_bytes() for _ in frames] == frames
    raw = socket.socket(fileno=os.dup(parent.fileno()))  # the header and payload a byte at a time
    try:
        def dribble() -> None:
            for byte in (3).to_bytes(4, "big") + b"abc":
                raw.send(bytes([byte]))

        sender = threading.Thread(target=dribble)
        sender.start()
        assert worker.recv_bytes() == b"abc"
        sender.join(10)
    finally:
        raw.close()


def test_the_channel_writes_frames_larger_than_the_socket_buffer(channel_pair):
    worker, parent = channel_pair
    big = os.urandom(4 << 20)  # the non-blocking write must wait for the reader, not fail
    sender = threading.Thread(target=worker.send_bytes, args=(big,))
    sender.start()
    assert parent.recv_bytes() == big
    sender.join(10)
    parent.send_bytes(b"after")
    assert worker.recv_bytes() == b"after"


def test_the_channel_reports_a_closed_parent_as_eof(channel_pair):
    worker, parent = channel_pair
    parent.send_bytes(b"last")
    parent.close()
    assert worker.recv_bytes() == b"last"
    with pytest.raises(EOFError):
        worker.recv_bytes()
