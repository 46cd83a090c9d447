"""A network whose robots run on worker processes (parallel_mode="process"), offline.

Three robots each call a CPU-bound tool at the same time, on two worker
processes; a fourth task joins their answers. Prints each task's answer and
the pid its tool ran in (not this one), the hook metadata that came back from
the workers, the memory the workers wrote to, and the refusal of a tool
defined inside a function (raised by ``network.run`` before any task starts).

Run: ``python examples/parallel_network.py``.
"""

import os

import robotlab
from robotlab import RactorBoundaryError
from robotlab.hooks import Hook
from robotlab.llm import ScriptedModel, call

ORDERS = ("A-1001", "B-2002", "C-3003")


# Tools and hooks are rebuilt in the workers by import path, so they live at module level.
# Under process mode the workers import this script as their __main__: hence the guard below.
@robotlab.tool
def score(order_id: str) -> str:
    """A CPU-bound risk score (pure Python, ~0.1 s), and the pid it ran in."""
    value = 0
    for i in range(500_000):
        value = (value * 31 + ord(order_id[i % len(order_id)])) % 1_000_003
    return f"{order_id}: risk {value % 100}/100 (pid {os.getpid()})"


class Stamp(Hook):
    """Runs where the robot runs; what it writes to ctx.local comes back with the result."""

    @classmethod
    def before_run(cls, ctx):
        ctx.local.pid = os.getpid()
        ctx.memory.set(f"started.{ctx.robot.name}", os.getpid())  # forwarded to the parent's memory


def scorer(order_id: str) -> robotlab.Robot:
    # The model stays in this process in every mode, so a closure is fine here.
    model = ScriptedModel(lambda messages, tools: messages[-1]["content"] if messages[-1]["role"] == "tool"
                          else call("score", order_id=order_id))
    robot = robotlab.build(name=f"scorer_{order_id}", model=model, local_tools=[score])
    robot.on(Stamp)
    return robot


def main() -> None:
    net = robotlab.create_network(name="scoring", parallel_mode="process",
                                  config=robotlab.RunConfig(pool_size=2, token_budget=5_000))
    for order_id in ORDERS:
        net.task(order_id, scorer(order_id), tools="inherit", retries=1)  # retries: a crashed worker is retryable
    join = robotlab.build(name="join", model=ScriptedModel(lambda messages, tools: "all scored"))
    net.task("report", join, depends_on=list(ORDERS))
    result = net.run("Score these orders")
    print(f"{type(result).__name__} ok={result.ok} value={result.value!r} (this process: pid {os.getpid()})")
    for order_id in ORDERS:
        outcome = result[order_id]
        print(f"  {order_id}: worker={outcome.worker} answer={outcome.result.last_text_content!r} "
              f"hook metadata={outcome.result.hook_metadata['stamp']}")
    keys = result.memory.keys()
    print("memory written from the workers:", sorted(k for k in keys if k.startswith("started.")))

    @robotlab.tool
    def local_tool() -> str:
        """Defined inside a function: a worker cannot import it."""
        return "never"

    refused = robotlab.create_network(name="refused", parallel_mode="process")
    refused.task("bad", robotlab.build(name="bad", model=ScriptedModel(["never"]), local_tools=[local_tool]))
    try:
        refused.run("x")
    except RactorBoundaryError as exc:
        print(f"refused before the run: {exc}")
    robotlab.shutdown_pool()


if __name__ == "__main__":
    main()
