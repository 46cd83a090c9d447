"""Capabilities: what a skill's scripts may read, write, reach, and how long they may run.

A skill declares what it *wants* in its ``SKILL.md`` front matter; a ceiling
(chosen by whoever runs the scripts) says what any skill may have. The
effective grant is ``declared.intersect(ceiling)``.

robotlab core only *declares* capabilities: scripts run unconfined unless a
:attr:`ScriptTool.executor <robotlab.skills.ScriptTool.executor>` enforces
them. The one robotlab ships, :class:`~robotlab.skills.TimeoutExecutor`,
enforces ``timeout`` only.

Example:
    >>> declared = Capabilities(fs_read=["/srv/data", "/etc"], network=True, timeout=120)
    >>> ceiling = Capabilities(fs_read=["/srv"], timeout=30)
    >>> grant = declared.intersect(ceiling)
    >>> grant.fs_read, grant.network, grant.timeout, grant.trust
    (('/srv/data',), False, 30, 'external')
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

from robotlab.errors import ConfigurationError

__all__ = ["Capabilities"]


def _paths(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str | os.PathLike):
        value = [value]  # a single path, like Ruby's Array("x")
    if not isinstance(value, Iterable) or isinstance(value, bytes | Mapping):
        raise ConfigurationError(f"{name} must be a list of paths, got {value!r}")
    out = []
    for item in value:
        if not isinstance(item, str | os.PathLike) or not str(item):
            raise ConfigurationError(f"{name} must be a list of paths, got the entry {item!r}")
        out.append(os.fspath(item))
    return tuple(out)


def _expand(path: str) -> Path:
    """``~`` and relative paths resolved lexically (like Ruby's File.expand_path; symlinks untouched)."""
    return Path(os.path.abspath(os.path.expanduser(path)))


def _clamp(requested: tuple[str, ...], allowed: tuple[str, ...]) -> tuple[str, ...]:
    roots = [_expand(r) for r in allowed]
    kept = []
    for path in map(_expand, requested):
        if any(path == root or path.is_relative_to(root) for root in roots):
            kept.append(str(path))
    return tuple(kept)


@dataclass(frozen=True)
class Capabilities:
    """A declared (or granted) set of capabilities. Immutable; values are checked on creation.

    Fields:
        fs_read, fs_write: paths the scripts may read / write (a single path is accepted too).
        network: whether the scripts may use the network.
        timeout: seconds a script may run (a positive number; default ``DEFAULT_TIMEOUT`` = 60).
        trust: ``"external"`` (default) or ``"core"`` — a bundle you wrote and audited,
            which a confining executor may exempt from confinement.

    Bad values raise :class:`~robotlab.errors.ConfigurationError` naming the field.

    >>> Capabilities(trust="core").core
    True
    """

    DEFAULT_TIMEOUT: ClassVar[int] = 60
    TRUST_LEVELS: ClassVar[tuple[str, ...]] = ("core", "external")

    fs_read: tuple[str, ...] = ()
    fs_write: tuple[str, ...] = ()
    network: bool = False
    timeout: int | float = DEFAULT_TIMEOUT
    trust: str = "external"

    def __post_init__(self) -> None:
        object.__setattr__(self, "fs_read", _paths("fs_read", self.fs_read))
        object.__setattr__(self, "fs_write", _paths("fs_write", self.fs_write))
        if not isinstance(self.network, bool):
            raise ConfigurationError(f"network must be true or false, got {self.network!r}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float) or not self.timeout > 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds, got {self.timeout!r}")
        if self.trust not in self.TRUST_LEVELS:
            raise ConfigurationError(
                f"trust must be one of {', '.join(repr(t) for t in self.TRUST_LEVELS)}, got {self.trust!r}"
            )

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """``('fs_read', 'fs_write', 'network', 'timeout', 'trust')`` — the front-matter keys."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_front_matter(cls, front_matter: Mapping[str, Any] | None) -> Capabilities:
        """Build from parsed front matter: the five keys at the top level, or under ``capabilities:``.

        Absent keys (and ``null`` values) take the defaults; other keys are ignored.

        >>> Capabilities.from_front_matter({"name": "x", "timeout": 5}).timeout
        5
        """
        fm = dict(front_matter or {})
        nested = fm.get("capabilities")
        if nested is not None and not isinstance(nested, Mapping):
            raise ConfigurationError(f"capabilities must be a mapping of {', '.join(cls.field_names())}")
        nested = dict(nested or {})
        unknown = sorted(set(nested) - set(cls.field_names()))
        if unknown:
            raise ConfigurationError(
                f"unknown key(s) under capabilities: {', '.join(unknown)}. Valid: {', '.join(cls.field_names())}"
            )
        values: dict[str, Any] = {}
        for name in cls.field_names():
            if fm.get(name) is not None and nested.get(name) is not None:
                raise ConfigurationError(f"{name} is given both at the top level and under capabilities; keep one")
            value = fm.get(name) if fm.get(name) is not None else nested.get(name)
            if value is not None:
                values[name] = value
        return cls(**values)

    @property
    def core(self) -> bool:
        """``trust == "core"`` (robot_lab's ``core?``)."""
        return self.trust == "core"

    def intersect(self, ceiling: Capabilities) -> Capabilities:
        """The effective grant: this (declared) set, clamped by *ceiling*.

        A requested path survives only when it is a ceiling path or lies beneath
        one (both expanded first: ``~`` and relative paths resolve against the
        current directory); ``network`` needs both sides; ``timeout`` is the
        smaller; ``trust`` stays as declared.
        """
        if not isinstance(ceiling, Capabilities):
            raise ConfigurationError(f"intersect() needs a Capabilities ceiling, got {ceiling!r}")
        return Capabilities(
            fs_read=_clamp(self.fs_read, ceiling.fs_read),
            fs_write=_clamp(self.fs_write, ceiling.fs_write),
            network=self.network and ceiling.network,
            timeout=min(self.timeout, ceiling.timeout),
            trust=self.trust,
        )
