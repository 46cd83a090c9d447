"""One run of a network: the dependency scheduler, on an asyncio event loop.

A task starts the moment its own dependencies are done, as a coroutine:
thread-mode robots run their tool loop on the loop itself (sync tools and
hooks on helper threads), worker-mode robots await their pool job. So a
thousand I/O-bound tasks need a thousand coroutines, not a thousand threads;
``Network(concurrency=N)`` bounds how many run at once ("auto":
:data:`AUTO_CONCURRENCY`).

Example:
    >>> import asyncio, robotlab
    >>> from robotlab.llm import ScriptedModel
    >>> net = robotlab.create_network(name="pair")
    >>> _ = net.task("a", robotlab.build(name="a", model=ScriptedModel(["A"])))
    >>> _ = net.task("b", robotlab.build(name="b", model=ScriptedModel(["B"])), depends_on=["a"])
    >>> asyncio.run(net.run_async("go")).value
    'B'
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
from typing import TYPE_CHECKING, Any

from robotlab.budget import Ledger
from robotlab.errors import ConfigurationError, retryable
from robotlab.events import EventEmitter
from robotlab.hooks import HookRegistry, Hooks, TaskHookContext
from robotlab.memory import Memory
from robotlab.network_result import NetworkResult
from robotlab.parallel.endpoints import Endpoint
from robotlab.result import RobotResult
from robotlab.task import Task, TaskOutcome, UpstreamFailed

if TYPE_CHECKING:
    from robotlab.network import Network

__all__ = ["AUTO_CONCURRENCY", "NetworkRun", "current_run", "enter_network_run", "exit_network_run"]

AUTO_CONCURRENCY = 1000
"""How many tasks run at once with ``concurrency="auto"``: enough for I/O-bound fan-out, bounded for sanity."""

_current_run: contextvars.ContextVar[NetworkRun | None] = contextvars.ContextVar("robotlab_network_run", default=None)


def current_run() -> NetworkRun | None:
    """The network run in progress in this context (its tasks, tools and hooks see it), else ``None``."""
    return _current_run.get()


def enter_network_run(run: NetworkRun) -> contextvars.Token:
    """Make *run* the :func:`current_run` of this context; ``exit_network_run(token)`` ends that."""
    return _current_run.set(run)


def exit_network_run(token: contextvars.Token) -> None:
    _current_run.reset(token)


class NetworkRun:
    """One execution of a network: which tasks wait, run and finished."""

    def __init__(self, network: Network, order: list[str], message: str, memory: Memory,
                 registries: list[HookRegistry | None], ledger: Ledger | None, pool: Any = None,
                 events: EventEmitter | None = None) -> None:
        self.network = network
        self.pool = pool  # None: robots run in this process
        self.order = order
        self.message = message
        self.memory = memory
        self.registries = registries
        self.ledger = ledger
        self.events = events
        self.tasks = network.tasks
        self.outcomes: dict[str, TaskOutcome] = {}
        self._waiting = {n: set(t.dependencies) for n, t in self.tasks.items() if not t.optional}
        self._dependants: dict[str, list[str]] = {n: [] for n in self.tasks}
        for t in self.tasks.values():
            for dependency in t.dependencies:
                self._dependants[dependency].append(t.name)
        self._running: dict[asyncio.Future[None], str] = {}
        self._started_optional: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: asyncio.Semaphore | None = None
        self._all_done: asyncio.Future[None] | None = None
        self._t0 = 0.0

    def activate(self, name: str) -> None:
        """Start the optional task *name* (callable from any thread of the run)."""
        task = self.tasks.get(name)
        if task is None or not task.optional:
            raise ConfigurationError(f"only a task declared depends_on='optional' can be activated, not {name!r}")
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._start_optional, name)

    def _now(self) -> float:
        return time.perf_counter() - self._t0

    async def execute(self) -> NetworkResult:
        self._t0 = time.perf_counter()
        self._loop = asyncio.get_running_loop()
        limit = self.network.concurrency
        self._slots = asyncio.Semaphore(AUTO_CONCURRENCY if limit == "auto" else limit)
        self._all_done = self._loop.create_future()
        token = enter_network_run(self)
        try:
            for name in [n for n, deps in self._waiting.items() if not deps]:
                del self._waiting[name]
                self._start(name)
            if self._running:
                # Each task settles its dependants as it ends (a done-callback): no pass over
                # all running tasks per completion, which would make wide networks quadratic.
                await self._all_done
        except BaseException:
            await self._cancel_running()
            raise
        finally:
            exit_network_run(token)
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

    async def _cancel_running(self) -> None:
        jobs = list(self._running)
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)

    # -- scheduling ------------------------------------------------------------

    def _start(self, name: str) -> None:
        job = asyncio.ensure_future(self._run_task(self.tasks[name]))
        self._running[job] = name
        job.add_done_callback(self._finished)

    def _start_optional(self, name: str) -> None:
        assert self._all_done is not None
        if self._all_done.done():  # activated as the run ended: nothing is left to run it
            return
        if name not in self._started_optional and name not in self.outcomes:
            self._started_optional.add(name)
            self._start(name)

    def _finished(self, job: asyncio.Future[None]) -> None:
        name = self._running.pop(job)
        assert self._all_done is not None
        if job.cancelled():
            return  # the run is being cancelled: _cancel_running waits for every task itself
        if job.exception() is not None:  # a bug in the scheduler itself: end the run with it
            if not self._all_done.done():
                self._all_done.set_exception(job.exception())
            return
        self._settle(name)
        if not self._running and not self._all_done.done():
            self._all_done.set_result(None)

    def _settle(self, name: str) -> None:
        """Start the dependants a finished task was the last dependency of, or fail them when it failed."""
        failed = self.outcomes[name].status != "ok"
        for dependant in self._dependants[name]:
            deps = self._waiting.get(dependant)
            if deps is None:
                continue
            if failed:
                del self._waiting[dependant]
                self._fail_upstream(dependant, name)
            else:
                deps.discard(name)
                if not deps:
                    del self._waiting[dependant]
                    self._start(dependant)

    def _fail_upstream(self, name: str, failed_dependency: str) -> None:
        cause = self.outcomes[failed_dependency].error
        error = UpstreamFailed(f"Task {name!r} not run: dependency {failed_dependency!r} failed: {cause}")
        task = self.tasks[name]
        ctx = TaskHookContext(network=self.network, task=task, memory=self.memory,
                              config=self.network.config, robot=task.robot)
        ctx.error = error
        Hooks.call("on_error", ctx, self.registries)
        self.outcomes[name] = TaskOutcome(name, "failed", error=error, finished=self._now())
        self._emitter(task).emit("task.failed", error=str(error))
        for child in self._dependants[name]:
            if child not in self.outcomes:
                self._waiting.pop(child, None)
                self._fail_upstream(child, name)

    # -- one task --------------------------------------------------------------

    async def _run_task(self, task: Task) -> None:
        assert self._slots is not None
        async with self._slots:
            outcome = TaskOutcome(task.name, "ok", started=self._now(), worker=self.network.parallel_mode)
            dependency_results = {d: self.outcomes[d].result for d in task.dependencies}
            prompt = task.prompt(self.message, dependency_results)
            ctx = TaskHookContext(network=self.network, task=task, memory=self.memory,
                                  config=self.network.config, robot=task.robot)
            events = self._emitter(task)
            events.emit("task.started")
            robot_events = events if self.events is not None else None  # no deltas unless streamed
            while True:
                outcome.attempts += 1
                try:
                    outcome.result = await Hooks.arun("task", ctx, self.registries, None,
                                                      functools.partial(self._run_robot, task, prompt, robot_events))
                    break
                except Exception as exc:
                    if outcome.attempts <= task.retries and retryable(exc):
                        task.robot.clear_messages(keep_system=True)
                        continue
                    outcome.status, outcome.error = "failed", exc
                    partial = getattr(exc, "partial_result", None)
                    outcome.partial_result = partial if isinstance(partial, RobotResult) else None
                    break
            outcome.finished = self._now()
            if outcome.result is not None:
                self.memory.results.append(outcome.result)
            self.outcomes[task.name] = outcome
            if outcome.error is None:
                events.emit("task.completed", result=outcome.result)
            else:
                events.emit("task.failed", error=f"{type(outcome.error).__name__}: {outcome.error}")

    async def _run_robot(self, task: Task, prompt: str, events: EventEmitter | None) -> RobotResult:
        options = dict(tools=task.tools, memory=self.memory, network=self.network, task=task,
                       budget_ledger=self.ledger, **task.options)
        if self.pool is None:
            return await task.robot.run_async(prompt, events=events, **options)
        from robotlab.parallel.robot_job import run_on_pool

        return await run_on_pool(self.pool, task.robot, prompt, endpoints={"network": _RunEndpoint(self)},
                                 events=events, **options)

    def _emitter(self, task: Task) -> EventEmitter | _Unstreamed:
        """The events of *task* (numbered per task); none are even made unless the network is streamed."""
        if self.events is None:
            return _UNSTREAMED
        return EventEmitter(self.events.sink, robot=task.robot.name, task=task.name)


class _Unstreamed:
    """A task's events when nobody streams the network: each ``emit`` does nothing."""

    def emit(self, type_: str, result: Any = None, **data: Any) -> None:
        pass


_UNSTREAMED = _Unstreamed()


class _RunEndpoint(Endpoint):
    """The run in progress, for robots in workers: ``ctx.network.activate(name)`` lands here."""

    def __init__(self, run: NetworkRun) -> None:
        self._run = run

    def handle(self, op: str, args: tuple, still_waiting: Any) -> Any:
        if op != "activate":
            raise self.unknown(op)
        return self._run.activate(*args)
