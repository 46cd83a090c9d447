"""How values are stored in Redis: strict JSON by default, pickle only by opt-in.

JSON values are stored as UTF-8 JSON text, readable by any Redis client.
Pickled values start with the pickle protocol byte ``0x80``, which never
starts valid UTF-8 JSON, so every stored value says how it was written and a
JSON memory can refuse a pickled one instead of unpickling it: unpickling
runs code chosen by whoever wrote the value.

Example:
    >>> codec = ValueCodec("json")
    >>> codec.encode({"ids": (1, 2)}, "memory['k']")
    b'{"ids":[1,2]}'
    >>> codec.decode(b'{"ids":[1,2]}', "memory['k']")
    {'ids': [1, 2]}
"""

from __future__ import annotations

import json
import math
import pickle
from collections.abc import Mapping
from typing import Any

from robotlab.errors import BoundaryError, ConfigurationError, WireError

__all__ = ["SERIALIZERS", "ValueCodec"]

#: Valid ``serializer=`` values.
SERIALIZERS = ("json", "pickle")

_PICKLE_MARK = b"\x80"  # first byte of every pickle of protocol 2+
_JSON_TYPES = "dicts with str keys, lists, tuples, str, int, float (finite), bool and None"


class ValueCodec:
    """Encodes values for Redis and decodes them back.

    ``"json"``: the value must be plain data; mappings come back as ``dict``
    and tuples as ``list``. ``"pickle"``: any picklable value, and pickled
    values are read back; use it only when every writer to the server is
    trusted. A JSON codec never unpickles: it raises ``WireError``.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if name not in SERIALIZERS:
            raise ConfigurationError(
                f"unknown serializer {name!r}; valid serializers: {', '.join(repr(s) for s in SERIALIZERS)}"
            )
        self.name = name

    def encode(self, value: Any, where: str) -> bytes:
        """The bytes stored for *value*; *where* names it in errors (``memory['k']``)."""
        if self.name == "pickle":
            try:
                return pickle.dumps(value, protocol=5)
            except Exception as exc:  # pickling raises many types; report one
                raise BoundaryError(f"cannot store {where} in Redis: it cannot be pickled ({exc})") from exc
        text = json.dumps(_json_tree(value, where, set()), ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False)
        return text.encode()

    def decode(self, raw: bytes, where: str) -> Any:
        """The value stored as *raw*."""
        if raw[:1] == _PICKLE_MARK:
            if self.name != "pickle":
                raise WireError(
                    f"refusing to unpickle {where} from Redis: it was written with serializer='pickle' and this "
                    "memory uses serializer='json'; open it with serializer='pickle' only if you trust every "
                    "writer to that Redis server"
                )
            return pickle.loads(raw)
        try:
            return json.loads(raw)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise WireError(f"{where} in Redis is neither JSON nor a pickle written by robotlab: {exc}") from None


def _json_tree(value: Any, where: str, parents: set[int]) -> Any:
    """*value* as plain JSON types, or ``BoundaryError`` naming the first part that is not."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise BoundaryError(f"cannot store {where} in Redis as JSON: {value!r} is not a finite number")
        return value
    if isinstance(value, (Mapping, list, tuple)):
        if id(value) in parents:
            raise BoundaryError(f"cannot store {where} in Redis as JSON: it contains itself")
        parents.add(id(value))
        try:
            if isinstance(value, Mapping):
                tree = {}
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise BoundaryError(
                            f"cannot store {where} in Redis as JSON: key {key!r} ({type(key).__name__}) is not a "
                            "str, and JSON object keys must be"
                        )
                    tree[key] = _json_tree(item, f"{where}[{key!r}]", parents)
                return tree
            return [_json_tree(item, f"{where}[{index}]", parents) for index, item in enumerate(value)]
        finally:
            parents.discard(id(value))
    raise BoundaryError(
        f"cannot store {where} in Redis as JSON: {type(value).__name__} is not plain data (use {_JSON_TYPES}; "
        "or serializer='pickle' when every writer to the server is trusted)"
    )
