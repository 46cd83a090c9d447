"""Router networks: a router picks the next robot after each step, instead of a static DAG.

``create_network(router=...)`` makes the network's tasks the robots a router
may pick. The router is called before the first step and after each one with
:class:`RouterArgs` and returns the next robot(s) — a Robot, a task or robot
name, or a list of them — or ``None`` to stop. Like robot_lab's ``Router``,
the robots it returns are queued and run **one at a time, in order**, the
router being asked again after each (a robot already queued is not queued
twice). A robot may itself be the router: it runs first, and its answer
names the next robot (see :func:`robot_router`).

Example:
    >>> import robotlab
    >>> from robotlab.llm import ScriptedModel
    >>> def route(args):
    ...     return "billing" if args.call_count == 0 else None
    >>> net = robotlab.create_network(name="desk", router=route)
    >>> _ = net.task("billing", robotlab.build(name="billing", model=ScriptedModel(["Refund sent."])))
    >>> net.run("I was charged twice").value
    'Refund sent.'

``max_steps`` (default :data:`DEFAULT_MAX_STEPS`) bounds how many robots one
run may run: a router that still routes after that many raises
``RouterLoopError``. Worker modes run each routed robot on the pool as a DAG
task would; the router callable itself runs in the parent.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from robotlab.errors import RouterError, RouterLoopError
from robotlab.network_result import NetworkResult
from robotlab.network_run import NetworkRun, enter_network_run, exit_network_run
from robotlab.robot import Robot
from robotlab.task import Task

if TYPE_CHECKING:
    from robotlab.memory import Memory
    from robotlab.network import Network
    from robotlab.result import RobotResult

__all__ = ["DEFAULT_MAX_STEPS", "RouterArgs", "RouterRun", "check_router", "robot_router"]

DEFAULT_MAX_STEPS = 10
"""How many robots one run of a router network may run unless ``max_steps`` says otherwise."""


@dataclass(frozen=True)
class RouterArgs:
    """What a router is called with (robot_lab's ``Router::Args``).

    Attributes:
        context: ``{"message": <the run's message>, **keyword context of run()}``.
        network: the Network being run.
        stack: the robots queued to run next (the router may add to them).
        call_count: how many robots have run so far in this run (0 on the first call).
        last_result: the RobotResult of the step that just ran (None on the first call).
        memory: the run's shared Memory.
    """

    context: dict[str, Any]
    network: Network
    stack: tuple[Robot, ...]
    call_count: int
    last_result: RobotResult | None
    memory: Memory

    @property
    def message(self) -> str:
        """The run's message."""
        return self.context["message"]


Route = Robot | str | Sequence[Robot | str] | None
"""What a router returns: the next robot(s), by object or name, or None to stop."""
Router = Callable[[RouterArgs], Route | Awaitable[Route]] | Robot
"""A router: a callable (sync or async) of :class:`RouterArgs`, or a Robot (see :func:`robot_router`)."""


def robot_router(robot: Robot) -> Callable[[RouterArgs], Route]:
    """The router a Robot given as ``router=`` stands for: classify, then route.

    *robot* runs first; its answer names the robot(s) to run next (a task or
    robot name in any case, without surrounding quotes or a final period;
    several separated by commas), and the run ends after them. An answer of
    ``none`` or an empty one ends the run at once.
    """

    def route(args: RouterArgs) -> Route:
        if args.call_count == 0:
            return robot
        if args.last_result is None or args.last_result.robot_name != robot.name:
            return None
        text = args.last_result.last_text_content or ""
        names = [n.strip().strip("'\"`.").strip() for n in text.split(",")]
        names = [n for n in names if n]
        if not names or [n.casefold() for n in names] == ["none"]:
            return None
        known = {k.casefold(): k for t in args.network.tasks.values() for k in (t.robot.name, t.name)}
        return [known.get(n.casefold(), n) for n in names]

    return route


class RouterRun(NetworkRun):
    """One run of a router network: ask the router, run what it picked, ask again."""

    def __init__(self, network: Network, router: Router, max_steps: int, context: dict[str, Any],
                 *args: Any, **kwargs: Any) -> None:
        super().__init__(network, *args, **kwargs)
        self.route = robot_router(router) if isinstance(router, Robot) else router
        self.max_steps = max_steps
        self.context = {"message": self.message, **context}
        self._runs: dict[str, int] = {}  # task name -> how many steps ran it
        self._last_step: str | None = None

    async def execute(self) -> NetworkResult:
        import asyncio

        self._t0 = time.perf_counter()
        self._loop = asyncio.get_running_loop()
        self._slots = asyncio.Semaphore(1)
        token = enter_network_run(self)
        try:
            await self._steps()
        finally:
            exit_network_run(token)
        return self._result()

    async def _steps(self) -> None:
        queue: list[Task] = []
        last: RobotResult | None = None
        steps = 0
        while True:
            for task in await self._ask(queue, steps, last):
                if all(task.name != queued.name for queued in queue):
                    queue.append(task)
            if not queue:
                return
            if steps >= self.max_steps:
                error = RouterLoopError.for_limit(self.network.name, self.max_steps)
                error.network_result = self._result()
                raise error
            step = self._step(queue.pop(0), last)
            await self._run_task(step)
            steps += 1
            outcome = self.outcomes[step.name]
            if outcome.status != "ok":
                return  # a failed step ends the run; the result reports it
            last = outcome.result

    async def _ask(self, queue: list[Task], steps: int, last: RobotResult | None) -> list[Task]:
        args = RouterArgs(self.context, self.network, tuple(t.robot for t in queue), steps, last, self.memory)
        picked = self.route(args)
        if inspect.isawaitable(picked):
            picked = await picked
        if picked is None:
            return []
        if isinstance(picked, Robot | str):
            picked = [picked]
        if not isinstance(picked, Sequence):
            raise RouterError(self._unknown(picked))
        return [self._resolve(entry) for entry in picked]

    def _resolve(self, entry: Any) -> Task:
        """The task a router's pick stands for: a task name, a robot name, or a Robot (a task of its own if new)."""
        tasks = self.tasks
        if isinstance(entry, str):
            if entry in tasks:
                return tasks[entry]
            for task in tasks.values():
                if task.robot.name == entry:
                    return task
        elif isinstance(entry, Robot):
            for task in tasks.values():
                if task.robot is entry:
                    return task
            return Task(entry.name, entry)
        raise RouterError(self._unknown(entry))

    def _unknown(self, entry: Any) -> str:
        known = sorted({*self.tasks, *(t.robot.name for t in self.tasks.values())})
        return (f"the router of network {self.network.name!r} returned {entry!r}, which is not a robot of the "
                f"network; known robots: {', '.join(known) or 'none'} (return a Robot, one of these names, "
                f"a list of them, or None to stop)")

    def _step(self, task: Task, last: RobotResult | None) -> Task:
        """*task* as one step: named ``billing``, then ``billing#2``..., prompted with the step before's answer."""
        count = self._runs[task.name] = self._runs.get(task.name, 0) + 1
        name = task.name if count == 1 else f"{task.name}#{count}"
        earlier = {} if last is None or self._last_step is None else {self._last_step: last}
        self._last_step = name

        def prompt(message: str, _results: dict[str, RobotResult]) -> str:
            return task.prompt(message, earlier)

        return replace(task, name=name, depends_on="none", message=prompt)

    def _result(self) -> NetworkResult:
        return NetworkResult(
            network_name=self.network.name,
            tasks=dict(self.outcomes),
            memory=self.memory,
            duration=self._now(),
            sinks=() if self._last_step is None else (self._last_step,),
        )


def check_router(network_name: str, router: Any, max_steps: Any) -> None:
    """Refuse a router that is neither callable nor a Robot, and a max_steps that is not an integer >= 1."""
    from robotlab.errors import ConfigurationError

    if router is not None and not (callable(router) or isinstance(router, Robot)):
        raise ConfigurationError(
            f"network {network_name!r}: router must be a callable(RouterArgs) or a Robot, got {router!r}")
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise ConfigurationError(f"network {network_name!r}: max_steps must be an integer >= 1, got {max_steps!r}")
