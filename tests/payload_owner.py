"""A process that owns a WorkerPool whose jobs hold shared-memory segments, for the parent-SIGKILL test.

``python -m tests.payload_owner``: submits a job holding a large argument and one that will
return a large result after its parent is gone, prints ``ready`` and the worker pids, and waits.
"""

import time

from robotlab.parallel import WorkerPool
from tests import payload_jobs

if __name__ == "__main__":
    with WorkerPool(size=2) as pool:
        pool.wait_until_ready(30)
        holding = pool.submit(payload_jobs.sleep_holding, b"h" * payload_jobs.BIG, 60)
        returning = pool.submit(payload_jobs.sleep_then_big, 3.0)  # time enough to stop the parent first
        while not (holding.running() and returning.running()):
            time.sleep(0.01)
        time.sleep(0.3)  # both workers have the jobs (and the first one its segment)
        print("ready", *pool.worker_ids, flush=True)
        holding.result()
