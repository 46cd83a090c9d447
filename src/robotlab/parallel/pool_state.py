"""The records a WorkerPool keeps: a job, a worker, and the future a caller holds.

Plain data, shared by the pool's parts (``pool``, ``supervisor``,
``pool_protocol``); only the supervisor changes them, under its lock.
"""

from __future__ import annotations

import collections
import logging
import select
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from robotlab.parallel.endpoints import Endpoint

__all__ = ["Job", "PoolFuture", "PoolWorker", "close_endpoints", "settle"]

logger = logging.getLogger("robotlab.parallel")


@dataclass(eq=False)
class Job:
    id: int
    frame: bytes
    future: Future
    target: str
    timeout: float | None
    deadline: float | None = None
    running: bool = False  # its future is RUNNING (it was sent to a worker at least once)
    started: float | None = None  # about when its worker began it (monotonic), once it is at the front
    worker: PoolWorker | None = None  # the one it was last sent to
    profile: tuple[str, str] = ("call", "")  # (kind, target): its run time is learned under this key
    endpoints: dict[int, Endpoint] = field(default_factory=dict)  # parent objects it may call, by id
    stopped: bool = False  # WorkerPool.stop() was called while it ran
    outbox: Any = None  # the shared-memory segments of its frame (shared_buffers.JobOutbox), if any


@dataclass(eq=False)
class PoolWorker:
    handle: Any  # a backend's worker: ProcessWorker, InterpreterWorker, ThreadWorker, RayWorker
    ready: bool = False
    jobs: collections.deque[Job] = field(default_factory=collections.deque)  # jobs[0] is running
    jobs_done: int = 0
    reader: bool = False  # a caller is reading its pipe (see PoolFuture); the supervisor is not
    hung_up: bool = False  # its pipe reached EOF: it stopped, and its sentinel tells the supervisor

    def __post_init__(self) -> None:
        # Connection.poll() builds a new selector on every call; one poll object per pipe costs a
        # single system call, and every drain asks at least twice. Used under the pool's lock only
        # (a poll object refuses concurrent use).
        self._poller = select.poll()
        self._poller.register(self.handle.conn.fileno(), select.POLLIN)

    def sent(self) -> Any:
        """The buffers its running job's frame sent: the next reply may refer to them (replies come in job order)."""
        outbox = self.jobs[0].outbox if self.jobs else None
        return () if outbox is None else outbox.sent

    def has_data(self) -> bool:
        """Whether the pipe has data or reached EOF; OSError once the pool closed it."""
        if self.handle.conn.closed:
            raise OSError("the pool closed this worker's pipe")
        return bool(self._poller.poll(0))


class PoolFuture(Future):
    """A Future whose ``result()`` reads the worker's pipe itself while the job runs.

    The result then reaches the waiting thread directly, not through a wake-up of
    the supervisor thread first: one thread hop less per round trip.
    ``hook_metadata`` is what the ``tool_call`` hooks recorded in the worker's
    ``ctx.metadata`` (``{namespace: {key: value}}``), or None. Once the job ran:
    ``worker_id``, the id of the worker that ran it, and ``run_seconds``, how long it ran there.
    """

    def __init__(self, read: Callable[[Job, float | None], None]) -> None:
        super().__init__()
        self._read: Callable[[Job, float | None], None] | None = read
        self._job: Job | None = None
        self.hook_metadata: dict[str, dict[str, Any]] | None = None
        self.worker_id: int | None = None
        self.run_seconds: float | None = None

    def result(self, timeout: float | None = None) -> Any:
        read, job = self._read, self._job
        if read is not None and job is not None and not self.done():
            end = None if timeout is None else time.monotonic() + timeout
            read(job, end)
            if end is not None:
                timeout = max(0.0, end - time.monotonic())
        return super().result(timeout)


def close_endpoints(future: Future) -> None:
    """The job ended: let its endpoints clean up (once), and drop the future's link to it.

    The job holds the future and the future held the job: without the cycle, a result is
    freed as soon as its caller drops the future.
    """
    job = getattr(future, "_job", None)
    if isinstance(future, PoolFuture):
        future._job = None
    if job is not None and job.endpoints:
        endpoints, job.endpoints = list(job.endpoints.values()), {}
        for endpoint in endpoints:
            try:
                endpoint.close()
            except Exception:
                logger.exception("closing the %s endpoint of %s failed", type(endpoint).__name__, job.target)


def settle(settled: list[tuple[Future, Any]]) -> None:
    """Give each future its outcome (a value, or an exception to raise), after closing its job's endpoints.

    Call it outside the pool's lock: done-callbacks may submit more work, and memory
    subscriptions and models may run any code. *settled* is emptied as it goes, and no name
    here holds a result once its future has it: a caller that drops the result frees it
    (CPython issue 14406).
    """
    settled.reverse()
    while settled:
        future, outcome = settled.pop()
        close_endpoints(future)
        if not future.done():
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
        del future, outcome
