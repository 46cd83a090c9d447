"""WorkerPool(backend="ray") on a real local Ray cluster (2 CPUs, started once per session by tests/ray_cluster.py).

Each worker is a Ray actor running robotlab's worker loop over an authenticated
TCP connection to this process; these tests check that it keeps the process
backend's contract (results, errors, tools, hooks, memory, logging,
supervision) and what is Ray's own: resources, the address rules, the missing
extra, and that no Ray process outlives its owner.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import io
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

import robotlab
from robotlab import create_memory
from robotlab.errors import (
    AwaitTimeout,
    ConfigurationError,
    DependencyError,
    Error,
    JobTimeout,
    RactorBoundaryError,
    ToolError,
    WireError,
    WorkerCrashed,
)
from robotlab.parallel import FrozenDict, WorkerPool
from robotlab.parallel._ray_worker import PROTOCOL, send_frame
from robotlab.parallel.pool import RemoteTraceback
from tests import hook_jobs, memory_jobs
from tests import parallel_jobs as jobs
from tests.ray_cluster import ray_cluster, ray_env, wait_gone  # noqa: F401  (the session fixture)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pool(ray_cluster):  # noqa: F811
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
def test_bad_resources_are_configuration_errors(ray_cluster, resources, message):  # noqa: F811
    with pytest.raises(ConfigurationError, match=message):
        WorkerPool(size=1, backend="ray", resources=resources)


def test_an_address_of_another_cluster_is_refused_while_ray_is_connected(ray_cluster):  # noqa: F811
    with pytest.raises(ConfigurationError, match=r"already initialised.*ray\.shutdown\(\)"):
        WorkerPool(size=1, backend="ray", address="ray://elsewhere:10001")


# -- the concurrent.futures contract, as with processes ------------------------------------------


def test_jobs_run_in_ray_actors_with_the_drivers_path_and_environment(pool):
    assert pool.submit(jobs.add, 2, b=3).result(30) == 5
    assert pool.submit("math:factorial", 10).result(30) == 3628800
    state = pool.submit(jobs.worker_state).result(30)
    assert state["pid"] in pool.worker_ids and state["pid"] != os.getpid()
    assert "ray::RayWorker" in " ".join(psutil.Process(state["pid"]).cmdline())
    assert state["path"][:len(sys.path)] == sys.path  # then the entries Ray adds for its workers
    assert state["litellm"] is False and state["cost_map"] == "True"


def test_values_map_and_waiting_behave_as_with_processes(pool):
    value = {"ids": [1, 2], "tags": {"x"}, "when": (1.5, None)}
    assert pool.submit(jobs.echo, value).result(30) == {"ids": (1, 2), "tags": frozenset({"x"}), "when": (1.5, None)}
    expected = [i + i for i in range(200)]
    assert list(pool.map(jobs.add, range(200), range(200))) == expected
    assert list(pool.map(jobs.add, range(200), range(200), chunksize=1)) == expected
    futures = [pool.submit(jobs.sleep, s) for s in (0.4, 0.01, 0.2)]
    assert sorted(f.result() for f in cf.as_completed(futures, timeout=30)) == [0.01, 0.2, 0.4]


def test_errors_keep_their_type_and_the_remote_traceback(pool):
    with pytest.raises(ValueError, match="boom") as info:
        pool.submit(jobs.raise_value_error, "boom").result(30)
    assert isinstance(info.value.__cause__, RemoteTraceback)
    assert "raise ValueError(message)" in info.value.remote_traceback
    with pytest.raises(Error, match=r"parallel_jobs\.NeedsTwoArgs: x/y"):
        pool.submit(jobs.raise_unrebuildable).result(30)
    with pytest.raises(WireError, match="cannot be sent back"):
        pool.submit(jobs.return_lock).result(30)
    with pytest.raises(RactorBoundaryError, match=r"at args\[0\]: _io\.StringIO"):
        pool.submit(jobs.echo, io.StringIO())
    with pytest.raises(RactorBoundaryError, match="lambda"):
        pool.submit(lambda: 1)
    assert pool.submit(jobs.add, 1, 2).result(30) == 3


def test_tools_and_their_tool_errors_cross_as_with_processes(pool):
    assert pool.run_tool(jobs.Multiply, {"a": 6, "b": 7}) == 42
    with pytest.raises(ToolError) as info:
        pool.run_tool(jobs.Multiply, {"a": -1, "b": 2})
    assert str(info.value) == "Tool 'tests.parallel_jobs:Multiply' failed in worker: negative input"
    assert info.value.retryable is True


def test_tool_call_hooks_fire_in_the_actor_and_their_metadata_returns(pool):
    robotlab.on(hook_jobs.PidTracer)
    future = pool.submit_tool(hook_jobs.Fail, {"reason": "boom"}, errors="text")
    assert future.result(30) == "Error (fail): boom"
    assert future.hook_metadata["pid_tracer"]["tool"] == "fail"
    assert future.hook_metadata["pid_tracer"]["pid"] in pool.worker_ids


def test_worker_log_records_reach_the_drivers_handlers(pool, caplog):
    with caplog.at_level(logging.WARNING, logger="tests.worker"):
        assert pool.submit(jobs.log_warning, "hello from a Ray actor").result(30) == "logged"
        deadline = time.monotonic() + 10
        while not any(r.name == "tests.worker" for r in caplog.records) and time.monotonic() < deadline:
            time.sleep(0.01)
    record = next(r for r in caplog.records if r.name == "tests.worker")
    assert record.getMessage() == "hello from a Ray actor"
    assert record.process in pool.worker_ids


# -- the memory proxy: the driver's Memory, over the same channel -------------------------------


def test_actor_writes_arrive_in_order_and_fire_subscriptions_on_the_driver(ray_cluster):  # noqa: F811
    memory = create_memory()
    seen: list[tuple[str, int]] = []
    lock = threading.Lock()

    def record(change):
        with lock:
            seen.append((change.key, change.value))

    memory.subscribe("*", record)
    with WorkerPool(size=2, backend="ray", memory=memory) as ray_pool:
        futures = [ray_pool.submit(memory_jobs.write_many, f"w{i}", 500) for i in range(2)]
        assert [f.result(120) for f in futures] == [500, 500]
    assert len(seen) == 1000
    for i in range(2):
        assert [value for key, value in seen if key.startswith(f"w{i}.")] == list(range(500))


def test_blocking_reads_wake_on_either_side(ray_cluster):  # noqa: F811
    memory = create_memory()
    with WorkerPool(size=2, backend="ray", memory=memory) as ray_pool:
        assert ray_pool.wait_until_ready(120)
        waiting = ray_pool.submit(memory_jobs.wait_for, "k", 60)
        time.sleep(0.3)
        assert not waiting.done()
        memory.set("k", {"a": [1]})
        value = waiting.result(60)
        assert value == {"a": (1,)} and type(value) is FrozenDict
        ray_pool.submit(memory_jobs.set_later, "ready", 7, 0.1)
        assert memory.get("ready", wait=60) == 7
        with pytest.raises(AwaitTimeout, match="Timeout waiting for 'never'"):
            ray_pool.submit(memory_jobs.wait_for, "never", 0.2).result(60)
        assert ray_pool.run_tool(memory_jobs.Remember, {"key": "t", "value": "1"}) == ["k", "ready", "t"]


# -- supervision -------------------------------------------------------------------------------


def test_killing_an_actors_process_mid_job_fails_only_that_job(ray_cluster, tmp_path):  # noqa: F811
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


@pytest.mark.parametrize("job", [jobs.kill_self, jobs.exit_now])
def test_a_job_that_ends_its_actor_fails_alone_and_the_actor_is_replaced(pool, job):
    before = set(ready_ids(pool, 2))
    with pytest.raises(WorkerCrashed, match="the loss of its Ray actor") as info:
        pool.submit(job).result(60)
    assert job.__name__ in str(info.value)
    assert pool.submit(jobs.add, 1, 2).result(60) == 3
    after = set(ready_ids(pool, 2))
    assert len(after) == 2 and len(before - after) == 1
    assert not wait_gone(before - after)


def test_a_job_past_its_timeout_kills_its_actor_and_a_new_one_serves(ray_cluster):  # noqa: F811
    with WorkerPool(size=1, backend="ray") as supervised:
        old = supervised.submit(jobs.pid).result(60)
        started = time.monotonic()
        with pytest.raises(JobTimeout, match=r"timeout of 0\.5 s; worker Ray worker 1 .*stopped and replaced"):
            supervised.submit(jobs.sleep, 60, timeout=0.5).result(60)
        assert time.monotonic() - started < 20
        assert not wait_gone({old})
        assert supervised.submit(jobs.pid).result(60) != old


def test_initializer_runs_in_every_actor_and_a_failing_one_breaks_the_pool(ray_cluster):  # noqa: F811
    with WorkerPool(size=2, backend="ray", initializer=jobs.set_flag, initargs=("set",)) as flagged:
        assert {flagged.submit(jobs.read_flag).result(60) for _ in range(4)} == {"set"}
    with WorkerPool(size=1, backend="ray", initializer=jobs.fail_init) as broken:
        with pytest.raises(Error, match=r"(?s)initializer failed.*initializer refused"):
            broken.submit(jobs.add, 1, 1).result(120)


def test_max_tasks_per_child_replaces_actors_and_ends_the_old_ones(ray_cluster):  # noqa: F811
    with WorkerPool(size=1, backend="ray", max_tasks_per_child=2) as recycled:
        pids = [recycled.submit(jobs.pid).result(60) for _ in range(6)]
    assert [pids.count(p) for p in dict.fromkeys(pids)] == [2, 2, 2]
    assert not wait_gone(set(pids))


def test_shutdown_ends_every_actor_process(ray_cluster):  # noqa: F811
    one = WorkerPool(size=2, backend="ray")
    futures = [one.submit(jobs.sleep, 0.05) for _ in range(6)]
    assert one.wait_until_ready(120)
    pids = set(ready_ids(one, 2))
    one.shutdown(wait=True)
    assert all(f.result() == 0.05 for f in futures)
    assert not wait_gone(pids)


# -- Ray's own part: resources, placement, the connection ----------------------------------------


def test_resources_are_reserved_on_the_cluster_and_given_back(ray_cluster):  # noqa: F811
    ray = ray_cluster
    with WorkerPool(size=2, backend="ray", resources={"CPU": 1}) as reserved:
        assert reserved.wait_until_ready(120)
        assert ray.available_resources().get("CPU", 0) == 0  # both of the cluster's CPUs are held
        assert reserved.submit(jobs.add, 1, 1).result(60) == 2
    deadline = time.monotonic() + 30
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ray.available_resources().get("CPU", 0) == 2


def test_workers_the_cluster_cannot_place_never_start_and_shutdown_does_not_hang(ray_cluster):  # noqa: F811
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
def scratch() -> Iterator[str]:
    """A short temporary folder for a Ray instance's files (its socket paths must stay under 108 bytes)."""
    folder = tempfile.mkdtemp(prefix="rl-ray-")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def run_owner(scratch: str) -> tuple[subprocess.Popen, dict[int, str]]:
    """Start a script that creates a Ray pool without ray.init; return it and its process tree (pid: title)."""
    owner = subprocess.Popen([sys.executable, "-c", OWNER], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, **ray_env(scratch)})
    assert owner.stdout.readline().strip() == "3", owner.stderr.read()
    tree = {}
    for process in psutil.Process(owner.pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            tree[process.pid] = " ".join(process.cmdline())
    titles = " ".join(tree.values())
    assert "raylet" in titles and "gcs_server" in titles  # the local Ray instance it started
    assert "ray::RayWorker" in titles  # and the pool's worker actor
    return owner, tree


def test_without_ray_init_robotlab_starts_a_local_ray_says_so_and_leaves_no_process(scratch):
    owner, tree = run_owner(scratch)
    owner.stdin.write("\n")
    owner.stdin.flush()
    assert owner.wait(120) == 0
    assert "robotlab.parallel WARNING backend='ray': no Ray connection in this process, so robotlab is " \
           "starting a local Ray instance" in owner.stderr.read()
    assert not wait_gone(set(tree)), "Ray processes outlived their owner"


def test_a_killed_owner_leaves_no_worker_actor_and_no_ray_core_process(scratch):
    owner, tree = run_owner(scratch)
    owner.kill()  # SIGKILL: no atexit, no ray.shutdown
    owner.wait(30)
    core = {pid for pid, title in tree.items()
            if "ray::RayWorker" in title or "raylet" in title or "gcs_server" in title}
    assert not wait_gone(core, within=60), "robotlab's worker actors or Ray's core outlived their killed owner"
    # Ray 2.60 itself leaves its DashboardAgent and RuntimeEnvAgent running when the driver that started a
    # local cluster is SIGKILLed (docs/distributed.md says so); they are Ray's, not robotlab's: end them here.
    wait_gone(set(tree) - core, within=0)
