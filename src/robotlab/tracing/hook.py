"""TracingHook: a span per network run, task, robot run, LLM call and tool call, on robotlab's hook families.

The spans nest as the work does: ``network_run`` → ``task`` → ``invoke_agent``
(a robot run) → ``chat`` (an LLM call) and ``execute_tool`` (a tool call), with
the OpenTelemetry GenAI semantic-convention attributes. The hook is shipped to
worker jobs like any hook: there it records plain spans (see
:mod:`robotlab.tracing.spans`) and the parent re-emits them under the span
that submitted the job, so a process-, subinterpreter- or Ray-mode network
gives the same tree as a thread-mode one.

Example:
    >>> TracingHook.namespace
    'tracing'

Standard library only: this module loads in workers (OpenTelemetry only in the parent, lazily).
"""

from __future__ import annotations

from typing import Any

from robotlab import worker_channel
from robotlab.hooks.hook import Hook
from robotlab.tracing import spans
from robotlab.tracing.spans import OpenSpan

__all__ = ["TracingHook"]

_SPAN = "_robotlab_span"  # the attribute of a hook context that holds its open span (never in ctx.metadata)
_TOKEN = "_robotlab_span_token"


def _name(obj: Any) -> str:
    return str(getattr(obj, "name", None) or type(obj).__name__)


def _model_name(model: Any) -> str:
    return model if isinstance(model, str) else str(getattr(model, "name", "") or "")


def _usage(input_tokens: int, output_tokens: int, cost: float) -> dict[str, Any]:
    return {"gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens,
            "robotlab.cost_usd": float(cost)}


class TracingHook(Hook):
    """Turns hook events into spans; registered globally while tracing is on (see :mod:`robotlab.tracing`)."""

    namespace = "tracing"

    @classmethod
    def parent_endpoint(cls) -> Any:
        """For a job submitted now: where its spans come back, under the span in progress here."""
        from robotlab.tracing.otel import SpanIngest

        current = spans.current_span()
        return SpanIngest(None if current is None else current.handle)

    # -- opening and closing ---------------------------------------------------

    @staticmethod
    def _open(ctx: Any, name: str, attributes: dict[str, Any], *, current: bool) -> None:
        parent = spans.current_span()
        if parent is not None:
            sink = parent.sink
        elif worker_channel.in_job():
            remote = worker_channel.parent_half(TracingHook.namespace)
            if remote is None:  # a job submitted without its parent half (not from a run): nowhere to send spans
                return
            sink = spans.RecordSink(remote)
        else:
            from robotlab.tracing.otel import SINK as sink
        span = OpenSpan(sink, parent, sink.start(name, None if parent is None else parent.handle, attributes))
        if parent is not None:
            parent.children[id(span)] = span
        setattr(ctx, _SPAN, span)
        if current:
            setattr(ctx, _TOKEN, spans.set_current(span))

    @staticmethod
    def _close(ctx: Any, attributes: dict[str, Any], error: BaseException | str | None = None) -> None:
        span: OpenSpan | None = ctx.__dict__.pop(_SPAN, None)
        if span is None:
            return
        token = ctx.__dict__.pop(_TOKEN, None)
        if token is not None:
            spans.reset_current(token, span)
        for child in list(span.children.values()):  # a call that raised never reached its after_ hook
            _end(child, {}, error or "ended with its parent")
        _end(span, attributes, error)

    # -- network_run and task ----------------------------------------------------

    @classmethod
    def before_network_run(cls, ctx: Any) -> None:
        network = ctx.network
        cls._open(ctx, f"network_run {_name(network)}",
                  {"robotlab.network.name": _name(network),
                   "robotlab.network.parallel_mode": str(getattr(network, "parallel_mode", "thread"))}, current=True)

    @classmethod
    def after_network_run(cls, ctx: Any) -> None:
        result = ctx.result
        failed = [name for name, outcome in getattr(result, "tasks", {}).items() if outcome.status != "ok"]
        cls._close(ctx, {"robotlab.tasks.failed": len(failed)})

    @classmethod
    def before_task(cls, ctx: Any) -> None:
        cls._open(ctx, f"task {ctx.task_name}",
                  {"robotlab.task.name": str(ctx.task_name), "robotlab.network.name": _name(ctx.network),
                   "gen_ai.agent.name": _name(ctx.robot)}, current=True)

    @classmethod
    def after_task(cls, ctx: Any) -> None:
        cls._close(ctx, {})

    # -- a robot run, its LLM calls and tool calls ------------------------------------

    @classmethod
    def before_run(cls, ctx: Any) -> None:
        robot = ctx.robot
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": _name(robot)}
        if ctx.task is not None:
            attributes["robotlab.task.name"] = _name(ctx.task)
        cls._open(ctx, f"invoke_agent {_name(robot)}", attributes, current=True)

    @classmethod
    def after_run(cls, ctx: Any) -> None:
        result = ctx.response
        attributes = {}
        if hasattr(result, "prompt_tokens"):
            attributes = _usage(result.prompt_tokens, result.completion_tokens, result.cost)
            attributes["robotlab.llm_calls"] = result.llm_calls
            attributes["robotlab.tool_calls"] = len(result.tool_calls)
        cls._close(ctx, attributes)

    @classmethod
    def before_llm_generation(cls, ctx: Any) -> None:
        config = ctx.config
        model = _model_name(getattr(config, "model", None))
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                                      "gen_ai.system": model.partition("/")[0] if "/" in model else model,
                                      "robotlab.iteration": ctx.iteration}
        if getattr(config, "temperature", None) is not None:
            attributes["gen_ai.request.temperature"] = config.temperature
        if getattr(config, "max_tokens", None) is not None:
            attributes["gen_ai.request.max_tokens"] = config.max_tokens
        cls._open(ctx, f"chat {model}", attributes, current=False)

    @classmethod
    def after_llm_generation(cls, ctx: Any) -> None:
        reply = ctx.generation_response
        usage = getattr(reply, "usage", None)
        attributes = {} if usage is None else _usage(usage.prompt_tokens, usage.completion_tokens, reply.cost)
        if getattr(reply, "model", ""):
            attributes["gen_ai.response.model"] = reply.model
        attributes["robotlab.tool_calls"] = len(getattr(reply, "tool_calls", None) or ())
        cls._close(ctx, attributes)

    @classmethod
    def before_tool_call(cls, ctx: Any) -> None:
        cls._open(ctx, f"execute_tool {ctx.tool_name}",
                  {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": ctx.tool_name}, current=False)

    @classmethod
    def after_tool_call(cls, ctx: Any) -> None:
        error = ctx.tool_error
        cls._close(ctx, {}, None if error is None else error)

    @classmethod
    def on_error(cls, ctx: Any) -> None:
        """A failed run, task or network run: its span (and any child still open) ends with the error."""
        cls._close(ctx, {}, ctx.error)


def _end(span: OpenSpan, attributes: dict[str, Any], error: BaseException | str | None) -> None:
    if span.parent is not None:
        span.parent.children.pop(id(span), None)
    span.sink.end(span.handle, attributes, error)
