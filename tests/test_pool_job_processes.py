"""Subprocesses that jobs start do not outlive their worker (process backend).

Each worker process leads its own process group, and the pool kills the
group when the worker stops, however it stops: shutdown, replacement after
``max_tasks_per_child``, ``JobTimeout``, ``stop()``, ``terminate()``, or the
death of the parent (the worker's watcher kills its group then). A process
that leaves the group itself (``setsid``) is out of reach; the thread and
subinterpreter backends do not track their jobs' subprocesses at all (see
docs/parallel.md, Supervision).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from robotlab.errors import JobTimeout
from robotlab.parallel import WorkerPool
from tests import parallel_jobs as jobs
from tests.backends import gone

pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX only")

ROOT = Path(__file__).resolve().parent.parent


def read_pid(path: Path, limit: float = 30.0) -> int:
    assert jobs.wait_for_file(str(path), limit), "the job did not start its subprocess"
    return int(path.read_text())


@pytest.mark.parametrize("start_method", ["forkserver", "spawn"])
def test_a_jobs_subprocess_is_gone_within_5_s_of_shutdown(start_method):
    pool = WorkerPool(size=1, start_method=start_method)
    pid = pool.submit(jobs.start_sleeper).result(30)
    assert psutil.Process(pid).is_running()  # the job returned and left it running
    worker = pool.worker_ids[0]
    assert os.getpgid(worker) == worker != os.getpgrp()  # the worker leads a group of its own
    assert os.getpgid(pid) == worker
    pool.shutdown()
    assert gone([pid], 5), "the job's subprocess outlived the pool"


def test_a_replaced_workers_subprocesses_go_with_it():
    with WorkerPool(size=1, max_tasks_per_child=1) as pool:
        first = pool.submit(jobs.start_sleeper).result(30)
        assert gone([first], 5), "the subprocess outlived its worker's replacement"
        assert pool.submit(jobs.add, 1, 2).result(30) == 3


@pytest.mark.parametrize("how", ["timeout", "stop"])
def test_a_stopped_jobs_subprocess_is_gone_within_5_s(how, tmp_path):
    pidfile = tmp_path / "pid"
    with WorkerPool(size=1) as pool:
        future = pool.submit(jobs.start_sleeper, str(pidfile), 60, timeout=2 if how == "timeout" else None)
        pid = read_pid(pidfile)
        if how == "timeout":
            with pytest.raises(JobTimeout):
                future.result(30)
        else:
            assert pool.stop(future)
        assert gone([pid], 5), f"the subprocess outlived the {how}"
        assert pool.submit(jobs.add, 1, 2).result(30) == 3  # the replacement serves


def test_a_running_jobs_subprocess_is_gone_within_5_s_of_terminate(tmp_path):
    pidfile = tmp_path / "pid"
    pool = WorkerPool(size=1)
    pool.submit(jobs.start_sleeper, str(pidfile), 60)
    pid = read_pid(pidfile)
    started = time.monotonic()
    pool.terminate()
    assert time.monotonic() - started < 5
    assert gone([pid], 5), "the subprocess outlived terminate()"


OWNER = """
import sys, time
from robotlab.parallel import WorkerPool
from tests import parallel_jobs as jobs

if __name__ == "__main__":
    pool = WorkerPool(size=1)
    if sys.argv[1] == "idle":  # the job returned, its subprocess runs on
        print(pool.submit(jobs.start_sleeper).result(30), flush=True)
    else:  # the job still runs: the worker's watcher thread, not its loop, sees the parent go
        pool.submit(jobs.start_sleeper, sys.argv[2], 300)
        jobs.wait_for_file(sys.argv[2], 30)
        print(open(sys.argv[2]).read(), flush=True)
    time.sleep(300)
"""


@pytest.mark.parametrize("worker", ["idle", "busy"])
def test_a_jobs_subprocess_is_gone_within_5_s_of_the_parent_being_killed(worker, tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(OWNER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]), "TMPDIR": str(tmp_path)}
    owner = subprocess.Popen([sys.executable, str(script), worker, str(tmp_path / "pid")], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
    try:
        line = owner.stdout.readline().strip()
        assert line.isdigit(), owner.stderr.read() if owner.poll() is not None else line
        pid = int(line)
        assert psutil.Process(pid).is_running()
        owner.send_signal(signal.SIGKILL)  # no cleanup code runs in the parent
        owner.wait(30)
        assert gone([pid], 5), "the subprocess outlived its pool's killed parent"
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait(30)
