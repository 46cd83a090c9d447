"""Network: a DAG of robot tasks, scheduled by dependency (never in waves).

Example:
    >>> import robotlab
    >>> from robotlab.llm import ScriptedModel
    >>> net = robotlab.create_network(name="pipeline")
    >>> _ = net.task("draft", robotlab.build(name="drafter", model=ScriptedModel(["a draft"])))
    >>> _ = net.task("edit", robotlab.build(name="editor", model=ScriptedModel(["final text"])),
    ...              depends_on=["draft"])
    >>> result = net.run("Write a haiku")
    >>> result.value, result.ok
    ('final text', True)

A task starts the moment its own dependencies are done; independent tasks run
concurrently and share the network's Memory. A failed task fails its
dependants (with ``UpstreamFailed``); unrelated branches still finish.
Robots of a network message each other by name on ``network.bus`` during a
run (see :mod:`robotlab.bus`).

``parallel_mode``: ``"thread"`` runs each task's robot on a thread of this
process; ``"process"``, ``"subinterpreter"`` and ``"ray"`` run it on a worker
of the default pool of that backend (``robotlab.parallel.default_pool``),
rebuilt there from a spec (see ``robotlab.parallel.robot_job``: what runs
where). The result, hooks, memory and budgets behave the same in every mode,
except that a value a worker writes to memory reads back frozen (dicts as
``FrozenDict``, lists as tuples; docs/networks.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Literal

from robotlab.budget import Ledger
from robotlab.bus import Bus
from robotlab.configuration import RunConfig, config
from robotlab.errors import ConfigurationError, Error, RactorBoundaryError
from robotlab.events import Event, EventEmitter, stream_events
from robotlab.hooks import HookRegistry, Hooks, NetworkRunHookContext, global_hooks
from robotlab.memory import Memory
from robotlab.network_result import NetworkResult
from robotlab.network_router import DEFAULT_MAX_STEPS, Router, RouterRun, check_router
from robotlab.network_run import NetworkRun, current_run
from robotlab.progress import ProgressSetting, progress_hooks
from robotlab.robot import Robot
from robotlab.sync_bridge import iterate_sync, run_sync
from robotlab.task import Task

__all__ = ["PARALLEL_MODES", "Network", "NetworkResult", "create_network"]

PARALLEL_MODES = ("thread", "process", "subinterpreter", "ray")


class Network:
    """A DAG of tasks (or, with ``router=``, robots a router picks). Build with :func:`create_network`."""

    def __init__(
        self,
        name: str,
        *,
        concurrency: int | Literal["auto"] = "auto",
        config: RunConfig | None = None,
        parallel_mode: str = "thread",
        memory: Memory | None = None,
        router: Router | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> None:
        check_router(name, router, max_steps)
        if parallel_mode not in PARALLEL_MODES:
            raise ConfigurationError(
                f"parallel_mode must be one of {', '.join(PARALLEL_MODES)}, got {parallel_mode!r}"
            )
        if concurrency != "auto" and (
            not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1
        ):
            raise ConfigurationError(f"concurrency must be 'auto' or an integer >= 1, got {concurrency!r}")
        self.name = name
        self.concurrency = concurrency
        self.config = config or RunConfig()
        self.parallel_mode = parallel_mode
        self.memory = memory if memory is not None else Memory()
        self.router = router  # None: the tasks run as a DAG; else see robotlab.network_router
        self.max_steps = max_steps
        self.hooks = HookRegistry()
        # Robots without a bus of their own message each other here, by name, during a run (thread mode).
        self.bus = Bus(name)
        self._tasks: dict[str, Task] = {}
        self._ledger: Ledger | None = None

    def __repr__(self) -> str:
        return f"Network(name={self.name!r}, tasks={list(self._tasks)!r}, parallel_mode={self.parallel_mode!r})"

    @property
    def tasks(self) -> dict[str, Task]:
        return dict(self._tasks)

    def on(self, handler_class: type, context: dict[str, Any] | None = None):
        """Register a hook class for runs of this network."""
        return self.hooks.on(handler_class, context)

    def task(
        self,
        name: str,
        robot: Robot,
        *,
        depends_on: Literal["none", "optional"] | Sequence[str] = "none",
        tools: str | Sequence[str] = "none",
        retries: int = 0,
        message: Any = None,
        **options: Any,
    ) -> Task:
        """Add a task; see :class:`robotlab.Task` for the arguments. Returns it."""
        if name in self._tasks:
            raise ConfigurationError(f"network {self.name!r} already has a task named {name!r}")
        if not isinstance(robot, Robot):
            raise ConfigurationError(f"task {name!r}: robot must be a robotlab Robot, got {type(robot).__name__}")
        task = Task(name, robot, depends_on, tools, retries, message, dict(options))
        self.bus.register(robot, duplicate="ambiguous")
        self._tasks[name] = task
        return task

    def validate(self) -> list[str]:
        """Check the graph; returns the task names in a topological order.

        Unknown dependencies and cycles raise ``ConfigurationError`` naming them;
        so does a dependency in a router network (its router orders the tasks).
        """
        if self.router is not None:
            for task in self._tasks.values():
                if task.depends_on != "none":
                    raise ConfigurationError(f"network {self.name!r} has a router: its tasks take no depends_on "
                                             f"(task {task.name!r} has depends_on={task.depends_on!r})")
        for task in self._tasks.values():
            missing = [d for d in task.dependencies if d not in self._tasks]
            if missing:
                raise ConfigurationError(
                    f"task {task.name!r} depends on unknown task(s) {', '.join(map(repr, missing))}; "
                    f"known tasks: {', '.join(self._tasks) or 'none'}"
                )
        order: list[str] = []
        state: dict[str, int] = {}  # 1 = visiting, 2 = done
        for name in self._tasks:
            _visit(self, name, [], state, order)
        return order

    def activate(self, name: str) -> None:
        """Start the ``depends_on="optional"`` task *name* in the run in progress.

        Call it from a tool or hook running inside this network's run.
        """
        run = current_run()
        if run is None or run.network is not self:
            raise ConfigurationError(f"network.activate({name!r}) called outside a run of network {self.name!r}")
        run.activate(name)

    def _ledger_for(self, cfg: RunConfig) -> Ledger | None:
        if cfg.token_budget is None and cfg.cost_budget is None:
            return None
        if self._ledger is None:
            self._ledger = Ledger(token_budget=cfg.token_budget, cost_budget=cfg.cost_budget)
        return self._ledger

    def run(self, message: str, *, memory: Memory | None = None, progress: ProgressSetting = None,
            **context: Any) -> NetworkResult:
        """Run every task once; returns a :class:`NetworkResult` (it does not raise for task errors).

        The synchronous face of :meth:`run_async` (same arguments); inside a running
        event loop it runs on a helper thread.
        """
        return run_sync(lambda: self.run_async(message, memory=memory, progress=progress, **context))

    async def run_async(self, message: str, *, memory: Memory | None = None, events: EventEmitter | None = None,
                        progress: ProgressSetting = None, **context: Any) -> NetworkResult:
        """Run every task once on this event loop; returns a :class:`NetworkResult`.

        Keyword *context* is written into ``memory.data`` before the first task starts.
        In a parallel mode, a robot, tool, hook or skill that cannot be rebuilt in
        a worker raises here, before any task runs, naming the task and why.
        Cancelling the awaiting task cancels every running task (their LLM calls,
        tools and pool jobs). *events*: where task and robot events go (see :meth:`stream`).
        *progress*: a live line per task on stderr: ``True``, ``"auto"`` (only on a
        terminal), a text stream, or ``None`` (off); see :mod:`robotlab.progress`.
        """
        shown = progress_hooks(self, progress)
        order = self.validate()
        config()  # the global configuration is loaded (tracing switched on, say) before the first hook fires
        pool = None if self.parallel_mode == "thread" else self._checked_pool()
        memory = memory if memory is not None else self.memory
        for key, value in context.items():
            memory.data[key] = value
        registries = [global_hooks(), self.hooks, shown]
        ctx = NetworkRunHookContext(network=self, memory=memory, config=self.config, context=dict(context))
        arguments = (order, message, memory, registries, self._ledger_for(self.config), pool, events)
        if self.router is None:
            run = NetworkRun(self, *arguments)
        else:
            run = RouterRun(self, self.router, self.max_steps, dict(context), *arguments)
        return await Hooks.arun("network_run", ctx, registries, None, run.execute)

    def stream(self, message: str, **options: Any) -> Iterator[Event]:
        """Run the network and yield the events of all its tasks as they happen (options as :meth:`run`).

        Each task's events are numbered from 0 (``task.started`` first) and carry
        the task's and robot's names; tasks in worker processes or subinterpreters
        send theirs while they run. The last event is ``stream.ended``, whose
        ``result`` is the ``NetworkResult``.

        >>> import robotlab
        >>> from robotlab.llm import ScriptedModel
        >>> net = robotlab.create_network(name="one")
        >>> _ = net.task("t", robotlab.build(name="r", model=ScriptedModel(["ok"])))
        >>> [(e.task, e.type) for e in net.stream("go")][:2]
        [('t', 'task.started'), ('t', 'run.started')]
        """
        return iterate_sync(lambda: self.astream(message, **options))

    async def astream(self, message: str, **options: Any) -> AsyncIterator[Event]:
        """:meth:`stream` for async code: ``async for event in network.astream(message)``."""
        async for event in stream_events(lambda events: self.run_async(message, events=events, **options)):
            yield event

    def _checked_pool(self) -> Any:
        """The pool of this network's mode, once every task's robot was rebuilt in one of its workers.

        Robots that differ only in name and conversation rebuild alike, so one of
        them is checked; and a pool remembers what it rebuilt for earlier runs.
        """
        from robotlab.parallel import default_pool
        from robotlab.parallel.robot_job import checked_rebuilds, describe_robot, rebuild_key

        pool = default_pool(self.parallel_mode, self.config.pool_size)
        checked = checked_rebuilds(pool)
        checks: dict[Any, tuple[str, Any]] = {}
        for task in self._tasks.values():
            where = f"network {self.name!r}: task {task.name!r} cannot run with parallel_mode={self.parallel_mode!r}"
            try:
                spec = describe_robot(task.robot, pool, network=self,
                                      overrides=RunConfig.from_options(task.options, where=f"task {task.name!r}"))
            except RactorBoundaryError as exc:
                raise RactorBoundaryError(f"{where}: {exc}") from None
            key = rebuild_key(spec)
            if key not in checked and key not in checks:
                checks[key] = (where, pool.submit("robotlab.parallel.robot_job:check_robot", spec))
        for key, (where, check) in checks.items():
            try:
                check.result()
            except Error as exc:
                raise type(exc)(f"{where}: {exc}") from exc
            except Exception as exc:
                raise ConfigurationError(f"{where}: {type(exc).__name__}: {exc}") from exc
            checked.add(key)
        return pool


def create_network(
    name: str = "network",
    *,
    concurrency: int | Literal["auto"] = "auto",
    config: RunConfig | None = None,
    parallel_mode: str = "thread",
    memory: Memory | None = None,
    router: Router | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> Network:
    """Create a :class:`Network`. Add tasks with ``network.task(...)``, then ``network.run(message)``.

    ``concurrency``: how many tasks run at once; ``"auto"`` allows 1,000
    (``robotlab.network_run.AUTO_CONCURRENCY``): tasks are coroutines, so
    I/O-bound fan-out is not limited by threads.

    ``parallel_mode``: ``"thread"`` runs tasks on threads of this process;
    ``"process"``, ``"subinterpreter"`` (CPython 3.13+) and ``"ray"`` run each
    task's robot on a worker of that backend (see :mod:`robotlab.network`).

    ``router``: a callable(:class:`~robotlab.network_router.RouterArgs`) or a
    Robot that picks the next task's robot after each step, instead of the
    DAG; ``max_steps`` bounds the robots one run may run (see
    :mod:`robotlab.network_router`).
    """
    return Network(name, concurrency=concurrency, config=config, parallel_mode=parallel_mode, memory=memory,
                   router=router, max_steps=max_steps)


def _visit(network: Network, name: str, path: list[str], state: dict[str, int], order: list[str]) -> None:
    """Depth-first: append *name* to *order* after its dependencies; raise on a cycle.

    A module function, not a closure in ``validate``: a recursive closure is a reference
    cycle that would keep the network alive until the cyclic GC ran.
    """
    if state.get(name) == 2:
        return
    if state.get(name) == 1:
        cycle = [*path[path.index(name):], name]
        raise ConfigurationError(f"network {network.name!r} has a dependency cycle: {' -> '.join(cycle)}")
    state[name] = 1
    for dep in network._tasks[name].dependencies:
        _visit(network, dep, [*path, name], state, order)
    state[name] = 2
    order.append(name)
