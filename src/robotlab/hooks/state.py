"""ExtensionState and DotState: the two-level store behind ``ctx.local`` / ``ctx.ext``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DotState", "ExtensionState"]


class DotState:
    """A schemaless dot-access bag: ``state.foo = 1``; an unset attribute reads ``None``.

    Reading a key that was never set returns ``None`` rather than raising, so a
    typo in a ``ctx.local`` reader fails silently (as in robot_lab).

    >>> s = DotState()
    >>> s.start = 1.5
    >>> s.start, s.typo, s["start"], "start" in s
    (1.5, None, 1.5, True)
    >>> s.merge_defaults({"start": 0, "level": "debug"}).to_dict()
    {'start': 1.5, 'level': 'debug'}
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "_data", {str(k): v for k, v in (data or {}).items()})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # keep copy/pickle/inspect protocols honest
            raise AttributeError(name)
        return self._data.get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._data[name] = value

    def __delattr__(self, name: str) -> None:
        self._data.pop(name, None)

    def __getitem__(self, name: str) -> Any:
        return self._data.get(str(name))

    def __setitem__(self, name: str, value: Any) -> None:
        self._data[str(name)] = value

    def __contains__(self, name: object) -> bool:
        return str(name) in self._data

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DotState):
            return self._data == other._data
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __getstate__(self) -> dict[str, Any]:
        return self._data

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "_data", dict(state))

    def merge_defaults(self, values: Mapping[str, Any]) -> DotState:
        """Write each pair only where the key is absent (registration ``context=`` defaults); returns self."""
        for key, value in values.items():
            self._data.setdefault(str(key), value)
        return self

    def to_dict(self) -> dict[str, Any]:
        """A copy of the backing dict."""
        return dict(self._data)

    def __repr__(self) -> str:
        return f"DotState({self._data!r})"


class ExtensionState:
    """Per-context namespaced state: ``ext(name)`` is that namespace's DotState, created on first use.

    >>> state = ExtensionState()
    >>> state.ext("timer").ms = 3.1
    >>> state.to_dict()
    {'timer': {'ms': 3.1}}
    """

    __slots__ = ("_spaces",)

    def __init__(self) -> None:
        self._spaces: dict[str, DotState] = {}

    def ext(self, name: object) -> DotState:
        """The DotState of namespace *name* (auto-created)."""
        key = str(name)
        space = self._spaces.get(key)
        if space is None:
            space = self._spaces.setdefault(key, DotState())  # setdefault: one winner if two threads race
        return space

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """``{namespace: {key: value}}`` for every namespace touched."""
        return {name: space.to_dict() for name, space in self._spaces.items()}

    def update_from(self, data: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge a ``to_dict()`` snapshot (e.g. one returned from a worker) into this state; incoming keys win."""
        for name, values in data.items():
            space = self.ext(name)
            for key, value in values.items():
                space[key] = value

    def __repr__(self) -> str:
        return f"ExtensionState({self.to_dict()!r})"
