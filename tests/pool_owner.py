"""A process that owns a WorkerPool, for the Ctrl-C and parent-death tests.

Started by :func:`launch` (``python -m tests.pool_owner with|bare BACKEND``):
it starts two workers of BACKEND on long jobs, prints ``ready``, and waits on a result until a
signal ends it.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

from robotlab.parallel import WorkerPool
from tests import parallel_jobs as jobs


def launch(mode: str, scratch: Path, backend: str = "process") -> subprocess.Popen:
    """Start an owner in its own process group, as a terminal's foreground job, and wait until it is ready."""
    owner = subprocess.Popen(
        [sys.executable, "-m", "tests.pool_owner", mode, backend],
        cwd=Path(__file__).resolve().parent.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # A killed owner cannot remove multiprocessing's temporary folder: keep it out of /tmp.
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    ready = owner.stdout.readline().strip() == "ready"
    if not ready:
        owner.kill()
    assert ready, owner.stderr.read()
    return owner


def serve(pool: WorkerPool) -> None:
    futures = [pool.submit(jobs.sleep, 60) for _ in range(4)]
    pool.wait_until_ready(30)
    print("ready", flush=True)
    futures[0].result()


if __name__ == "__main__":
    # Python leaves SIGINT ignored when it starts with it ignored, as every process started from a
    # background job of a non-interactive shell does (a CI runner, `make test &`): Ctrl-C in a terminal
    # reaches a foreground job, which has the default, so this process has it too.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    mode, backend = sys.argv[1], sys.argv[2]
    if mode == "with":
        with WorkerPool(size=2, backend=backend) as owned:
            serve(owned)
    else:  # no with block: only the interpreter-exit cleanup stands between Ctrl-C and orphans
        serve(WorkerPool(size=2, backend=backend))
