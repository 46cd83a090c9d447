"""``network.run(progress=...)``: a live line per task, on a real terminal (pty) and on a pipe."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios
import textwrap

import pytest

import robotlab
from robotlab.errors import ConfigurationError
from robotlab.llm import ScriptedModel

SCRIPT = textwrap.dedent("""
    import sys, robotlab
    from robotlab.llm import ScriptedModel

    def network(mode="thread"):
        net = robotlab.create_network(name="pipeline", parallel_mode=mode)
        net.task("draft", robotlab.build(name="drafter", model=ScriptedModel(["a draft"])))
        net.task("edit", robotlab.build(name="editor", model=ScriptedModel(["final"])), depends_on=["draft"])
        return net

    def boom(messages, tools):
        raise RuntimeError("no luck")

    def failing():
        net = robotlab.create_network(name="broken")
        net.task("boom", robotlab.build(name="b", model=ScriptedModel(boom)))
        net.task("after", robotlab.build(name="a", model=ScriptedModel(["x"])), depends_on=["boom"])
        net.task("spare", robotlab.build(name="s", model=ScriptedModel(["x"])), depends_on="optional")
        return net

    for setting in sys.argv[1:]:
        mode, _, progress = setting.partition(":")
        value = {"None": None, "True": True, "auto": "auto"}[progress]
        net = failing() if mode == "broken" else network(mode)
        print("run", setting, net.run("go", progress=value).ok, flush=True)
        print(f"--- after {setting}", file=sys.stderr, flush=True)
""")


def run_script(*settings: str, stderr_tty: bool = False, block_rich: bool = False) -> tuple[str, str]:
    """Run SCRIPT with *settings*; stderr on a pipe or on a pseudo-terminal. Returns (stdout, stderr)."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": os.pathsep.join(sys.path)}
    code = ("import sys; sys.modules['rich'] = None\n" if block_rich else "") + SCRIPT
    if not stderr_tty:
        run = subprocess.run([sys.executable, "-c", code, *settings], capture_output=True, text=True, env=env,
                             timeout=60, check=True)
        return run.stdout, run.stderr
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    child = subprocess.Popen([sys.executable, "-c", code, *settings], stdout=subprocess.PIPE, stderr=follower,
                             env={**env, "TERM": "xterm-256color", "COLUMNS": "100"})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    stdout = child.stdout.read().decode()
    child.stdout.close()
    assert child.wait(timeout=60) == 0
    return stdout, b"".join(chunks).decode(errors="replace")


def test_on_a_pipe_progress_shows_only_when_asked():
    stdout, stderr = run_script("thread:None", "thread:auto", "thread:True", "broken:True", "process:True")
    assert stdout.splitlines() == ["run thread:None True", "run thread:auto True", "run thread:True True",
                                   "run broken:True False", "run process:True True"]
    silent, _, rest = stderr.partition("--- after thread:auto\n")
    assert silent == "--- after thread:None\n"  # None and "auto" on a pipe: nothing at all
    thread_lines, _, rest = rest.partition("--- after thread:True\n")
    lines = [line.split("] ", 1)[1] for line in thread_lines.splitlines()]
    assert lines[0] == "network 'pipeline': 2 tasks"
    assert lines[1] == "draft: running 0.00s (0/2 done)"
    assert lines[2].startswith("draft: ok ") and lines[2].endswith("s (1/2 done: 1 ok)")
    assert lines[3].startswith("edit: running ")
    assert lines[4].startswith("edit: ok ") and lines[4].endswith(" (2/2 done: 2 ok)")
    assert lines[5] == "network 'pipeline' finished: 2/2 done: 2 ok"
    broken, _, process = rest.partition("--- after broken:True\n")
    assert "boom: failed " in broken and "InferenceError: model 'scripted' failed: no luck" in broken
    assert "after: not run: UpstreamFailed: Task 'after' not run: dependency 'boom' failed" in broken
    assert "spare: skipped" in broken  # optional, never activated
    assert "network 'broken' finished: 3/3 done: 1 failed, 1 not run, 1 skipped" in broken
    # Worker processes run the robots; the task hooks that feed the display fire here.
    assert "draft: ok " in process and "network 'pipeline' finished: 2/2 done: 2 ok" in process
    assert "\x1b[" not in stderr  # no terminal codes on a pipe


def test_on_a_terminal_auto_draws_a_live_rich_table():
    stdout, screen = run_script("thread:None", "broken:auto", stderr_tty=True)
    assert stdout.splitlines() == ["run thread:None True", "run broken:auto False"]
    silent, _, table = screen.partition("--- after thread:None")
    assert silent.strip() == ""
    assert "\x1b[" in table  # colours and cursor moves: redrawn in place
    for cell in ("network 'broken'", "boom", "failed", "after", "not run", "spare", "skipped",
                 "1 failed, 1 not run, 1 skipped"):
        assert cell in table, table


def test_on_a_terminal_without_rich_progress_prints_plain_lines():
    _, screen = run_script("thread:auto", stderr_tty=True, block_rich=True)
    assert "] network 'pipeline' finished: 2/2 done: 2 ok" in screen
    assert "] draft: running 0.00s (0/2 done)" in screen


def test_a_stream_receives_the_lines_and_a_bad_setting_is_refused_before_the_run():
    net = robotlab.create_network(name="one")
    net.task("t", robotlab.build(name="r", model=ScriptedModel(["ok", "ok"])))
    stream = io.StringIO()
    assert net.run("go", progress=stream).ok
    assert stream.getvalue().splitlines()[-1].endswith("] network 'one' finished: 1/1 done: 1 ok")
    with pytest.raises(ConfigurationError, match="progress must be True, False, None, 'auto' or a text stream, "
                                                 "got 'yes'"):
        net.run("go", progress="yes", seen=True)
    assert "seen" not in net.memory.data  # refused before the context was written
    with pytest.raises(ConfigurationError, match="got 1"):
        net.run("go", progress=1)


def test_the_networks_page_progress_example_runs():
    from tests.doc_blocks import python_blocks, run_block

    index = next(i for i, code in enumerate(python_blocks("docs/networks.md")) if "progress=shown" in code)
    run_block("docs/networks.md", index)


class Terminal(io.StringIO):
    """A text stream that says it is a terminal, as a tty does (rich then draws live)."""

    def isatty(self) -> bool:
        return True


def test_a_network_run_inside_another_s_task_nests_its_live_table():
    screen = Terminal()

    def inner(messages, tools):
        net = robotlab.create_network(name="inner")
        net.task("i", robotlab.build(name="i", model=ScriptedModel(["inner done"])))
        return net.run("go", progress=screen).value  # drawn inside the outer run's live display

    outer = robotlab.create_network(name="outer")
    outer.task("o", robotlab.build(name="o", model=ScriptedModel(inner)))
    assert outer.run("go", progress=screen).value == "inner done"
    shown = screen.getvalue()
    # The inner table's last frame is printed above the outer one when it ends; then the outer's last frame.
    assert shown.rindex("network 'inner': 1/1 done: 1 ok") < shown.rindex("network 'outer': 1/1 done: 1 ok")
    # One live display on the terminal (it hid the cursor once): the inner table was drawn inside the outer's.
    assert shown.count("\x1b[?25l") == 1
