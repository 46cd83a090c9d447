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
takes the whole process down. And on CPython 3.13, while any subinterpreter
exists, a child process that runs Python code after ``fork()`` aborts
(``os.fork``, multiprocessing's "fork" start method, ``subprocess`` with
``preexec_fn``, a local Ray start): :func:`live_subinterpreters` tells
whether that is the case. Process workers are unaffected: forkserver and
spawn start a fresh interpreter with ``exec``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from types import ModuleType
from typing import Any

from robotlab.errors import DependencyError
from robotlab.parallel import wire
from robotlab.parallel.thread_backend import ThreadHosted

__all__ = ["InterpreterWorker", "SubinterpreterBackend", "live_subinterpreters", "load_interpreters"]

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


def live_subinterpreters() -> int:
    """How many interpreters besides the main one exist in this process (made through PEP 734's module).

    >>> from robotlab.parallel import WorkerPool
    >>> from robotlab.parallel.subinterpreter_backend import live_subinterpreters
    >>> with WorkerPool(size=2, backend="subinterpreter"):   # doctest: +SKIP
    ...     live_subinterpreters()
    2
    """
    low_level = sys.modules.get("_interpreters")  # not imported: none was ever made
    return 0 if low_level is None else len(low_level.list_all()) - 1


class InterpreterWorker(ThreadHosted):
    """The pool's handle on one subinterpreter and the thread that runs it."""

    stopped = "its interpreter stopped"

    def __init__(self, interpreters: ModuleType, initializer: str | None, initargs: tuple) -> None:
        super().__init__()
        try:
            self._interp = interpreters.create()
        except BaseException:  # e.g. out of memory
            self._close_all()
            raise
        self.ident: int = self._interp.id
        self.label = f"interpreter {self.ident}"
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
            with contextlib.suppress(Exception):
                self._interp.close()
            self._finish()


class SubinterpreterBackend:
    """Starts subinterpreter workers for one pool."""

    name = "subinterpreter"
    can_kill = False
    # Its workers run on this machine: large buffers cross in shared memory (see shared_buffers).
    shares_memory = True

    def __init__(self) -> None:
        self._interpreters: Any = load_interpreters()
        # Where the workers can read this process's memory in place: the bytes of a job are lent
        # to them through a PEP 734 queue instead of copied (see shared_buffers). The backport
        # (CPython 3.13) only: 3.14's queues are not tried yet, and copy as before.
        self.interpreter_queues: ModuleType | None = None
        if sys.version_info < (3, 14):
            from interpreters_backport.interpreters import queues

            self.interpreter_queues = queues

    def start(self, initializer: str | None, initargs: tuple) -> InterpreterWorker:
        return InterpreterWorker(self._interpreters, initializer, initargs)

    def close(self) -> None:
        pass
