"""One robot run: generate → tool calls → compaction → result, as coroutines.

``Robot.run_async`` drives a :class:`RobotRun`; ``Robot.run`` and
``Robot.stream`` are thin wrappers around it, so every way of running a
robot shares this loop. What the run touches:

- the model, through :func:`robotlab.llm.calls.complete_async` (streaming deltas
  when an event emitter is attached);
- the budget ledgers: each LLM call reserves its estimate first, so robots
  running at once cannot overspend a shared budget;
- the tools: several calls in one reply run at once; ``async def`` tools are
  awaited, sync ones run on helper threads, ``parallel_safe`` ones on the
  worker pool;
- the robot's conversation (``robot._messages``), which the run extends.

Example:
    >>> import asyncio, robotlab
    >>> from robotlab.llm import ScriptedModel
    >>> robot = robotlab.build(name="r", model=ScriptedModel(["hi"]))
    >>> asyncio.run(robot.run_async("hello")).last_text_content
    'hi'
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from typing import TYPE_CHECKING, Any

from robotlab.budget import Ledger, warn_unknown_cost
from robotlab.compaction import compact, estimate_tokens
from robotlab.configuration import RunConfig
from robotlab.doom_loop import DoomLoopDetector
from robotlab.errors import Error, OutputValidationError, ToolLoopError, ToolNotFoundError
from robotlab.events import EventEmitter
from robotlab.hooks import (
    DoomLoopHookContext,
    ExtensionState,
    HookRegistry,
    Hooks,
    LlmGenerationHookContext,
    RunHookContext,
)
from robotlab.llm import LlmReply, LlmRequest, Model, ToolCall, assistant_message, resolve_model, tool_message
from robotlab.llm.calls import complete_async
from robotlab.llm.failures import model_failure
from robotlab.result import RobotResult, ToolCallRecord
from robotlab.semantic_cache.cache import CacheHit
from robotlab.semantic_cache.runs import cache_lookup
from robotlab.structured_output import FINAL_RESULT_TOOL, output_mode_for, output_schema
from robotlab.tools import ToolManifest

if TYPE_CHECKING:
    from robotlab.robot import Robot

__all__ = ["RobotRun"]


class RobotRun:
    """The state of one run of *robot* (created by ``Robot.run_async``)."""

    def __init__(
        self,
        robot: Robot,
        ctx: RunHookContext,
        tools: ToolManifest,
        cfg: RunConfig,
        ledgers: list[Ledger],
        registries: list[HookRegistry | None],
        per_run: Any,
        events: EventEmitter | None = None,
    ) -> None:
        self.robot = robot
        self.ctx = ctx
        self.tools = tools
        self.cfg = cfg
        self.ledgers = ledgers
        self.registries = registries
        self.per_run = per_run
        self.events = events
        self._doom_loop = _DoomLoopWatch(cfg.get("doom_loop_threshold"))
        self.result = RobotResult(robot_name=robot.name)  # filled in as the run goes
        self._started = time.perf_counter()
        self._cost_checked = False  # whether an unpriced model's reply was checked against a cost budget yet

    def partial_result(self) -> RobotResult:
        """What the run did so far, for a failed run's ``err.partial_result``.

        The conversation as it stood when the run failed (before it is rolled back),
        the tool calls made, the tokens and cost of the LLM calls that completed.
        """
        partial = dataclasses.replace(self.result, messages=self.robot.messages,
                                      tool_calls=list(self.result.tool_calls))
        partial.duration = time.perf_counter() - self._started
        partial.hook_metadata = self.ctx.metadata.to_dict()
        return partial

    def attach_partial(self, exc: Exception) -> None:
        """Set ``exc.partial_result`` to :meth:`partial_result` (an outer run's replaces an inner one's)."""
        partial = self.partial_result()
        with contextlib.suppress(AttributeError, TypeError):  # an exception type that takes no attributes
            exc.partial_result = partial  # type: ignore[attr-defined]

    async def execute(self) -> RobotResult:
        """Run the tool loop to the model's final answer and return the result.

        An exception that ends the loop leaves with ``partial_result`` attached, so the
        ``run`` family's ``on_error`` hooks see it too.
        """
        try:
            return await self._loop()
        except Exception as exc:
            self.attach_partial(exc)
            raise

    async def _loop(self) -> RobotResult:
        robot = self.robot
        started = self._started = time.perf_counter()
        model = resolve_model(robot._model(self.cfg))
        result = self.result
        result.model = getattr(model, "name", "")
        self._open_conversation()
        output = None if self.cfg.output_type is None else _OutputTurns(self, model)
        max_rounds = self.cfg.get("max_tool_rounds")
        schemas = self.tools.schemas() + ([] if output is None else output.tool_schemas())
        response_format = None if output is None else output.response_format()
        rounds = 0
        while True:
            compact(robot, self.cfg, model, self.registries, self.per_run)
            reply = await self._generate(model, schemas, result.llm_calls + result.cache_hits, response_format)
            self._account(result, reply)
            robot._messages.append(assistant_message(reply))
            self._check_budgets()  # after accounting: an overspent call's tokens are in err.partial_result
            final = None if output is None else output.final_call(reply)
            if reply.tool_calls and final is None:
                rounds += 1
                if rounds > max_rounds:
                    robot._broken_by = ToolLoopError.for_limit(max_rounds)
                    raise robot._broken_by
                await self._tool_round(reply.tool_calls, result)
            elif output is None:
                result.last_text_content = reply.text
                break
            elif output.accept(reply, final, result):
                break
        result.messages = robot.messages
        result.duration = time.perf_counter() - started
        return result

    def _open_conversation(self) -> None:
        robot = self.robot
        system = robot._system_message()
        if system is not None:
            robot._messages = [m for m in robot._messages if m["role"] != "system"]
            robot._messages.insert(0, system)
        robot._messages.append({"role": "user", "content": str(self.ctx.request)})

    def _account(self, result: RobotResult, reply: LlmReply) -> None:
        if isinstance(reply.raw, CacheHit):  # served from memory.cache: no call made, no tokens spent
            result.cache_hits += 1
            return
        result.llm_calls += 1
        result.prompt_tokens += reply.usage.prompt_tokens
        result.completion_tokens += reply.usage.completion_tokens
        result.cost += reply.cost
        self._emit("usage.updated", prompt_tokens=result.prompt_tokens,
                   completion_tokens=result.completion_tokens, cost=result.cost)

    async def _tool_round(self, calls: list[ToolCall], result: RobotResult) -> None:
        """Run one reply's tool calls and answer each in the conversation (with a doom-loop warning if due)."""
        records = await self._run_tool_calls(calls)
        result.tool_calls.extend(records)
        for record in records:
            text = _as_text(record.result)
            warning = self._doom_loop.observe(self, record.name)
            if warning:
                text = f"{text}\n\n{warning}"
            self.robot._messages.append(tool_message(record.id, text))

    def _emit(self, type_: str, **data: Any) -> None:
        if self.events is not None:
            self.events.emit(type_, **data)

    # -- generation ----------------------------------------------------------

    async def _generate(self, model: Model, schemas: list[dict[str, Any]], iteration: int,
                        response_format: dict[str, Any] | None = None) -> LlmReply:
        cfg = self.cfg
        request = LlmRequest(messages=self.robot.messages, tools=schemas, temperature=cfg.temperature,
                             max_tokens=cfg.max_tokens, options=dict(cfg.llm_options or {}),
                             response_format=response_format)
        if cfg.prices is not None:
            request.options.setdefault("prices", cfg.prices)
        ctx = self.ctx
        lookup = await cache_lookup(ctx.memory, model, request)
        hit = None if lookup is None else lookup.reply
        # Reserve what the call will at least spend, so parallel robots cannot overspend a shared budget.
        reservations = [] if hit else _reserve(self.ledgers, estimate_tokens(request.messages) + (cfg.max_tokens or 0))
        gen_ctx = LlmGenerationHookContext(
            robot=self.robot, network=ctx.network, task=ctx.task, memory=ctx.memory, config=cfg,
            request=ctx.request, iteration=iteration, cache_hit=hit is not None,
        )
        on_delta = None if self.events is None else self.events.delta

        async def body() -> LlmReply:
            if hit is not None:
                if on_delta is not None and hit.text:
                    on_delta("text", {"text": hit.text})
                return hit
            try:
                return await complete_async(model, request, on_delta)
            except Error:
                raise
            except Exception as exc:
                raise model_failure(str(getattr(model, "name", model)), exc) from exc

        try:
            reply = await Hooks.arun("llm_generation", gen_ctx, self.registries, self.per_run, body)
        except BaseException:
            _release(reservations)
            raise
        for ledger, tokens, cost in reservations:
            ledger.reconcile(tokens, reply.usage.total_tokens)
            ledger.reconcile(cost, reply.cost)
        if lookup is not None and hit is None:
            await lookup.store(reply)
        if not reply.cost_known and not self._cost_checked:  # once per run
            self._cost_checked = True
            warn_unknown_cost(self.ledgers, self.robot.name, str(getattr(model, "name", model)))
        return reply

    def _check_budgets(self) -> None:
        """Raise the post-call ``InferenceError`` when a completed call pushed a ledger over its budget."""
        for ledger in self.ledgers:
            overspent = ledger.overspend_error()
            if overspent is not None:
                raise overspent

    # -- tool calls ------------------------------------------------------------

    async def _run_tool_calls(self, calls: list[ToolCall]) -> list[ToolCallRecord]:
        if len(calls) == 1:
            return [await self._run_tool_call(calls[0])]
        # Several calls in one reply run at once (sync ones on helper threads, parallel_safe ones on the pool).
        return list(await asyncio.gather(*(self._run_tool_call(c) for c in calls)))

    async def _run_tool_call(self, call: ToolCall) -> ToolCallRecord:
        started = time.perf_counter()
        record = ToolCallRecord(id=call.id, name=call.name, arguments=dict(call.arguments))
        self._emit("tool_call.started", id=call.id, name=call.name, arguments=dict(call.arguments))
        try:
            tool = self.tools.resolve(call.name)
        except ToolNotFoundError as exc:
            record.error = _not_offered(self.robot, call.name) or str(exc)
            record.result = f"Error ({call.name}): {record.error}"
        else:
            cfg = self.cfg
            if type(tool).parallel_safe and cfg.get("parallel_tools") and cfg.pool_backend != "thread":
                from robotlab.parallel.tool_job import call_on_pool

                await call_on_pool(tool, call, cfg, record)
            else:
                metadata = ExtensionState()
                record.result = await tool.acall(call.arguments, metadata=metadata)
                record.hook_metadata = metadata.to_dict()
            if isinstance(record.result, str) and record.result.startswith(f"Error ({tool.name}): "):
                record.error = record.result
        record.duration = time.perf_counter() - started
        # A pool job's run time is the worker's own; everything else was waiting and crossing.
        record.run_s = record.duration if record.worker is None else min(record.run_s, record.duration)
        record.queued_s = record.duration - record.run_s
        self._emit("tool_call.completed", id=call.id, name=call.name, result=record.result, error=record.error)
        return record


class _DoomLoopWatch:
    """The run's doom-loop detector, and what happens on a detection (hook, event, warning text)."""

    def __init__(self, threshold: int) -> None:  # no reference to the run: no cycle for the GC to find
        self.detector = DoomLoopDetector(threshold)

    def observe(self, run: RobotRun, tool_name: str) -> str:
        """Track one completed call of *run*; the warning to append to its result ("" when there is no loop)."""
        detector = self.detector
        if detector.threshold < 1:
            return ""
        detector.track(tool_name)
        pattern = detector.pattern()
        if not pattern:
            return ""
        ctx = DoomLoopHookContext(robot=run.robot, tool_name=tool_name, pattern=tuple(pattern),
                                  sequence=tuple(detector.sequence), warning=detector.warning_message())
        Hooks.call("on_doom_loop", ctx, run.registries, run.per_run)
        run._emit("doom_loop.detected", tool_name=tool_name, pattern=list(ctx.pattern), warning=ctx.warning)
        return ctx.warning or ""


class _OutputTurns:
    """How a run with ``output_type`` gets its answer: the schema it sends, and validation with retries."""

    def __init__(self, run: RobotRun, model: Model) -> None:
        self.run = run
        self.mode = output_mode_for(run.cfg.get("output_mode"), model)
        self.schema = output_schema(run.cfg.output_type)
        self.retries_left = run.cfg.get("output_retries")

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [self.schema.final_result_tool()] if self.mode == "tool" else []

    def response_format(self) -> dict[str, Any] | None:
        return self.schema.response_format() if self.mode == "response_format" else None

    def final_call(self, reply: LlmReply) -> ToolCall | None:
        """The reply's ``final_result`` call, in tool mode."""
        if self.mode != "tool":
            return None
        return next((c for c in reply.tool_calls if c.name == FINAL_RESULT_TOOL), None)

    def accept(self, reply: LlmReply, final: ToolCall | None, result: RobotResult) -> bool:
        """Validate the answer in *reply*; True when it is *result*'s output, False to ask the model again."""
        if final is None:
            value, problems = self.schema.parse_text(reply.text)
            raw = reply.text
        else:
            value, problems = self.schema.parse_arguments(final.arguments)
            raw = json.dumps(final.arguments)
            self._answer_tool_calls(reply, final, problems)
        if not problems:
            result.output, result.last_text_content = value, raw
            return True
        if self.retries_left < 1:
            raise OutputValidationError(
                f"the model's answer is not a valid {self.schema.name}: {'; '.join(problems)}",
                problems=problems, text=raw,
            )
        self.retries_left -= 1
        self.run._emit("output.invalid", problems=list(problems), text=raw)
        if final is None:
            self.run.robot._messages.append({"role": "user", "content": self._feedback(problems)})
        return False

    def _answer_tool_calls(self, reply: LlmReply, final: ToolCall, problems: list[str]) -> None:
        # Every call of the reply needs its answer; tools asked for beside final_result do not run.
        messages = self.run.robot._messages
        for call in reply.tool_calls:
            if call is not final:
                text = f"Not run: {FINAL_RESULT_TOOL} was called in the same reply."
            elif problems:
                text = f"Error ({FINAL_RESULT_TOOL}): invalid arguments: {'; '.join(problems)}. " \
                       f"Call {FINAL_RESULT_TOOL} again with corrected arguments."
            else:
                text = "Final result accepted."
            messages.append(tool_message(call.id, text))

    def _feedback(self, problems: list[str]) -> str:
        listed = "\n".join(f"- {p}" for p in problems)
        ask = f"Give it by calling the {FINAL_RESULT_TOOL} tool." if self.mode == "tool" \
            else "Reply again with only the corrected JSON value."
        return f"Your answer is not a valid {self.schema.name}:\n{listed}\n{ask}"


def _reserve(ledgers: list[Ledger], estimate: int) -> list[tuple[Ledger, Any, Any]]:
    reservations: list[tuple[Ledger, Any, Any]] = []
    try:
        for ledger in ledgers:
            reservations.append((ledger, ledger.reserve("tokens", estimate), ledger.reserve("cost", 0.0)))
    except Error:
        _release(reservations)
        raise
    return reservations


def _release(reservations: list[tuple[Ledger, Any, Any]]) -> None:
    for ledger, tokens, cost in reservations:
        ledger.release(tokens)
        ledger.release(cost)


def _not_offered(robot: Robot, name: str) -> str | None:
    """What a call of a tool *robot* has, but this run did not offer, is told (None: the robot lacks it too)."""
    if name not in robot.tools:
        return None
    return (f"Tool {name!r} is attached to robot {robot.name!r} but this run did not offer it: tools are opt-in "
            f"per run, so pass tools=\"inherit\" (every attached tool) or a list naming it, e.g. tools=[{name!r}], "
            "to run() or network.task()")


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)

