"""Robot: an LLM with a system prompt, tools, memory and hooks, and its tool loop.

Example:
    >>> import robotlab
    >>> from robotlab.llm import ScriptedModel, call
    >>> @robotlab.tool
    ... def lookup(order_id: str) -> str:
    ...     '''Look up an order.'''
    ...     return f"order {order_id}: shipped"
    >>> model = ScriptedModel([call("lookup", order_id="42"), "Your order has shipped."])
    >>> robot = robotlab.build(name="support", model=model, local_tools=[lookup])
    >>> result = robot.run("Where is order 42?", tools="inherit")
    >>> result.last_text_content, [c.name for c in result.tool_calls]
    ('Your order has shipped.', ['lookup'])
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robotlab.budget import Ledger
from robotlab.configuration import RunConfig, config
from robotlab.delegation import DelegationFuture
from robotlab.errors import (
    BusError,
    ConfigurationError,
    Error,
    InferenceError,
    JobTimeout,
    ToolLoopError,
    ToolNotFoundError,
    WorkerCrashed,
)
from robotlab.hooks import (
    CompactionHookContext,
    ExtensionState,
    HookRegistry,
    Hooks,
    LearnHookContext,
    LlmGenerationHookContext,
    RunHookContext,
    current_hook_scope,
    global_hooks,
    with_hook_scope,
)
from robotlab.hooks.scope import ScopedThreadPoolExecutor
from robotlab.llm import LlmReply, LlmRequest, Model, ToolCall, assistant_message, resolve_model, tool_message
from robotlab.memory import Memory
from robotlab.result import RobotResult, ToolCallRecord
from robotlab.tools import Tool, ToolManifest, as_tool_class

if TYPE_CHECKING:
    from robotlab.bus import Bus, RobotMessage
    from robotlab.mcp import MCPServer
    from robotlab.skills import AgentSkill

__all__ = ["Robot", "build", "estimate_tokens", "render_template"]

logger = logging.getLogger("robotlab.robot")

_TOOL_MODES = ("none", "inherit")


@dataclass(frozen=True)
class _RunFrame:
    """The run in progress in this context: what a delegate inherits and where a robot finds its network's bus."""

    network: Any
    budget_ledger: Ledger | None
    chain: tuple[Robot, ...]  # the robots running, outermost first: a delegation may not loop back into one


_active_run: contextvars.ContextVar[_RunFrame | None] = contextvars.ContextVar("robotlab_active_run", default=None)


@contextlib.contextmanager
def _running(robot: Robot, network: Any, ledger: Ledger | None) -> Iterator[None]:
    parent = _active_run.get()
    chain = (*parent.chain, robot) if parent is not None else (robot,)
    token = _active_run.set(_RunFrame(network, ledger, chain))
    try:
        yield
    finally:
        _active_run.reset(token)


def estimate_tokens(messages: Iterable[dict[str, Any]]) -> int:
    """A cheap, deterministic token estimate (about 4 characters per token)."""
    chars = 0
    for m in messages:
        chars += len(str(m.get("content") or ""))
        for tc in m.get("tool_calls") or ():
            chars += len(str(tc.get("function", {}).get("arguments", "")))
    return max(1, chars // 4)


def render_template(template: str | Path, **context: Any) -> str:
    """Render a prompt template file with ``{name}`` placeholders filled from *context*.

    A relative path is looked up in ``robotlab.config().template_path`` first.
    """
    path = Path(template)
    if not path.is_absolute() and config().template_path is not None:
        candidate = Path(config().template_path) / path
        path = candidate if candidate.exists() else path
    if not path.is_file():
        raise ConfigurationError(f"template {str(template)!r} not found (looked for {path})")
    text = path.read_text()
    try:
        return text.format_map(context)
    except KeyError as exc:
        raise ConfigurationError(f"template {str(template)!r} needs context key {exc.args[0]!r}") from None


class Robot:
    """An LLM-powered agent. Build one with :func:`build`.

    A robot keeps its conversation across runs; ``clear_messages()`` starts over.
    Runs of one robot are serialised (one at a time); use several robots for
    concurrency, e.g. in a network.
    Robots message each other over a bus (``send_message``, ``inbox``,
    ``receive``) and hand work to each other with ``delegate``.
    """

    def __init__(
        self,
        name: str = "robot",
        *,
        model: str | Model | None = None,
        system_prompt: str | None = None,
        template: str | Path | None = None,
        context: dict[str, Any] | None = None,
        local_tools: Sequence[type[Tool] | Tool] = (),
        skills: Sequence[AgentSkill | str] = (),
        mcp: Sequence[MCPServer | dict[str, Any]] = (),
        config: RunConfig | None = None,
        memory: Memory | None = None,
        auto_compact: str | Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
        bus: Bus | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"robot name must be a non-empty string, got {name!r}")
        if system_prompt is not None and template is not None:
            raise ConfigurationError(f"robot {name!r}: pass system_prompt or template, not both")
        if auto_compact not in (None, "context_window") and not callable(auto_compact):
            raise ConfigurationError(
                f"robot {name!r}: auto_compact must be 'context_window' or a callable, got {auto_compact!r}"
            )
        self.name = name
        self.context = dict(context or {})
        self.template = template
        self.system_prompt = render_template(template, **self.context) if template is not None else system_prompt
        level = config or RunConfig()
        if model is not None:
            level = level.merge(RunConfig(model=model))
        self.config = level.merge(RunConfig.from_options(options, where=f"robot {name!r}"))
        self.auto_compact = auto_compact
        self.memory = memory if memory is not None else Memory()
        self.hooks = HookRegistry()
        self.skills: tuple[AgentSkill, ...] = ()
        if skills:  # imported only when used: most robots have no skills
            from robotlab.skills import resolve_skills

            self.skills = resolve_skills(skills, where=f"robot {name!r}")
        self._tool_classes = [as_tool_class(t) for t in local_tools]
        self._tool_classes += [t for skill in self.skills for t in skill.script_tools]
        self.tools = ToolManifest(cls(robot=self, memory=self.memory) for cls in self._tool_classes)
        self.mcp_servers: tuple[MCPServer, ...] = ()
        if mcp:  # imported only when used: most robots have no MCP servers
            from robotlab.mcp import parse_servers

            self.mcp_servers = parse_servers(mcp, where=f"robot {name!r}")
        self._messages: list[dict[str, Any]] = []
        self._learnings: list[str] = []
        self._ledger: Ledger | None = None
        self._broken_by: ToolLoopError | None = None
        self._run_lock = threading.RLock()
        self.bus = bus
        if bus is not None:
            bus.register(self)

    def __repr__(self) -> str:
        return f"Robot(name={self.name!r}, tools={self.tools.names()!r})"

    # -- hooks, learnings, conversation ------------------------------------

    def on(self, handler_class: type, context: dict[str, Any] | None = None):
        """Register a hook class for this robot only."""
        return self.hooks.on(handler_class, context)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """A copy of the conversation so far."""
        return [dict(m) for m in self._messages]

    def clear_messages(self, *, keep_system: bool = False) -> None:
        """Forget the conversation (required after a ``ToolLoopError``)."""
        with self._run_lock:
            self._messages = [m for m in self._messages if keep_system and m["role"] == "system"]
            self._broken_by = None

    @property
    def learnings(self) -> tuple[str, ...]:
        return tuple(self._learnings)

    def learn(self, text: str) -> bool:
        """Remember *text* for future runs (deduplicated); fires the ``learn`` hooks.

        Returns whether it was stored (``ctx.stored``).
        """
        ctx = LearnHookContext(robot=self, text=str(text).strip(), learnings_before=tuple(self._learnings))
        registries = self._registries(None)

        def body() -> bool:
            Hooks.call("on_learn", ctx, registries)
            if ctx.text and ctx.text not in self._learnings:
                self._learnings.append(ctx.text)
                ctx.stored = True
            return ctx.stored

        Hooks.run("learn", ctx, registries, None, body)
        return ctx.stored

    # -- messaging and delegation ------------------------------------------

    def send_message(self, to: str, content: Any, *, in_reply_to: int | None = None) -> RobotMessage:
        """Send *content* to the robot named *to* on this robot's bus; returns the message.

        The bus is ``build(bus=...)``'s, else (inside a network run) the network's.
        No bus, or no robot named *to* on it, raises ``BusError``.

        >>> import robotlab
        >>> from robotlab.llm import EchoModel
        >>> bus = robotlab.Bus()
        >>> a = robotlab.build(name="a", model=EchoModel(), bus=bus)
        >>> b = robotlab.build(name="b", model=EchoModel(), bus=bus)
        >>> a.send_message(to="b", content="hi").sender
        'a'
        """
        return self._bus(f"send a message to {to!r}").send(self.name, to, content, in_reply_to=in_reply_to)

    def inbox(self) -> list[RobotMessage]:
        """The messages waiting for this robot, oldest first; reading empties the mailbox."""
        return self._bus("read its inbox").inbox(self.name)

    def receive(self, timeout: float | None = None) -> RobotMessage | None:
        """The oldest waiting message, waiting up to *timeout* seconds for one (``None`` when none came)."""
        return self._bus("receive a message").receive(self.name, timeout)

    def _bus(self, action: str) -> Bus:
        if self.bus is not None:
            return self.bus
        frame = _active_run.get()
        network = frame.network if frame is not None else None
        bus = getattr(network, "bus", None)
        if bus is None and network is not None:  # a worker's stand-in for the network: the bus stayed in the parent
            raise BusError(
                f"robot {self.name!r} cannot {action}: it runs in a worker of network {network.name!r} "
                f"(parallel_mode={getattr(network, 'parallel_mode', '?')!r}) and the bus lives in the parent "
                "process; use parallel_mode='thread' for robots that message each other"
            )
        if bus is None:
            raise BusError(
                f"robot {self.name!r} cannot {action}: no bus configured. Build the robots that talk "
                "with bus=robotlab.Bus() (the same bus for all), or message from inside a network run "
                "with parallel_mode='thread', where the network's robots share network.bus"
            )
        return bus

    def delegate(
        self, other: Robot, message: str, async_: bool = False, **run_options: Any
    ) -> RobotResult | DelegationFuture:
        """Have *other* run *message*: its ``RobotResult``, or with ``async_=True`` a :class:`DelegationFuture`.

        Called during this robot's run (from a tool or hook), the delegate's run
        is part of it: the same network (its hooks and config), the per-run hooks
        and the shared budget ledger; ``run_options`` (``tools="inherit"``, ...)
        go to ``other.run``. The async delegate runs on its own thread in a copy
        of this context, so all of that reaches it too.

        >>> import robotlab
        >>> from robotlab.llm import ScriptedModel
        >>> boss = robotlab.build(name="boss", model=ScriptedModel(["ok"]))
        >>> boss.delegate(robotlab.build(name="helper", model=ScriptedModel(["done"])), "go").last_text_content
        'done'
        """
        if not isinstance(other, Robot):
            raise ConfigurationError(f"robot {self.name!r} can only delegate to a Robot, got {type(other).__name__}")
        frame = _active_run.get()
        if other is self or (frame is not None and other in frame.chain):
            path = " -> ".join(r.name for r in (*(frame.chain if frame else ()), other))
            raise ConfigurationError(
                f"robot {self.name!r} cannot delegate to robot {other.name!r}: it is already running "
                f"({path}) and a robot runs one task at a time; delegate to another robot"
            )
        if frame is not None:
            extra = run_options.pop("hooks", None)
            extra = () if extra is None else (extra,) if isinstance(extra, type) else tuple(extra)
            run_options = {"network": frame.network, "budget_ledger": frame.budget_ledger,
                           "hooks": (*current_hook_scope().per_run_hooks, *extra) or None, **run_options}

        def run() -> RobotResult:
            return other.run(message, **run_options)

        return DelegationFuture(self.name, other.name, run) if async_ else run()

    # -- running -----------------------------------------------------------

    def effective_config(self, network: Any = None, overrides: RunConfig | None = None) -> RunConfig:
        """The merged RunConfig: global → network → robot → per-run."""
        merged = config().run_config
        if network is not None:
            merged = merged.merge(network.config)
        return merged.merge(self.config).merge(overrides)

    def _registries(self, network: Any) -> list[HookRegistry | None]:
        return [global_hooks(), getattr(network, "hooks", None), self.hooks]

    def _select_tools(self, tools: str | Sequence[str]) -> ToolManifest:
        if tools == "none":
            return ToolManifest()
        if tools == "inherit":
            return self.tools
        if isinstance(tools, str) or not isinstance(tools, Sequence):
            raise ConfigurationError(f"tools must be 'none', 'inherit' or a list of tool names, got {tools!r}")
        return self.tools.select(tools)

    def run(
        self,
        message: str,
        *,
        tools: str | Sequence[str] = "none",
        mcp: str | Sequence[str] = "none",
        hooks: type | Sequence[type] | None = None,
        memory: Memory | None = None,
        network: Any = None,
        task: Any = None,
        budget_ledger: Ledger | None = None,
        **overrides: Any,
    ) -> RobotResult:
        """Run the robot on *message* and return its :class:`RobotResult`.

        Args:
            tools: ``"none"`` (default: the model gets no local tools), ``"inherit"``
                (all ``local_tools``) or an allowlist of tool names (local or MCP).
            mcp: ``"none"`` (default: connect no MCP server), ``"inherit"`` (every
                server given to ``build(mcp=...)``) or a list of server names. Their
                tools are offered too, narrowed by a ``tools=`` allowlist; the servers
                are connected for this run only (see ``robotlab.mcp``).
            hooks: hook classes active for this run only.
            memory: the run's memory (a network passes its shared one).
            budget_ledger: an extra ledger shared with other robots (networks pass theirs).
            **overrides: RunConfig fields for this run only (``temperature=0``, ...).
        """
        servers = self._select_mcp_servers(mcp)
        run_overrides = RunConfig.from_options(overrides, where="robot.run()")
        selected = self._select_tools(tools) if not servers else ToolManifest()  # with MCP: chosen once connected
        effective = self.effective_config(network, run_overrides)
        memory = memory if memory is not None else self.memory
        per_run = hooks
        registries = self._registries(network)
        ctx = RunHookContext(
            robot=self, network=network, task=task, memory=memory, config=effective, request=message
        )
        with (
            self._run_lock,
            with_hook_scope(registries, per_run),
            _running(self, network, budget_ledger),
        ):
            if self._broken_by is not None:
                raise ConfigurationError(
                    f"robot {self.name!r} stopped mid tool loop ({self._broken_by}); "
                    "call robot.clear_messages() before running it again"
                )
            for t in selected:
                t.memory = memory
            ledgers = [led for led in (self._ledger_for(effective), budget_ledger) if led is not None]
            before = list(self._messages)
            try:
                result = Hooks.run(
                    "run",
                    ctx,
                    registries,
                    per_run,
                    lambda: self._tool_loop(ctx, selected, effective, ledgers, registries, per_run)
                    if not servers
                    else self._tool_loop_with_mcp(servers, tools, ctx, effective, ledgers, registries, per_run),
                )
            except ToolLoopError:
                raise  # the seed's contract: the conversation stays as it was; clear_messages() is required
            except BaseException:
                # A failed run leaves the conversation as it found it: no user turn without an
                # answer, no tool call without its result (which the next call's provider refuses).
                self._messages = before
                raise
        if isinstance(result, RobotResult):  # include what around/after hooks wrote
            result.hook_metadata = ctx.metadata.to_dict()
        return result

    def _select_mcp_servers(self, mcp: str | Sequence[str]) -> tuple[MCPServer, ...]:
        if mcp == "none":
            return ()
        from robotlab.mcp import select_servers

        return select_servers(self.mcp_servers, mcp, where=f"robot {self.name!r}")

    def _tool_loop_with_mcp(
        self,
        servers: tuple[MCPServer, ...],
        tools: str | Sequence[str],
        ctx: RunHookContext,
        cfg: RunConfig,
        ledgers: list[Ledger],
        registries: list[HookRegistry | None],
        per_run: Any,
    ) -> RobotResult:
        """The tool loop with this run's MCP servers connected; they are closed when it ends, however it ends."""
        from robotlab.mcp import MCPConnections

        with MCPConnections(servers) as connections:
            selected = connections.manifest(self.tools, tools, robot=self, memory=ctx.memory)
            for t in selected:
                t.memory = ctx.memory
            return self._tool_loop(ctx, selected, cfg, ledgers, registries, per_run)

    def _ledger_for(self, effective: RunConfig) -> Ledger | None:
        if effective.token_budget is None and effective.cost_budget is None:
            return None
        if self._ledger is None:
            self._ledger = Ledger(token_budget=effective.token_budget, cost_budget=effective.cost_budget)
        return self._ledger

    def _system_message(self) -> dict[str, Any] | None:
        parts = [skill.instructions for skill in self.skills if skill.instructions]  # skills first, as robot_lab
        if self.system_prompt:
            parts.append(self.system_prompt)
        if self._learnings:
            parts.append("Things you have learned:\n" + "\n".join(f"- {t}" for t in self._learnings))
        return {"role": "system", "content": "\n\n".join(parts)} if parts else None

    def _tool_loop(
        self,
        ctx: RunHookContext,
        tools: ToolManifest,
        cfg: RunConfig,
        ledgers: list[Ledger],
        registries: list[HookRegistry | None],
        per_run: Any,
    ) -> RobotResult:
        started = time.perf_counter()
        model = resolve_model(self._model(cfg))
        system = self._system_message()
        if system is not None:
            self._messages = [m for m in self._messages if m["role"] != "system"]
            self._messages.insert(0, system)
        self._messages.append({"role": "user", "content": str(ctx.request)})
        result = RobotResult(robot_name=self.name, model=getattr(model, "name", ""))
        max_rounds = cfg.get("max_tool_rounds")
        schemas = tools.schemas()
        iteration = 0
        while True:
            self._maybe_compact(cfg, model, registries, per_run)
            reply = self._generate(ctx, model, cfg, schemas, ledgers, registries, per_run, iteration)
            result.llm_calls += 1
            result.prompt_tokens += reply.usage.prompt_tokens
            result.completion_tokens += reply.usage.completion_tokens
            result.cost += reply.cost
            self._messages.append(assistant_message(reply))
            if not reply.tool_calls:
                result.last_text_content = reply.text
                break
            if len(result.tool_calls) + len(reply.tool_calls) > max_rounds:
                self._broken_by = ToolLoopError.for_limit(max_rounds)
                raise self._broken_by
            records = self._run_tool_calls(tools, reply.tool_calls, cfg)
            result.tool_calls.extend(records)
            for record in records:
                self._messages.append(tool_message(record.id, _as_text(record.result)))
            iteration += 1
        result.messages = self.messages
        result.duration = time.perf_counter() - started
        return result

    def _model(self, cfg: RunConfig) -> str | Model:
        if cfg.model is None:
            raise ConfigurationError(
                f"robot {self.name!r} has no model: pass model=... to build(), set it in a RunConfig, "
                "or set ROBOTLAB_MODEL"
            )
        return cfg.model

    def _generate(
        self,
        ctx: RunHookContext,
        model: Model,
        cfg: RunConfig,
        schemas: list[dict[str, Any]],
        ledgers: list[Ledger],
        registries: list[HookRegistry | None],
        per_run: Any,
        iteration: int,
    ) -> LlmReply:
        request = LlmRequest(
            messages=self.messages,
            tools=schemas,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            options=dict(cfg.llm_options or {}),
        )
        if cfg.prices is not None:
            request.options.setdefault("prices", cfg.prices)
        # Reserve what the call will at least spend, so parallel robots cannot overspend a shared budget.
        estimate = estimate_tokens(request.messages) + (cfg.max_tokens or 0)
        reservations = []
        try:
            for ledger in ledgers:
                reservations.append((ledger, ledger.reserve("tokens", estimate), ledger.reserve("cost", 0.0)))
        except Error:
            for ledger, tokens, cost in reservations:
                ledger.release(tokens)
                ledger.release(cost)
            raise
        gen_ctx = LlmGenerationHookContext(
            robot=self, network=ctx.network, task=ctx.task, memory=ctx.memory, config=cfg,
            request=ctx.request, iteration=iteration,
        )

        def body() -> LlmReply:
            try:
                return model.complete(request)
            except Error:
                raise
            except Exception as exc:
                raise InferenceError(f"model {getattr(model, 'name', model)!r} failed: {exc}") from exc

        try:
            reply = Hooks.run("llm_generation", gen_ctx, registries, per_run, body)
        except BaseException:
            for ledger, tokens, cost in reservations:
                ledger.release(tokens)
                ledger.release(cost)
            raise
        for ledger, tokens, cost in reservations:
            ledger.reconcile(tokens, reply.usage.total_tokens)
            ledger.reconcile(cost, reply.cost)
        for ledger in ledgers:
            overspent = ledger.overspend_error()
            if overspent is not None:
                raise overspent
        return reply

    def _run_tool_calls(self, tools: ToolManifest, calls: list[ToolCall], cfg: RunConfig) -> list[ToolCallRecord]:
        if len(calls) == 1:
            return [self._run_tool_call(tools, calls[0], cfg)]
        # Several calls in one reply run at once (parallel_safe ones on the worker pool);
        # these threads carry the hook scope.
        with ScopedThreadPoolExecutor(max_workers=len(calls), thread_name_prefix=f"{self.name}-tools") as threads:
            return list(threads.map(lambda c: self._run_tool_call(tools, c, cfg), calls))

    def _run_tool_call(self, tools: ToolManifest, call: ToolCall, cfg: RunConfig) -> ToolCallRecord:
        started = time.perf_counter()
        record = ToolCallRecord(id=call.id, name=call.name, arguments=dict(call.arguments))
        try:
            tool = tools.resolve(call.name)
        except ToolNotFoundError as exc:
            record.error = str(exc)
            record.result = f"Error ({call.name}): {exc}"
        else:
            if type(tool).parallel_safe and cfg.get("parallel_tools") and cfg.pool_backend != "thread":
                record.result, record.hook_metadata, record.where = _call_on_pool(tool, call, cfg)
            else:
                metadata = ExtensionState()
                record.result = tool.call(call.arguments, metadata=metadata)
                record.hook_metadata = metadata.to_dict()
            if isinstance(record.result, str) and record.result.startswith(f"Error ({tool.name}): "):
                record.error = record.result
        record.duration = time.perf_counter() - started
        return record

    # -- compaction ----------------------------------------------------------

    def _maybe_compact(self, cfg: RunConfig, model: Model, registries: list, per_run: Any) -> None:
        if self.auto_compact is None:
            return
        if callable(self.auto_compact):
            strategy = "custom"
        else:
            strategy = "context_window"
            window = cfg.context_window or _context_window_of(model)
            if window is None:
                logger.warning(
                    "auto_compact='context_window' skipped for robot %r: the model's context window is unknown; "
                    "set context_window in its RunConfig",
                    self.name,
                )
                return
            if estimate_tokens(self._messages) <= int(window * 0.8):
                return
        ctx = CompactionHookContext(
            robot=self, messages_before=tuple(dict(m) for m in self._messages), config=cfg, strategy=strategy
        )

        def body() -> list[dict[str, Any]]:
            Hooks.call("on_compaction", ctx, registries, per_run)
            if not ctx.handled:
                if callable(self.auto_compact):
                    ctx.compacted_messages = list(self.auto_compact(self.messages))
                else:
                    ctx.compacted_messages = _compact_to_window(self._messages, window)
            return ctx.compacted_messages

        self._messages = [dict(m) for m in Hooks.run("compaction", ctx, registries, per_run, body)]


def _call_on_pool(tool: Tool, call: ToolCall, cfg: RunConfig) -> tuple[Any, dict[str, Any], str]:
    """Run a ``parallel_safe`` tool call on the default pool: (result, hook metadata, backend).

    The worker runs a fresh instance inside the run's ``tool_call`` hooks, so
    the robot sees what it would see in-process; a worker that dies or times
    out fails the call like a tool error (re-raised with ``raise_on_error``).
    """
    from robotlab.parallel import default_pool

    pool = default_pool(cfg.pool_backend, cfg.pool_size)
    future = pool.submit_tool(type(tool), call.arguments, memory=tool.memory,
                              errors="raise" if tool.raise_on_error else "text")
    try:
        result = future.result()
    except (WorkerCrashed, JobTimeout) as exc:
        if tool.raise_on_error:
            raise
        result = tool.format_error(exc)
    return result, future.hook_metadata or {}, pool.backend


def _context_window_of(model: Model) -> int | None:
    window = getattr(model, "context_window", None)
    return window() if callable(window) else window


def _compact_to_window(messages: list[dict[str, Any]], window: int) -> list[dict[str, Any]]:
    """Keep system messages and the newest turns that fit half the window; note what was dropped.

    Cuts only at a user message, so an assistant tool call is never split from its results.
    """
    system = [m for m in messages if m["role"] == "system"]
    rest = [m for m in messages if m["role"] != "system"]
    keep_from = len(rest)
    for i in range(len(rest) - 1, -1, -1):
        if rest[i]["role"] == "user":
            if estimate_tokens(rest[i:]) > window // 2 and keep_from < len(rest):
                break
            keep_from = i
    dropped = rest[:keep_from]
    if not dropped:
        return list(messages)
    summary = " | ".join(str(m.get("content") or "")[:80] for m in dropped if m.get("content"))
    note = {"role": "system", "content": f"[{len(dropped)} earlier messages compacted] {summary}"[:2000]}
    return [*system, note, *rest[keep_from:]]


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


def build(
    name: str = "robot",
    *,
    model: str | Model | None = None,
    system_prompt: str | None = None,
    template: str | Path | None = None,
    context: dict[str, Any] | None = None,
    local_tools: Sequence[type[Tool] | Tool] = (),
    skills: Sequence[AgentSkill | str] = (),
    mcp: Sequence[MCPServer | dict[str, Any]] = (),
    config: RunConfig | None = None,
    bus: Bus | None = None,
    **options: Any,
) -> Robot:
    """Build a :class:`Robot`. Extra keyword options are RunConfig fields (``token_budget=1000``).

    ``bus``: a :class:`robotlab.Bus` the robot joins under its name, to message
    the other robots on it (``robot.send_message``; see :mod:`robotlab.bus`).

    >>> import robotlab
    >>> from robotlab.llm import EchoModel
    >>> robotlab.build(name="echo", model=EchoModel()).run("ping").last_text_content
    'ping'
    """
    return Robot(
        name,
        model=model,
        system_prompt=system_prompt,
        template=template,
        context=context,
        local_tools=local_tools,
        skills=skills,
        mcp=mcp,
        config=config,
        bus=bus,
        **options,
    )
