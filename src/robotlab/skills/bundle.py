"""AgentSkill: one skill bundle on disk — a ``SKILL.md`` plus optional ``scripts/``.

``SKILL.md`` starts with a front matter block (``name`` and ``description``
required; ``fs_read``, ``fs_write``, ``network``, ``timeout``, ``trust``
optional, see :class:`~robotlab.skills.Capabilities`); the text below it is the
skill's instructions. Every executable file directly in ``scripts/`` becomes a
tool (:class:`~robotlab.skills.ScriptTool`).

Example:
    >>> import pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "greeter"
    >>> root.mkdir()
    >>> _ = (root / "SKILL.md").write_text(
    ...     "---\\nname: greeter\\ndescription: Greets people.\\ntimeout: 5\\n---\\nAlways greet warmly.\\n")
    >>> skill = AgentSkill(root)
    >>> skill.name, skill.instructions, skill.capabilities.timeout, skill.script_tools
    ('greeter', 'Always greet warmly.', 5, ())
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.skills.capabilities import Capabilities
from robotlab.skills.front_matter import FrontMatter, split_front_matter
from robotlab.skills.script_tool import ScriptTool

__all__ = ["AgentSkill"]

SKILL_FILE = "SKILL.md"


class AgentSkill:
    """A parsed skill bundle. Reading and checking happen in the constructor.

    Args:
        path: the ``SKILL.md`` file, or the bundle directory that contains it.

    Attributes:
        name, description: from the front matter (``name`` is the catalog key).
        path: the bundle directory. ``skill_md``: the ``SKILL.md`` file.
        capabilities: the declared :class:`Capabilities`.
        instructions: the ``SKILL.md`` body below the front matter, stripped.
        front_matter: every front-matter key (read-only), including ones robotlab does not use.

    Raises :class:`~robotlab.errors.ConfigurationError` for a missing file,
    front matter that does not parse (message: ``<file>:<line>: ...``), a
    missing or blank ``name``/``description``, or a bad capability value.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        given = Path(path).expanduser()
        skill_md = given / SKILL_FILE if given.is_dir() else given
        if not skill_md.is_file():
            where = f"no {SKILL_FILE} in {given}" if given.is_dir() else f"{skill_md} is not a file"
            raise ConfigurationError(f"cannot load skill: {where}; pass a {SKILL_FILE} file or its directory")
        try:
            text = skill_md.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigurationError(f"{SKILL_FILE} at {skill_md} is not UTF-8 text: {exc}") from None
        except OSError as exc:
            raise ConfigurationError(f"cannot read {skill_md}: {exc.strerror or exc}") from None
        front, body, _ = split_front_matter(text, str(skill_md))
        self.skill_md = skill_md.absolute()
        self.path = self.skill_md.parent
        self.name: str = self._required(front, "name")
        self.description: str = self._required(front, "description")
        self.capabilities: Capabilities = self._capabilities(front)
        self.front_matter: Mapping[str, Any] = MappingProxyType(front.data)
        self.instructions: str = body.strip()
        self._lock = threading.Lock()
        self._scripts: tuple[Path, ...] | None = None
        self._script_tools: tuple[type[ScriptTool], ...] | None = None

    def __repr__(self) -> str:
        return f"AgentSkill(name={self.name!r}, path={str(self.path)!r})"

    @property
    def scripts(self) -> tuple[Path, ...]:
        """Every file directly in ``scripts/`` (not recursive), sorted; ``()`` without that directory."""
        with self._lock:
            if self._scripts is None:
                directory = self.path / "scripts"
                found = directory.iterdir() if directory.is_dir() else ()
                self._scripts = tuple(sorted(p for p in found if p.is_file()))
            return self._scripts

    @property
    def script_tools(self) -> tuple[type[ScriptTool], ...]:
        """One Tool class per executable script, carrying this skill's capabilities and directory.

        Files that are not executable are skipped (logged at warning), so this
        can be shorter than :attr:`scripts`. Built once, on first access.
        """
        scripts = self.scripts
        with self._lock:
            if self._script_tools is None:
                made = (ScriptTool.from_path(p, capabilities=self.capabilities, skill_dir=self.path) for p in scripts)
                self._script_tools = tuple(t for t in made if t is not None)
            return self._script_tools

    # -- parsing -------------------------------------------------------------

    def _required(self, front: FrontMatter, key: str) -> str:
        if not front.present:
            raise ConfigurationError(
                f"{SKILL_FILE} at {self.skill_md} has no front matter: it must start with a '---' line, "
                "then 'name: ...' and 'description: ...', then '---'"
            )
        value = front.data.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ConfigurationError(f"{SKILL_FILE} at {self.skill_md} missing {key!r}")
        if not isinstance(value, str):
            raise ConfigurationError(
                f"{self.skill_md}:{front.line_of(key)}: {key!r} must be text, got {value!r}; quote it"
            )
        return value.strip()

    def _capabilities(self, front: FrontMatter) -> Capabilities:
        # Check key by key first, so an error names the line of the offending key.
        nested = front.data.get("capabilities")
        for key in Capabilities.field_names():
            for path, source in ((key, front.data), (f"capabilities.{key}", nested)):
                if isinstance(source, Mapping) and source.get(key) is not None:
                    try:
                        Capabilities(**{key: source[key]})
                    except ConfigurationError as exc:
                        raise ConfigurationError(f"{self.skill_md}:{front.line_of(path)}: {exc}") from None
        try:
            return Capabilities.from_front_matter(front.data)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{self.skill_md}:{front.line_of('capabilities') or 1}: {exc}") from None
