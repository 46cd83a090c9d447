"""The wire codec for jobs and results: one frame format for every backend.

A frame is ``kind (1 byte) | payload length (4 bytes) | CRC-32 (4 bytes) | payload``
(big-endian), the checksum over the kind, the length and the payload:

- ``M`` msgspec msgpack, for plain JSON-like data (str, int, float, bool,
  None, bytes, and lists / str-keyed dicts of those) — it round-trips exactly;
- ``P`` pickle protocol 5, for everything else that ``freeze_deep`` allows
  (tuples, FrozenDict, dataclasses, enums, datetimes, ...): types survive;
- ``C`` cloudpickle, only with ``allow_code=True`` (lambdas, closures);
- ``B`` pickle protocol 5 whose large buffers (``out_of_band``) travel in a
  shared-memory segment (``shared_buffers``), when the sender passes an
  *outbox* to :func:`encode`: the payload is a length-prefixed pickle of the
  segment's reference and the count of buffers taken by persistent id, then the pickle.

Corrupt, truncated or unknown frames raise ``WireError`` before any decoding
(every single-bit flip, and a corrupt length never allocates more than the
frame holds). A value that nests deeper than pickle can recurse raises
``RactorBoundaryError``, as ``freeze_deep`` does beyond ``MAX_DEPTH``. Frames
are only ever read from robotlab's own workers: the checksum catches damage,
not forgery, and pickle must never decode untrusted data.

Example:
    >>> from robotlab.parallel.boundary import FrozenDict
    >>> decode(encode(FrozenDict({"ids": (1, 2)})))
    FrozenDict({'ids': (1, 2)})

msgspec is imported only for ``M`` frames (it cannot load in subinterpreters:
pass ``msgpack=False`` to encode for such a peer).
"""

from __future__ import annotations

import contextlib
import pickle
import struct
import zlib
from typing import Any

from robotlab.errors import RactorBoundaryError, WireError
from robotlab.parallel import out_of_band, shared_buffers

__all__ = ["decode", "encode"]

_PREFIX = struct.Struct(">cI")  # kind, payload length: the checksum covers them too
_HEADER = struct.Struct(">cII")  # the prefix, then the CRC-32
_REF_LENGTH = struct.Struct(">I")
_PLAIN_SCALARS = (str, int, float, bool, type(None), bytes)


def _is_plain(value: Any, depth: int = 0) -> bool:
    cls = type(value)
    if cls in _PLAIN_SCALARS:
        return not (cls is int and not -(2**63) <= value < 2**64)  # msgpack's integer range
    if depth > 32:
        return False
    if cls is list:
        return all(_is_plain(v, depth + 1) for v in value)
    if cls is dict:
        return all(type(k) is str and _is_plain(v, depth + 1) for k, v in value.items())
    return False


def _pickled(obj: Any, outbox: Any, received: dict | None) -> tuple[bytes, bytes]:
    """The kind and payload of *obj* as pickle: ``B`` when *outbox* took its large buffers, else ``P``."""
    if outbox is None:
        try:
            return b"P", pickle.dumps(obj, protocol=5)
        except TypeError:  # a memoryview, say: carried inside the pickle
            body, _, _ = out_of_band.dumps(obj, take=False)
            return b"B", _inline(body)
    if not out_of_band.has_large_buffer(obj):
        # Every PickleBuffer (a numpy array's, say) is left out here, with no Python call: any at all
        # sends the frame to out_of_band, which keeps the small ones in.
        left_out: list[pickle.PickleBuffer] = []
        try:
            payload = pickle.dumps(obj, protocol=5, buffer_callback=left_out.append)
        except TypeError:  # a memoryview: out_of_band carries it
            payload = b""
        if payload and not left_out and (len(payload) < out_of_band.THRESHOLD
                                         or not out_of_band.may_hold_large_buffer(payload)):
            return b"P", payload
    body, buffers, taken = out_of_band.dumps(obj, received=received)
    if not buffers:
        return b"B", _inline(body)
    ref = pickle.dumps((outbox.store(buffers), taken), protocol=5)
    return b"B", _REF_LENGTH.pack(len(ref)) + ref + body


def _inline(body: bytes) -> bytes:
    """A ``B`` payload whose buffers all travel inside the pickle."""
    ref = pickle.dumps((None, 0), protocol=5)
    return _REF_LENGTH.pack(len(ref)) + ref + body


def encode(obj: Any, *, allow_code: bool = False, msgpack: bool = True, outbox: Any = None,
           received: dict | None = None) -> bytes:
    """Encode *obj* as one frame; with an *outbox* (``shared_buffers``), its large buffers go there.

    *received*: what :func:`decode` collected from the frame this one answers: a large
    ``bytes`` from there that *obj* still holds goes back as a reference (``out_of_band``).
    """
    kind, payload = b"P", None
    if msgpack and outbox is None and _is_plain(obj):
        import msgspec

        with contextlib.suppress(UnicodeEncodeError):  # a lone surrogate: pickle carries it
            kind, payload = b"M", msgspec.msgpack.encode(obj)
    if payload is None:
        try:
            kind, payload = _pickled(obj, outbox, received)
        except RecursionError:
            raise RactorBoundaryError(f"cannot encode {type(obj).__name__} for a worker: it nests deeper than "
                                      "pickle can recurse here") from None
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            if not allow_code:
                raise WireError(
                    f"cannot encode {type(obj).__name__} for a worker: {exc}. "
                    "Pass it by import path, or opt in to shipping code with allow_code=True"
                ) from exc
            import cloudpickle

            kind, payload = b"C", cloudpickle.dumps(obj, protocol=5)
    prefix = _PREFIX.pack(kind, len(payload))
    return prefix + zlib.crc32(payload, zlib.crc32(prefix)).to_bytes(4, "big") + payload


def _load_shared(payload: memoryview, sent: Any, received: dict | None) -> Any:
    (length,) = _REF_LENGTH.unpack_from(payload)
    ref, taken = pickle.loads(payload[_REF_LENGTH.size:_REF_LENGTH.size + length])
    buffers = [] if ref is None else shared_buffers.open_segment(ref)
    return out_of_band.loads(payload[_REF_LENGTH.size + length:], buffers, taken, sent=sent, received=received)


def decode(data: bytes | bytearray | memoryview, *, sent: Any = (), received: dict | None = None) -> Any:
    """Decode one frame made by :func:`encode`.

    *sent*: the buffers of the frame this one answers (an outbox's ``sent``), which it may
    refer to; *received*: a dict to collect the large ``bytes`` rebuilt here (see :func:`encode`).
    """
    view = memoryview(data)
    if len(view) < _HEADER.size:
        raise WireError(f"truncated frame: {len(view)} bytes, the header alone is {_HEADER.size}")
    kind, length, checksum = _HEADER.unpack_from(view)
    payload = view[_HEADER.size:]
    if len(payload) != length:
        raise WireError(f"frame length mismatch: header says {length} bytes, got {len(payload)}")
    if zlib.crc32(payload, zlib.crc32(view[:_PREFIX.size])) != checksum:
        raise WireError(f"corrupt frame: its CRC-32 does not match its {length}-byte payload")
    try:
        if kind == b"M":
            import msgspec

            return msgspec.msgpack.decode(payload)
        if kind in (b"P", b"C"):  # cloudpickle output loads with plain pickle
            return pickle.loads(payload)
        if kind == b"B":
            return _load_shared(payload, sent, received)
    # Unpickling runs the data's own code, which may even call sys.exit. Other BaseExceptions
    # (KeyboardInterrupt, a test runner's timeout raised from a signal handler) are not the
    # data's doing and pass through: turned into a WireError they would be lost.
    except (Exception, SystemExit, GeneratorExit) as exc:
        raise WireError(f"corrupt {kind.decode(errors='replace')!r} frame: {type(exc).__name__}: {exc}") from exc
    raise WireError(f"unknown frame kind {kind!r}")
