"""Subinterpreter workers for WorkerPool (``backend="subinterpreter"``), CPython 3.13+.

Each worker is an isolated interpreter with its own GIL, running the worker
loop on a thread of this process. It talks to the pool over a socket pair
with the same framing as a process worker's pipe, so the supervisor treats
both alike. No timed polling (the stock cross-interpreter queue sleeps 10 ms
between polls): an idle worker checks its socket without sleeping for 0.2 ms
after its last frame, then sleeps in ``poll`` until the next one arrives
(``_worker._FdChannel``). A job sent right after the previous result, the
common case when a caller waits on each result, so needs no thread wake-up,
which is most of a round trip's cost.

What cannot be done in one process: a running interpreter cannot be killed.
A timed-out job is *abandoned* (its future fails with ``JobTimeout``, a new
interpreter takes its place, and the old one is dropped once the job returns
by itself); code that crashes the interpreter (a segfault, ``os._exit``)
takes the whole process down.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
from multiprocessing.connection import Connection
from types import ModuleType
from typing import Any

from robotlab.errors import DependencyError
from robotlab.parallel import wire

__all__ = ["InterpreterWorker", "SubinterpreterBackend", "load_interpreters"]

INSTALL_HINT = "pip install 'robotlab[subinterpreters]'"


def load_interpreters() -> ModuleType:
    """The PEP 734 ``interpreters`` module, or a DependencyError saying what to install."""
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info >= (3, 14):
        from concurrent import interpreters

        return interpreters
    if sys.version_info >= (3, 13):
        try:
            from interpreters_backport import interpreters
        except ImportError:
            raise DependencyError(f"backend='subinterpreter' on CPython {version} needs the PEP 734 backport: "
                                  f"{INSTALL_HINT}") from None
        return interpreters
    raise DependencyError(f"backend='subinterpreter' needs CPython 3.13 or newer (this is {version}); "
                          f"on 3.13 {INSTALL_HINT}, or use backend='process'")


class InterpreterWorker:
    """The pool's handle on one subinterpreter and the thread that runs it."""

    def __init__(self, interpreters: ModuleType, initializer: str | None, initargs: tuple) -> None:
        ours, theirs = socket.socketpair()
        self.conn = Connection(ours.detach())
        self._fd = theirs.detach()
        self._stopped_r, self._stopped_w = os.pipe()
        self.sentinel = self._stopped_r  # readable once the interpreter has stopped
        try:
            self._interp = interpreters.create()
        except BaseException:  # e.g. out of memory: leave no fd behind
            for fd in (self._fd, self._stopped_r, self._stopped_w):
                os.close(fd)
            self.conn.close()
            raise
        self.ident: int = self._interp.id
        self.label = f"interpreter {self.ident}"
        self.exitcode = None
        self._failure: str | None = None
        # The sentinel's read end is closed once, by release() or, if the interpreter was still
        # running a job then (abandoned at shutdown), by its thread when the job returns.
        self._fd_lock = threading.Lock()
        self._ended = self._released = False
        code = (
            "import sys\n"
            f"sys.path[:] = {list(sys.path)!r}\n"
            "from robotlab.parallel import _worker\n"
            f"_worker.interpreter_main({self._fd}, {self.ident}, {logging.getLogger().getEffectiveLevel()}, "
            f"{initializer!r}, {wire.encode(initargs, msgpack=False)!r})\n"
        )
        self._thread = threading.Thread(target=self._run, args=(code,), daemon=True,
                                        name=f"robotlab-interpreter-{self.ident}")
        self._thread.start()

    def _run(self, code: str) -> None:
        try:
            self._interp.exec(code)
        except Exception as exc:  # ExecutionFailed: the worker loop itself failed
            self._failure = str(exc)
        finally:
            os.close(self._fd)
            with contextlib.suppress(Exception):
                self._interp.close()
            with self._fd_lock:
                os.close(self._stopped_w)  # wakes the supervisor: this worker has stopped
                self._ended = True
                if self._released:
                    os.close(self._stopped_r)

    def kill(self) -> None:
        """Abandon: the pool stops reading; the interpreter ends when its current job returns."""

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def death_cause(self) -> str:
        return f"an error in its worker loop: {self._failure}" if self._failure else "its interpreter stopped"

    def release(self) -> None:
        """Free the sentinel (now, or when the interpreter's job returns if it is still running one)."""
        with self._fd_lock:
            if self._released:
                return
            self._released = True
            if self._ended:
                os.close(self._stopped_r)


class SubinterpreterBackend:
    """Starts subinterpreter workers for one pool."""

    name = "subinterpreter"
    can_kill = False

    def __init__(self) -> None:
        self._interpreters: Any = load_interpreters()

    def start(self, initializer: str | None, initargs: tuple) -> InterpreterWorker:
        return InterpreterWorker(self._interpreters, initializer, initargs)

    def close(self) -> None:
        pass
