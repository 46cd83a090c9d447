"""AgentSkillCatalog: a lazy registry of the skill bundles under one directory.

The default catalog (:meth:`AgentSkillCatalog.instance`) scans
``robotlab.config().skills_dir`` (env ``ROBOTLAB_SKILLS_DIR``, or
``robotlab.configure(skills_dir=...)``), else ``~/.prompts/skills/``. Each
subdirectory with a ``SKILL.md`` is one skill, found by its front-matter ``name``.

Example:
    >>> import pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "greeter").mkdir()
    >>> _ = (root / "greeter" / "SKILL.md").write_text("---\\nname: greeter\\ndescription: Greets.\\n---\\nHi!\\n")
    >>> catalog = AgentSkillCatalog(root)      # no I/O yet
    >>> catalog.names(), catalog.find("greeter").instructions, catalog.find("nope")
    (['greeter'], 'Hi!', None)
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from robotlab.errors import ConfigurationError
from robotlab.skills.bundle import SKILL_FILE, AgentSkill

__all__ = ["AgentSkillCatalog", "resolve_skills"]

logger = logging.getLogger("robotlab.skills")


class AgentSkillCatalog:
    """Skills under *root*, loaded on the first :meth:`find` / :meth:`all` / :meth:`names`.

    Loading is lazy, thread-safe (once, under a lock) and forgiving: a missing
    root is an empty catalog, a directory without ``SKILL.md`` is ignored, and
    a bundle that fails to load is skipped with a warning
    (``AgentSkillCatalog: <message>, skipping <dir>``) so one bad bundle never
    hides the others. When two bundles share a name, the first directory in
    sorted order wins (with a warning).
    """

    SKILLS_ROOT: ClassVar[Path] = Path("~/.prompts/skills")

    _instance: ClassVar[AgentSkillCatalog | None] = None
    _instance_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root if root is not None else self.SKILLS_ROOT).expanduser().absolute()
        self._skills: dict[str, AgentSkill] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AgentSkillCatalog(root={str(self.root)!r})"

    # -- the process-wide catalog ---------------------------------------------

    @classmethod
    def configured_root(cls) -> Path:
        """``robotlab.config().skills_dir`` when set, else ``~/.prompts/skills``."""
        from robotlab.configuration import config

        configured = config().skills_dir
        return Path(configured if configured else cls.SKILLS_ROOT).expanduser().absolute()

    @classmethod
    def instance(cls) -> AgentSkillCatalog:
        """The shared catalog over :meth:`configured_root`; a new one when that setting changed."""
        root = cls.configured_root()
        with cls._instance_lock:
            if cls._instance is None or cls._instance.root != root:
                cls._instance = cls(root)
            return cls._instance

    @classmethod
    def reset(cls) -> None:
        """Forget the shared catalog; the next :meth:`instance` scans the directory again."""
        with cls._instance_lock:
            cls._instance = None

    # -- lookups ---------------------------------------------------------------

    def find(self, name: str) -> AgentSkill | None:
        """The skill whose front-matter ``name`` is *name* (not its directory name), or ``None``."""
        return self._load().get(name)

    def all(self) -> list[AgentSkill]:
        """Every skill that loaded, in directory order."""
        return list(self._load().values())

    def names(self) -> list[str]:
        return list(self._load())

    def _load(self) -> dict[str, AgentSkill]:
        with self._lock:
            if self._skills is None:
                self._skills = self._scan()
            return self._skills

    def _scan(self) -> dict[str, AgentSkill]:
        skills: dict[str, AgentSkill] = {}
        if not self.root.is_dir():
            return skills
        for directory in sorted(p for p in self.root.iterdir() if p.is_dir()):
            if not (directory / SKILL_FILE).is_file():
                continue
            try:
                skill = AgentSkill(directory / SKILL_FILE)
            except ConfigurationError as exc:
                logger.warning("AgentSkillCatalog: %s, skipping %s", exc, directory.name)
                continue
            if skill.name in skills:
                logger.warning(
                    "AgentSkillCatalog: skill name %r in %s is already used by %s, skipping %s",
                    skill.name, directory, skills[skill.name].path, directory.name,
                )
                continue
            skills[skill.name] = skill
        return skills


def resolve_skills(
    skills: Iterable[AgentSkill | str], *, catalog: AgentSkillCatalog | None = None, where: str = "skills"
) -> tuple[AgentSkill, ...]:
    """Turn a list of AgentSkill objects and skill names into AgentSkill objects.

    Names are looked up in *catalog* (default: :meth:`AgentSkillCatalog.instance`,
    consulted only when a name is given). *where* prefixes error messages
    (``"robot 'support'"``).
    """
    if isinstance(skills, str | AgentSkill) or not isinstance(skills, Iterable):
        raise ConfigurationError(f"{where}: skills must be a list of AgentSkill objects or skill names, got {skills!r}")
    resolved: list[AgentSkill] = []
    for item in skills:
        if isinstance(item, AgentSkill):
            skill = item
        elif isinstance(item, str):
            catalog = catalog if catalog is not None else AgentSkillCatalog.instance()
            found = catalog.find(item)
            if found is None:
                available = ", ".join(catalog.names()) or "none"
                raise ConfigurationError(
                    f"{where}: skill {item!r} not found in {catalog.root} (available: {available}). "
                    f"Add a <dir>/{SKILL_FILE} bundle there, point robotlab.configure(skills_dir=...) or "
                    "ROBOTLAB_SKILLS_DIR at your skills, or pass AgentSkill(path) for a bundle elsewhere"
                )
            skill = found
        else:
            raise ConfigurationError(f"{where}: skills entries must be AgentSkill objects or names, got {item!r}")
        if any(s.name == skill.name for s in resolved):
            raise ConfigurationError(f"{where}: skill {skill.name!r} is listed twice")
        resolved.append(skill)
    return tuple(resolved)
