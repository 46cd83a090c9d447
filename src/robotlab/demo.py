"""The demo network behind ``robotlab demo``: support triage for three orders.

Offline by default: every robot runs on a :class:`~robotlab.llm.ScriptedModel`
function that calls the robot's tool first and then answers from the tool's
result, so the run is deterministic and needs no API key. With ``model=`` the
same network runs on a real model through litellm.

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

ORDERS = ("A-1001", "B-2002", "C-3003")


@robotlab.tool
def lookup_order(order_id: str) -> str:
    """Look up an order's shipping status (a 0.2 s call to a slow order service)."""
    time.sleep(0.2)  # stands in for the network round trip
    status = ("shipped", "delayed", "delivered")[int(hashlib.sha256(order_id.encode()).hexdigest(), 16) % 3]
    return f"order {order_id}: {status}"


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


def _summary(messages: list[dict[str, Any]]) -> str:
    user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    found = [line.split("] ", 1)[1] for line in user.splitlines() if line.startswith("[check_order")]
    return "Dear customer, here is where your orders stand: " + "; ".join(found) + "."


class EventLog(Hook):
    """Counts the demo's hook events by family (hooks are classmethods: state is class-level)."""

    counts: Counter[str] = Counter()
    _lock = threading.Lock()

    @classmethod
    def _count(cls, name: str) -> None:
        with cls._lock:
            cls.counts[name] += 1

    @classmethod
    def before_run(cls, ctx):
        cls._count("run")

    @classmethod
    def before_llm_generation(cls, ctx):
        cls._count("llm_generation")

    @classmethod
    def before_tool_call(cls, ctx):
        cls._count("tool_call")

    @classmethod
    def before_task(cls, ctx):
        cls._count("task")

    @classmethod
    def before_network_run(cls, ctx):
        cls._count("network_run")


def build_network(model: str | None = None, parallel_mode: str = "thread", token_budget: int = 5_000):
    """The demo network, on scripted models unless *model* names a real one."""

    def pick(fn):
        return model if model is not None else robotlab.llm.ScriptedModel(fn)

    network = robotlab.create_network(
        name="support_triage",
        parallel_mode=parallel_mode,
        config=robotlab.RunConfig(token_budget=token_budget),
    )
    intake = robotlab.build(
        name="intake",
        model=pick(scripted_agent(lambda m: f"Customer asks about orders {', '.join(ORDERS)}.")),
        system_prompt="Extract the order ids the customer asks about.",
    )
    network.task("intake", intake)
    checks = []
    for i, order_id in enumerate(ORDERS, start=1):
        checker = robotlab.build(
            name=f"checker_{i}",
            model=pick(scripted_agent(_last_tool_result, "lookup_order", order_id=order_id)),
            system_prompt=f"Look up order {order_id} with the lookup_order tool and report its status.",
            local_tools=[lookup_order],
        )
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


def run_demo(model: str | None = None, parallel_mode: str = "thread", out: TextIO | None = None) -> int:
    """Run the demo and print a readable summary. Returns a process exit code."""
    out = out or sys.stdout
    EventLog.counts.clear()
    network = build_network(model, parallel_mode)
    where = f"model {model!r} via litellm" if model else "offline scripted models (no API key needed)"
    print(f"robotlab demo: network {network.name!r}, {len(network.tasks)} tasks, {where}", file=out)
    print(f"parallel_mode={parallel_mode!r}; each order check calls a 0.2 s lookup tool\n", file=out)
    result = network.run("Hi! Where are my orders A-1001, B-2002 and C-3003?")
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
    print("hook events: " + ", ".join(f"{k}={v}" for k, v in sorted(EventLog.counts.items())), file=out)
    return 0 if result.ok else 1
