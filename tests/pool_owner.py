"""A process that owns a WorkerPool, for the Ctrl-C and parent-death tests.

Run as ``python -m tests.pool_owner with|bare``: it starts two workers on long
jobs, prints ``ready``, and waits on a result until a signal ends it.
"""

import sys

from robotlab.parallel import WorkerPool
from tests import parallel_jobs as jobs


def serve(pool: WorkerPool) -> None:
    futures = [pool.submit(jobs.sleep, 60) for _ in range(4)]
    pool.wait_until_ready(30)
    print("ready", flush=True)
    futures[0].result()


if __name__ == "__main__":
    if sys.argv[1] == "with":
        with WorkerPool(size=2) as owned:
            serve(owned)
    else:  # no with block: only the interpreter-exit cleanup stands between Ctrl-C and orphans
        serve(WorkerPool(size=2))
