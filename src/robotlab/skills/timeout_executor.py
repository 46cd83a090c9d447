"""TimeoutExecutor: a ScriptTool executor that enforces ``Capabilities.timeout``. Not a sandbox.

It runs each script in its own process group and, when the script runs past
its timeout, stops the **whole group** (SIGTERM, then SIGKILL after a grace
period), so children the script started go with it. The model then sees
``Error (timed out):\\n<partial output>\\n[killed: exceeded <N>s]``.

It does **not** confine anything else: ``fs_read``, ``fs_write`` and
``network`` are not enforced, and a process that leaves the group on purpose
(``setsid``) escapes the kill. Use it for runaway scripts, not hostile ones.

Example:
    >>> from robotlab.skills import ScriptTool, TimeoutExecutor
    >>> ScriptTool.executor = TimeoutExecutor()             # every skill script from now on
    >>> ScriptTool.executor = TimeoutExecutor(ceiling=Capabilities(timeout=10))   # and never over 10 s
    >>> ScriptTool.executor = None                          # back to core: unconfined, no timeout
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from robotlab.errors import ConfigurationError, ToolError
from robotlab.skills.capabilities import Capabilities
from robotlab.skills.script_tool import ScriptTool, cannot_start_message

__all__ = ["TimeoutExecutor"]


class TimeoutExecutor:
    """Run a script with its declared timeout; kill its process group when it runs over.

    POSIX only (it relies on process groups).

    Args:
        ceiling: optional upper bound; the timeout used is that of
            ``capabilities.intersect(ceiling)`` (the smaller of the two).
        grace: seconds between SIGTERM and SIGKILL to the group (default 2).
    """

    def __init__(self, *, ceiling: Capabilities | None = None, grace: float = 2.0) -> None:
        if not hasattr(os, "killpg"):
            raise ConfigurationError("TimeoutExecutor needs POSIX process groups (Linux, macOS); it cannot run here")
        if ceiling is not None and not isinstance(ceiling, Capabilities):
            raise ConfigurationError(f"ceiling must be a Capabilities, got {ceiling!r}")
        if isinstance(grace, bool) or not isinstance(grace, int | float) or grace < 0:
            raise ConfigurationError(f"grace must be a number of seconds >= 0, got {grace!r}")
        self.ceiling = ceiling
        self.grace = float(grace)

    def __repr__(self) -> str:
        return f"TimeoutExecutor(ceiling={self.ceiling!r}, grace={self.grace})"

    def __call__(self, cmd: Sequence[str], *, capabilities: Capabilities, skill_dir: Path) -> str:
        grant = capabilities.intersect(self.ceiling) if self.ceiling is not None else capabilities
        output, returncode = self.run_with_timeout(cmd, grant.timeout)
        return ScriptTool.format_result(output, returncode)

    def run_with_timeout(self, cmd: Sequence[str], timeout: float) -> tuple[str, int | None]:
        """Run *cmd* in a new process group; ``(output, returncode)``, returncode ``None`` on timeout.

        On timeout the output ends with ``\\n[killed: exceeded <N>s]``.
        """
        try:
            proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                process_group=0,  # its own group, so the kill reaches the script's children too
            )
        except OSError as exc:
            raise ToolError(cannot_start_message(cmd, exc)) from exc
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            partial = self._stop_group(proc, expired.output or b"")
            return f"{_text(partial)}\n[killed: exceeded {timeout:g}s]", None
        except BaseException:  # e.g. KeyboardInterrupt: never leave the script running
            self._stop_group(proc, b"")
            raise
        return _text(out), proc.returncode

    def _stop_group(self, proc: subprocess.Popen[bytes], partial: bytes) -> bytes:
        """SIGTERM the group, SIGKILL it after the grace period; return all output read."""
        _signal_group(proc.pid, signal.SIGTERM)
        try:  # the group has ended once every writer has closed the pipe
            out, _ = proc.communicate(timeout=self.grace)
        except subprocess.TimeoutExpired as expired:
            out = expired.output or partial
            _signal_group(proc.pid, signal.SIGKILL)
            try:
                out, _ = proc.communicate(timeout=max(self.grace, 1.0))
            except subprocess.TimeoutExpired as again:
                # Only a process that left the group (setsid) can still hold the pipe: stop reading.
                out = again.output or out
                proc.stdout.close()  # type: ignore[union-attr]
                proc.wait()
        # SIGKILL whatever is left of the group even when the pipe closed: a child may have
        # closed its stdout and ignored SIGTERM.
        _signal_group(proc.pid, signal.SIGKILL)
        return out or partial


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(pgid, sig)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
