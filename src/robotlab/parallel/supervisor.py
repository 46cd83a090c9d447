"""The one thread that owns a WorkerPool's workers, and the state it guards.

It starts the workers (through a backend), sends them jobs as the
:class:`~robotlab.parallel.scheduling.SchedulingPolicy` decides, reads their
replies, answers their calls to parent objects, replaces the ones that die or
retire, enforces timeouts, and stops them all at shutdown. It waits, with one
persistent selector, on every pipe, every sentinel (readable when a worker has
ended) and a wake-up pipe. Everything here changes under ``self.lock``;
futures are settled outside it (done-callbacks may run any code).

A thread blocked in ``future.result()`` reads the result from its worker's
pipe itself, with this class's methods (``caller_reads.py``).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import multiprocessing
import selectors
import threading
import time
from concurrent.futures import CancelledError, Future
from typing import Any

from robotlab.errors import Error, JobTimeout, WireError, WorkerCrashed
from robotlab.parallel import pool_protocol, wire
from robotlab.parallel.endpoints import answer
from robotlab.parallel.pool_state import Job, PoolWorker, close_endpoints, settle
from robotlab.parallel.scheduling import SchedulingPolicy
from robotlab.parallel.worker_set import WorkerSet

__all__ = ["Supervisor"]

logger = logging.getLogger("robotlab.parallel")
Settled = list[tuple[Future, Any]]  # futures and their outcomes (a value, or an exception to set)

# A worker that dies this many times in a row before becoming ready marks the pool broken
# (a crashing import or interpreter start would otherwise respawn forever).
_MAX_START_FAILURES = 3


class Supervisor:
    """Workers of one pool, its job queue, and the thread that supervises them."""

    def __init__(self, backend: Any, size: int, max_tasks: int | None, initializer: str | None,
                 initargs: tuple) -> None:
        self.policy = SchedulingPolicy(max_tasks)
        self.lock = threading.Lock()
        self.broken: str | None = None  # why the pool cannot run jobs any more
        self.shut_down = False
        self.all_ready = threading.Event()
        self.stopped = threading.Event()
        self._pending: collections.deque[Job] = collections.deque()
        self._calls: collections.deque[tuple[PoolWorker, tuple]] = collections.deque()  # from jobs, to answer
        self._start_failures = 0
        self._wakes_at = math.inf  # when its select times out (monotonic), to hand over a job
        self._wake_r, self._wake_w = multiprocessing.Pipe(duplex=False)
        # One persistent selector over every pipe and process sentinel (cheaper than
        # building one per wake-up, as multiprocessing.connection.wait does).
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self.worker_set = WorkerSet(backend, self._selector, initializer, initargs)
        self.worker_set.members = [self.worker_set.spawn() for _ in range(size)]
        self.thread = threading.Thread(target=self._supervise, name="robotlab-pool-supervisor", daemon=True)
        self.thread.start()

    # -- called from other threads ---------------------------------------------------------

    def submit(self, job: Job) -> None:
        """Send *job* to a worker that can take it now, else queue it."""
        with self.lock:
            if self.broken is not None:
                raise Error(self.broken)
            if self.shut_down:
                raise RuntimeError("cannot submit to a WorkerPool after shutdown")
            worker = None if self._pending else self.policy.worker_for(self.worker_set.members, job)
            if worker is None:
                # Every worker is busy or starting: the next one that reports back takes this
                # job; the supervisor needs waking only if it should hand it over before then
                # (it planned with the jobs queued before this one, if there were any).
                self._pending.append(job)
                wake = len(self._pending) == 1 and self.hand_over_sooner()
            else:
                job.future.set_running_or_notify_cancel()  # a new future: nobody can have cancelled it
                job.running = True
                self._start(worker, job)
                wake = False
        if wake or job.timeout is not None:
            self.wake()  # the supervisor must learn of a new deadline or hand-over

    def stop(self, future: Future) -> bool:
        """Mark *future*'s running job stopped (the supervisor ends it); False if it is not running."""
        with self.lock:
            job = next((w.jobs[0] for w in self.worker_set.members if w.jobs and w.jobs[0].future is future), None)
            if job is None or future.done():
                return False
            job.stopped, job.deadline = True, float("-inf")
        self.wake()
        return True

    def shutdown(self, *, cancel_futures: bool) -> None:
        with self.lock:
            self.shut_down = True
            cancelled = self._drain_pending() if cancel_futures else []
        for job in cancelled:
            job.future.cancel()
        self.wake()

    def terminate(self) -> None:
        """Kill every worker now; queued jobs are cancelled and running ones fail with CancelledError."""
        with self.lock:
            self.shut_down = True
            cancelled = self._drain_pending()
            running = [job for worker in self.worker_set.members for job in worker.jobs]
            for worker in self.worker_set.members:
                worker.jobs.clear()
                worker.handle.kill()
        for job in cancelled:
            close_endpoints(job.future)
            job.future.cancel()
        for job in running:
            close_endpoints(job.future)
            if not job.future.done():
                job.future.set_exception(CancelledError(f"{job.target} was stopped: the pool was terminated"))
        self.wake()
        if threading.current_thread() is not self.thread:
            self.stopped.wait()

    def wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send_bytes(b"")

    # -- the supervisor thread (the methods below run under self.lock unless noted) --------------

    def _supervise(self) -> None:
        try:
            while True:
                with self.lock:
                    now = time.monotonic()
                    settled, timeout = self._expire(now)
                    due = self._hand_over(now)
                    if due is not None and (timeout is None or due < timeout):
                        timeout = due
                    self._wakes_at = math.inf if timeout is None else now + timeout
                    if self.shut_down:
                        self._drop_cancelled()
                    busy = self._pending or any(w.jobs for w in self.worker_set.members)
                    done = (self.shut_down or self.broken is not None) and not busy
                self.settle(settled)
                if done:
                    break
                events = self._selector.select(timeout)
                with self.lock:
                    settled = self._handle(events)
                self.settle(settled)
        except BaseException as exc:  # a supervisor bug must not leave futures hanging forever
            with self.lock:
                settled = self._fail_all(f"WorkerPool supervisor failed: {type(exc).__name__}: {exc}")
                settled += [(job.future, Error(self.broken)) for w in self.worker_set.members for job in w.jobs]
            self.settle(settled)
            raise
        finally:
            self._stop_workers()

    def _handle(self, events: list) -> Settled:
        settled: Settled = []
        # Messages first: a worker's last result may sit in its pipe when it dies.
        for key, _ in sorted(events, key=lambda event: event[0].data is not None and event[0].data[0] != "message"):
            if key.data is None:
                while self._wake_r.poll():
                    self._wake_r.recv_bytes()
                continue
            what, subject = key.data
            if what == "message":
                settled += self.drain(subject)
            elif what == "death" and subject in self.worker_set.members:
                settled += self.drain(subject)
                settled += self._on_death(subject)
            elif what == "retired":
                self.worker_set.reap_retired(subject)
        return settled

    def drain(self, worker: PoolWorker) -> Settled:
        """Handle every complete message waiting on *worker*'s pipe."""
        settled: Settled = []
        try:
            while worker in self.worker_set.members and worker.has_data():
                frame = worker.handle.conn.recv_bytes()
                try:
                    message = wire.decode(frame, sent=worker.sent())
                except WireError as exc:  # fail the job, keep the pool
                    if not worker.jobs:
                        continue
                    message = pool_protocol.undecodable_reply(worker.jobs[0].target, worker.jobs[0].id, exc)
                settled += self._on_message(worker, message)
        except (EOFError, OSError):
            worker.hung_up = True  # it died: its sentinel is ready too
        return settled

    def _on_message(self, worker: PoolWorker, message: tuple) -> Settled:
        tag = message[0]
        if tag == "log":
            pool_protocol.log_here(message[1])
            return []
        if tag == "ready":
            worker.ready, self._start_failures = True, 0
            if all(w.ready for w in self.worker_set.members):
                self.all_ready.set()
            self._fill(worker)
            return []
        if tag == "call":
            self._calls.append((worker, message))  # answered by _settle, outside the lock
            return []
        if tag == "init_error":
            worker.ready = True  # it started, the initializer failed: not a start crash
            return self._fail_all(f"WorkerPool is broken: the initializer failed in a worker:\n{message[1]}")
        job = worker.jobs.popleft() if worker.jobs else None
        worker.jobs_done += 1
        if worker.jobs:
            worker.jobs[0].started = time.monotonic()  # the worker went on to it right after this reply
        settled: Settled = []
        # Replies come in job order; None answers a job frame the worker could not decode.
        if job is not None and message[1] in (job.id, None):
            *_, job.future.hook_metadata, seconds = message
            job.future.worker_id, job.future.run_seconds = worker.handle.ident, seconds
            self.policy.learn(job.profile, seconds)
            settled.append((job.future, pool_protocol.outcome_of(job.target, message)))
        max_tasks = self.policy.max_tasks
        if max_tasks is not None and worker.jobs_done >= max_tasks:
            self.worker_set.retire(worker, successor=self._needs_successor())
        else:
            self._fill(worker)
        return settled

    def _on_death(self, worker: PoolWorker) -> Settled:
        worker.handle.join()
        cause = worker.handle.death_cause()
        settled: Settled = []
        jobs, worker.jobs = worker.jobs, collections.deque()
        if jobs:
            job = jobs.popleft()
            self._pending.extendleft(reversed(jobs))  # never started: another worker runs them
            error = WorkerCrashed(f"Worker {worker.handle.label} died with {cause} while running {job.target}; "
                                  "the job was not completed and the worker was replaced")
            error.exitcode = worker.handle.exitcode  # type: ignore[attr-defined]
            settled.append((job.future, error))
        if not worker.ready and self.broken is None:
            if worker.handle.exitcode == pool_protocol.NO_MAIN_GUARD_EXIT:
                settled += self._fail_all(pool_protocol.unguarded_main_reason())
            else:
                self._start_failures += 1
                if self._start_failures >= _MAX_START_FAILURES:
                    settled += self._fail_all(f"WorkerPool is broken: {self._start_failures} workers in a row "
                                              f"died before they were ready (last: {cause})")
        self._replace(worker)
        worker.handle.release()
        self._fill_all()
        return settled

    def _expire(self, now: float) -> tuple[Settled, float | None]:
        settled: Settled = []
        nearest = None
        for worker in list(self.worker_set.members):
            job = worker.jobs[0] if worker.jobs else None
            if job is None or job.deadline is None:
                continue
            if now < job.deadline:
                nearest = job.deadline - now if nearest is None else min(nearest, job.deadline - now)
                continue
            worker.jobs.popleft()
            self._pending.extendleft(reversed(worker.jobs))  # queued behind it, never started
            worker.jobs.clear()
            handle = worker.handle
            fate = self.worker_set.end(worker, successor=self._needs_successor())
            settled.append((job.future, CancelledError(
                f"{job.target} was stopped; worker {handle.label} {fate}") if job.stopped else JobTimeout(
                f"{job.target} ran past its timeout of {job.timeout} s; worker {handle.label} {fate}")))
            self._fill_all()
        return settled, nearest

    # -- handing out jobs ---------------------------------------------------------------------

    def _start(self, worker: PoolWorker, job: Job) -> None:
        """Send *job* (already marked running) down *worker*'s pipe."""
        if job.timeout is not None:
            job.deadline = time.monotonic() + job.timeout
        job.worker = worker
        job.started = None if worker.jobs else time.monotonic()
        worker.jobs.append(job)
        with contextlib.suppress(OSError):  # it died: its sentinel fails the job as crashed
            worker.handle.conn.send_bytes(job.frame)

    def _start_next(self, worker: PoolWorker) -> None:
        """Send the first queued job to *worker*, unless its caller cancelled it meanwhile (then drop it)."""
        job = self._pending.popleft()
        if job.running or job.future.set_running_or_notify_cancel():  # False: the caller cancelled it
            job.running = True
            self._start(worker, job)

    def _fill(self, worker: PoolWorker) -> None:
        """Hand queued jobs, in order, to *worker* while it can take them."""
        while self._pending and self.policy.can_take(worker, self._pending[0]):
            self._start_next(worker)

    def _fill_all(self) -> None:
        for worker in self.worker_set.members:
            self._fill(worker)

    def _hand_over(self, now: float) -> float | None:
        """Give a queued job to each busy worker about to finish; seconds to the next hand-over, if any."""
        chosen, nearest = self.policy.hand_overs(self.worker_set.members, self._pending, now)
        for worker in chosen:
            self._start_next(worker)
        return nearest

    def hand_over_sooner(self) -> bool:
        """Whether a hand-over is now due before the supervisor plans to wake (it must be woken)."""
        return self.policy.hand_over_due_before(self.worker_set.members, self._pending, self._wakes_at)

    def _drain_pending(self) -> list[Job]:
        jobs = list(self._pending)
        self._pending.clear()
        return jobs

    # -- workers' lifetimes (see worker_set) ------------------------------------------------------

    def _replace(self, worker: PoolWorker) -> None:
        """Drop a finished or dead worker and start its successor if one is needed."""
        self.worker_set.replace(worker, successor=self._needs_successor())

    def _needs_successor(self) -> bool:
        """Whether a worker that ends now is replaced: unless the pool broke, or it shuts down with nothing queued.

        Shutting down, queued jobs still run (as Executor.shutdown(wait=True) promises): without a
        successor for a worker that crashed or retired then, they would wait forever.
        """
        if self.shut_down:
            self._drop_cancelled()
        return self.broken is None and (not self.shut_down or bool(self._pending))

    def _drop_cancelled(self) -> None:
        """Forget queued jobs whose callers cancelled them (shutting down: they must not keep workers alive)."""
        if any(job.future.cancelled() for job in self._pending):
            kept = [job for job in self._pending if not job.future.cancelled()]
            self._pending.clear()
            self._pending.extend(kept)

    def _fail_all(self, reason: str) -> Settled:
        self.broken = reason
        self.all_ready.set()  # wakes wait_until_ready, which raises the reason
        return [(job.future, Error(reason)) for job in self._drain_pending()
                if job.running or job.future.set_running_or_notify_cancel()]

    def _stop_workers(self) -> None:
        self.worker_set.stop_all(self.lock)
        self._selector.close()
        for conn in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                conn.close()
        self.stopped.set()

    # -- settling futures and answering calls (outside the lock) ---------------------------------

    def settle(self, settled: Settled) -> None:
        """Settle *settled* (see ``pool_state.settle``), then answer the calls jobs made meanwhile."""
        settle(settled)
        while self._calls:
            try:
                worker, request = self._calls.popleft()
            except IndexError:  # another thread took the last one
                break
            self._answer_call(worker, request)

    def _answer_call(self, worker: PoolWorker, request: tuple) -> None:
        _, request_id, endpoint_id, op, args = request
        with self.lock:
            job = worker.jobs[0] if worker.jobs and worker in self.worker_set.members else None

        def still_waiting() -> bool:
            with self.lock:
                return worker in self.worker_set.members and bool(worker.jobs) and worker.jobs[0] is job

        endpoint = None if job is None else job.endpoints.get(endpoint_id)
        answer(endpoint, op, args, still_waiting, lambda outcome: self._reply(worker, request_id, outcome, job))

    def _reply(self, worker: PoolWorker, request_id: int, outcome: Any, job: Job | None) -> None:
        data = pool_protocol.call_reply(request_id, outcome, None if job is None else job.outbox)
        with self.lock:
            if worker in self.worker_set.members:
                with contextlib.suppress(OSError):  # it died meanwhile: its sentinel tells the supervisor
                    worker.handle.conn.send_bytes(data)
