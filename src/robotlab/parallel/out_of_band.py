"""Pickling with large buffers taken out of the pickle: which buffers leave, and how they come back.

At or above :data:`THRESHOLD` bytes, a ``bytes``, ``bytearray``,
``memoryview`` or ``array.array`` (by pickle's persistent ids), and a pickle
protocol 5 ``PickleBuffer`` (what numpy arrays and other buffer types make
for ``buffer_callback``), is left out of the pickle: :func:`dumps` returns
the pickle and the list of those buffers, :func:`loads` takes the pickle and
views of the buffers' bytes (``shared_buffers`` carries them) and rebuilds
each value with its type: ``bytes`` and ``bytearray`` and ``array.array``
as their own copies, a ``memoryview`` (its format and shape kept) or an
array over the view itself, read-only when the original was.

A ``memoryview`` below the threshold travels inside the pickle (plain pickle
refuses memoryviews). Standard library only: this module loads inside subinterpreters.

Example:
    >>> body, buffers, taken = dumps({"blob": b"x" * THRESHOLD, "small": b"y"})
    >>> len(buffers), loads(body, [memoryview(b) for b in buffers], taken)["blob"] == b"x" * THRESHOLD
    (1, True)
"""

from __future__ import annotations

import array
import functools
import io
import itertools
import pickle
import re
from collections.abc import Sequence
from typing import Any

from robotlab.errors import WireError
from robotlab.parallel.boundary import FrozenDict

__all__ = ["THRESHOLD", "dumps", "has_large_buffer", "loads", "may_hold_large_buffer"]

#: Buffers of at least this many bytes leave the frame (measured: docs/performance.md, "Large payloads").
THRESHOLD = 160 * 1024
_BUFFER_TYPES = frozenset({bytes, bytearray, memoryview, array.array, pickle.PickleBuffer})
_SCANNED = _BUFFER_TYPES | {tuple, list, dict, FrozenDict}
_SCAN_BREADTH = 64


def _nbytes(value: Any) -> int:
    cls = type(value)
    if cls is memoryview or cls is array.array:
        return value.nbytes if cls is memoryview else len(value) * value.itemsize
    return value.raw().nbytes if cls is pickle.PickleBuffer else len(value)


def has_large_buffer(value: Any, depth: int = 3) -> bool:
    """Whether *value*, looked into *depth* levels of tuples, lists and dicts (64 items each), holds a large buffer.

    A cheap look before pickling: a frame that holds none is pickled in one C call
    (and pickled again here only if that pickle turns out large). Other objects may
    hold one too: numpy arrays give theirs to ``buffer_callback``.
    """
    cls = type(value)
    if cls in _BUFFER_TYPES:
        return _nbytes(value) >= THRESHOLD
    if cls is tuple or cls is list:
        items = value
    elif cls is dict or cls is FrozenDict:
        items = value.values()
    else:
        return False
    if depth == 0:
        return False
    if len(items) > _SCAN_BREADTH:
        items = itertools.islice(items, _SCAN_BREADTH)
    for item in items:  # noqa: SIM110 - a loop, not any(<generator>): it runs for every frame, most small
        if type(item) in _SCANNED and has_large_buffer(item, depth - 1):
            return True
    return False


@functools.cache
def _large_opcodes(top: int) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """Where a pickle (protocol 5) of under ``(top + 1) << 24`` bytes may hold a large ``bytes``/``bytearray``.

    BINBYTES is ``B`` and a 4-byte length, BYTEARRAY8 ``\x96`` and an 8-byte one, little-endian;
    a length cannot exceed the pickle, so its high bytes are at most *top* (array.array pickles its
    items as bytes). Text never matches: its bytes are not zero. Two patterns, each starting with
    its literal, are searched much faster than one with both.
    """
    high = b"[\\x00-" + re.escape(bytes([top])) + b"]"
    return re.compile(b"B..." + high, re.S), re.compile(b"\\x96..." + high + b"\\x00{4}", re.S)


def may_hold_large_buffer(payload: bytes) -> bool:
    """False only if the pickle *payload* holds no ``bytes`` or ``bytearray`` of :data:`THRESHOLD` bytes or more.

    For a frame whose first pickle turned out large: pickling it again to take buffers out
    costs a Python call per object; this look runs in C but for the few candidates it finds.
    A candidate that is really part of some other value only costs that second pickle.
    """
    for pattern, width in zip(_large_opcodes(min(len(payload) >> 24, 255)), (4, 8), strict=True):
        for match in pattern.finditer(payload):
            at = match.start() + 1
            if THRESHOLD <= int.from_bytes(payload[at:at + width], "little") <= len(payload) - at - width:
                return True
    return False


def _keep_small(left_out: list[Any], threshold: float) -> Any:
    """The ``buffer_callback``: keep a small buffer in the pickle (True), leave a large one out (False).

    A closure, not a method: a pickler that held its own bound method would be a reference cycle
    through the buffers, and the garbage collector cannot clear a cycle through exported buffers.
    """

    def keep(buffer: pickle.PickleBuffer) -> bool:
        if buffer.raw().nbytes < threshold:
            return True
        left_out.append(buffer)
        return False

    return keep


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, take: bool, received: dict[int, tuple[bytes, int]] | None) -> None:
        self.received = received or {}
        self.threshold = THRESHOLD if take else float("inf")
        self.taken: list[Any] = []  # by persistent id, which says the index
        self.left_out: list[Any] = []  # PickleBuffers, in the order pickle wants them back
        super().__init__(file, protocol=5, buffer_callback=_keep_small(self.left_out, self.threshold) if take
                         else None)

    def _take(self, data: Any) -> int:
        self.taken.append(data)
        return len(self.taken) - 1

    def persistent_id(self, obj: Any) -> Any:
        cls = type(obj)
        if cls is bytes and id(obj) in self.received and self.received[id(obj)][0] is obj:
            return ("sent", self.received[id(obj)][1])  # the sender's own object comes back: not a byte copied
        if cls is memoryview:
            return _memoryview_id(self, obj)
        if cls not in _BUFFER_TYPES or cls is pickle.PickleBuffer or _nbytes(obj) < self.threshold:
            return None
        if cls is array.array:
            return ("array", self._take(obj), obj.typecode)
        return ("bytes" if cls is bytes else "bytearray", self._take(obj))


def _memoryview_id(pickler: _Pickler, view: memoryview) -> tuple:
    if view.format not in _CASTABLE:
        raise WireError(f"a memoryview of format {view.format!r} cannot cross to a worker: pass the object it "
                        "views (a numpy array, say), or memoryview.cast('B')")
    shape = tuple(view.shape or ())
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    if view.nbytes < pickler.threshold:
        return ("memoryview", None, view.tobytes(), view.format, shape, view.readonly)
    return ("memoryview", pickler._take(view.cast("B") if view.format != "B" or view.ndim != 1 else view),
            None, view.format, shape, view.readonly)


_CASTABLE = frozenset("bBhHiIlLqQnNfdc?e") | frozenset("@" + c for c in "bBhHiIlLqQnNfdc?e")


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, taken: Sequence[memoryview], rest: Sequence[memoryview],
                 sent: Sequence[Any], received: dict[int, tuple[bytes, int]] | None) -> None:
        super().__init__(file, buffers=rest)
        self._taken, self._sent, self._received = taken, sent, received

    def persistent_load(self, pid: Any) -> Any:
        kind, index, *more = pid
        if kind == "sent":
            if index >= len(self._sent) or type(self._sent[index]) is not bytes:
                raise pickle.UnpicklingError(f"buffer {index} of the job was not sent bytes")
            return self._sent[index]
        data = self._taken[index] if index is not None else None
        if kind == "bytes":
            rebuilt = bytes(data)
            if self._received is not None:
                self._received[id(rebuilt)] = (rebuilt, index)
            return rebuilt
        if kind == "bytearray":
            return bytearray(data)
        if kind == "array":
            rebuilt = array.array(more[0])
            rebuilt.frombytes(data)
            return rebuilt
        if kind == "memoryview":
            inline, fmt, shape, readonly = more
            view = memoryview(inline if readonly else bytearray(inline)) if data is None else data
            if fmt.lstrip("@") != "B" or len(shape) != 1:
                view = view.cast(fmt.lstrip("@"), shape)
            return view.toreadonly() if readonly else view
        raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")


def dumps(obj: Any, *, take: bool = True,
          received: dict[int, tuple[bytes, int]] | None = None) -> tuple[bytes, list[Any], int]:
    """The pickle of *obj* without its large buffers, those buffers, and how many of them come first by persistent id.

    *take* False leaves every buffer inside the pickle (memoryviews too): for a peer with no shared memory.
    *received*: the large ``bytes`` that :func:`loads` rebuilt from the peer's frame (see there);
    one that *obj* holds goes back by reference, as ``("sent", index)``.
    """
    file = io.BytesIO()
    pickler = _Pickler(file, take, received)
    pickler.dump(obj)
    pickler.clear_memo()
    return file.getvalue(), [*pickler.taken, *pickler.left_out], len(pickler.taken)


def loads(body: bytes | memoryview, buffers: Sequence[memoryview], taken: int, *, sent: Sequence[Any] = (),
          received: dict[int, tuple[bytes, int]] | None = None) -> Any:
    """Rebuild what :func:`dumps` pickled, from views of its buffers' bytes in the same order.

    *sent*: the buffers this side sent with the frame this one answers (a reference to one
    of them is that very object: ``bytes`` are immutable). *received*: a dict that collects
    the large ``bytes`` rebuilt here, by ``id``, for the answer's :func:`dumps`.
    """
    return _Unpickler(io.BytesIO(body), buffers[:taken], buffers[taken:], sent, received).load()
