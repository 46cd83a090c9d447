"""Bare echo round trips over a socket: the least any worker backend built on one can cost (see overhead.py (d)).

The echo end runs in a subinterpreter (on a thread of this process) or in a
forkserver child, and waits for each frame the way robotlab's worker of that
kind does: a subinterpreter worker polls without sleeping for 0.2 ms after
its last frame before it sleeps, a process worker sleeps in ``read`` at once.
The parent end polls without sleeping, as a caller waiting in
``future.result()`` does. No Python work besides the reads and writes.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection

from robotlab.parallel._worker import _SPIN as WORKER_SPIN

FRAME = b"x" * 64


def echo(fd: int, spin: float) -> None:
    """Send back whatever arrives on *fd* until EOF, polling *spin* seconds without sleeping before each wait."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        deadline = time.perf_counter() + spin
        while not poller.poll(0) and time.perf_counter() < deadline:
            os.sched_yield()
        data = os.read(fd, 65536)
        if not data:
            return
        os.write(fd, data)


def _echo_connection(conn: Connection, spin: float) -> None:
    echo(conn.fileno(), spin)


def _round_trip(fd: int) -> Callable[[], None]:
    poller = select.poll()
    poller.register(fd, select.POLLIN)

    def one() -> None:
        os.write(fd, FRAME)
        while not poller.poll(0):
            os.sched_yield()
        os.read(fd, 65536)

    return one


@contextmanager
def process_echo(spin: float = 0.0) -> Iterator[Callable[[], None]]:
    """A forkserver child echoing (see :func:`echo`); yields one round trip as a callable."""
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.get_context("forkserver").Process(target=_echo_connection, args=(theirs, spin))
    child.start()
    theirs.close()
    try:
        yield _round_trip(ours.fileno())
    finally:
        ours.close()  # EOF ends the echo loop
        child.join()


@contextmanager
def subinterpreter_echo(spin: float = WORKER_SPIN) -> Iterator[Callable[[], None]]:
    """A subinterpreter echoing (see :func:`echo`); yields one round trip as a callable."""
    from robotlab.parallel.subinterpreter_backend import load_interpreters

    ours, theirs = multiprocessing.Pipe()
    interp = load_interpreters().create()
    code = (f"import sys\nsys.path[:] = {sys.path!r}\n"
            f"from benchmarks._echo import echo\necho({theirs.fileno()}, {spin!r})\n")
    thread = threading.Thread(target=interp.exec, args=(code,), daemon=True)
    thread.start()
    try:
        yield _round_trip(ours.fileno())
    finally:
        ours.close()
        thread.join()
        theirs.close()
        interp.close()
