"""Live progress of a network run: one line per task (waiting, running, ok, failed), on stderr.

``network.run(message, progress=True)`` shows it; the display is a hook on the
run's ``network_run`` and ``task`` families (both fire in this process in every
``parallel_mode``), registered for that run only.

``progress``:

- ``None`` or ``False`` (the default): nothing is shown.
- ``"auto"``: shown only when stderr is a terminal (``robotlab demo`` uses this).
- ``True``: always shown on stderr, on a terminal or not (a pipe, a log file).
- a text stream (``sys.stdout``, an open file): always shown there.

On a terminal with `rich <https://rich.readthedocs.io>`_ installed
(``robotlab[rich]``) the display is a live table that redraws in place; otherwise
each change of a task's state prints one plain line:

    >>> import sys, robotlab
    >>> from robotlab.llm import ScriptedModel
    >>> net = robotlab.create_network(name="pair")
    >>> _ = net.task("a", robotlab.build(name="a", model=ScriptedModel(["A"])))
    >>> net.run("go", progress=sys.stdout).value  # doctest: +ELLIPSIS
    [progress   0.00s] network 'pair': 1 tasks
    [progress ...s] a: running 0.00s (0/1 done)
    [progress ...s] a: ok ...s (1/1 done: 1 ok)
    [progress ...s] network 'pair' finished: 1/1 done: 1 ok
    'A'
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from robotlab.errors import ConfigurationError
from robotlab.hooks import Hook, HookRegistry, NetworkRunHookContext

__all__ = ["ProgressHook", "ProgressSetting", "TaskBoard", "progress_hooks"]

ProgressSetting = bool | Literal["auto"] | TextIO | None


@dataclass
class TaskLine:
    """What the display shows for one task."""

    name: str
    state: str = "waiting"
    attempts: int = 0
    started: float | None = None
    finished: float | None = None
    detail: str = ""

    def elapsed(self, now: float) -> float | None:
        if self.started is None:
            return None
        return (self.finished if self.finished is not None else now) - self.started


class TaskBoard:
    """The state of every task of one run, updated from the run's hooks (thread-safe).

    >>> board = TaskBoard("pipeline", ["draft", "edit"])
    >>> board.set("draft", "running").state, board.counts()
    ('running', '0/2 done')
    >>> _ = board.set("draft", "ok"); board.counts()
    '1/2 done: 1 ok'
    """

    def __init__(self, network_name: str, tasks: list[str]) -> None:
        self.network_name = network_name
        self.lines = {name: TaskLine(name) for name in tasks}
        self.opened = time.perf_counter()
        self._lock = threading.Lock()

    def start(self) -> None:
        """The run begins (after a worker pool started): times count from here."""
        self.opened = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.opened

    def set(self, name: str, state: str, detail: str = "") -> TaskLine:
        """Move task *name* to *state* ("running", "ok", "failed", "not run", "skipped"); returns a copy."""
        with self._lock:
            line = self.lines[name]
            now = self.now()
            if state == "running":
                line.attempts += 1
                line.started, line.finished = now, None
            elif line.finished is None:
                line.finished = now
            line.state, line.detail = state, detail
            return TaskLine(**vars(line))

    def skip_waiting(self) -> list[TaskLine]:
        """At the end of the run: the tasks that never started (optional, not activated) become "skipped"."""
        with self._lock:
            waiting = [line for line in self.lines.values() if line.state == "waiting"]
        return [self.set(line.name, "skipped") for line in waiting]

    def snapshot(self) -> list[TaskLine]:
        with self._lock:
            return [TaskLine(**vars(line)) for line in self.lines.values()]

    def counts(self) -> str:
        """``"3/5 done: 2 ok, 1 failed"``-style totals."""
        lines = self.snapshot()
        ended = [line for line in lines if line.state not in ("waiting", "running")]
        by_state: dict[str, int] = {}
        for line in ended:
            by_state[line.state] = by_state.get(line.state, 0) + 1
        totals = ", ".join(f"{n} {state}" for state, n in by_state.items())
        return f"{len(ended)}/{len(lines)} done" + (f": {totals}" if totals else "")


def _describe(line: TaskLine, now: float) -> str:
    elapsed = line.elapsed(now)
    text = line.state if line.attempts <= 1 else f"{line.state} (attempt {line.attempts})"
    if elapsed is not None:
        text += f" {elapsed:.2f}s"
    return text + (f": {line.detail}" if line.detail else "")


class LineDisplay:
    """Plain text: a line per change of a task's state, for pipes, logs, and terminals without rich."""

    def __init__(self, board: TaskBoard, stream: TextIO) -> None:
        self.board = board
        self.stream = stream

    def _say(self, text: str) -> None:
        self.stream.write(f"[progress {self.board.now():6.2f}s] {text}\n")
        self.stream.flush()

    def open(self) -> None:
        self.board.start()
        self._say(f"network {self.board.network_name!r}: {len(self.board.lines)} tasks")

    def changed(self, line: TaskLine) -> None:
        self._say(f"{line.name}: {_describe(line, self.board.now())} ({self.board.counts()})")

    def close(self) -> None:
        self._say(f"network {self.board.network_name!r} finished: {self.board.counts()}")


@functools.lru_cache(maxsize=8)
def _console(stream: TextIO) -> Any:
    """One rich Console per stream: a live display started inside another one on it nests (rich 14.1+)."""
    from rich.console import Console

    return Console(file=stream)


class RichDisplay:
    """A live rich table (one row per task) redrawn in place on a terminal; its last state stays on screen."""

    def __init__(self, board: TaskBoard, stream: TextIO) -> None:
        from rich.live import Live

        self.board = board
        # stdout is left alone: a print during the run stays on stdout (rich would move it to this stream).
        self._live = Live(self, console=_console(stream), refresh_per_second=8, transient=False,
                          redirect_stdout=False)

    def __rich__(self) -> Any:
        from rich.table import Table
        from rich.text import Text  # cells as Text: an error's "[...]" is not rich markup

        styles = {"running": "yellow", "ok": "green", "failed": "red", "not run": "red", "skipped": "dim"}
        table = Table(title=f"network {self.board.network_name!r}: {self.board.counts()}", title_justify="left")
        for column in ("task", "state", "time", "detail"):
            table.add_column(column)
        now = self.board.now()
        for line in self.board.snapshot():
            elapsed = line.elapsed(now)
            state = line.state if line.attempts <= 1 else f"{line.state} (attempt {line.attempts})"
            table.add_row(Text(line.name), Text(state, style=styles.get(line.state, "dim")),
                          "" if elapsed is None else f"{elapsed:.2f}s", Text(line.detail[:60]))
        return table

    def open(self) -> None:
        self.board.start()
        self._live.start()  # inside another live display on this console (a network run in a task): nested

    def changed(self, line: TaskLine) -> None:
        self._live.refresh()

    def close(self) -> None:
        self._live.stop()


def _short_error(error: BaseException | None) -> str:
    text = f"{type(error).__name__}: {error}" if error is not None else ""
    return text if len(text) <= 120 else text[:119] + "…"


class ProgressHook(Hook):
    """Feeds a run's display from its hooks; the display is this registration's ``context`` (``ctx.local``).

    >>> ProgressHook.namespace
    'progress'
    """

    namespace = "progress"

    @classmethod
    def _change(cls, ctx: Any, state: str, detail: str = "") -> None:
        display = ctx.local.display
        display.changed(display.board.set(ctx.task_name, state, detail))

    @classmethod
    def before_network_run(cls, ctx):
        ctx.local.display.open()

    @classmethod
    def after_network_run(cls, ctx):
        cls._finish(ctx.local.display)

    @classmethod
    def _finish(cls, display: Any) -> None:
        for line in display.board.skip_waiting():
            display.changed(line)
        display.close()

    @classmethod
    def before_task(cls, ctx):
        cls._change(ctx, "running")

    @classmethod
    def after_task(cls, ctx):
        cls._change(ctx, "ok")

    @classmethod
    def on_error(cls, ctx):
        if isinstance(ctx, NetworkRunHookContext):  # the run itself ended with an exception (cancelled, say)
            cls._finish(ctx.local.display)
            return
        from robotlab.task import UpstreamFailed

        state = "not run" if isinstance(ctx.error, UpstreamFailed) else "failed"
        cls._change(ctx, state, _short_error(ctx.error))


def _rich_available() -> bool:
    try:
        import rich.live  # noqa: F401
    except ImportError:
        return False
    return True


def progress_hooks(network: Any, setting: ProgressSetting) -> HookRegistry | None:
    """The hook registry that shows *network*'s next run, or None when *setting* turns progress off.

    *setting* as ``network.run(progress=...)`` takes it (see the module docstring);
    anything else raises :class:`~robotlab.errors.ConfigurationError`.

    >>> import io, robotlab
    >>> net = robotlab.create_network(name="n")
    >>> progress_hooks(net, None) is None, progress_hooks(net, io.StringIO()) is None
    (True, False)
    """
    if hasattr(setting, "write"):
        stream = setting
    elif setting in (True, False, None, "auto") and not (isinstance(setting, int) and not isinstance(setting, bool)):
        stream = sys.stderr
    else:
        raise ConfigurationError(f"progress must be True, False, None, 'auto' or a text stream, got {setting!r}")
    on_terminal = bool(getattr(stream, "isatty", lambda: False)())
    if not setting or (setting == "auto" and not on_terminal):
        return None
    board = TaskBoard(network.name, list(network.tasks))
    display = RichDisplay(board, stream) if on_terminal and _rich_available() else LineDisplay(board, stream)
    registry = HookRegistry()
    registry.on(ProgressHook, {"display": display})
    return registry
