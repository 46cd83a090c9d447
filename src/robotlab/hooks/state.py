"""ExtensionState and DotState: the two-level store behind ``ctx.local`` / ``ctx.ext``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DotState", "ExtensionState"]


class DotState:
    """A schemaless dot-access bag: ``state.foo = 1``; an unset attribute reads ``None``.

    >>> s = DotState()
    >>> s.start = 1.5
    >>> s.start, s.typo
    (1.5, None)
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "_data", dict(data or {}))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._data.get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._data[name] = value

    def __getitem__(self, name: str) -> Any:
        return self._data.get(name)

    def __setitem__(self, name: str, value: Any) -> None:
        self._data[name] = value

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def merge_defaults(self, values: Mapping[str, Any]) -> DotState:
        """Write each pair only where the key is absent (registration ``context=`` defaults)."""
        for key, value in values.items():
            self._data.setdefault(str(key), value)
        return self

    def to_dict(self) -> dict[str, Any]:
        return dict(self._data)

    def __repr__(self) -> str:
        return f"DotState({self._data!r})"


class ExtensionState:
    """Per-run namespaced state: ``ext(name)`` is that namespace's DotState, created on first use."""

    __slots__ = ("_spaces",)

    def __init__(self) -> None:
        self._spaces: dict[str, DotState] = {}

    def ext(self, name: object) -> DotState:
        key = str(name)
        space = self._spaces.get(key)
        if space is None:
            space = self._spaces.setdefault(key, DotState())
        return space

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {name: space.to_dict() for name, space in self._spaces.items()}

    def update_from(self, data: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge a ``to_dict()`` snapshot (e.g. from a worker) into this state."""
        for name, values in data.items():
            for key, value in values.items():
                self.ext(name)[key] = value
