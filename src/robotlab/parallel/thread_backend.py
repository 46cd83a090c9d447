"""Thread workers for WorkerPool (``backend="thread"``): for I/O-bound jobs and tests.

Each worker is a daemon thread of this process running the same worker loop
as a process or subinterpreter worker, over a socket pair with the same
framing, so the pool supervises it exactly as it does the others: same API,
errors, memory proxy and hooks (shipped by import path and registered again
in the worker). Jobs share this interpreter and its GIL: there is no escape
from the GIL, so CPU-bound Python code gains nothing here (use
``backend="process"`` or ``"subinterpreter"``); jobs that wait on the
network, disks or other processes do run side by side. Objects of
``__main__`` may be sent (same interpreter), and a job starts with a
worker's empty ``contextvars`` context, not the submitter's.

What a thread cannot do: it cannot be killed. A timed-out job is *abandoned*
(its future fails with ``JobTimeout``, a new thread worker takes its place,
and the old thread ends when the job returns by itself; shutdown waits two
seconds for it, then leaves it running); a job that crashes the interpreter
(a segfault, ``os._exit``) takes the whole process down.

Unlike other workers, a thread worker leaves ``logging`` alone: its records
reach the parent's handlers directly. ``robotlab.parallel.memory()`` works in
the job's own thread and in threads started through robotlab's scoped
executors (they copy the context), but not in a bare ``threading.Thread`` the
job starts (pass it the proxy instead).
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from multiprocessing.connection import Connection

__all__ = ["THREAD_NAME", "ThreadBackend", "ThreadHosted", "ThreadWorker"]

#: The name of a thread worker's thread, formatted with its ``ident``.
THREAD_NAME = "robotlab-thread-worker-{}"
_idents = itertools.count(1)  # process-wide: a thread's own ident may be reused once it has ended


class ThreadHosted:
    """A worker whose loop runs on a thread of this process: thread workers, and subinterpreters.

    It has a socket pair to the pool and a sentinel pipe that becomes readable
    when its thread ends. A subclass starts ``self._thread`` and makes
    :meth:`_finish` the last thing that thread does.
    """

    exitcode = None  # a thread has no exit status
    stopped = "its thread ended"  # the death cause when the worker loop did not fail

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.conn = Connection(ours.detach())
        self._fd = theirs.detach()  # the worker's end
        self._stopped_r, self._stopped_w = os.pipe()
        self.sentinel = self._stopped_r  # readable once the thread has ended
        self._thread: threading.Thread | None = None
        self._failure: str | None = None
        # The sentinel's read end is closed once: by release() or, if the thread was still
        # running a job then (abandoned at shutdown), by the thread when the job returns.
        self._fd_lock = threading.Lock()
        self._ended = self._released = False

    def _close_all(self) -> None:
        """The thread could not start: leave no fd behind."""
        for fd in (self._fd, self._stopped_r, self._stopped_w):
            os.close(fd)
        self.conn.close()

    def _finish(self) -> None:
        os.close(self._fd)
        with self._fd_lock:
            os.close(self._stopped_w)  # wakes the supervisor: this worker has stopped
            self._ended = True
            if self._released:
                os.close(self._stopped_r)

    def kill(self) -> None:
        """Abandon: the pool stops reading; the worker ends when its current job returns."""

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def death_cause(self) -> str:
        return f"an error in its worker loop: {self._failure}" if self._failure else self.stopped

    def release(self) -> None:
        """Free the sentinel (now, or when the thread's job returns if it is still running one)."""
        with self._fd_lock:
            if self._released:
                return
            self._released = True
            if self._ended:
                os.close(self._stopped_r)


class ThreadWorker(ThreadHosted):
    """The pool's handle on one worker thread."""

    def __init__(self, initializer: str | None, initargs: tuple) -> None:
        super().__init__()
        self.ident: int = next(_idents)
        self.label = f"thread {self.ident}"
        self._thread = threading.Thread(target=self._run, args=(initializer, initargs), daemon=True,
                                        name=THREAD_NAME.format(self.ident))
        try:
            self._thread.start()
        except BaseException:  # "can't start new thread"
            self._close_all()
            raise

    def _run(self, initializer: str | None, initargs: tuple) -> None:
        from robotlab.parallel import _worker

        try:
            _worker.thread_main(self._fd, self.ident, initializer, initargs)
        except BaseException as exc:  # the worker loop itself failed (a job's errors go back as replies)
            self._failure = f"{type(exc).__name__}: {exc}"
        finally:
            self._finish()


class ThreadBackend:
    """Starts thread workers for one pool."""

    name = "thread"
    can_kill = False
    # Its workers run on this machine: large buffers cross in shared memory (see shared_buffers).
    shares_memory = True
    interpreter_queues = None  # see SubinterpreterBackend

    def start(self, initializer: str | None, initargs: tuple) -> ThreadWorker:
        return ThreadWorker(initializer, initargs)

    def close(self) -> None:
        pass
