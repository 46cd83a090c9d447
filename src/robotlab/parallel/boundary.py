"""What may cross to a worker: ``freeze_deep``, ``is_shareable``, and import paths.

``freeze_deep(value)`` returns a deeply immutable equivalent (dict → FrozenDict,
list → tuple, set → frozenset, bytearray → bytes) or raises
``RactorBoundaryError`` naming the path and type of the first value that
cannot cross. It never mutates its input, is idempotent (an already frozen
result comes back as the same object), refuses cycles, and walks with an
explicit stack, so 10,000 levels of nesting are fine.

Example:
    >>> freeze_deep({"ids": [1, 2], "tags": {"a"}})
    FrozenDict({'ids': (1, 2), 'tags': frozenset({'a'})})
    >>> import io
    >>> freeze_deep({"io": io.StringIO()}, root="args")
    Traceback (most recent call last):
    ...
    robotlab.errors.RactorBoundaryError: Cannot make value shareable at args['io']: _io.StringIO is not shareable

Standard library only: this module loads inside subinterpreters.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import fractions
import importlib
import sys
import types
import uuid
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import PurePath
from typing import Any

from robotlab.errors import RactorBoundaryError

__all__ = ["FrozenDict", "freeze_deep", "import_path", "is_shareable", "resolve"]

_SCALARS = frozenset({
    type(None), bool, int, float, complex, str, bytes, range,
    datetime.datetime, datetime.date, datetime.time, datetime.timedelta, datetime.timezone,
    Decimal, fractions.Fraction, uuid.UUID,
})


class FrozenDict(Mapping):
    """An immutable, hashable mapping; equal to a dict with the same items."""

    __slots__ = ("_data", "_deep", "_hash")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "_data", dict(*args, **kwargs))
        object.__setattr__(self, "_hash", None)
        object.__setattr__(self, "_deep", False)  # True once freeze_deep built it: contents known frozen

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(frozenset(self._data.items())))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._data == other._data
        return self._data == other if isinstance(other, Mapping) else NotImplemented

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FrozenDict is immutable")

    def __repr__(self) -> str:
        return f"FrozenDict({self._data!r})"

    def __reduce__(self):
        return (FrozenDict, (self._data,))


def _type_name(value: Any) -> str:
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _why(value: Any) -> str:
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return "is not shareable (pass it as an import path string 'module:name')"
    if isinstance(value, type):
        return "is not shareable (pass a class as an import path string 'module:Name')"
    return "is not shareable"


def _fail(path: str, value: Any, reason: str | None = None) -> RactorBoundaryError:
    reason = reason or f"{_type_name(value)} {_why(value)}"
    return RactorBoundaryError(f"Cannot make value shareable at {path}: {reason}")


def _is_frozen_struct(value: Any) -> bool:
    msgspec = sys.modules.get("msgspec")  # never import it here: it refuses subinterpreters
    if msgspec is None or not isinstance(value, msgspec.Struct):
        return False
    return bool(type(value).__struct_config__.frozen)


def _fields(value: Any) -> list[tuple[str, Any]] | None:
    """Fields of a frozen record (frozen dataclass, NamedTuple, frozen msgspec.Struct), else None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if not type(value).__dataclass_params__.frozen:
            return None
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    if _is_frozen_struct(value):
        return [(name, getattr(value, name)) for name in type(value).__struct_fields__]
    return None


def freeze_deep(value: Any, *, root: str = "value") -> Any:
    """A deeply immutable equivalent of *value*, or ``RactorBoundaryError`` naming the path."""
    cls = type(value)
    if cls in _SCALARS or isinstance(value, (enum.Enum, PurePath)) or (cls is FrozenDict and value._deep):
        return value
    frozen = _freeze_plain(value, 0)
    return frozen if frozen is not _NOT_PLAIN else _Freezer(root).run(value)


_NOT_PLAIN = object()
_PLAIN_DEPTH = 64  # beyond it (deep nesting, or a cycle) the iterative walker takes over


def _deep_frozen_dict(data: dict) -> FrozenDict:
    frozen = FrozenDict.__new__(FrozenDict)
    object.__setattr__(frozen, "_data", data)
    object.__setattr__(frozen, "_hash", None)
    object.__setattr__(frozen, "_deep", True)
    return frozen


def _freeze_plain(value: Any, depth: int) -> Any:
    """Fast path for the common case: scalars in tuples, lists and str/scalar-keyed dicts.

    Returns ``_NOT_PLAIN`` on anything else, and the walker below redoes the
    value with paths for its error messages; this path computes no paths.
    """
    cls = type(value)
    if depth > _PLAIN_DEPTH:
        return _NOT_PLAIN
    if cls is tuple or cls is list:
        for item in value:
            if type(item) not in _SCALARS:
                break
        else:  # only scalars (the common case, and every map() argument column): no rebuild
            return value if cls is tuple else tuple(value)
        items, changed = [], cls is list
        for item in value:
            frozen = item if type(item) in _SCALARS else _freeze_plain(item, depth + 1)
            if frozen is _NOT_PLAIN:
                return _NOT_PLAIN
            changed = changed or frozen is not item
            items.append(frozen)
        return tuple(items) if changed else value
    if cls is dict or cls is FrozenDict:
        if cls is FrozenDict and value._deep:
            return value
        data = {}
        for key, item in value.items():
            frozen = item if type(item) in _SCALARS else _freeze_plain(item, depth + 1)
            if type(key) not in _SCALARS or frozen is _NOT_PLAIN:
                return _NOT_PLAIN
            data[key] = frozen
        return _deep_frozen_dict(data)
    if cls in _SCALARS:
        return value
    return _NOT_PLAIN


class _Freezer:
    """Iterative post-order walk; builds frozen copies only where something changed."""

    def __init__(self, root: str) -> None:
        self.root = root

    def run(self, value: Any) -> Any:
        # Each frame: [value, path, children(list of (label, child)), index, results, kind]
        on_path: set[int] = set()
        stack: list[list[Any]] = []
        result: Any = None

        def push(v: Any, path: str) -> Any:
            """Return a leaf's frozen value directly, or None after pushing a frame."""
            cls = type(v)
            if cls in _SCALARS or isinstance(v, (enum.Enum, PurePath)) or (cls is FrozenDict and v._deep):
                return ("leaf", v)
            kind, children = self.children(v, path)
            if id(v) in on_path:
                raise _fail(path, v, f"{_type_name(v)} contains itself (a reference cycle cannot be frozen)")
            on_path.add(id(v))
            stack.append([v, path, children, 0, [], kind])
            return None

        leaf = push(value, self.root)
        if leaf is not None:
            return leaf[1]
        while stack:
            frame = stack[-1]
            v, path, children, index, results, kind = frame
            if index < len(children):
                frame[3] += 1
                label, child = children[index]
                child_path = path + label
                leaf = push(child, child_path)
                if leaf is not None:
                    results.append(leaf[1])
                continue
            stack.pop()
            on_path.discard(id(v))
            result = self.rebuild(v, kind, children, results)
            if stack:
                stack[-1][4].append(result)
        return result

    @staticmethod
    def children(v: Any, path: str) -> tuple[str, list[tuple[str, Any]]]:
        cls = type(v)
        if cls is dict or cls is FrozenDict:
            items = []
            for k, item in v.items():
                items.append((f" (key {k!r})", k))
                items.append((f"[{k!r}]", item))
            return "dict", items
        if cls is list or cls is tuple:
            return cls.__name__, [(f"[{i}]", item) for i, item in enumerate(v)]
        if cls is set or cls is frozenset:
            return cls.__name__, [(f"[{item!r}]", item) for item in v]
        if cls is bytearray:
            return "bytearray", []
        if isinstance(v, tuple) and hasattr(cls, "_fields"):  # NamedTuple
            return "namedtuple", [(f".{name}", getattr(v, name)) for name in cls._fields]
        fields = _fields(v)
        if fields is not None:
            return "record", [(f".{name}", item) for name, item in fields]
        raise _fail(path, v)

    @staticmethod
    def rebuild(v: Any, kind: str, children: list[tuple[str, Any]], results: list[Any]) -> Any:
        originals = [c for _, c in children]
        unchanged = all(a is b for a, b in zip(originals, results, strict=True))
        if kind == "dict":
            if type(v) is FrozenDict and unchanged:
                frozen = v
            else:
                frozen = FrozenDict(zip(results[0::2], results[1::2], strict=True))
            object.__setattr__(frozen, "_deep", True)
            return frozen
        if kind == "tuple":
            return v if unchanged else tuple(results)
        if kind == "list":
            return tuple(results)
        if kind in ("set", "frozenset"):
            return v if kind == "frozenset" and unchanged else frozenset(results)
        if kind == "bytearray":
            return bytes(v)
        if unchanged:
            return v
        if kind == "namedtuple":
            return type(v)(*results)
        names = [label[1:] for label, _ in children]
        if dataclasses.is_dataclass(v):
            return dataclasses.replace(v, **dict(zip(names, results, strict=True)))
        return type(v)(**dict(zip(names, results, strict=True)))


def is_shareable(value: Any) -> bool:
    """Whether *value* can cross to a worker. Never raises."""
    try:
        freeze_deep(value)
    except Exception:
        return False
    return True


def import_path(obj: Any, *, main_importable: bool = False) -> str:
    """``"package.module:QualName"`` for a module-level function or class.

    Refuses lambdas, nested functions and (unless *main_importable*) objects
    defined in ``__main__``, which worker processes cannot import.
    """
    if isinstance(obj, str):
        resolve(obj)
        return obj
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if module is None or qualname is None:
        raise RactorBoundaryError(f"{obj!r} has no importable name; pass a module-level function or class")
    if "<lambda>" in qualname:
        raise RactorBoundaryError(f"cannot send lambda {qualname} to a worker: define a module-level function")
    if "<locals>" in qualname:
        raise RactorBoundaryError(
            f"cannot send {qualname} to a worker: it is defined inside a function; move it to module level"
        )
    if module == "__main__" and not main_importable:
        raise RactorBoundaryError(
            f"cannot send __main__.{qualname} to a worker: workers cannot import __main__; "
            "move it into an importable module"
        )
    path = f"{module}:{qualname}"
    if resolve(path) is not obj:
        raise RactorBoundaryError(f"{path} does not resolve back to {obj!r}; it was renamed or shadowed")
    return path


def resolve(path: str) -> Any:
    """The object named by ``"package.module:QualName"`` (inverse of :func:`import_path`)."""
    module_name, sep, qualname = path.partition(":")
    if not sep or not module_name or not qualname:
        raise RactorBoundaryError(f"import path {path!r} must look like 'package.module:QualName'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise RactorBoundaryError(f"cannot import module {module_name!r} for {path!r}: {exc}") from exc
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise RactorBoundaryError(f"module {module_name!r} has no attribute {qualname!r}") from None
    return obj
