"""The demo network behind ``robotlab demo``: support triage for three orders.

Offline by default: every robot runs on a :class:`~robotlab.llm.ScriptedModel`
function that calls the robot's tool first and then answers from the tool's
result, so the run is deterministic and needs no API key. With ``model=`` the
same network runs on a real model through litellm.

With ``parallel_mode="process"`` or ``"subinterpreter"`` each order check also
computes a CPU-bound risk score (pure Python, ~0.2 s), and the demo runs the
network a second time in thread mode to show the speedup it measured. The
tools and the hook are module-level, so workers import them by path.

Shape::

    intake ──┬── check_order_1 ──┐
             ├── check_order_2 ──┼── reply
             └── check_order_3 ──┘
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TextIO

import robotlab
from robotlab.hooks import Hook
from robotlab.llm import LlmReply, ToolCall
from robotlab.progress import ProgressSetting

ORDERS = ("A-1001", "B-2002", "C-3003")
MESSAGE = "Hi! Where are my orders A-1001, B-2002 and C-3003?"
RISK_ROUNDS = 1_500_000  # about 0.2 s of pure Python on a current x86 core


def _order_hash(order_id: str) -> int:
    return int(hashlib.sha256(order_id.encode()).hexdigest(), 16)


@robotlab.tool
def lookup_order(order_id: str) -> str:
    """Look up an order's shipping status (a 0.2 s call to a slow order service)."""
    time.sleep(0.2)  # stands in for the network round trip
    status = ("shipped", "delayed", "delivered")[_order_hash(order_id) % 3]
    return f"order {order_id}: {status}"


@robotlab.tool(parallel_safe=True)
def risk_score(order_id: str) -> str:
    """Score an order's delivery risk from 0 to 100: a pure-Python simulation, CPU-bound (about 0.2 s)."""
    seed = _order_hash(order_id)
    state, late, odds = seed & 0x7FFFFFFF, 0, 10 + seed % 50
    for _ in range(RISK_ROUNDS):  # simulated deliveries from a linear congruential generator: holds the GIL
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        late += state % 100 < odds
    return f"risk {round(100 * late / RISK_ROUNDS)}/100"


def scripted_agent(answer: Callable[[list[dict[str, Any]]], str], tool: str | None = None, **args: Any):
    """A model function: call *tool* once (when given), then answer from the conversation."""

    def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> LlmReply | str:
        tool_results = [m["content"] for m in messages if m["role"] == "tool"]
        if tool is not None and tools and not tool_results:
            return LlmReply(tool_calls=[ToolCall(id=f"call_{tool}", name=tool, arguments=dict(args))])
        return answer(messages)

    return reply


def _last_tool_result(messages: list[dict[str, Any]]) -> str:
    return next((m["content"] for m in reversed(messages) if m["role"] == "tool"), "")


def scored_check(order_id: str):
    """A model function: look the order up and score its risk in one reply (two calls, run at once), then report."""

    def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> LlmReply | str:
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if tools and not results:
            return LlmReply(tool_calls=[ToolCall(id=f"call_{name}", name=name, arguments={"order_id": order_id})
                                        for name in ("lookup_order", "risk_score")])
        return ", ".join(results)

    return reply


def _summary(messages: list[dict[str, Any]]) -> str:
    user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    found = [line.split("] ", 1)[1] for line in user.splitlines() if line.startswith("[check_order")]
    return "Dear customer, here is where your orders stand: " + "; ".join(found) + "."


class EventLog(Hook):
    """Counts the demo's hook events by family (hooks are classmethods: state is class-level).

    ``network_run`` and ``task`` hooks fire in this process and count in
    ``counts``. ``run``, ``llm_generation`` and ``tool_call`` hooks fire where
    the robot runs (a worker in the parallel modes), so each run tallies its
    own and ``after_run`` returns the tally in the run's hook metadata:
    ``result.hook_metadata["event_log"]["events"]``.
    """

    counts: Counter[str] = Counter()
    _runs: dict[str, Counter[str]] = {}  # robot name -> tally of its run in progress, where it runs
    _lock = threading.Lock()

    @classmethod
    def _count(cls, name: str, robot: Any = None) -> None:
        with cls._lock:
            (cls.counts if robot is None else cls._runs.setdefault(robot.name, Counter()))[name] += 1

    @classmethod
    def before_run(cls, ctx):
        with cls._lock:
            cls._runs[ctx.robot.name] = Counter(run=1)

    @classmethod
    def after_run(cls, ctx):
        with cls._lock:
            ctx.local.events = dict(cls._runs.pop(ctx.robot.name, Counter()))

    @classmethod
    def before_llm_generation(cls, ctx):
        cls._count("llm_generation", ctx.robot)

    @classmethod
    def before_tool_call(cls, ctx):
        cls._count("tool_call", ctx.robot)

    @classmethod
    def before_task(cls, ctx):
        cls._count("task")

    @classmethod
    def before_network_run(cls, ctx):
        cls._count("network_run")

    @classmethod
    def events(cls, result: Any) -> Counter[str]:
        """Every event of a network run: this process's counts plus the tallies its robots' results brought back."""
        events = Counter(cls.counts)
        for robot_result in result.results.values():
            events.update(robot_result.hook_metadata.get("event_log", {}).get("events", {}))
        return events


def build_network(model: str | None = None, parallel_mode: str = "thread", token_budget: int = 5_000,
                  risk_scores: bool = False):
    """The demo network, on scripted models unless *model* names a real one.

    *risk_scores*: each order check also calls the CPU-bound ``risk_score``
    tool, on this process's threads in thread mode (``parallel_tools=False``,
    so the comparison is about where whole tasks run) and one worker per
    order check in the other modes.
    """

    def pick(fn):
        return model if model is not None else robotlab.llm.ScriptedModel(fn)

    config = robotlab.RunConfig(token_budget=token_budget)
    if risk_scores:
        config = robotlab.RunConfig(token_budget=token_budget, parallel_tools=False, pool_size=len(ORDERS))
    network = robotlab.create_network(name="support_triage", parallel_mode=parallel_mode, config=config)
    intake = robotlab.build(
        name="intake",
        model=pick(scripted_agent(lambda m: f"Customer asks about orders {', '.join(ORDERS)}.")),
        system_prompt="Extract the order ids the customer asks about.",
    )
    network.task("intake", intake)
    checks = []
    for i, order_id in enumerate(ORDERS, start=1):
        if risk_scores:
            answer = scored_check(order_id)
            prompt = (f"Look up order {order_id} with the lookup_order tool, score it with the risk_score tool, "
                      "and report its status and risk.")
        else:
            answer = scripted_agent(_last_tool_result, "lookup_order", order_id=order_id)
            prompt = f"Look up order {order_id} with the lookup_order tool and report its status."
        checker = robotlab.build(name=f"checker_{i}", model=pick(answer), system_prompt=prompt,
                                 local_tools=[lookup_order, risk_score] if risk_scores else [lookup_order])
        network.task(f"check_order_{i}", checker, depends_on=["intake"], tools="inherit")
        checks.append(f"check_order_{i}")
    writer = robotlab.build(
        name="writer",
        model=pick(scripted_agent(_summary)),
        system_prompt="Write a short, friendly reply with the status of every order.",
    )
    network.task("reply", writer, depends_on=checks)
    network.on(EventLog)
    return network


def failure_report(result: Any) -> str | None:
    """What went wrong in a network run, in full (the table cuts answers short), or None when it succeeded.

    Names how many tasks failed and the errors that were not just a failed
    dependency (``UpstreamFailed``), each with its type and whole message.
    """
    if result.ok:
        return None
    from robotlab.task import UpstreamFailed

    errors = result.errors
    causes = {n: e for n, e in errors.items() if not isinstance(e, UpstreamFailed)} or errors
    lines = [f"robotlab demo: {len(errors)} of {len(result.tasks)} tasks failed"]
    lines += [f"  {name}: {type(error).__name__}: {error}" for name, error in causes.items()]
    return "\n".join(lines)


def run_demo(model: str | None = None, parallel_mode: str = "thread", out: TextIO | None = None,
             err: TextIO | None = None, progress: ProgressSetting = None) -> int:
    """Run the demo and print a readable summary. Returns a process exit code: 0 only if every task succeeded.

    In ``"process"`` or ``"subinterpreter"`` mode the order checks also score
    risk (CPU-bound), and, offline, the same network runs once more in thread
    mode so the summary ends with the speedup measured on this machine.
    A failed run prints its errors in full to *err* (default: stderr) and returns 1.
    *progress*: as ``network.run(progress=...)`` (``robotlab demo`` passes ``"auto"``).
    """
    out = out or sys.stdout
    err = err or sys.stderr
    EventLog.counts.clear()
    compare = parallel_mode != "thread"
    network = build_network(model, parallel_mode, risk_scores=compare)
    _print_header(network, model, compare, out)
    called = time.perf_counter()
    result = network.run(MESSAGE, progress=progress)
    # network.run first starts the pool and rebuilds every robot in a worker; result.duration excludes that.
    preparation = time.perf_counter() - called - result.duration
    _print_summary(network, result, out)
    report = failure_report(result)
    if report is not None:
        print(report, file=err)
        return 1
    if not compare:
        return 0
    return _compare_with_threads(model, parallel_mode, result, preparation, out, err, progress)


def _print_header(network: robotlab.Network, model: str | None, compare: bool, out: TextIO) -> None:
    """What is about to run: the network, the models, and what each order check does."""
    where = f"model {model!r} via litellm" if model else "offline scripted models (no API key needed)"
    print(f"robotlab demo: network {network.name!r}, {len(network.tasks)} tasks, {where}", file=out)
    if compare:
        print(f"parallel_mode={network.parallel_mode!r}; each order check calls a 0.2 s lookup tool and a CPU-bound "
              f"risk_score tool (pure Python), on {len(ORDERS)} workers\n", file=out)
    else:
        print(f"parallel_mode={network.parallel_mode!r}; each order check calls a 0.2 s lookup tool\n", file=out)


def _print_summary(network: robotlab.Network, result: robotlab.NetworkResult, out: TextIO) -> None:
    """The run's table of tasks, its final answer, timing, tokens and hook events."""
    print(f"{'task':<15} {'status':<8} {'start':>7} {'time':>7}  answer", file=out)
    for name, outcome in result.tasks.items():
        text = (outcome.result.last_text_content if outcome.result else str(outcome.error)) or ""
        print(
            f"{name:<15} {outcome.status:<8} {outcome.started or 0:>6.2f}s {outcome.duration or 0:>6.2f}s  "
            f"{text[:70]}",
            file=out,
        )
    tokens = sum(r.total_tokens for r in result.results.values())
    serial = sum(o.duration or 0 for o in result.tasks.values())
    print(f"\nfinal answer: {result.value}", file=out)
    print(
        f"wall time {result.duration:.2f}s vs {serial:.2f}s of task time "
        f"({serial / result.duration:.1f}x from running independent tasks at once)",
        file=out,
    )
    print(f"budget: {tokens} of {network.config.token_budget} tokens used", file=out)
    print("hook events: " + ", ".join(f"{k}={v}" for k, v in sorted(EventLog.events(result).items())), file=out)


def _compare_with_threads(model: str | None, parallel_mode: str, result: robotlab.NetworkResult,
                          preparation: float, out: TextIO, err: TextIO,
                          progress: ProgressSetting) -> int:
    """Offline, run the network again in thread mode and print the speedup; the exit code of that run."""
    if model is not None:  # a second run would double the API calls, and provider latency swamps the figure
        print("\nspeedup: not measured with a real model (run offline to compare with thread mode)", file=out)
        return 0
    baseline = build_network(None, "thread", risk_scores=True).run(MESSAGE, progress=progress)
    print(
        f"\nspeedup measured: the same network took {baseline.duration:.2f}s with parallel_mode='thread' and "
        f"{result.duration:.2f}s with parallel_mode={parallel_mode!r}: {baseline.duration / result.duration:.1f}x "
        f"(starting the workers and rebuilding the robots there took {preparation:.2f}s before the run, not counted)",
        file=out,
    )
    report = failure_report(baseline)
    if report is not None:
        print(report, file=err)
        return 1
    return 0
