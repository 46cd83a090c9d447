"""ScriptTool: an executable script (a skill's ``scripts/`` file) as a robotlab Tool.

``ScriptTool.from_path(path)`` returns a Tool class with one optional ``args``
string parameter; calling it runs ``<script> <args split like a shell>`` and
returns the combined stdout+stderr.

Core has **no sandboxing and no execution limits**: with ``ScriptTool.executor``
left at ``None`` (the default) a script runs unconfined, with no timeout, in
the current working directory, with the parent's environment and an empty
stdin. Set ``ScriptTool.executor`` to any callable
``executor(cmd, *, capabilities, skill_dir) -> str`` to take over execution,
e.g. robotlab's :class:`~robotlab.skills.TimeoutExecutor`.

Example:
    >>> import os, tempfile
    >>> script = os.path.join(tempfile.mkdtemp(), "say-hello.sh")
    >>> with open(script, "w") as f:
    ...     _ = f.write("#!/bin/sh\\n# Greets someone by name.\\necho hello $1\\n")
    >>> os.chmod(script, 0o755)
    >>> SayHello = ScriptTool.from_path(script)
    >>> SayHello.name, SayHello.description
    ('say_hello', 'Greets someone by name.')
    >>> SayHello().call({"args": "Ada"})
    'hello Ada\\n'
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from robotlab.errors import ToolError
from robotlab.skills.capabilities import Capabilities
from robotlab.tools import Param, Tool

__all__ = ["ScriptExecutor", "ScriptTool"]

logger = logging.getLogger("robotlab.skills")


class ScriptExecutor(Protocol):
    """What ``ScriptTool.executor`` may be: run *cmd* and return the text for the model.

    *cmd* is the argument vector (``[script, *args]``), *capabilities* the
    skill's declared :class:`Capabilities`, *skill_dir* the bundle root. Return
    the output, or an error text such as :meth:`ScriptTool.format_result` builds.
    """

    def __call__(self, cmd: Sequence[str], *, capabilities: Capabilities, skill_dir: Path) -> str: ...


class ScriptTool(Tool):
    """Base class of the tools :meth:`from_path` makes; holds the global :attr:`executor`.

    Class attributes of a generated tool: ``name`` (:meth:`derive_name`),
    ``description`` (:meth:`extract_description`), ``script`` (absolute path),
    ``capabilities`` and ``skill_dir``.
    """

    name = "script_tool"
    description = "Run a script"
    params = (Param("args", "string", "Optional command-line arguments", required=False),)

    #: ``None`` (default): run unconfined via subprocess, no timeout. Otherwise a
    #: :class:`ScriptExecutor` that runs every script (set it on a generated
    #: class to override it for that one tool).
    executor: ClassVar[ScriptExecutor | None] = None

    script: ClassVar[Path]
    capabilities: ClassVar[Capabilities] = Capabilities()
    skill_dir: ClassVar[Path]

    @classmethod
    def from_path(
        cls,
        script_path: str | os.PathLike[str],
        *,
        capabilities: Capabilities | None = None,
        skill_dir: str | os.PathLike[str] | None = None,
    ) -> type[ScriptTool] | None:
        """A Tool class running *script_path*, or ``None`` (logged at warning) when it cannot be one.

        ``None`` when the file is missing, not executable, or its name yields no
        tool name. *capabilities* defaults to ``Capabilities()``; *skill_dir* to
        the script's directory.
        """
        path = Path(script_path).absolute()
        if not path.is_file() or not os.access(path, os.X_OK):
            logger.warning("ScriptTool: %s is not executable, skipping", path.name)
            return None
        tool_name = cls.derive_name(path)
        if not tool_name:
            logger.warning("ScriptTool: %s has no letters or digits to name a tool after, skipping", path.name)
            return None
        attrs: dict[str, Any] = {
            "name": tool_name,
            "description": cls.extract_description(path),
            "script": path,
            "capabilities": capabilities if capabilities is not None else Capabilities(),
            "skill_dir": Path(skill_dir).absolute() if skill_dir is not None else path.parent,
            "__module__": __name__,
            "__qualname__": f"{cls.__qualname__}[{tool_name}]",
        }
        return type(f"{cls.__name__}[{tool_name}]", (cls,), attrs)

    @staticmethod
    def derive_name(path: str | os.PathLike[str]) -> str:
        """The tool name for a script: extension dropped, runs of non-alphanumerics → ``_``.

        >>> ScriptTool.derive_name("check-deploy.sh")
        'check_deploy'
        """
        stem = re.sub(r"\.[^.]+$", "", Path(path).name)
        return re.sub(r"[^a-zA-Z0-9]+", "_", stem).strip("_")

    @staticmethod
    def extract_description(path: str | os.PathLike[str]) -> str:
        """The first comment line that is not a shebang, without its ``#``; else :meth:`derive_name`.

        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        ...     _ = f.write("#!/bin/sh\\n#\\n# Verifies a deployment.\\n")
        >>> ScriptTool.extract_description(f.name)
        'Verifies a deployment.'
        """
        try:
            with open(path, encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    stripped = line.strip()
                    if not stripped.startswith("#") or stripped.startswith("#!"):
                        continue
                    description = stripped.lstrip("#").strip()
                    if description:
                        return description
        except OSError:
            pass
        return ScriptTool.derive_name(path)

    @staticmethod
    def format_result(output: str, returncode: int | None) -> str:
        """The text the model sees: *output* on success, else an error text (never an exception).

        ``returncode`` ``None`` means the script was stopped for running too long.

        >>> ScriptTool.format_result("boom\\n", 3)
        'Error (exit 3):\\nboom\\n'
        """
        if returncode is None:
            return f"Error (timed out):\n{output}"
        if returncode == 0:
            return output
        if returncode < 0:
            try:
                how = f"killed by {signal.Signals(-returncode).name}"
            except ValueError:
                how = f"killed by signal {-returncode}"
            return f"Error ({how}):\n{output}"
        return f"Error (exit {returncode}):\n{output}"

    @classmethod
    def run_command(cls, cmd: Sequence[str], *, capabilities: Capabilities, skill_dir: Path) -> str:
        """Run *cmd* and return its combined stdout+stderr, or an error text (robot_lab's ``execute``).

        With :attr:`executor` ``None``: unconfined, **no timeout**. Otherwise
        the executor does everything.
        """
        executor = cls.executor
        if executor is not None:
            return executor(cmd, capabilities=capabilities, skill_dir=skill_dir)
        try:
            done = subprocess.run(
                list(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False
            )
        except OSError as exc:
            raise ToolError(cannot_start_message(cmd, exc)) from exc
        return cls.format_result(done.stdout.decode("utf-8", errors="replace"), done.returncode)

    def execute(self, *, args: str | None = None) -> str:
        cls = type(self)
        try:
            argv = shlex.split(args or "")
        except ValueError as exc:  # unbalanced quotes: tell the model, it can fix its call
            raise ToolError(f"cannot split args {args!r} like a shell command line: {exc}") from None
        return cls.run_command([str(cls.script), *argv], capabilities=cls.capabilities, skill_dir=cls.skill_dir)


def cannot_start_message(cmd: Sequence[str], exc: OSError) -> str:
    """The ToolError text for a script the OS refused to start (missing, no shebang, not executable)."""
    return (
        f"cannot start {cmd[0]}: {exc.strerror or exc}; "
        "check that it exists, is executable and starts with a '#!' interpreter line"
    )
