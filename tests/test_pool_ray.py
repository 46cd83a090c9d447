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
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

import robotlab
from robotlab.errors import ConfigurationError, DependencyError, WorkerCrashed
from robotlab.parallel import WorkerPool
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
