"""Process workers for WorkerPool (``backend="process"``): forkserver or spawn, never fork.

Each worker is a ``multiprocessing`` process with one duplex pipe, which
it reads as a subinterpreter worker reads its socket (``_worker._FdChannel``):
idle, it polls without sleeping for 0.2 ms after its last frame, so a job
sent right after the previous result finds it awake. Every
worker also holds the read end of an "alive" pipe whose only writer is the
pool's process, so workers exit by themselves when the parent dies, even in
the middle of a job. Every worker leads its own process group, which the
pool SIGKILLs when the worker ends (see ``ProcessWorker``), so the
subprocesses its jobs started end with it; a process that leaves the group
(``setsid``) is out of reach.

Under forkserver the worker runtime is added to the forkserver's preload
list, so the forkserver imports it once and every worker forks with it
loaded: a 2-worker pool is ready in about 20 ms instead of 90 (the import
after each fork). This takes effect only if the forkserver starts after the
first pool is made; one that other code started earlier serves workers that
import the runtime themselves, as before.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sys
from multiprocessing.connection import wait
from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.parallel import shared_buffers

__all__ = ["ProcessBackend", "ProcessWorker"]


def _preload_in_forkserver(module: str) -> None:
    """Add *module* to the modules the forkserver imports when it starts, keeping those already listed."""
    from multiprocessing import forkserver  # not on Windows

    # multiprocessing can set the list but not read it, hence the private attribute (its default if renamed).
    listed = list(getattr(forkserver._forkserver, "_preload_modules", None) or ["__main__"])
    if module not in listed:
        forkserver.set_forkserver_preload([*listed, module])


def _kill_group(pgid: int) -> None:
    """SIGKILL process group *pgid* (a worker leads its own, see ``_worker.process_main``), if it exists."""
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):  # gone, or never made (not yet started)
            os.killpg(pgid, signal.SIGKILL)


class ProcessWorker:
    """The parent's handle on one worker process."""

    def __init__(self, process: Any, conn: Any) -> None:
        self.process = process
        self.conn = conn  # the parent's end of the worker's pipe
        self.sentinel = process.sentinel  # readable once the process has ended
        self.ident: int = process.pid
        self.label = f"pid {process.pid}"

    def kill(self) -> None:
        """SIGKILL the worker and its process group: the subprocesses its jobs started go with it."""
        _kill_group(self.ident)
        with contextlib.suppress(OSError, ValueError):
            self.process.kill()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the worker to end; then kill what is left of its group, and reap it."""
        if wait([self.sentinel], timeout):
            # The worker may be reaped already (by the forkserver, or by multiprocessing when it
            # starts another process), but its pid, the group's id, stays taken while anything is
            # left in the group: only an empty group's id can name someone else's group by now,
            # after a wrap-around of pids within these milliseconds (Process.kill takes that chance too).
            _kill_group(self.ident)
            self.process.join()
            shared_buffers.remove_worker_segments(self.ident)  # results it wrote that nobody took

    def is_alive(self) -> bool:
        # Not Process.is_alive(), which reaps an ended worker without ending its group.
        if not wait([self.sentinel], 0):
            return True
        self.join()
        return False

    @property
    def exitcode(self) -> int | None:
        return self.process.exitcode

    def release(self) -> None:
        """Free the process's OS resources (after it was joined)."""
        with contextlib.suppress(ValueError):
            self.process.close()

    def death_cause(self) -> str:
        code = self.process.exitcode
        if code is not None and code < 0:
            try:
                return f"signal {signal.Signals(-code).name}"
            except ValueError:
                return f"signal {-code}"
        return f"exit code {code}"


class ProcessBackend:
    """Starts worker processes for one pool."""

    name = "process"
    # A process can be killed: a timed-out job's worker is stopped for sure.
    can_kill = True
    # Its workers run on this machine: large buffers cross in shared memory (see shared_buffers).
    shares_memory = True
    interpreter_queues = None  # see SubinterpreterBackend

    def __init__(self, start_method: str | None) -> None:
        if start_method == "fork":
            raise ConfigurationError("start_method='fork' is not allowed: a forked child inherits the locks of "
                                     "litellm's and httpx's threads in an unknown state; use 'forkserver' or 'spawn'")
        if start_method not in (None, "forkserver", "spawn"):
            raise ConfigurationError(f"start_method must be 'forkserver' or 'spawn'; got {start_method!r}")
        method = start_method or ("forkserver" if sys.platform.startswith("linux") else "spawn")
        if method == "forkserver":
            _preload_in_forkserver("robotlab.parallel._worker")
        self._ctx = multiprocessing.get_context(method)
        self._alive_r, self._alive_w = self._ctx.Pipe(duplex=False)

    def start(self, initializer: str | None, initargs: tuple) -> ProcessWorker:
        from robotlab.parallel import _worker

        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(
            target=_worker.process_main,
            args=(child_conn, self._alive_r, list(sys.path), logging.getLogger().getEffectiveLevel(),
                  initializer, initargs),
            daemon=True,
            name="robotlab-worker",
        )
        process.start()
        child_conn.close()
        return ProcessWorker(process, parent_conn)

    def close(self) -> None:
        for conn in (self._alive_w, self._alive_r):
            with contextlib.suppress(OSError):
                conn.close()
