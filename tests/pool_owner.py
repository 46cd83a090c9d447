"""A process that owns a WorkerPool, for the Ctrl-C and parent-death tests.

Run as ``python -m tests.pool_owner with|bare [BACKEND]``: it starts two
workers (``process`` unless BACKEND says otherwise) on long jobs, prints
``ready``, and waits on a result until a signal ends it.
"""

import signal
import sys

from robotlab.parallel import WorkerPool
from tests import parallel_jobs as jobs


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
    mode, backend = sys.argv[1], (sys.argv[2:] or ["process"])[0]
    if mode == "with":
        with WorkerPool(size=2, backend=backend) as owned:
            serve(owned)
    else:  # no with block: only the interpreter-exit cleanup stands between Ctrl-C and orphans
        serve(WorkerPool(size=2, backend=backend))
