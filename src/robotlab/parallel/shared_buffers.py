"""Shared-memory segments that carry a frame's large buffers across the worker boundary, and their lifetimes.

A sender writes a frame's out-of-band buffers (see ``out_of_band``) once into
one segment; the frame carries only a *reference*; the receiver maps the
segment copy-on-write, so nothing it does to what it receives reaches the
sender's memory. Three kinds of segment, each with one owner that frees it,
and one kind of loan:

- ``("fd", pid, fd, inode, sizes)``: an anonymous ``memfd`` of process *pid*
  (the pool's process), opened by the receiver through ``/proc/PID/fd/FD``.
  It has no name, so it can never be left behind: the owner (a
  :class:`JobOutbox`) closes it when the job ends, fails, times out or is
  cancelled, and the kernel frees it when the last mapping goes (also when
  the owner is SIGKILLed). The inode check refuses a reused fd number.
- ``("name", name, inode, sizes)``: a file in ``/dev/shm`` that a worker
  process wrote for the parent (a result), unlinked by the parent right
  after it maps it. Until then a :class:`NamedOutbox` in the worker tracks
  it: the worker unlinks what is left when the parent dies (its watcher
  thread) or its channel closes, and the parent unlinks a dead worker's
  names (:func:`remove_worker_segments`) when it joins it.
- ``("own", fd, inode, sizes)``: a ``memfd`` handed over inside one process (a
  thread or subinterpreter worker's result): the receiver maps it and closes it.
- ``("lent", queue_id, sizes)``: no segment at all. ``bytes`` sent to a
  subinterpreter of this process are *lent*: read-only views of them wait in a
  cross-interpreter queue (PEP 734), and the worker reads the sender's own
  memory. Only immutable ``bytes`` are lent, so a view can never see a change;
  CPython keeps each lent object alive until the view that the worker took is
  gone, however long an abandoned job holds it. The :class:`JobOutbox` drains
  what the worker did not take when the job ends.

Only Linux has all three (``memfd_create``, ``/proc``, ``/dev/shm``):
elsewhere :func:`supported` is False and every buffer stays in the frame.
Standard library only: this module loads inside subinterpreters.

Example:
    >>> outbox = JobOutbox()
    >>> ref = outbox.store([b"x" * 100_000])
    >>> [bytes(view[:3]) for view in open_segment(ref)]
    [b'xxx']
    >>> outbox.release()
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from robotlab.errors import WireError

__all__ = ["SHM_DIR", "FrameOutbox", "JobOutbox", "NamedOutbox", "TransferOutbox", "open_segment",
           "remove_worker_segments", "supported"]

SHM_DIR = "/dev/shm"
_PREFIX = "robotlab-"  # a worker's result files: robotlab-<worker pid>-<n>
_ALIGN = 64  # every buffer starts at a multiple of this: an array mapped from it is aligned
_names = itertools.count()


def supported() -> bool:
    """Whether large buffers can travel through shared memory here (Linux: memfd, /proc, /dev/shm)."""
    return (sys.platform.startswith("linux") and hasattr(os, "memfd_create") and os.path.isdir(SHM_DIR)
            and os.path.isdir("/proc/self/fd"))


def _offsets(sizes: Sequence[int]) -> list[int]:
    offsets, at = [], 0
    for size in sizes:
        offsets.append(at)
        at += -(-size // _ALIGN) * _ALIGN
    return offsets


def _write(fd: int, buffers: Sequence[Any]) -> tuple[int, tuple[int, ...]]:
    """Write *buffers* into *fd* at aligned offsets; the file's inode and the buffers' sizes."""
    views = [memoryview(b).cast("B") if memoryview(b).format != "B" else memoryview(b) for b in buffers]
    sizes = tuple(view.nbytes for view in views)
    for view, offset in zip(views, _offsets(sizes), strict=True):
        done = 0
        while done < len(view):
            done += os.pwrite(fd, view[done:], offset + done)
    return os.fstat(fd).st_ino, sizes


def _memfd() -> int:
    return os.memfd_create("robotlab-buffers", os.MFD_CLOEXEC)


def _lendable(buffer: Any) -> bool:
    """Whether *buffer* is immutable: ``bytes``, or a read-only view of ``bytes``."""
    return type(buffer) is bytes or (type(buffer) is memoryview and buffer.readonly and type(buffer.obj) is bytes)


class JobOutbox:
    """The parent's segments of one job frame: open until :meth:`release` (when the job's future is done).

    *queues*: the PEP 734 queues module, when the job's worker is a subinterpreter of
    this process (its ``bytes`` are lent rather than copied); None otherwise.
    """

    def __init__(self, queues: ModuleType | None = None) -> None:
        self._lock = threading.Lock()  # answers to the job's calls store here too, from another thread
        self._queues = queues
        self._fds: list[int] = []
        self._lent: list[Any] = []  # the queues of views lent to the worker
        self._released = False
        self.sent: Sequence[Any] = ()  # the job frame's buffers: its reply may refer to them (``out_of_band``)

    def store(self, buffers: Sequence[Any]) -> tuple:
        lend = self._queues is not None and all(map(_lendable, buffers))
        with self._lock:
            if self._released:
                raise WireError("the job has ended: its frames take no more shared memory")
            if not self.holds():
                self.sent = buffers
            if lend:
                queue, views = self._queues.create(syncobj=True), [memoryview(b) for b in buffers]
                for view in views:
                    queue.put_nowait(view)
                self._lent.append(queue)
                return ("lent", queue.id, tuple(view.nbytes for view in views))
            fd = _memfd()
            self._fds.append(fd)
        inode, sizes = _write(fd, buffers)
        return ("fd", os.getpid(), fd, inode, sizes)

    def holds(self) -> bool:
        return bool(self._fds or self._lent)

    def release(self) -> None:
        """Close the segments and take back unread loans (idempotent); what a worker took stays valid."""
        with self._lock:
            fds, self._fds, self._released = self._fds, [], True
            lent, self._lent = self._lent, []
            self.sent = ()
        for fd in fds:
            os.close(fd)
        for queue in lent:  # a queue dropped with items in it would keep them alive for good
            while not queue.empty():
                with contextlib.suppress(self._queues.QueueEmpty):  # the worker took it meanwhile
                    queue.get_nowait()


class FrameOutbox:
    """The segments of one frame a worker sends, in its outbox: :meth:`discard` them if the frame was not sent.

    Once sent, they are the parent's to free.
    """

    def __init__(self, outbox: TransferOutbox | NamedOutbox) -> None:
        self._outbox = outbox
        self._refs: list[tuple] = []

    def store(self, buffers: Sequence[Any]) -> tuple:
        ref = self._outbox.store(buffers)
        self._refs.append(ref)
        return ref

    def discard(self) -> None:
        refs, self._refs = self._refs, []
        for ref in refs:
            self._outbox.discard(ref)


class TransferOutbox:
    """A same-process worker's result segments: each one is the receiver's to close once sent."""

    def store(self, buffers: Sequence[Any]) -> tuple:
        fd = _memfd()
        try:
            inode, sizes = _write(fd, buffers)
        except BaseException:
            os.close(fd)
            raise
        return ("own", fd, inode, sizes)

    def discard(self, ref: tuple) -> None:
        os.close(ref[1])


class NamedOutbox:
    """A worker process's result files in ``/dev/shm``: the parent unlinks each one it maps; :meth:`close` the rest."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the parent's watcher thread closes it while a job may still store
        self._names: set[str] = set()
        self._closed = False

    def store(self, buffers: Sequence[Any]) -> tuple:
        with self._lock:
            if self._closed:
                raise WireError("this worker is stopping: it sends no more results")
            self._names = {name for name in self._names if os.path.exists(os.path.join(SHM_DIR, name))}
            name = f"{_PREFIX}{os.getpid()}-{next(_names)}"
            fd = os.open(os.path.join(SHM_DIR, name), os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
            self._names.add(name)
        try:
            inode, sizes = _write(fd, buffers)
        except BaseException:
            self.discard(("name", name))
            raise
        finally:
            os.close(fd)
        return ("name", name, inode, sizes)

    def discard(self, ref: tuple) -> None:
        with self._lock:
            self._names.discard(ref[1])
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(SHM_DIR, ref[1]))

    def close(self) -> None:
        """Remove every file the parent has not taken, and store no more (the parent is gone, or this worker ends)."""
        # Under the lock to the end: the worker's two threads that close it (its loop, and the
        # watcher of its parent) each end the process right after, and one must not end it while
        # the other is still removing files.
        with self._lock:
            self._closed = True
            for name in self._names:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(SHM_DIR, name))
            self._names = set()


def remove_worker_segments(pid: int) -> None:
    """Remove the result files a worker process *pid* left behind (it died before the parent took them)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(SHM_DIR):
            if name.startswith(f"{_PREFIX}{pid}-"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(SHM_DIR, name))


def _open(ref: tuple) -> int:
    """A file descriptor of *ref*'s segment, to close after mapping; its name (if any) is gone already."""
    kind = ref[0]
    try:
        if kind == "fd":
            return os.open(f"/proc/{ref[1]}/fd/{ref[2]}", os.O_RDONLY | os.O_CLOEXEC)
        if kind == "own":
            return ref[1]
        if kind == "name":
            path = os.path.join(SHM_DIR, ref[1])
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            os.unlink(path)
            return fd
    except OSError as exc:
        raise WireError(f"the shared-memory segment of this frame is gone ({exc}): its sender ended the job "
                        "or stopped") from None
    raise WireError(f"unknown shared-memory reference {kind!r}")


def _take_lent(ref: tuple) -> list[memoryview]:
    """The read-only views a "lent" *ref* names, from its queue (see :class:`JobOutbox`)."""
    try:  # only subinterpreters of CPython 3.13 are lent to: the parent takes no loans (from a forged result)
        from interpreters_backport import interpreters
        from interpreters_backport.interpreters import queues
    except ImportError:
        interpreters = None
    if interpreters is None or interpreters.get_current() == interpreters.get_main():
        raise WireError("a frame that borrows buffers reached the main interpreter: only subinterpreter "
                        "workers borrow")
    _, queue_id, sizes = ref
    try:
        queue = queues.Queue(queue_id)
        views = [queue.get_nowait() for _ in sizes]
    except (queues.QueueError, ValueError, TypeError) as exc:  # QueueError: gone, or drained (the job ended)
        raise WireError(f"the buffers lent to this frame are gone ({type(exc).__name__}): its sender ended "
                        "the job") from None
    if any(type(v) is not memoryview or v.nbytes != size for v, size in zip(views, sizes, strict=True)):
        raise WireError("the buffers lent to this frame do not match its reference")
    return views


def open_segment(ref: tuple) -> list[memoryview]:
    """Views of the buffers *ref* names: lent (read-only), or over a private copy-on-write mapping."""
    if ref[0] == "lent":
        return _take_lent(ref)
    *_, inode, sizes = ref
    fd = _open(ref)
    if os.fstat(fd).st_ino != inode:
        if ref[0] != "own":  # an "own" fd that changed is not ours to close
            os.close(fd)
        raise WireError("the shared-memory segment of this frame was replaced: its sender ended the job")
    try:
        offsets = _offsets(sizes)
        total = offsets[-1] + sizes[-1] if sizes else 0
        if total == 0:
            return [memoryview(b"") for _ in sizes]
        mapping = mmap.mmap(fd, total, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    whole = memoryview(mapping)
    return [whole[offset:offset + size] for offset, size in zip(offsets, sizes, strict=True)]
