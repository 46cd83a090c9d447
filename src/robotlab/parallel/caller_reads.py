"""A caller blocked in ``future.result()`` reads the result from its worker's pipe itself.

The result then reaches the waiting thread directly, not through a wake-up of
the supervisor thread first: a round trip wakes one parent thread, not two.
While a caller reads a worker's pipe, the supervisor does not watch it; the
caller handles every message there as the supervisor would (``Supervisor.drain``).
"""

from __future__ import annotations

import os
import select
import time

from robotlab.parallel.pool_state import Job, PoolWorker
from robotlab.parallel.supervisor import Supervisor

__all__ = ["read_result"]

# A caller reading its own result re-checks the pool this often: the pipe it waits on may have
# been closed under it (an abandoned interpreter never writes, and poll() does not see a close).
_READ_SLICE = 0.05
# It first polls without sleeping for this long: a short job's result then arrives to a
# thread that is still running, and waking a sleeping thread is what a round trip costs most.
_SPIN = 0.0001


def read_result(supervisor: Supervisor, job: Job, end: float | None) -> None:
    """Wait for *job* by reading its worker's pipe in this thread, while it is the only reader.

    Returns as soon as the job is settled, or leaves the rest of the wait to
    the future (and the supervisor) when the job is queued, or another
    thread already reads that worker. Calls of the job to parent objects
    are answered here too, so the worker's reader stays the same thread.
    """
    while True:
        with supervisor.lock:
            worker = job.worker
            if (job.future.done() or worker is None or worker.reader or worker.hung_up
                    or worker not in supervisor.worker_set.members):
                return
            worker.reader = True
            supervisor.worker_set.watch_pipe(worker, False)
        try:
            _read_worker(supervisor, worker, job, end)
        finally:
            with supervisor.lock:
                worker.reader = False
                supervisor.worker_set.watch_pipe(worker, True)
        if job.future.done() or (end is not None and time.monotonic() >= end):
            return


def _read_worker(supervisor: Supervisor, worker: PoolWorker, job: Job, end: float | None) -> None:
    """The reading loop of :func:`read_result`: until *job* is settled or leaves *worker*."""
    poller = select.poll()
    try:
        poller.register(worker.handle.conn.fileno(), select.POLLIN)
    except (OSError, ValueError):  # its pipe was closed: the supervisor settles the job
        return
    while True:
        # A closed pipe shows as POLLNVAL (readable here); the checks under the lock sort it out.
        # No spinning for a result not due yet: on a busy machine it takes CPU from the workers.
        spin = _SPIN if supervisor.policy.may_end_within(job, _SPIN, time.monotonic()) else 0.0
        spin_end = time.perf_counter() + spin
        readable = False
        while not readable and time.perf_counter() < spin_end:
            os.sched_yield()  # on a busy machine, let the worker we wait for run
            readable = bool(poller.poll(0))
        if not readable:
            left = _READ_SLICE if end is None else min(_READ_SLICE, end - time.monotonic())
            readable = left > 0 and bool(poller.poll(left * 1000))
        with supervisor.lock:
            settled = supervisor.drain(worker) if readable else []
            leave = worker.hung_up or worker not in supervisor.worker_set.members or job.worker is not worker
            wake = bool(settled) and supervisor.hand_over_sooner()
        if wake:
            supervisor.wake()
        supervisor.settle(settled)
        if leave or job.future.done() or (end is not None and time.monotonic() >= end):
            return
