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
import json
import time
from typing import TYPE_CHECKING, Any

from robotlab.budget import Ledger
from robotlab.compaction import compact, estimate_tokens
from robotlab.configuration import RunConfig
from robotlab.errors import Error, InferenceError, ToolLoopError, ToolNotFoundError
from robotlab.events import EventEmitter
from robotlab.hooks import ExtensionState, HookRegistry, Hooks, LlmGenerationHookContext, RunHookContext
from robotlab.llm import LlmReply, LlmRequest, Model, ToolCall, assistant_message, resolve_model, tool_message
from robotlab.llm.calls import complete_async
from robotlab.result import RobotResult, ToolCallRecord
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

    async def execute(self) -> RobotResult:
        """Run the tool loop to the model's final answer and return the result."""
        robot = self.robot
        started = time.perf_counter()
        model = resolve_model(robot._model(self.cfg))
        system = robot._system_message()
        if system is not None:
            robot._messages = [m for m in robot._messages if m["role"] != "system"]
            robot._messages.insert(0, system)
        robot._messages.append({"role": "user", "content": str(self.ctx.request)})
        result = RobotResult(robot_name=robot.name, model=getattr(model, "name", ""))
        max_rounds = self.cfg.get("max_tool_rounds")
        schemas = self.tools.schemas()
        iteration = 0
        while True:
            compact(robot, self.cfg, model, self.registries, self.per_run)
            reply = await self._generate(model, schemas, iteration)
            result.llm_calls += 1
            result.prompt_tokens += reply.usage.prompt_tokens
            result.completion_tokens += reply.usage.completion_tokens
            result.cost += reply.cost
            self._emit("usage.updated", prompt_tokens=result.prompt_tokens,
                       completion_tokens=result.completion_tokens, cost=result.cost)
            robot._messages.append(assistant_message(reply))
            if not reply.tool_calls:
                result.last_text_content = reply.text
                break
            if len(result.tool_calls) + len(reply.tool_calls) > max_rounds:
                robot._broken_by = ToolLoopError.for_limit(max_rounds)
                raise robot._broken_by
            records = await self._run_tool_calls(reply.tool_calls)
            result.tool_calls.extend(records)
            for record in records:
                robot._messages.append(tool_message(record.id, _as_text(record.result)))
            iteration += 1
        result.messages = robot.messages
        result.duration = time.perf_counter() - started
        return result

    def _emit(self, type_: str, **data: Any) -> None:
        if self.events is not None:
            self.events.emit(type_, **data)

    # -- generation ----------------------------------------------------------

    async def _generate(self, model: Model, schemas: list[dict[str, Any]], iteration: int) -> LlmReply:
        cfg = self.cfg
        request = LlmRequest(messages=self.robot.messages, tools=schemas, temperature=cfg.temperature,
                             max_tokens=cfg.max_tokens, options=dict(cfg.llm_options or {}))
        if cfg.prices is not None:
            request.options.setdefault("prices", cfg.prices)
        # Reserve what the call will at least spend, so parallel robots cannot overspend a shared budget.
        reservations = _reserve(self.ledgers, estimate_tokens(request.messages) + (cfg.max_tokens or 0))
        ctx = self.ctx
        gen_ctx = LlmGenerationHookContext(
            robot=self.robot, network=ctx.network, task=ctx.task, memory=ctx.memory, config=cfg,
            request=ctx.request, iteration=iteration,
        )
        on_delta = None if self.events is None else self.events.delta

        async def body() -> LlmReply:
            try:
                return await complete_async(model, request, on_delta)
            except Error:
                raise
            except Exception as exc:
                raise InferenceError(f"model {getattr(model, 'name', model)!r} failed: {exc}") from exc

        try:
            reply = await Hooks.arun("llm_generation", gen_ctx, self.registries, self.per_run, body)
        except BaseException:
            _release(reservations)
            raise
        for ledger, tokens, cost in reservations:
            ledger.reconcile(tokens, reply.usage.total_tokens)
            ledger.reconcile(cost, reply.cost)
        for ledger in self.ledgers:
            overspent = ledger.overspend_error()
            if overspent is not None:
                raise overspent
        return reply

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
            record.error = str(exc)
            record.result = f"Error ({call.name}): {exc}"
        else:
            cfg = self.cfg
            if type(tool).parallel_safe and cfg.get("parallel_tools") and cfg.pool_backend != "thread":
                from robotlab.parallel.tool_job import call_on_pool

                record.result, record.hook_metadata, record.where = await call_on_pool(tool, call, cfg)
            else:
                metadata = ExtensionState()
                record.result = await tool.acall(call.arguments, metadata=metadata)
                record.hook_metadata = metadata.to_dict()
            if isinstance(record.result, str) and record.result.startswith(f"Error ({tool.name}): "):
                record.error = record.result
        record.duration = time.perf_counter() - started
        self._emit("tool_call.completed", id=call.id, name=call.name, result=record.result, error=record.error)
        return record


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


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)

