"""The workers of one WorkerPool, from start to reaping.

:class:`WorkerSet` starts workers through a backend (``process_backend``,
``subinterpreter_backend``, ``thread_backend``, ``ray_backend``), watches each
one's pipe and sentinel in the pool's selector, replaces, retires and
abandons them, and at the end stops them all and reaps them: no worker
outlives the pool, and none is left a zombie. What runs on them is the
supervisor's business (``supervisor.py``); it calls everything here under its lock,
except :meth:`WorkerSet.stop_all`, which takes that lock itself.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import threading
import time
from typing import Any

from robotlab.parallel import pool_protocol
from robotlab.parallel.pool_state import PoolWorker

__all__ = ["WorkerSet"]

logger = logging.getLogger("robotlab.parallel")


class WorkerSet:
    """The live workers (``members``), and those still ending: retired, or abandoned inside a job."""

    def __init__(self, backend: Any, selector: selectors.BaseSelector, initializer: str | None,
                 initargs: tuple) -> None:
        self.backend = backend
        self.selector = selector
        self._start_args = (initializer, initargs)
        self.members: list[PoolWorker] = []
        self._retiring: list[Any] = []  # told to stop, joined once their sentinel fires
        self._abandoned: list[Any] = []  # timed-out interpreters or threads, which cannot be stopped

    def spawn(self) -> PoolWorker:
        """Start a worker and watch its pipe and sentinel (the caller adds it to ``members``)."""
        worker = PoolWorker(self.backend.start(*self._start_args))
        self.selector.register(worker.handle.conn, selectors.EVENT_READ, ("message", worker))
        self.selector.register(worker.handle.sentinel, selectors.EVENT_READ, ("death", worker))
        return worker

    def watch_pipe(self, worker: PoolWorker, watch: bool) -> None:
        """Let the supervisor read *worker*'s pipe again (True), or not while a caller reads it (False)."""
        if not watch:
            self.selector.unregister(worker.handle.conn)
        elif worker in self.members:
            self.selector.register(worker.handle.conn, selectors.EVENT_READ, ("message", worker))

    def replace(self, worker: PoolWorker, *, successor: bool) -> None:
        """Drop a finished or dead worker, and start its successor in its place if *successor*."""
        self._forget(worker)
        index = self.members.index(worker)
        if successor:
            self.members[index] = self.spawn()
        else:
            del self.members[index]

    def retire(self, worker: PoolWorker, *, successor: bool) -> None:
        """Tell *worker* to stop after its last job and replace it; it is reaped when its sentinel fires."""
        with contextlib.suppress(OSError):
            worker.handle.conn.send_bytes(pool_protocol.STOP)
        self.replace(worker, successor=successor)
        self._retiring.append(worker.handle)
        self.selector.register(worker.handle.sentinel, selectors.EVENT_READ, ("retired", worker.handle))

    def reap_retired(self, handle: Any) -> None:
        """A retired worker's sentinel fired: join and release it."""
        self.selector.unregister(handle.sentinel)
        handle.join()
        handle.release()
        self._retiring.remove(handle)

    def end(self, worker: PoolWorker, *, successor: bool) -> str:
        """End a worker whose job ran out of time: kill it, or abandon it if it cannot be killed. Its fate."""
        handle = worker.handle
        if self.backend.can_kill:
            handle.kill()
            handle.join()
            fate = "was stopped and replaced"
        else:
            # A running interpreter or thread cannot be stopped: drop it (its next send fails
            # and its loop ends once the job returns) and join it at shutdown.
            self._abandoned.append(handle)
            fate = f"was abandoned (a running {self.backend.name} worker cannot be stopped) and replaced"
        self.replace(worker, successor=successor)
        if self.backend.can_kill:
            handle.release()
        return fate

    def stop_all(self, lock: threading.Lock) -> None:
        """Tell every worker to stop, give them two seconds, then kill; reap all (the pool's last act).

        *lock* (the supervisor's) is held only to take the workers over.
        """
        with lock:
            workers, self.members = self.members, []
            handles = [w.handle for w in workers] + self._retiring + self._abandoned
            self._retiring, self._abandoned = [], []
        for worker in workers:
            with contextlib.suppress(OSError):
                worker.handle.conn.send_bytes(pool_protocol.STOP)
        deadline = time.monotonic() + 2
        for handle in handles:
            handle.join(max(0.0, deadline - time.monotonic()))
            if handle.is_alive() and self.backend.can_kill:
                handle.kill()
                handle.join()
        for worker in workers:
            self._forget(worker)
        for handle in handles:
            if handle.is_alive():  # an interpreter still inside a job; its thread is a daemon
                logger.warning("worker %s is still running a job at shutdown and was left to finish", handle.label)
            else:
                handle.release()
        self.backend.close()

    def _forget(self, worker: PoolWorker) -> None:
        """Stop watching *worker* and close the pool's end of its pipe (which a live worker reads as EOF)."""
        for watched in (worker.handle.conn, worker.handle.sentinel):
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(watched)
        with contextlib.suppress(OSError):
            worker.handle.conn.close()
