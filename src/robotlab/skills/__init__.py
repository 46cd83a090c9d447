"""Agent skills: ``SKILL.md`` bundles whose instructions and ``scripts/`` become prompt text and tools.

- :class:`AgentSkill` — one bundle: front matter + instructions + ``scripts/``.
- :class:`AgentSkillCatalog` — lazy registry over a skills directory
  (``robotlab.config().skills_dir``, default ``~/.prompts/skills/``).
- :class:`Capabilities` — what a skill's scripts declare they need
  (``fs_read``, ``fs_write``, ``network``, ``timeout``, ``trust``).
- :class:`ScriptTool` — an executable script as a Tool; ``ScriptTool.executor``
  (``None`` by default: unconfined, no timeout) is the execution hook.
- :class:`TimeoutExecutor` — robotlab's executor: enforces ``timeout`` by
  killing the script's process group. Not a sandbox.

Example:
    >>> from robotlab.skills import Capabilities, ScriptTool
    >>> ScriptTool.executor is None, Capabilities().timeout
    (True, 60)

With a robot: ``robotlab.build(..., skills=["deploy-checker", AgentSkill(path)])``
puts each skill's instructions into the system prompt and its scripts into
the robot's tools (offered to the model with ``run(..., tools="inherit")``).

Nothing here is imported by ``import robotlab``; it loads on first use.
"""

from __future__ import annotations

from robotlab.skills.bundle import AgentSkill
from robotlab.skills.capabilities import Capabilities
from robotlab.skills.catalog import AgentSkillCatalog, resolve_skills
from robotlab.skills.script_tool import ScriptExecutor, ScriptTool
from robotlab.skills.timeout_executor import TimeoutExecutor

__all__ = [
    "AgentSkill",
    "AgentSkillCatalog",
    "Capabilities",
    "ScriptExecutor",
    "ScriptTool",
    "TimeoutExecutor",
    "resolve_skills",
]
