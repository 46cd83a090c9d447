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
where). The result, hooks, memory and budgets behave the same in every mode.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any, Literal

from robotlab.budget import Ledger
from robotlab.bus import Bus
from robotlab.configuration import RunConfig
from robotlab.errors import ConfigurationError, Error, RactorBoundaryError, retryable
from robotlab.hooks import HookRegistry, Hooks, NetworkRunHookContext, TaskHookContext, global_hooks
from robotlab.hooks.scope import ScopedThreadPoolExecutor
from robotlab.memory import Memory
from robotlab.parallel.endpoints import Endpoint
from robotlab.result import RobotResult
from robotlab.robot import Robot
from robotlab.task import Task, TaskOutcome, UpstreamFailed

__all__ = ["PARALLEL_MODES", "Network", "NetworkResult", "create_network"]

PARALLEL_MODES = ("thread", "process", "subinterpreter", "ray")
_MAX_AUTO_THREADS = 32

_current_run: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("robotlab_network_run", default=None)


@dataclass
class NetworkResult:
    """The outcome of ``network.run()``: per-task outcomes, timing and the memory.

    ``value`` is the final answer: the text of the last-defined task that has
    no dependants and succeeded (``final`` is its RobotResult).
    """

    network_name: str
    tasks: dict[str, TaskOutcome]
    memory: Memory
    duration: float
    sinks: tuple[str, ...] = field(default=())

    @property
    def results(self) -> dict[str, RobotResult]:
        return {n: o.result for n, o in self.tasks.items() if o.status == "ok" and o.result is not None}

    @property
    def errors(self) -> dict[str, BaseException]:
        return {n: o.error for n, o in self.tasks.items() if o.error is not None}

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def final(self) -> RobotResult | None:
        for name in reversed(self.sinks):
            outcome = self.tasks[name]
            if outcome.status == "ok":
                return outcome.result
        return None

    @property
    def value(self) -> str | None:
        final = self.final
        return final.last_text_content if final is not None else None

    def __getitem__(self, name: str) -> TaskOutcome:
        return self.tasks[name]

    def raise_for_errors(self) -> NetworkResult:
        """Raise the first task error (in definition order), if any; else return self."""
        for outcome in self.tasks.values():
            if outcome.error is not None and not isinstance(outcome.error, UpstreamFailed):
                raise outcome.error
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "network": self.network_name,
            "ok": self.ok,
            "value": self.value,
            "duration": self.duration,
            "tasks": {n: o.to_dict() for n, o in self.tasks.items()},
        }


class Network:
    """A DAG of tasks. Build with :func:`create_network`, add tasks, then ``run()``."""

    def __init__(
        self,
        name: str,
        *,
        concurrency: int | Literal["auto"] = "auto",
        config: RunConfig | None = None,
        parallel_mode: str = "thread",
        memory: Memory | None = None,
    ) -> None:
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

        Unknown dependencies and cycles raise ``ConfigurationError`` naming them.
        """
        for task in self._tasks.values():
            missing = [d for d in task.dependencies if d not in self._tasks]
            if missing:
                raise ConfigurationError(
                    f"task {task.name!r} depends on unknown task(s) {', '.join(map(repr, missing))}; "
                    f"known tasks: {', '.join(self._tasks) or 'none'}"
                )
        order: list[str] = []
        state: dict[str, int] = {}  # 1 = visiting, 2 = done

        def visit(name: str, path: list[str]) -> None:
            if state.get(name) == 2:
                return
            if state.get(name) == 1:
                cycle = [*path[path.index(name):], name]
                raise ConfigurationError(f"network {self.name!r} has a dependency cycle: {' -> '.join(cycle)}")
            state[name] = 1
            for dep in self._tasks[name].dependencies:
                visit(dep, [*path, name])
            state[name] = 2
            order.append(name)

        for name in self._tasks:
            visit(name, [])
        return order

    def activate(self, name: str) -> None:
        """Start the ``depends_on="optional"`` task *name* in the run in progress.

        Call it from a tool or hook running inside this network's run.
        """
        run = _current_run.get()
        if run is None or run.network is not self:
            raise ConfigurationError(f"network.activate({name!r}) called outside a run of network {self.name!r}")
        run.activate(name)

    def _ledger_for(self, cfg: RunConfig) -> Ledger | None:
        if cfg.token_budget is None and cfg.cost_budget is None:
            return None
        if self._ledger is None:
            self._ledger = Ledger(token_budget=cfg.token_budget, cost_budget=cfg.cost_budget)
        return self._ledger

    def run(self, message: str, *, memory: Memory | None = None, **context: Any) -> NetworkResult:
        """Run every task once; returns a :class:`NetworkResult` (it does not raise for task errors).

        Keyword *context* is written into ``memory.data`` before the first task starts.
        In a parallel mode, a robot, tool, hook or skill that cannot be rebuilt in
        a worker raises here, before any task runs, naming the task and why.
        """
        order = self.validate()
        pool = None if self.parallel_mode == "thread" else self._checked_pool()
        memory = memory if memory is not None else self.memory
        for key, value in context.items():
            memory.data[key] = value
        registries = [global_hooks(), self.hooks]
        ctx = NetworkRunHookContext(network=self, memory=memory, config=self.config, context=dict(context))
        run = _Run(self, order, message, memory, registries, self._ledger_for(self.config), pool)
        return Hooks.run("network_run", ctx, registries, None, run.execute)

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


class _Run:
    """One execution of a network: the scheduler state."""

    def __init__(
        self,
        network: Network,
        order: list[str],
        message: str,
        memory: Memory,
        registries: list[HookRegistry | None],
        ledger: Ledger | None,
        pool: Any = None,
    ) -> None:
        self.network = network
        self.pool = pool  # None: robots run on this process's threads
        self.order = order
        self.message = message
        self.memory = memory
        self.registries = registries
        self.ledger = ledger
        self.tasks = network.tasks
        self.outcomes: dict[str, TaskOutcome] = {}
        self._activated: list[str] = []
        self._lock = threading.Lock()
        self._wakeup = threading.Event()
        self._t0 = 0.0

    def activate(self, name: str) -> None:
        task = self.tasks.get(name)
        if task is None or not task.optional:
            raise ConfigurationError(f"only a task declared depends_on='optional' can be activated, not {name!r}")
        with self._lock:
            if name not in self._activated:
                self._activated.append(name)
        self._wakeup.set()

    def _now(self) -> float:
        return time.perf_counter() - self._t0

    def execute(self) -> NetworkResult:
        self._t0 = time.perf_counter()
        concurrency = self.network.concurrency
        workers = min(len(self.tasks), _MAX_AUTO_THREADS) if concurrency == "auto" else concurrency
        waiting = {n: set(t.dependencies) for n, t in self.tasks.items() if not t.optional}
        running: dict[Future, str] = {}
        started_optional: set[str] = set()
        token = _current_run.set(self)
        # Only an optional task can be activated from outside the scheduler's own wake-ups.
        poll = 0.05 if any(t.optional for t in self.tasks.values()) else None
        try:
            with ScopedThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix=self.network.name) as pool:
                while True:
                    for name in [n for n, deps in waiting.items() if not deps]:
                        del waiting[name]
                        running[pool.submit(self._run_task, self.tasks[name])] = name
                    with self._lock:
                        fresh = [n for n in self._activated if n not in started_optional]
                    for name in fresh:
                        started_optional.add(name)
                        running[pool.submit(self._run_task, self.tasks[name])] = name
                    if not running:
                        break
                    self._wakeup.clear()
                    done, _ = wait(running, timeout=poll, return_when=FIRST_COMPLETED)
                    for future in done:
                        name = running.pop(future)
                        self._settle(name, waiting)
        finally:
            _current_run.reset(token)
        for name in self.tasks:
            self.outcomes.setdefault(name, TaskOutcome(name, "skipped"))
        depended_on = {d for t in self.tasks.values() for d in t.dependencies}
        sinks = tuple(n for n in self.order if n not in depended_on)
        return NetworkResult(
            network_name=self.network.name,
            tasks={n: self.outcomes[n] for n in self.tasks},
            memory=self.memory,
            duration=self._now(),
            sinks=tuple(s for s in sinks if not self.tasks[s].optional or self.outcomes[s].status != "skipped"),
        )

    def _settle(self, name: str, waiting: dict[str, set[str]]) -> None:
        """Release dependants of a finished task, or fail them when it failed."""
        failed = self.outcomes[name].status != "ok"
        for dependant, deps in list(waiting.items()):
            if name not in deps:
                continue
            if failed:
                del waiting[dependant]
                self._fail_upstream(dependant, name)
            else:
                deps.discard(name)

    def _fail_upstream(self, name: str, failed_dependency: str) -> None:
        cause = self.outcomes[failed_dependency].error
        error = UpstreamFailed(f"Task {name!r} not run: dependency {failed_dependency!r} failed: {cause}")
        task = self.tasks[name]
        ctx = TaskHookContext(network=self.network, task=task, memory=self.memory,
                              config=self.network.config, robot=task.robot)
        ctx.error = error
        Hooks.call("on_error", ctx, self.registries)
        self.outcomes[name] = TaskOutcome(name, "failed", error=error, finished=self._now())
        # Its own dependants fail in turn when the scheduler settles this one.
        waiting_children = [t.name for t in self.tasks.values() if name in t.dependencies]
        for child in waiting_children:
            if child not in self.outcomes:
                self._fail_upstream(child, name)

    def _run_task(self, task: Task) -> None:
        outcome = TaskOutcome(task.name, "ok", started=self._now(), worker=self.network.parallel_mode)
        dependency_results = {d: self.outcomes[d].result for d in task.dependencies}
        prompt = task.prompt(self.message, dependency_results)
        ctx = TaskHookContext(network=self.network, task=task, memory=self.memory,
                              config=self.network.config, robot=task.robot)
        while True:
            outcome.attempts += 1
            try:
                outcome.result = Hooks.run("task", ctx, self.registries, None, lambda: self._run_robot(task, prompt))
                break
            except Exception as exc:
                if outcome.attempts <= task.retries and retryable(exc):
                    task.robot.clear_messages(keep_system=True)
                    continue
                outcome.status, outcome.error = "failed", exc
                break
        outcome.finished = self._now()
        if outcome.result is not None:
            self.memory.results.append(outcome.result)
        with self._lock:
            self.outcomes[task.name] = outcome

    def _run_robot(self, task: Task, prompt: str) -> RobotResult:
        options = dict(tools=task.tools, memory=self.memory, network=self.network, task=task,
                       budget_ledger=self.ledger, **task.options)
        if self.pool is None:
            return task.robot.run(prompt, **options)
        from robotlab.parallel.robot_job import run_on_pool

        return run_on_pool(self.pool, task.robot, prompt, endpoints={"network": _RunEndpoint(self)}, **options)


class _RunEndpoint(Endpoint):
    """The run in progress, for robots in workers: ``ctx.network.activate(name)`` lands here."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    def handle(self, op: str, args: tuple, still_waiting: Any) -> Any:
        if op != "activate":
            raise self.unknown(op)
        return self._run.activate(*args)


def create_network(
    name: str = "network",
    *,
    concurrency: int | Literal["auto"] = "auto",
    config: RunConfig | None = None,
    parallel_mode: str = "thread",
    memory: Memory | None = None,
) -> Network:
    """Create a :class:`Network`. Add tasks with ``network.task(...)``, then ``network.run(message)``.

    ``parallel_mode``: ``"thread"`` runs tasks on threads of this process;
    ``"process"``, ``"subinterpreter"`` (CPython 3.13+) and ``"ray"`` run each
    task's robot on a worker of that backend (see :mod:`robotlab.network`).
    """
    return Network(name, concurrency=concurrency, config=config, parallel_mode=parallel_mode, memory=memory)

