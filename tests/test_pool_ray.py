"""WorkerPool(backend="ray") on a real local Ray cluster (2 CPUs, started once per session by tests/ray_cluster.py).

Each worker is a Ray actor running robotlab's worker loop over an authenticated
TCP connection to this process. The shared suites run on Ray as on every
backend (tests/backends.py): the Executor contract, errors, tools, logging,
initializer, timeouts and crashes in test_pool.py, the memory proxy in
test_pool_memory.py, networks in test_network.py. This module has what is
Ray's own: the missing extra, resources and placement, the address rules,
the driver's connection, tool hooks in an actor, and that no Ray process
outlives its owner.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

import robotlab
from robotlab.errors import ConfigurationError, DependencyError, WorkerCrashed
from robotlab.parallel import WorkerPool, ray_backend
from robotlab.parallel._ray_worker import PROTOCOL, send_frame
from tests import backends, hook_jobs
from tests import parallel_jobs as jobs
from tests.ray_cluster import child_ray_env, wait_gone

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pool(ray_cluster):
    """One Ray pool for the tests that leave it healthy."""
    with WorkerPool(size=2, backend="ray") as shared:
        assert shared.wait_until_ready(120)
        yield shared


def ready_ids(pool: WorkerPool, count: int, within: float = 60.0) -> list[int]:
    """The pool's worker pids once *count* workers have connected (replacements connect asynchronously)."""
    deadline = time.monotonic() + within
    while True:
        ids = [i for i in pool.worker_ids if i is not None]
        if len(ids) == count or time.monotonic() > deadline:
            return ids
        time.sleep(0.05)


# -- without Ray, and options ----------------------------------------------------------------


def test_without_ray_installed_the_backend_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` sees when the extra is missing
    with pytest.raises(DependencyError) as info:
        WorkerPool(size=1, backend="ray")
    assert str(info.value) == ("backend='ray' requires robotlab[ray]. "
                               "Install it with `pip install 'robotlab[ray]'`.")


def test_importing_robotlab_and_its_pools_does_not_import_ray():
    code = "import sys, robotlab, robotlab.parallel.pool; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("backend", ["process", "subinterpreter"])
@pytest.mark.parametrize("option", [{"address": "auto"}, {"resources": {"CPU": 1}}])
def test_ray_options_are_refused_for_other_backends(backend, option):
    with pytest.raises(ConfigurationError, match=r"apply to backend='ray' only"):
        WorkerPool(size=1, backend=backend, **option)


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"CPU": -1}, r"resources\['CPU'\] must be a number >= 0"),
        ({"GPU": "one"}, r"resources\['GPU'\] must be a number"),
        ({"num_cpus": 1}, r"use Ray's resource name 'CPU'"),
        (["CPU"], r"must be a mapping of Ray resource names"),
    ],
)
def test_bad_resources_are_configuration_errors(ray_cluster, resources, message):
    with pytest.raises(ConfigurationError, match=message):
        WorkerPool(size=1, backend="ray", resources=resources)


def test_an_address_of_another_cluster_is_refused_while_ray_is_connected(ray_cluster):
    with pytest.raises(ConfigurationError, match=r"already initialised.*ray\.shutdown\(\)"):
        WorkerPool(size=1, backend="ray", address="ray://elsewhere:10001")


# -- jobs in actors ------------------------------------------------------------------------------


def test_jobs_run_in_ray_actors_with_the_drivers_path_and_environment(pool):
    assert pool.submit(jobs.add, 2, b=3).result(30) == 5
    assert pool.submit("math:factorial", 10).result(30) == 3628800
    state = pool.submit(jobs.worker_state).result(30)
    assert state["pid"] in pool.worker_ids and state["pid"] != os.getpid()
    assert "ray::RayWorker" in " ".join(psutil.Process(state["pid"]).cmdline())
    assert state["path"][:len(sys.path)] == sys.path  # then the entries Ray adds for its workers
    assert state["litellm"] is False and state["cost_map"] == "True"


def test_tool_call_hooks_fire_in_the_actor_and_their_metadata_returns(pool):
    robotlab.on(hook_jobs.PidTracer)
    future = pool.submit_tool(hook_jobs.Fail, {"reason": "boom"}, errors="text")
    assert future.result(30) == "Error (fail): boom"
    assert future.hook_metadata["pid_tracer"]["tool"] == "fail"
    assert future.hook_metadata["pid_tracer"]["pid"] in pool.worker_ids


# -- supervision -------------------------------------------------------------------------------


def test_killing_an_actors_process_mid_job_fails_only_that_job(ray_cluster, tmp_path):
    pidfile = tmp_path / "pid"
    with WorkerPool(size=2, backend="ray") as supervised:
        assert supervised.wait_until_ready(120)
        victim_job = supervised.submit(jobs.sleep_with_pidfile, str(pidfile), 60)
        others = [supervised.submit(jobs.sleep, 0.01) for _ in range(40)]
        deadline = time.monotonic() + 60
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        victim = int(pidfile.read_text())
        os.kill(victim, signal.SIGKILL)
        with pytest.raises(WorkerCrashed, match=rf"pid {victim} on .* died with the loss of its Ray actor") as info:
            victim_job.result(60)
        assert "sleep_with_pidfile" in str(info.value)
        assert [f.result(60) for f in others] == [0.01] * 40
        assert not wait_gone({victim})
        survivors = ready_ids(supervised, 2)
        assert len(survivors) == 2 and victim not in survivors  # replaced by a new actor
        assert list(supervised.map(jobs.add, range(20), range(20))) == [2 * i for i in range(20)]


# -- Ray's own part: resources, placement, the connection ----------------------------------------


def test_resources_are_reserved_on_the_cluster_and_given_back(ray_cluster):
    ray = ray_cluster
    with WorkerPool(size=2, backend="ray", resources={"CPU": 1}) as reserved:
        assert reserved.wait_until_ready(120)
        assert ray.available_resources().get("CPU", 0) == 0  # both of the cluster's CPUs are held
        assert reserved.submit(jobs.add, 1, 1).result(60) == 2
    deadline = time.monotonic() + 30
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ray.available_resources().get("CPU", 0) == 2


def test_workers_the_cluster_cannot_place_never_start_and_shutdown_does_not_hang(ray_cluster):
    stuck = WorkerPool(size=1, backend="ray", resources={"robotlab_test_missing": 1})
    future = stuck.submit(jobs.add, 1, 1)
    assert stuck.wait_until_ready(1) is False
    assert stuck.worker_ids == [None]
    started = time.monotonic()
    stuck.shutdown(wait=True, cancel_futures=True)  # the queued job is cancelled, the pending actor killed
    assert future.cancelled()
    assert time.monotonic() - started < 30


def test_a_connection_without_the_workers_token_is_refused(pool, caplog):
    address = pool._backend.rendezvous.address
    with caplog.at_level(logging.WARNING, logger="robotlab.parallel"):
        for hello in (b"GET / HTTP/1.0", b" ".join((PROTOCOL, b"nokey", b"1", b"127.0.0.1", b"a"))):
            with socket.create_connection(address, timeout=10) as intruder:
                send_frame(intruder, hello)
                intruder.settimeout(10)
                assert intruder.recv(64) == b""  # closed without a challenge
        deadline = time.monotonic() + 10
        while len([r for r in caplog.records if "refused a connection" in r.getMessage()]) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert pool.submit(jobs.add, 2, 2).result(30) == 4


def closed_by_peer(sock: socket.socket, within: float) -> bool:
    """Whether the peer closes (or resets) *sock* within *within* seconds (poll: fds may exceed select's 1024)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    if not poller.poll(within * 1000):
        return False
    try:
        return sock.recv(1) == b""
    except ConnectionError:
        return True


class Flood:
    """Raw TCP connections to one address, each with when it was opened and when its peer closed it."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.socks: list[socket.socket] = []
        self.opened: list[float] = []
        self.closed: dict[int, float] = {}
        self._by_fd: dict[int, int] = {}
        self._poller = select.poll()  # not select(): this process's fds may exceed 1024

    def open(self) -> None:
        sock = socket.create_connection(self.address, timeout=10)
        self._by_fd[sock.fileno()] = len(self.socks)
        self._poller.register(sock, select.POLLIN)
        self.socks.append(sock)
        self.opened.append(time.monotonic())

    def check(self, wait: float = 0.0) -> None:
        """Note the connections the peer has closed (waiting up to *wait* seconds for one)."""
        for fd, _ in self._poller.poll(wait * 1000):
            index = self._by_fd[fd]
            if closed_by_peer(self.socks[index], 0):
                self.closed[index] = time.monotonic()
                self._poller.unregister(fd)

    def open_ones(self) -> list[int]:
        return [i for i in range(len(self.socks)) if i not in self.closed]

    def close(self) -> None:
        for sock in self.socks:
            sock.close()


def test_unauthenticated_connections_are_capped_closed_at_the_deadline_and_the_pool_keeps_serving(
        pool, monkeypatch, caplog):
    monkeypatch.setattr(ray_backend, "_HANDSHAKE_TIMEOUT", 2.0)  # 10 s by default
    assert ray_backend._MAX_HANDSHAKES == 64
    before = peak = threading.active_count()
    flood = Flood(pool._backend.rendezvous.address)
    try:
        with caplog.at_level(logging.WARNING, logger="robotlab.parallel"):
            for _ in range(300):
                flood.open()
                flood.check()
                peak = max(peak, threading.active_count())
            assert pool.submit(jobs.add, 1, 2).result(30) == 3  # served while the handshake slots are full
            deadline = time.monotonic() + 2.0 + 8.0
            while flood.open_ones() and time.monotonic() < deadline:
                flood.check(0.05)
                peak = max(peak, threading.active_count())
            assert flood.open_ones() == []
            assert pool.submit(jobs.add, 2, 3).result(30) == 5
        took = [flood.closed[i] - flood.opened[i] for i in range(300)]
        # Beyond the 64 connections in the handshake, each one is closed as soon as it is accepted ...
        at_once = [t for t in took if t < 0.5]
        assert len(at_once) >= 300 - 64, sorted(round(t, 2) for t in took)
        # ... and the (at most) 64 that got a handshake thread are closed at the deadline of the whole handshake.
        held = [t for t in took if t >= 0.5]
        assert 0 < len(held) <= 64
        assert all(1.9 <= t < 2.0 + 4.0 for t in held), sorted(held)
        assert peak <= before + 64
        settled = time.monotonic() + 10
        while threading.active_count() > before and time.monotonic() < settled:
            time.sleep(0.05)
        assert threading.active_count() <= before  # every handshake thread has ended
        messages = [r.getMessage() for r in caplog.records]
        assert any("connection(s) (the last from" in m and "already in the handshake" in m for m in messages)
        assert any("did not finish the handshake within 2 s" in m for m in messages)
    finally:
        flood.close()
    assert list(pool.map(jobs.add, range(10), range(10))) == [2 * i for i in range(10)]


def test_a_peer_trickling_its_handshake_is_closed_at_the_deadline_of_the_whole_handshake(pool, monkeypatch):
    # One byte every 0.5 s: no single read waits 2 s, so only a deadline for the whole handshake ends it.
    monkeypatch.setattr(ray_backend, "_HANDSHAKE_TIMEOUT", 2.0)
    hello = b" ".join((PROTOCOL, b"0" * 32, b"1", b"127.0.0.1", b"a" * 32))
    frame = len(hello).to_bytes(4, "big") + hello  # 30 s worth of bytes at this pace
    with socket.create_connection(pool._backend.rendezvous.address, timeout=10) as loris:
        started = time.monotonic()
        for byte in frame:
            try:
                loris.sendall(bytes([byte]))
            except ConnectionError:
                break
            if closed_by_peer(loris, 0.5):
                break
            assert pool.submit(jobs.add, 1, 1).result(30) == 2
        took = time.monotonic() - started
    assert 1.5 <= took < 5.0
    assert pool.submit(jobs.add, 2, 2).result(30) == 4


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("", ("10.1.2.3", 0, "10.1.2.3")),
        ("127.0.0.1", ("127.0.0.1", 0, "127.0.0.1")),
        (":47000", ("10.1.2.3", 47000, "10.1.2.3")),
        ("192.168.0.7:47000", ("192.168.0.7", 47000, "192.168.0.7")),
        ("0.0.0.0:47000", ("0.0.0.0", 47000, "10.1.2.3")),  # every interface; workers are told the node IP
        ("[::]:5", ("::", 5, "10.1.2.3")),
        ("[::1]:5", ("::1", 5, "::1")),
        ("::1", ("::1", 0, "::1")),
    ],
)
def test_the_listen_setting_chooses_the_interface_and_port(monkeypatch, setting, expected):
    monkeypatch.setenv(ray_backend.LISTEN_ENV, setting)
    fake_ray = SimpleNamespace(util=SimpleNamespace(get_node_ip_address=lambda: "10.1.2.3"))
    assert ray_backend.listen_address(fake_ray) == expected


@pytest.mark.parametrize("setting", ["host:port", "127.0.0.1:70000", "[::1]:x"])
def test_a_bad_listen_setting_is_a_configuration_error(monkeypatch, setting):
    monkeypatch.setenv(ray_backend.LISTEN_ENV, setting)
    fake_ray = SimpleNamespace(util=SimpleNamespace(get_node_ip_address=lambda: "10.1.2.3"))
    with pytest.raises(ConfigurationError, match="ROBOTLAB_RAY_LISTEN="):
        ray_backend.listen_address(fake_ray)


def test_the_listener_binds_the_interface_it_is_told_and_a_worker_turned_away_tries_again(
        ray_cluster, monkeypatch, caplog):
    monkeypatch.setenv(ray_backend.LISTEN_ENV, "127.0.0.1")  # a listener of its own, on loopback only
    monkeypatch.setattr(ray_backend, "_HANDSHAKE_TIMEOUT", 4.0)
    with WorkerPool(size=1, backend="ray") as first:
        rendezvous = first._backend.rendezvous
        assert rendezvous.address[0] == "127.0.0.1"
        assert rendezvous._listener.getsockname()[0] == "127.0.0.1"
        assert first.wait_until_ready(120)
        assert first.submit(jobs.add, 3, 4).result(60) == 7
        flood = Flood(rendezvous.address)
        try:
            with caplog.at_level(logging.WARNING, logger="robotlab.parallel"):
                for _ in range(ray_backend._MAX_HANDSHAKES):  # every handshake slot, for 4 s
                    flood.open()
                full = time.monotonic()
                with WorkerPool(size=1, backend="ray") as second:  # shares the listener: its worker is turned away
                    assert second._backend.rendezvous is rendezvous
                    assert second.wait_until_ready(120)
                    assert time.monotonic() - full >= 3.5  # it got in once the slots were freed
                    assert second.submit(jobs.add, 5, 6).result(60) == 11
            assert any("closed 1 connection(s) (the last from ('127.0.0.1'" in r.getMessage()
                       for r in caplog.records)
        finally:
            flood.close()
        assert first.submit(jobs.add, 1, 1).result(60) == 2


JOINS_BESIDE_SUBINTERPRETERS = textwrap.dedent("""
    import sys
    from robotlab.parallel import WorkerPool
    from tests import parallel_jobs as jobs
    with WorkerPool(size=2, backend="subinterpreter") as interpreters:
        print("result", interpreters.submit(jobs.add, 1, 2).result(60), flush=True)
        with WorkerPool(size=1, backend="ray", address=sys.argv[1]) as actors:
            print("result", actors.submit(jobs.add, 3, 4).result(120), flush=True)
            print("result", interpreters.submit(jobs.add, 5, 6).result(60), flush=True)
""")


def test_a_running_cluster_is_joined_beside_live_subinterpreters(ray_cluster):
    # Only starting a local Ray forks children (refused while subinterpreters exist, see
    # test_pool_subinterpreter.py); connecting to a running cluster starts no process here.
    backends.use("subinterpreter")
    address = ray_cluster.get_runtime_context().gcs_address
    run = subprocess.run([sys.executable, "-c", JOINS_BESIDE_SUBINTERPRETERS, address], check=False, cwd=ROOT,
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    # Ray forwards its cluster's log lines to a driver's stdout too.
    assert [line for line in run.stdout.splitlines() if line.startswith("result ")] == [
        "result 3", "result 7", "result 11"]
    assert "Fatal Python error" not in run.stderr


# -- owning processes: a local Ray started by robotlab, and nothing left behind ------------------

OWNER = textwrap.dedent("""
    import logging, sys
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    from robotlab.parallel import WorkerPool
    from tests import parallel_jobs as jobs
    with WorkerPool(size=1, backend="ray") as pool:
        print(pool.submit(jobs.add, 1, 2).result(120), flush=True)
        sys.stdin.readline()
""")


@pytest.fixture
def owner_env() -> Iterator[dict[str, str]]:
    """The environment of an owner script, which starts a local Ray (see ``child_ray_env``)."""
    backends.use("ray")  # the owner scripts import Ray
    with child_ray_env() as env:
        yield env


def run_owner(env: dict[str, str]) -> tuple[subprocess.Popen, dict[int, str]]:
    """Start a script that creates a Ray pool without ray.init; return it and its process tree (pid: title)."""
    owner = subprocess.Popen([sys.executable, "-c", OWNER], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    assert owner.stdout.readline().strip() == "3", owner.stderr.read()
    tree = {}
    for process in psutil.Process(owner.pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            tree[process.pid] = " ".join(process.cmdline())
    titles = " ".join(tree.values())
    assert "raylet" in titles and "gcs_server" in titles  # the local Ray instance it started
    assert "ray::RayWorker" in titles  # and the pool's worker actor
    return owner, tree


def test_without_ray_init_robotlab_starts_a_local_ray_says_so_and_leaves_no_process(owner_env):
    owner, tree = run_owner(owner_env)
    owner.stdin.write("\n")
    owner.stdin.flush()
    assert owner.wait(120) == 0
    assert "robotlab.parallel WARNING backend='ray': no Ray connection in this process, so robotlab is " \
           "starting a local Ray instance" in owner.stderr.read()
    assert not wait_gone(set(tree)), "Ray processes outlived their owner"


def test_a_killed_owner_leaves_no_worker_actor_and_no_ray_core_process(owner_env):
    owner, tree = run_owner(owner_env)
    owner.kill()  # SIGKILL: no atexit, no ray.shutdown
    owner.wait(30)
    core = {pid for pid, title in tree.items()
            if "ray::RayWorker" in title or "raylet" in title or "gcs_server" in title}
    assert not wait_gone(core, within=60), "robotlab's worker actors or Ray's core outlived their killed owner"
    # Ray 2.60 itself leaves its DashboardAgent and RuntimeEnvAgent running when the driver that started a
    # local cluster is SIGKILLed (docs/distributed.md says so); they are Ray's, not robotlab's: end them here.
    wait_gone(set(tree) - core, within=0)
