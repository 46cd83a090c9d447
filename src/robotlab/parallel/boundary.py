"""What may cross to a worker: ``freeze_deep``, ``is_shareable``, and import paths.

``freeze_deep(value)`` returns a deeply immutable equivalent (dict → FrozenDict,
list → tuple, set → frozenset, bytearray → bytes; a memoryview, PickleBuffer or
numpy array → a read-only view of the same memory; array.array as it is) or raises
``RactorBoundaryError`` naming the path and type of the first value that
cannot cross. It never mutates its input, is idempotent (an already frozen
result comes back as the same object; a ``FrozenDict`` is checked again all
the same, as ``dict.__setitem__`` can still change one), refuses cycles and
values nested deeper than ``MAX_DEPTH`` (200) levels, the most that pickle
carries on every supported Python. Plain data (builtin containers and
scalars) takes a fast path, in C when the optional ``_freeze`` extension was built.

Classes and module-level functions are shareable as they are in Ruby's
Ractors (classes and modules are): they cross by reference, as their import
path, so only one that a worker cannot import (a lambda, a nested function,
one defined in ``__main__`` where workers cannot import it) is refused.

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

import array
import copy
import dataclasses
import datetime
import enum
import fractions
import functools
import importlib
import pickle
import sys
import types
import uuid
from decimal import Decimal
from pathlib import PurePath
from typing import Any

from robotlab.errors import RactorBoundaryError

__all__ = ["MAX_DEPTH", "FrozenDict", "freeze_deep", "import_path", "is_shareable", "resolve", "thaw_json"]

_SCALARS = frozenset({
    type(None), bool, int, float, complex, str, bytes, range,
    datetime.datetime, datetime.date, datetime.time, datetime.timedelta, datetime.timezone,
    Decimal, fractions.Fraction, uuid.UUID,
})


class FrozenDict(dict):
    """An immutable, hashable dict whose values are deeply frozen (built by :func:`freeze_deep`).

    ``FrozenDict(mapping)`` freezes the values it is given, so every FrozenDict
    is deeply immutable and ``freeze_deep`` returns it as is. It is a ``dict``
    subclass, so ``json.dumps`` and code that expects a dict accept it, but
    every mutating method raises ``TypeError``; ``copy()`` and ``|`` return a
    plain, mutable dict.

    >>> frozen = FrozenDict({"ids": [1, 2]})
    >>> frozen, frozen == {"ids": (1, 2)}, hash(frozen) == hash(FrozenDict(ids=(1, 2)))
    (FrozenDict({'ids': (1, 2)}), True, True)
    >>> frozen["ids"] = ()
    Traceback (most recent call last):
    ...
    TypeError: FrozenDict is immutable
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> FrozenDict:
        return freeze_deep(dict(*args, **kwargs))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass  # __new__ built it whole; dict.__init__ would store the unfrozen values

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("FrozenDict cannot be subclassed")

    @classmethod
    def fromkeys(cls, keys: Any, value: Any = None) -> FrozenDict:
        return cls(dict.fromkeys(keys, value))

    def _immutable(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("FrozenDict is immutable")

    __setitem__ = __delitem__ = __ior__ = _immutable
    clear = pop = popitem = setdefault = update = _immutable

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


def _type_name(value: Any) -> str:
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _is_bound_method(value: Any) -> bool:
    if isinstance(value, types.BuiltinMethodType):  # len, but also [].append
        return not isinstance(value.__self__, (types.ModuleType, type(None)))
    return isinstance(value, types.MethodType)


def _why(value: Any) -> str:
    if _is_bound_method(value):
        return ("is a bound method, which is not shareable: pass the function and its instance as arguments "
                "(f(obj) instead of obj.f), or a module-level function")
    if isinstance(value, functools.partial):
        return "is not shareable (pass the function and its arguments separately)"
    return "is not shareable"


# Crossing by import path: what pickle does for them too, so the worker gets the same object.
_BY_REFERENCE = (type, types.FunctionType, types.BuiltinFunctionType)


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


def freeze_deep(value: Any, *, root: str = "value", main_importable: bool = False) -> Any:
    """A deeply immutable equivalent of *value*, or ``RactorBoundaryError`` naming the path.

    *main_importable*: whether the receiving workers can import ``__main__``
    (then classes and functions defined there may cross too).
    """
    frozen = _freeze_plain(value, FrozenDict, _LEAF_TYPES, _NOT_PLAIN)
    return frozen if frozen is not _NOT_PLAIN else _Freezer(root, main_importable).run(value)


_NOT_PLAIN = object()
_PLAIN_DEPTH = 64  # beyond it (deep nesting, or a cycle) the iterative walker takes over
_BUILTIN_SCALARS = frozenset({str, int, float, type(None), bool, bytes, complex})
# Exact types whose instances are immutable leaves: the scalars, and each Enum and
# PurePath subclass once the walker has met it (then the fast path passes it too).
_LEAF_TYPES: set[type] = set(_SCALARS)


def _freeze_plain_py(value: Any, frozen_dict: type, leaf_types: set[type], not_plain: Any, depth: int = 0) -> Any:
    """The fast path for plain data: builtin containers of leaves, with builtin-scalar keys.

    Returns *not_plain* on anything else, and the walker below redoes the value
    with paths for its error messages; this path computes no paths. The C
    module ``_freeze`` implements exactly this function, much faster.
    """
    cls = type(value)
    if cls in _BUILTIN_SCALARS:
        return value
    if cls is tuple or cls is list or cls is dict or cls is frozen_dict:
        if depth > _PLAIN_DEPTH:
            return not_plain
        if cls is dict or cls is frozen_dict:  # a FrozenDict is checked too: dict.__setitem__ can change it
            frozen = dict.__new__(frozen_dict)
            same = True
            for key, item in dict.items(value):
                if type(key) not in _BUILTIN_SCALARS:
                    return not_plain
                frozen_item = _freeze_plain_py(item, frozen_dict, leaf_types, not_plain, depth + 1)
                if frozen_item is not_plain:
                    return not_plain
                same = same and frozen_item is item
                dict.__setitem__(frozen, key, frozen_item)
            return value if cls is frozen_dict and same else frozen
        items = tuple(value)
        out = []
        for item in items:
            frozen_item = _freeze_plain_py(item, frozen_dict, leaf_types, not_plain, depth + 1)
            if frozen_item is not_plain:
                return not_plain
            out.append(frozen_item)
        return items if all(a is b for a, b in zip(out, items, strict=True)) else tuple(out)
    if cls in leaf_types:
        return value
    if cls is set or cls is frozenset:
        if not all(type(item) in _BUILTIN_SCALARS for item in value):
            return not_plain
        return value if cls is frozenset else frozenset(value)
    if cls is bytearray:
        return bytes(value)
    return not_plain


try:
    from robotlab.parallel._freeze import freeze_plain as _freeze_plain_c
except ImportError:  # built without a C compiler: the same results, slower
    _freeze_plain_c = None
_freeze_plain = _freeze_plain_c or _freeze_plain_py


# How deep a value may nest to cross (containers and records, each one level). pickle recurses
# on the C stack: CPython 3.11 carries about 250 levels of FrozenDict (four pickle calls
# each) within its default recursion limit, 3.13 ten times that. One limit everywhere, with
# room for the frames of the caller that pickles.
MAX_DEPTH = 200


def _describe_key(key: Any) -> str:
    """``repr(key)``, or a stand-in when that fails (an int too long to print, a broken ``__repr__``)."""
    try:
        return repr(key)
    except Exception:
        return f"<{_type_name(key)} key>"


def _render(path: Any) -> str:
    """A path string (``args['ids'][0].x``) from the chain ``(parent, (how, what))`` the walker keeps."""
    parts = []
    while isinstance(path, tuple):
        path, (how, what) = path
        if how == "key":
            parts.append(f" (key {_describe_key(what)})")
        elif how == "item":
            parts.append(f"[{_describe_key(what)}]")
        elif how == "index":
            parts.append(f"[{what}]")
        else:
            parts.append(f".{what}")
    if len(parts) > 12:  # a refused value 200 levels down: its first and last steps say enough
        parts = [*parts[:6], f"...({len(parts) - 12} levels)...", *parts[-6:]]
    return path + "".join(reversed(parts))


class _Freezer:
    """Iterative post-order walk; builds frozen copies only where something changed.

    Paths are built only for an error message: a key's ``repr`` may be costly or fail.
    """

    def __init__(self, root: str, main_importable: bool = False) -> None:
        self.root = root
        self.main_importable = main_importable

    def run(self, value: Any) -> Any:
        # Each frame: [value, path, children(list of (label, child)), index, results, kind]
        on_path: set[int] = set()
        stack: list[list[Any]] = []
        result: Any = None

        def push(v: Any, path: Any) -> Any:
            """Return a leaf's frozen value directly, or None after pushing a frame."""
            cls = type(v)
            if cls in _LEAF_TYPES:
                return ("leaf", v)
            if isinstance(v, enum.Enum):
                _LEAF_TYPES.add(cls)
                return ("leaf", v)
            if cls in _BUFFERS or _is_numpy_array(v):
                return ("leaf", _frozen_buffer(v, path))
            # A PurePath subclass may add attributes, which would not cross: only an empty one passes.
            if isinstance(v, PurePath) and not getattr(v, "__dict__", None):
                if not hasattr(v, "__dict__"):
                    _LEAF_TYPES.add(cls)  # its instances can carry nothing but the path
                return ("leaf", v)
            if isinstance(v, _BY_REFERENCE) and not _is_bound_method(v):
                try:
                    import_path(v, main_importable=self.main_importable)
                except RactorBoundaryError as exc:
                    raise _fail(_render(path), v, str(exc)) from None
                return ("leaf", v)
            if len(stack) >= MAX_DEPTH:
                raise _fail(_render(path), v, f"the value nests deeper than {MAX_DEPTH} levels, the most that "
                            "can cross to a worker")
            kind, children = self.children(v, path)
            if id(v) in on_path:
                raise _fail(_render(path), v, f"{_type_name(v)} contains itself (a reference cycle cannot be frozen)")
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
                leaf = push(child, (path, label))
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
    def children(v: Any, path: Any) -> tuple[str, list[tuple[tuple[str, Any], Any]]]:
        cls = type(v)
        if cls is dict or cls is FrozenDict:  # a FrozenDict too: dict.__setitem__ can still change one
            items = []
            for k, item in dict.items(v):
                items.append((("key", k), k))
                items.append((("item", k), item))
            return cls.__name__, items
        if cls is list or cls is tuple:
            return cls.__name__, [(("index", i), item) for i, item in enumerate(v)]
        if cls is set or cls is frozenset:
            return cls.__name__, [(("item", item), item) for item in v]
        if cls is bytearray:
            return "bytearray", []
        if isinstance(v, tuple) and hasattr(cls, "_fields"):  # NamedTuple
            return "namedtuple", [(("attr", name), getattr(v, name)) for name in cls._fields]
        fields = _fields(v)
        if fields is not None:
            return "record", [(("attr", name), item) for name, item in fields]
        if isinstance(v, PurePath):
            raise _fail(_render(path), v, f"{_type_name(v)} carries attributes besides its path "
                        f"({', '.join(sorted(vars(v)))}), which would not cross")
        raise _fail(_render(path), v)

    @staticmethod
    def rebuild(v: Any, kind: str, children: list[tuple[tuple[str, Any], Any]], results: list[Any]) -> Any:
        originals = [c for _, c in children]
        unchanged = all(a is b for a, b in zip(originals, results, strict=True))
        if kind == "FrozenDict" and unchanged:
            return v
        if kind in ("dict", "FrozenDict"):
            frozen = dict.__new__(FrozenDict)  # not FrozenDict(): its values are frozen already
            dict.update(frozen, zip(results[0::2], results[1::2], strict=True))
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
        # A copy with the frozen field values set in place: the constructor (or dataclasses.replace)
        # would refuse init=False fields and run __post_init__ again.
        names = [name for (_, name), _ in children]
        if not dataclasses.is_dataclass(v):  # a frozen msgspec.Struct
            return type(v)(**dict(zip(names, results, strict=True)))
        frozen = copy.copy(v)
        for name, item in zip(names, results, strict=True):
            object.__setattr__(frozen, name, item)
        return frozen


_BUFFERS = frozenset({memoryview, array.array, pickle.PickleBuffer})


def _is_numpy_array(value: Any) -> bool:
    numpy = sys.modules.get("numpy")  # never imported here: an array exists only if its caller imported numpy
    return numpy is not None and isinstance(value, numpy.ndarray)


def _frozen_buffer(value: Any, path: Any) -> Any:
    """A buffer as it crosses: read-only views stay, writable ones become read-only views of the same memory.

    No copy is made here; the buffer's bytes are copied once when the job is sent (see
    ``out_of_band``), so changing the original after ``submit`` does not reach the job.
    An ``array.array`` crosses as it is (the worker gets its own copy).
    """
    if type(value) is memoryview:
        return value if value.readonly else value.toreadonly()
    if type(value) is pickle.PickleBuffer:
        view = value.raw()
        return value if view.readonly else pickle.PickleBuffer(view.toreadonly())
    if type(value) is array.array:
        return value
    if value.dtype.hasobject:
        raise _fail(_render(path), value, "a numpy array of Python objects is not shareable (its items may "
                    "change): convert it to a numeric dtype or to a tuple")
    if not value.flags.writeable:
        return value
    view = value.view()
    view.flags.writeable = False
    return view


def thaw_json(value: Any) -> Any:
    """Frozen JSON-like data back to plain dicts and lists (``FrozenDict`` → dict, tuple → list).

    >>> thaw_json(freeze_deep({"a": [1, {"b": 2}]}))
    {'a': [1, {'b': 2}]}
    """
    if isinstance(value, FrozenDict):
        return {k: thaw_json(v) for k, v in value.items()}
    if type(value) is tuple:
        return [thaw_json(v) for v in value]
    return value


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
    if isinstance(obj, types.MethodType) and not isinstance(obj.__self__, type):
        raise RactorBoundaryError(
            f"cannot send bound method {qualname} by import path: pass the function {module}:{qualname} "
            "and the instance as its first argument"
        )
    path = f"{module}:{qualname}"
    resolved = resolve(path)
    # A classmethod resolves to a new, equal bound method each time.
    if resolved is not obj and not (isinstance(obj, types.MethodType) and resolved == obj):
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
