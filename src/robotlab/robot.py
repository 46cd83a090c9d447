from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from robotlab.active_run import active_run, enter_run, exit_run
from robotlab.budget import Ledger
from robotlab.compaction import estimate_tokens
from robotlab.configuration import RunConfig, config
from robotlab.errors import ConfigurationError, ToolLoopError
from robotlab.events import Event, EventEmitter, stream_events
from robotlab.hooks import HookRegistry, Hooks, LearnHookContext, RunHookContext, global_hooks
from robotlab.hooks.scope import enter_hook_scope, exit_hook_scope
from robotlab.llm import Model
from robotlab.memory import Memory
from robotlab.result import RobotResult
from robotlab.robot_messaging import RobotMessaging
from robotlab.run_gate import RunGate
from robotlab.run_loop import RobotRun
from robotlab.sync_bridge import in_thread, iterate_sync, run_sync
from robotlab.tools import Tool, ToolManifest, as_tool_class

if TYPE_CHECKING:
    from robotlab.bus import Bus
    from robotlab.history import HistoryStore
    from robotlab.mcp import MCPServer
    from robotlab.skills import AgentSkill

__all__ = ["Robot", "build", "estimate_tokens", "render_template"]

_TOOL_MODES = ("none", "inherit")


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


class Robot(RobotMessaging):
    """An LLM-powered agent. Build one with :func:`build`.

    A robot keeps its conversation across runs; ``clear_messages()`` starts over.
    With ``build(history=...)``, ``run(message, session_id=...)`` resumes a stored
    conversation and saves the run's turns to it (see :mod:`robotlab.history`).
    Runs of one robot are serialised (one at a time); use several robots for
    concurrency, e.g. in a network.
    Robots message each other over a bus (``send_message``, ``inbox``,
    ``receive``) and hand work to each other with ``delegate``.

    ``input`` / ``output``: the streams ``ask_user`` reads and writes (``None``: stdin /
    stdout); ``ask_user_handler``: a (sync or async) callable of a ``human_input.Question``
    that answers instead of a person (see robots-and-tools.md).
    """

    input: TextIO | None = None
    output: TextIO | None = None
    ask_user_handler: Callable[..., Any] | None = None

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
        history: HistoryStore | str | Path | None = None,
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
        self._run_gate = RunGate()
        self.history = _history_store(history)  # where run(..., session_id=...) resumes and saves
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

    # -- running -----------------------------------------------------------

    def effective_config(self, network: Any = None, overrides: RunConfig | None = None) -> RunConfig:
        """The merged RunConfig: global → network → robot → per-run."""
        merged = config().run_config
        if network is not None:
            merged = merged.merge(network.config)
        return merged.merge(self.config).merge(overrides)

    def _registries(self, network: Any) -> list[HookRegistry | None]:
        return [global_hooks(), getattr(network, "hooks", None), self.hooks]

    def _select_tools(self, tools: str | Sequence[Any]) -> ToolManifest:
        """The local tools a run offers: ``tools=`` entries are names, or Tool classes standing for theirs."""
        if tools == "none":
            return ToolManifest()
        if tools == "inherit":
            return self.tools
        if isinstance(tools, str) or not isinstance(tools, Sequence):
            raise ConfigurationError(
                f"tools must be 'none', 'inherit' or a list of tool names or Tool classes, got {tools!r}"
            )
        return self.tools.select(tools)

    def run(self, message: str, **options: Any) -> RobotResult:
        """Run the robot on *message* and return its :class:`RobotResult` (see :meth:`run_async` for options).

        The synchronous face of :meth:`run_async`. Called where an event loop is
        running (inside ``async def`` code), it runs on a helper thread, so it
        never blocks on or nests into that loop; prefer ``await run_async`` there.
        """
        return run_sync(lambda: self.run_async(message, **options))

    async def run_async(
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
        events: EventEmitter | None = None,
        session_id: str | None = None,
        **overrides: Any,
    ) -> RobotResult:
        """Run the robot on *message* and return its :class:`RobotResult`.

        Runs of one robot wait for each other (from threads and coroutines alike).
        A cancelled or failed run leaves the conversation as it was (after a
        ``ToolLoopError``, as it stands); a failure's ``partial_result`` is a
        :class:`RobotResult` of what the run did before failing: the conversation
        up to the failure, the tool calls made, the tokens and cost spent.

        Args:
            tools: ``"none"`` (default: the model gets no local tools), ``"inherit"``
                (all ``local_tools``) or an allowlist of tool names (local or MCP).
            mcp: ``"none"`` (default: connect no MCP server), ``"inherit"`` (every
                server given to ``build(mcp=...)``), ``"discover"`` (the servers whose
                description is relevant to *message*) or a list of server names. Their
                tools are offered too, narrowed by a ``tools=`` allowlist; the servers
                are connected for this run only (see ``robotlab.mcp``).
            hooks: hook classes active for this run only.
            memory: the run's memory (a network passes its shared one).
            budget_ledger: an extra ledger shared with other robots (networks pass theirs).
            events: where the run's streaming events go (``stream``/``astream`` and
                ``network.stream`` pass one; see :mod:`robotlab.events`).
            session_id: resume that session of ``build(history=...)`` and save this run to it.
            **overrides: RunConfig fields for this run only (``temperature=0``, ...).

        >>> import asyncio, robotlab
        >>> from robotlab.llm import ScriptedModel
        >>> robot = robotlab.build(name="r", model=ScriptedModel(["hi"]))
        >>> asyncio.run(robot.run_async("hello")).last_text_content
        'hi'
        """
        ctx, selected, servers = self._prepare_run(message, tools, mcp, memory, network, task, overrides)
        registries = self._registries(network)
        self._refuse_reentry()
        async with self._run_gate:
            with _RunScope(registries, hooks, self, network, budget_ledger, events):
                self.check_runnable()
                ledgers = [led for led in (self._ledger_for(ctx.config), budget_ledger) if led is not None]
                run = RobotRun(self, ctx, selected, ctx.config, ledgers, registries, hooks, events)
                result = await self._execute(run, servers, tools, session_id)
        if isinstance(result, RobotResult):  # include what around/after hooks wrote
            result.hook_metadata = ctx.metadata.to_dict()
        if events is not None:
            events.emit("run.completed", result=result)
        return result

    def _prepare_run(self, message: str, tools: str | Sequence[str], mcp: str | Sequence[str],
                     memory: Memory | None, network: Any, task: Any,
                     overrides: dict[str, Any]) -> tuple[RunHookContext, ToolManifest, tuple[MCPServer, ...]]:
        """What a run uses: its hook context (merged config, memory), local tools and MCP servers.

        Resolved before the run waits for the robot, so a bad option raises at once.
        """
        servers = self._select_mcp_servers(mcp, message)
        run_overrides = RunConfig.from_options(overrides, where="robot.run()") if overrides else None
        selected = self._select_tools(tools) if not servers else ToolManifest()  # with MCP: chosen once connected
        effective = self.effective_config(network, run_overrides)
        memory = memory if memory is not None else self.memory
        ctx = RunHookContext(robot=self, network=network, task=task, memory=memory, config=effective,
                             request=message)
        return ctx, selected, servers

    async def _execute(self, run: RobotRun, servers: tuple[MCPServer, ...], tools: str | Sequence[str],
                       session_id: str | None = None) -> Any:
        """The ``run`` hook family around the tool loop; a failed run leaves the conversation as it was.

        With a *session_id*, the conversation is that stored session's first, and a successful run saves to it.
        """
        ctx, events = run.ctx, run.events
        for t in run.tools:
            t.memory = ctx.memory
        session = None if session_id is None else await _resume_session(self, session_id)
        before = list(self._messages)
        if events is not None:
            events.emit("run.started", message=str(ctx.request))
        body = run.execute if not servers else lambda: _execute_with_mcp(self, run, servers, tools)
        try:
            result = await Hooks.arun("run", ctx, run.registries, run.per_run, body)
        except BaseException as exc:
            if isinstance(exc, Exception):  # what the run did survives on the error (not a cancellation)
                run.attach_partial(exc)  # again: now with what the run hooks wrote, and for hook errors
            # No user turn without an answer, no tool call without its result (which the next
            # call's provider refuses). After a ToolLoopError the seed's contract keeps the
            # conversation as it stands: clear_messages() is required.
            if not isinstance(exc, ToolLoopError):
                self._messages = before
            if events is not None:
                events.emit("run.failed", error=f"{type(exc).__name__}: {exc}")
            raise
        if session is not None:
            await session.persist()
        return result

    def _refuse_reentry(self) -> None:
        frame = active_run()
        if frame is not None and self in frame.chain:
            path = " -> ".join(r.name for r in (*frame.chain, self))
            raise ConfigurationError(
                f"robot {self.name!r} cannot start a run inside its own run ({path}): a robot runs one task "
                "at a time; run another robot (or robot.delegate(other, ...))"
            )

    def check_runnable(self) -> None:
        """Raise ``ConfigurationError`` when the last run stopped mid tool loop (``clear_messages()`` first)."""
        if self._broken_by is not None:
            raise ConfigurationError(
                f"robot {self.name!r} stopped mid tool loop ({self._broken_by}); "
                "call robot.clear_messages() before running it again"
            )

    # -- streaming ---------------------------------------------------------

    def stream(self, message: str, **options: Any) -> Iterator[Event]:
        """Run on *message* and yield its events as they happen (options as :meth:`run_async`).

        The last event is ``stream.ended``, whose ``result`` is the ``RobotResult``;
        a failed run yields ``run.failed`` and ``stream.ended``, then raises its error.
        Leaving the loop early cancels the run.

        >>> import robotlab
        >>> from robotlab.llm import ScriptedModel
        >>> robot = robotlab.build(name="poet", model=ScriptedModel(["roses are red"]))
        >>> [e.type for e in robot.stream("a poem")]  # doctest: +NORMALIZE_WHITESPACE
        ['run.started', 'text.delta', 'text.delta', 'text.delta', 'usage.updated', 'run.completed',
         'stream.ended']
        """
        return iterate_sync(lambda: self.astream(message, **options))

    async def astream(self, message: str, **options: Any) -> AsyncIterator[Event]:
        """:meth:`stream` for async code: ``async for event in robot.astream(message)``."""
        task = getattr(options.get("task"), "name", None)
        async for event in stream_events(lambda events: self.run_async(message, events=events, **options),
                                         robot=self.name, task=task):
            yield event

    # -- configuration -------------------------------------------------------

    def _select_mcp_servers(self, mcp: str | Sequence[str], message: Any = "") -> tuple[MCPServer, ...]:
        if mcp == "none":
            return ()
        from robotlab.mcp import select_servers

        return select_servers(self.mcp_servers, mcp, where=f"robot {self.name!r}", query=str(message))

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

    def _model(self, cfg: RunConfig) -> str | Model:
        if cfg.model is None:
            raise ConfigurationError(
                f"robot {self.name!r} has no model: pass model=... to build(), set it in a RunConfig, "
                "or set ROBOTLAB_MODEL"
            )
        return cfg.model


async def _execute_with_mcp(robot: Robot, run: RobotRun, servers: tuple[MCPServer, ...],
                            tools: str | Sequence[str]) -> RobotResult:
    """The tool loop with this run's MCP servers connected; they are closed when it ends, however it ends."""
    from robotlab.mcp import MCPConnections

    connections = MCPConnections(servers)
    await in_thread(connections.__enter__)  # MCP sessions connect on their own threads
    try:
        run.tools = connections.manifest(robot.tools, tools, robot=robot, memory=run.ctx.memory)
        for t in run.tools:
            t.memory = run.ctx.memory
        return await run.execute()
    finally:
        await in_thread(connections.__exit__, None, None, None)


def _history_store(history: HistoryStore | str | Path | None) -> HistoryStore | None:
    """The store ``build(history=...)`` names (``robotlab.history`` is imported only for one)."""
    if history is None:
        return None
    from robotlab.history.open_store import open_history_store

    return open_history_store(history)


async def _resume_session(robot: Robot, session_id: str) -> Any:
    """Resume *robot*'s stored conversation of *session_id* (see ``robotlab.history.session``)."""
    from robotlab.history.session import resume_session

    return await resume_session(robot, session_id)


class _RunScope:
    """``with with_hook_scope(registries, hooks), running(robot, network, ledger)`` in one plain object.

    The same two context variables set and reset in the same order, without two
    generator-based context managers per run.
    """

    __slots__ = ("_run", "_scope", "events", "hooks", "ledger", "network", "registries", "robot")

    def __init__(self, registries: list[HookRegistry | None], hooks: Any, robot: Robot, network: Any,
                 ledger: Ledger | None, events: EventEmitter | None = None) -> None:
        self.registries, self.hooks, self.robot, self.network, self.ledger = registries, hooks, robot, network, ledger
        self.events = events

    def __enter__(self) -> None:
        self._scope = enter_hook_scope(self.registries, self.hooks)
        self._run = enter_run(self.robot, self.network, self.ledger, self.events)

    def __exit__(self, *exc: Any) -> None:
        exit_run(self._run)
        exit_hook_scope(self._scope)


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
