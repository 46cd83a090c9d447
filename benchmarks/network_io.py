"""Network of 8 independent tasks, each robot calling a 0.2 s I/O-bound tool.

Side by side in one run: concurrency="auto" (tasks at once) vs concurrency=1
(one task at a time, the serial baseline). Reports medians and the ratio.
Run: ``python -m benchmarks.network_io``.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import robotlab
from robotlab.llm import ScriptedModel, call

TASKS, SLEEP, REPEATS = 8, 0.2, 5


@robotlab.tool
def io_call(seconds: float) -> str:
    """An I/O-bound call (sleeps)."""
    time.sleep(seconds)
    return "done"


def build(concurrency):
    network = robotlab.create_network(name="io", concurrency=concurrency)
    for i in range(TASKS):
        robot = robotlab.build(
            name=f"r{i}", model=ScriptedModel([call("io_call", seconds=SLEEP), "ok"]), local_tools=[io_call]
        )
        network.task(f"t{i}", robot, tools="inherit")
    return network


def measure(concurrency) -> float:
    network = build(concurrency)
    started = time.perf_counter()
    result = network.run("go")
    elapsed = time.perf_counter() - started
    assert result.ok
    return elapsed


def main() -> dict:
    parallel, serial = [], []
    for _ in range(REPEATS):  # interleave so machine noise hits both alike
        parallel.append(measure("auto"))
        serial.append(measure(1))
    figures = {
        "benchmark": "network_io",
        "tasks": TASKS,
        "tool_seconds": SLEEP,
        "median_parallel_s": statistics.median(parallel),
        "median_serial_s": statistics.median(serial),
        "ideal_serial_s": TASKS * SLEEP,
    }
    figures["ratio_parallel_to_ideal_serial"] = figures["median_parallel_s"] / figures["ideal_serial_s"]
    figures["speedup_vs_measured_serial"] = figures["median_serial_s"] / figures["median_parallel_s"]
    print(f"{'mode':<22}{'median (s)':>12}")
    print(f"{'concurrency=auto':<22}{figures['median_parallel_s']:>12.3f}")
    print(f"{'concurrency=1':<22}{figures['median_serial_s']:>12.3f}")
    print(f"ratio to 8 x 0.2 s: {figures['ratio_parallel_to_ideal_serial']:.3f}; "
          f"speedup vs serial: {figures['speedup_vs_measured_serial']:.1f}x")
    print(json.dumps(figures))
    out = Path(__file__).parent / "results" / "network_io.json"
    out.write_text(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
