"""Asking the user: the built-in ``ask_user`` tool (robot_lab's ``AskUser``).

The model calls ``ask_user(question, choices=None, default=None)`` when it
needs a person. The question is written to the robot's ``output`` (stdout by
default) as ``[robot] question``, choices numbered from 1, then a ``> ``
prompt (``> [default] `` with a default), and the answer is the line read
from the robot's ``input`` (stdin by default):

- Enter on an empty line gives the default;
- with choices, a number picks that choice and the text of a choice (any
  case) is that choice; anything else (a number out of range, other text) is
  refused with a hint and asked again, :data:`MAX_ATTEMPTS` times at most —
  stricter than robot_lab, which passes such text through;
- the input ending (EOF) gives the default, or ``AskUserError`` without one.

A programmatic handler answers instead of a terminal:
``robot.ask_user_handler = fn``, where ``fn(question)`` (or ``async def``)
gets a :class:`Question` and returns the answer (a choice's number or text
with choices; ``None`` for the default). Every question fires the ``hitl``
hook family (:class:`~robotlab.hooks.HitlHookContext`; a ``before_hitl``
handler may answer it) and, when the run is streamed, the ``hitl.requested`` /
``hitl.resolved`` events. In a worker (``parallel_mode="process"``,
``"subinterpreter"`` or ``"ray"``), the question goes to the parent, which asks through the
parent's robot: its streams, handler, hooks and the network's events.

Example:
    >>> import io, robotlab
    >>> from robotlab.llm import ScriptedModel, call
    >>> def reply(messages, tools):  # ask once, then answer with what the user picked
    ...     if messages[-1]["role"] == "tool":
    ...         return f"Making {messages[-1]['content']}."
    ...     return call("ask_user", question="Pick one", choices=["tea", "coffee"])
    >>> robot = robotlab.build(name="helper", local_tools=[AskUser], model=ScriptedModel(reply))
    >>> robot.input, robot.output = io.StringIO("2\\n"), io.StringIO()
    >>> robot.run("drink?", tools="inherit").last_text_content
    'Making coffee.'
    >>> print(robot.output.getvalue().strip())
    [helper] Pick one
      1. tea
      2. coffee
    >

Worker-side module: standard library and robotlab's worker-side modules only.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from robotlab.active_run import active_run
from robotlab.errors import AskUserError, Error
from robotlab.hooks import HitlHookContext, Hooks, current_hook_scope, global_hooks
from robotlab.sync_bridge import in_thread
from robotlab.tools import Tool, param

__all__ = ["MAX_ATTEMPTS", "AskUser", "Question", "ask", "read_answer"]

MAX_ATTEMPTS = 3
"""How many times a terminal question is asked before an invalid answer becomes ``AskUserError``."""


@dataclass(frozen=True)
class Question:
    """One ``ask_user`` question: its text, the choices (may be empty), the default, and the asking robot's name."""

    text: str
    choices: tuple[str, ...] = ()
    default: str | None = None
    robot: str | None = None

    def pick(self, answer: str) -> str | None:
        """The choice *answer* stands for: its number (from 1) or its text in any case; None when neither."""
        answer = answer.strip()
        if answer.isdigit() and 1 <= int(answer) <= len(self.choices):
            return self.choices[int(answer) - 1]
        return next((c for c in self.choices if c.casefold() == answer.casefold()), None)

    def hint(self) -> str:
        """What a valid answer to a question with choices looks like."""
        enter = f", or Enter for {self.default!r}" if self.default is not None else ""
        return f"answer with a number from 1 to {len(self.choices)} or one of the choices{enter}"

    def accept(self, answer: Any) -> str:
        """*answer* from a handler or hook as the tool's result; ``AskUserError`` when it is not a valid one."""
        if answer is None or answer == "":
            if self.default is None and answer is None:
                raise AskUserError(f"no answer to {self.text!r} and no default: the handler returned None")
            answer = self.default if self.default is not None else answer
        text = str(answer)
        if not self.choices:
            return text
        picked = self.pick(text)
        if picked is None:
            raise AskUserError(f"{text!r} is not a valid answer to {self.text!r} "
                               f"(choices: {', '.join(self.choices)}): {self.hint()}")
        return picked


def read_answer(question: Question, input: TextIO, output: TextIO) -> str:
    """Ask *question* on a terminal (or any text streams) and return the answer, as the module describes."""
    output.write(f"\n[{question.robot or 'Robot'}] {question.text}\n")
    for number, choice in enumerate(question.choices, 1):
        output.write(f"  {number}. {choice}\n")
    for _ in range(MAX_ATTEMPTS):
        output.write(f"> [{question.default}] " if question.default is not None else "> ")
        output.flush()
        line = input.readline()
        if not line:  # EOF: nobody will answer
            if question.default is not None:
                return question.default
            raise AskUserError(f"no answer to {question.text!r}: the input ended (EOF) and the question has no "
                               "default; answer on the robot's input, or set robot.ask_user_handler")
        text = line.rstrip("\r\n")
        if not text.strip() and question.default is not None:
            text = question.default
        if not question.choices:
            return text
        picked = question.pick(text)
        if picked is not None:
            return picked
        output.write(f"{text.strip()!r} is not one of the choices: {question.hint()}.\n")
    raise AskUserError(f"no valid answer to {question.text!r} after {MAX_ATTEMPTS} attempts: {question.hint()}")


async def ask(robot: Any, question: Question, *, events: Any = None, registries: Any = (),
              per_run: Any = None) -> str:
    """Ask *question* for *robot* (handler, else its streams) inside the ``hitl`` hooks; emits the hitl events."""
    ctx = HitlHookContext(robot=robot, question=question.text, choices=question.choices, default=question.default)
    if events is not None:
        events.emit("hitl.requested", question=question.text, choices=list(question.choices),
                    default=question.default)

    async def body() -> str:
        if ctx.answer is not None:  # a before_hitl hook answered
            ctx.source = "hook"
            return question.accept(ctx.answer)
        handler = getattr(robot, "ask_user_handler", None)
        if handler is not None:
            ctx.source = "handler"
            value = handler(question)
            return question.accept(await value if inspect.isawaitable(value) else value)
        ctx.source = "terminal"
        return await in_thread(read_answer, question, getattr(robot, "input", None) or sys.stdin,
                               getattr(robot, "output", None) or sys.stdout)

    answer = await Hooks.arun("hitl", ctx, registries, per_run, body)
    if events is not None:
        events.emit("hitl.resolved", question=question.text, answer=answer, source=ctx.source)
    return answer


class AskUser(Tool):
    """The ``ask_user`` tool: give it to a robot (``local_tools=[AskUser]``) and offer it in a run."""

    name = "ask_user"
    description = "Ask the user a question and wait for their typed response"
    param("question", type="string", desc="The question to ask the user")
    param("choices", type="array", items="string", desc="Optional list of choices to present", required=False)
    param("default", type="string", desc="Default value if user presses Enter", required=False)

    async def execute(self, *, question: str, choices: list[str] | None = None, default: str | None = None) -> str:
        asked = Question(str(question), tuple(str(c) for c in choices or ()), default,
                         getattr(self.robot, "name", None))
        remote = _parent()
        if remote is not None:  # in a worker: the parent asks, through its own robot
            return await in_thread(remote.call, "ask", asked.text, list(asked.choices), asked.default)
        frame = active_run()
        scope = current_hook_scope()
        if scope is not None:
            registries, per_run = list(scope.registries), scope.per_run_hooks
        else:
            registries, per_run = [global_hooks(), getattr(self.robot, "hooks", None)], None
        return await ask(self.robot, asked, events=None if frame is None else frame.events,
                         registries=registries, per_run=per_run)


def _parent() -> Any:
    """The parent's ``human`` endpoint when this runs in a job on a worker pool, else None (this is the parent)."""
    from robotlab.parallel.parent_calls import endpoint

    try:
        remote = endpoint("human")
    except Error:  # not in a job: this process is the parent
        return None
    if remote is None:
        raise AskUserError("ask_user cannot ask from a bare pool job (pool.submit_tool, pool.submit): only a "
                           "robot's run on a pool (a network task in a worker mode) asks in the parent; "
                           "call the tool in this process instead")
    return remote
