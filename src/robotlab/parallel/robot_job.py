"""A robot run as a WorkerPool job: how networks run their tasks in worker processes or subinterpreters.

Parent side, :func:`run_on_pool` (``Robot.run``'s arguments): the robot is
described as a :class:`RobotSpec` — plain data and import paths — or refused
right there, naming what cannot be described; the spec travels with the
endpoints its run needs, and the worker's ``RobotResult`` comes back.

Worker side, :func:`run_robot`: the robot is rebuilt from the spec and runs
its tool loop there. What runs where:

- in the worker: prompt building, the tool loop, the robot's tools (in-process
  there), and the ``run``, ``llm_generation``, ``tool_call``, ``compaction``
  and ``learn`` hooks of every level (registered again by import path);
- in the parent: the model's ``complete()`` (so LLM I/O, API keys and litellm
  stay in one process and any model object works, a ``ScriptedModel``
  function included), the budget ledgers (so parallel robots cannot overspend
  a shared budget), the memory (so subscriptions and blocking reads fire as in
  thread mode), a network's ``network_run`` and ``task`` hooks, and
  ``ask_user`` questions (the parent's robot asks, with its ``hitl`` hooks).

The robot's conversation and learnings travel with the spec and come back
with the result, so a robot behaves as in thread mode from one task to the next.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from robotlab.configuration import RunConfig
from robotlab.errors import ConfigurationError, RactorBoundaryError, ToolLoopError
from robotlab.events import Event, EventEmitter
from robotlab.hooks import HookRegistry, global_hooks
from robotlab.parallel import shipped_hooks
from robotlab.parallel.awaiting import awaited
from robotlab.parallel.boundary import freeze_deep, resolve, thaw_json
from robotlab.parallel.endpoints import Endpoint
from robotlab.parallel.parent_calls import RemoteEndpoint, endpoint
from robotlab.result import RobotResult
from robotlab.robot import Robot

__all__ = ["NetworkRef", "RobotSpec", "TaskRef", "check_robot", "checked_rebuilds", "describe_robot", "rebuild_key",
           "run_on_pool", "run_robot"]


@dataclass(frozen=True)
class NetworkRef:
    """What ``ctx.network`` is in a worker: the network's name and mode (the Network stays in the parent)."""

    name: str
    parallel_mode: str
    config: RunConfig = field(default_factory=RunConfig)

    def activate(self, name: str) -> None:
        """``network.activate(name)`` of the run in progress, in the parent."""
        remote = endpoint("network")
        if remote is None:
            raise ConfigurationError(f"network.activate({name!r}) called outside a run of network {self.name!r}")
        remote.call("activate", name)


@dataclass(frozen=True)
class TaskRef:
    """What ``ctx.task`` is in a worker: the task's name and dependencies."""

    name: str
    depends_on: Any = "none"
    tools: Any = "none"


@dataclass(frozen=True)
class RobotSpec:
    """Everything needed to rebuild a robot in a worker, as shareable data.

    ``config`` is the run's effective RunConfig (global → network → robot →
    per-run) without the model, which stays in the parent; ``hooks`` the
    worker-side hook families of every level, by import path; ``output`` the
    ``output_type``'s name and JSON schema (the type itself stays in the parent).
    """

    name: str
    system_prompt: str | None
    context: Any
    config: RunConfig
    tools: tuple[str, ...]
    skills: tuple[str, ...]
    mcp: tuple[Any, ...]
    hooks: shipped_hooks.Description | None
    messages: tuple[Any, ...]
    learnings: tuple[str, ...]
    auto_compact: str | None
    model_name: str
    context_window: int | None
    output: tuple[str, Any] | None = None


def describe_robot(robot: Robot, pool: Any, *, network: Any = None, hooks: Any = None,
                   overrides: RunConfig | None = None) -> RobotSpec:
    """The spec of *robot* for a run on *pool*; ``RactorBoundaryError`` naming what cannot be described."""
    from robotlab.compaction import context_window_of
    from robotlab.llm import resolve_model

    where = f"robot {robot.name!r} cannot run in a worker"
    effective = robot.effective_config(network, overrides)
    model = resolve_model(robot._model(effective))
    skill_tools = {t for skill in robot.skills for t in skill.script_tools}

    def path(obj: Any, what: str) -> str:
        try:
            return pool.path_of(obj)
        except RactorBoundaryError as exc:
            raise RactorBoundaryError(f"{where}: {what} {exc}") from None

    auto_compact = robot.auto_compact
    if callable(auto_compact):
        auto_compact = path(auto_compact, "its auto_compact function:")
    levels, per_run = _hook_levels(robot, network, hooks)
    try:
        shipped = pool.describe_hooks(levels, per_run, shipped_hooks.WORKER_FAMILIES)
    except RactorBoundaryError as exc:
        raise RactorBoundaryError(f"{where}: {exc}") from None
    effective, output = _split_output(effective, model)
    spec = RobotSpec(
        name=robot.name,
        system_prompt=robot.system_prompt,
        context=robot.context,
        # Tools run in-process in the worker: a worker does not start pools of its own.
        config=dataclasses.replace(effective, model=None, parallel_tools=False),
        tools=tuple(path(cls, f"tool {cls.name!r}:") for cls in robot._tool_classes if cls not in skill_tools),
        skills=tuple(str(skill.path) for skill in robot.skills),
        mcp=tuple(robot.mcp_servers),
        hooks=shipped,
        messages=tuple(robot._messages),
        learnings=tuple(robot._learnings),
        auto_compact=auto_compact,
        model_name=str(getattr(model, "name", "") or ""),
        context_window=context_window_of(model),
        output=output,
    )
    try:
        return freeze_deep(spec, root=f"robot {robot.name!r}")
    except RactorBoundaryError as exc:
        raise RactorBoundaryError(f"{where}: {exc}") from None


def _hook_levels(robot: Robot, network: Any, hooks: Any) -> tuple[list[Any], tuple[type, ...]]:
    """The hook registries of a run (global → network → robot) and its per-run hook classes."""
    per_run = () if hooks is None else (hooks,) if isinstance(hooks, type) else tuple(hooks)
    return [global_hooks(), getattr(network, "hooks", None), robot.hooks], per_run


def _split_output(effective: RunConfig, model: Any) -> tuple[RunConfig, tuple[str, Any] | None]:
    """The worker's config without ``output_type``, and the type's (name, JSON schema) for the spec."""
    if effective.output_type is None:
        return effective, None
    from robotlab.structured_output import output_mode_for, output_schema

    schema = output_schema(effective.output_type)
    # The mode is settled here, where the model is: the worker's model proxy cannot say what it supports.
    mode = output_mode_for(effective.get("output_mode"), model)
    return dataclasses.replace(effective, output_type=None, output_mode=mode), (schema.name, schema.type_schema)


async def run_on_pool(pool: Any, robot: Robot, message: str, *, tools: str | Sequence[str] = "none",
                      mcp: str | Sequence[str] = "none", hooks: Any = None, memory: Any = None, network: Any = None,
                      task: Any = None, budget_ledger: Any = None, endpoints: dict[str, Any] | None = None,
                      events: EventEmitter | None = None, **overrides: Any) -> RobotResult:
    """``await robot.run_async(message, ...)`` with the robot's tool loop in a worker of *pool*.

    See the module docstring. *endpoints*: more parent objects the worker may
    reach (a network passes its run's). *events*: the worker's run sends its
    events there while it runs (``run.completed`` is emitted here, with the
    result). Raises what the run raises
    (``WorkerCrashed`` when the worker died), and ``RactorBoundaryError`` before
    anything runs when the robot cannot be described. Cancelling the awaiting
    task cancels the job (a running worker is replaced).
    """
    run_overrides = RunConfig.from_options(overrides, where="robot.run()")
    spec = describe_robot(robot, pool, network=network, hooks=hooks, overrides=run_overrides)
    effective = robot.effective_config(network, run_overrides)
    endpoints = _run_endpoints(robot, effective, dict(endpoints or {}), memory=memory, network=network,
                               hooks=hooks, budget_ledger=budget_ledger, events=events)
    output = None
    if effective.output_type is not None:
        from robotlab.parallel.robot_output import OutputEndpoint
        from robotlab.structured_output import output_schema

        output = endpoints["output"] = OutputEndpoint(output_schema(effective.output_type))
    where = (None if network is None else NetworkRef(network.name, network.parallel_mode),
             None if task is None else TaskRef(task.name, task.depends_on, task.tools))
    async with robot._run_gate:
        robot.check_runnable()
        future = pool.submit_job("call", f"{__name__}:run_robot", (spec, str(message), tools, mcp, where), {},
                                 None, endpoints=endpoints)
        try:
            result, learnings = await awaited(pool, future)
        except Exception as exc:
            _ran_on(pool, future, getattr(exc, "partial_result", None))
            if isinstance(exc, ToolLoopError):
                robot._broken_by = exc  # as in thread mode: clear_messages() before the next run
            raise
        _ran_on(pool, future, result)
        robot._messages = [dict(m) for m in result.messages]
        robot._learnings = list(learnings)
    if output is not None:
        result.output = output.value  # the typed value; the worker only had its JSON
    if events is not None:
        events.emit("run.completed", result=result)
    return result


def _run_endpoints(robot: Robot, effective: RunConfig, endpoints: dict[str, Any], *, memory: Any, network: Any,
                   hooks: Any, budget_ledger: Any, events: EventEmitter | None) -> dict[str, Any]:
    """The parent objects a worker's run of *robot* reaches: memory, model, ledgers, events, hooks' halves."""
    from robotlab.llm import resolve_model
    from robotlab.parallel.endpoints import LedgerEndpoint, MemoryEndpoint, ModelEndpoint

    endpoints["memory"] = MemoryEndpoint(memory if memory is not None else robot.memory)
    endpoints["model"] = ModelEndpoint(resolve_model(robot._model(effective)),
                                       on_delta=None if events is None else events.delta)
    own_ledger = robot._ledger_for(effective)
    if own_ledger is not None:
        endpoints["robot_ledger"] = LedgerEndpoint(own_ledger)
    if budget_ledger is not None:
        endpoints["network_ledger"] = LedgerEndpoint(budget_ledger)
    if events is not None:
        endpoints["events"] = _EventsEndpoint(events)
    if _asks_user(robot):
        endpoints["human"] = _HumanEndpoint(robot, network, events)  # ask_user in the worker asks here
    levels, per_run = _hook_levels(robot, network, hooks)
    endpoints.update(shipped_hooks.parent_endpoints(levels, per_run, shipped_hooks.WORKER_FAMILIES))
    return endpoints


def _ran_on(pool: Any, future: Any, result: RobotResult | None) -> None:
    """Mark *result*'s tool calls as run on the worker of *future* (in-process there: on the pool's backend)."""
    for record in getattr(result, "tool_calls", None) or ():
        record.where, record.worker = pool.backend, future.worker_id


class _EventsEndpoint(Endpoint):
    """Where a worker's run sends its events: numbered and passed on in the parent, as they come."""

    def __init__(self, events: EventEmitter) -> None:
        self._events = events

    def handle(self, op: str, args: tuple, still_waiting: Any) -> Any:
        if op != "emit":
            raise self.unknown(op)
        type_, data = args
        self._events.emit(type_, **thaw_json(data))


def _asks_user(robot: Robot) -> bool:
    from robotlab.human_input import AskUser

    return any(isinstance(t, AskUser) for t in robot.tools)


class _HumanEndpoint(Endpoint):
    """Where ``ask_user`` in a worker asks: through the parent's robot (its streams or handler, hooks, events)."""

    def __init__(self, robot: Robot, network: Any, events: EventEmitter | None) -> None:
        self._robot, self._network, self._events = robot, network, events

    def blocks(self, op: str, args: tuple) -> bool:
        return True  # a person may take their time: never hold up the pool

    def handle(self, op: str, args: tuple, still_waiting: Any) -> Any:
        if op != "ask":
            raise self.unknown(op)
        from robotlab.human_input import Question, ask
        from robotlab.sync_bridge import run_sync

        text, choices, default = args
        question = Question(text, tuple(choices or ()), default, self._robot.name)
        return run_sync(lambda: ask(self._robot, question, events=self._events,
                                    registries=self._robot._registries(self._network)))


_checked: weakref.WeakKeyDictionary[Any, set[RobotSpec]] = weakref.WeakKeyDictionary()


def rebuild_key(spec: RobotSpec) -> RobotSpec:
    """What rebuilding *spec* in a worker depends on: the spec without the robot's name and conversation."""
    return dataclasses.replace(spec, name="", messages=(), learnings=(), model_name="", context_window=None,
                               output=None)


def checked_rebuilds(pool: Any) -> set[RobotSpec]:
    """The :func:`rebuild_key` s that :func:`check_robot` passed on *pool* (for as long as the pool lives)."""
    return _checked.setdefault(pool, set())


def check_robot(spec: RobotSpec) -> str:
    """Rebuild the robot in a worker without running it: its tools, skills, hooks and MCP SDK must load there."""
    if spec.mcp:
        import mcp  # noqa: F401  (the MCP SDK, which a subinterpreter may refuse)
    _rebuild(spec)
    return spec.name


def run_robot(spec: RobotSpec, message: str, tools: Any, mcp: Any, where: tuple) -> tuple[RobotResult, tuple]:
    """The worker side: rebuild the robot from *spec* and run it with the parent's model, ledgers and memory."""
    from robotlab.parallel.memory_proxy import MemoryProxy

    robot = _rebuild(spec)
    robot._messages = [thaw_json(m) for m in spec.messages]
    robot._learnings = list(spec.learnings)
    ledger = endpoint("robot_ledger")
    robot._own_ledger = None if ledger is None else _LedgerProxy(ledger)
    network_ledger = endpoint("network_ledger")
    memory = endpoint("memory")
    network, task = where
    events = endpoint("events")
    output = {}
    if spec.output is not None:
        from robotlab.parallel.robot_output import RemoteOutput

        name, schema = spec.output
        output["output_type"] = RemoteOutput(name, thaw_json(schema), endpoint("output"))
    result = robot.run(
        message,
        tools=thaw_json(tools),
        mcp=thaw_json(mcp),
        hooks=robot._per_run or None,
        memory=None if memory is None else MemoryProxy(memory),
        network=network,
        task=task,
        budget_ledger=None if network_ledger is None else _LedgerProxy(network_ledger),
        events=None if events is None else EventEmitter(_forwarding(events)),
        **output,
    )
    return result, tuple(robot.learnings)


def _forwarding(events: Any) -> Any:
    def sink(event: Event) -> None:
        if event.type != "run.completed":  # the parent emits that one, with the result the job returns
            events.call("emit", event.type, event.data)

    return sink


class _WorkerRobot(Robot):
    """A robot rebuilt in a worker: its hook levels, configuration and budget ledger are the parent's."""

    _levels: list[HookRegistry]
    _per_run: tuple[type, ...]
    _own_ledger: Any = None

    def effective_config(self, network: Any = None, overrides: RunConfig | None = None) -> RunConfig:
        # Its config is already the parent's effective one; the worker's own global
        # configuration (which needs pydantic-settings) does not take part.
        return self.config.merge(overrides)

    def _registries(self, network: Any) -> list[HookRegistry | None]:
        return list(self._levels)

    def _ledger_for(self, effective: RunConfig) -> Any:
        return self._own_ledger


def _rebuild(spec: RobotSpec) -> _WorkerRobot:
    skills: list[Any] = []
    if spec.skills:
        from robotlab.skills import AgentSkill

        skills = [AgentSkill(path) for path in spec.skills]
    model_endpoint = endpoint("model")
    model = _ModelProxy(model_endpoint, spec.model_name, spec.context_window) if model_endpoint else None
    auto_compact = resolve(spec.auto_compact) if spec.auto_compact not in (None, "context_window") \
        else spec.auto_compact
    robot = _WorkerRobot(
        spec.name,
        model=model,
        system_prompt=spec.system_prompt,
        context=thaw_json(spec.context),
        local_tools=[resolve(path) for path in spec.tools],
        skills=skills,
        mcp=spec.mcp,
        config=spec.config,
        auto_compact=auto_compact,
    )
    levels, robot._per_run = shipped_hooks.rebuild(spec.hooks)
    robot._levels = levels
    return robot


class _ModelProxy:
    """The parent's model, as the worker's robot sees it: ``complete`` runs in the parent."""

    def __init__(self, remote: RemoteEndpoint, name: str, context_window: int | None) -> None:
        self._remote = remote
        self.name = name
        self.context_window = context_window

    def complete(self, request: Any) -> Any:
        return self._remote.call("complete", request)

    async def acomplete(self, request: Any, on_delta: Any = None) -> Any:
        # The parent streams the call's deltas into the run's events itself: none are sent from here.
        from robotlab.sync_bridge import in_thread

        return await in_thread(self.complete, request)


class _LedgerProxy:
    """A budget ledger of the parent: reservations are held there, by handle."""

    def __init__(self, remote: RemoteEndpoint) -> None:
        self._remote = remote

    def reserve(self, dimension: str, amount: float) -> int:
        return self._remote.call("reserve", dimension, amount)

    def reconcile(self, handle: int, actual: float) -> float:
        return self._remote.call("reconcile", handle, actual)

    def release(self, handle: int) -> None:
        self._remote.call("release", handle)

    def overspend_error(self) -> Any:
        return self._remote.call("overspend_error")

    def limit(self, dimension: str) -> Any:
        return self._remote.call("limit", dimension)

