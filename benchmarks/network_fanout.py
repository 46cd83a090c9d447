"""A network of 1 source -> 8 parallel tasks -> 1 join, each parallel robot calling a ~100 ms CPU-bound tool.

Side by side in one run, the same network (scripted models: each parallel
robot asks for one ``crunch`` call, then answers) with ``parallel_mode``:

- ``"thread"``: every task's robot on a thread of this process (bound by the GIL);
- ``"process"``: every task's robot rebuilt and run on a worker process of the
  default pool (2 workers);
- ``"subinterpreter"``: the same on subinterpreters (CPython 3.13+ only:
  elsewhere the run says so and leaves them out).

The tool's n is calibrated here to ~100 ms. Pools are started and warmed up
by one untimed run per mode. Each timed round builds a fresh network and
times ``network.run`` from call to result (the pre-run check that every robot
rebuilds in a worker included); rounds are interleaved with the order rotated.
Reports median wall time and speedup over thread mode.

Second part, scheduler overhead: a chain of 200 trivial robots (each task
depends on the previous one, each robot answers at once), per mode: wall time
per task, beside the cost of one trivial ``robot.run`` called directly.
Run: ``python -m benchmarks.network_fanout`` (under 3.13 for the subinterpreter rows).
"""

from __future__ import annotations

import statistics
import sys
import time

from benchmarks._backends import announce, published_name, subinterpreters_missing
from benchmarks._report import bar_chart, check, print_table, publish, quick_mode, rotated
from benchmarks.fanout import calibrate

WORKERS, PARALLEL = 2, 8
THREAD, PROCESS, SUBINTERPRETER = "thread", "process", "subinterpreter"


def fanout_network(mode: str, n: int):
    """source -> PARALLEL tasks whose robots call ``crunch(n)`` once -> join, in parallel_mode *mode*."""
    import robotlab
    from benchmarks._network_jobs import crunch
    from robotlab.llm import ScriptedModel, call

    net = robotlab.create_network(name="fanout", parallel_mode=mode, config=robotlab.RunConfig(pool_size=WORKERS))
    net.task("source", robotlab.build(name="source", model=ScriptedModel(["the input"])))
    parts = [f"part_{i}" for i in range(PARALLEL)]
    for i, part in enumerate(parts):
        robot = robotlab.build(name=part, model=ScriptedModel([call("crunch", n=n), f"part {i} done"]),
                               local_tools=[crunch])
        net.task(part, robot, depends_on=["source"], tools="inherit")
    net.task("join", robotlab.build(name="join", model=ScriptedModel(["joined"])), depends_on=parts)
    return net


def chain_network(mode: str, length: int):
    """*length* tasks, each depending on the one before, whose robots answer at once."""
    import robotlab
    from robotlab.llm import ScriptedModel

    net = robotlab.create_network(name="chain", parallel_mode=mode, config=robotlab.RunConfig(pool_size=WORKERS))
    for i in range(length):
        net.task(f"t{i}", robotlab.build(name=f"r{i}", model=ScriptedModel(["ok"])),
                 depends_on=[f"t{i - 1}"] if i else "none")
    return net


def timed_run(net, mode: str):
    """(seconds of ``net.run``, its result); checks that every task ran, in *mode*, without errors."""
    started = time.perf_counter()
    result = net.run("go")
    elapsed = time.perf_counter() - started
    assert result.ok, result.errors
    assert {o.worker for o in result.tasks.values()} == {mode}
    return elapsed, result


def run_fanout(mode: str, n: int) -> float:
    """Seconds of one run of the fan-out network; every parallel robot's tool call succeeded."""
    elapsed, result = timed_run(fanout_network(mode, n), mode)
    calls = [result[f"part_{i}"].result.tool_calls for i in range(PARALLEL)]
    assert all(len(c) == 1 and c[0].error is None and isinstance(c[0].result, int) for c in calls), calls
    assert result.value == "joined"
    return elapsed


def direct_robot_run() -> float:
    """Seconds of one trivial ``robot.run`` called directly, no network: the floor under a chain task."""
    import robotlab
    from robotlab.llm import ScriptedModel

    robot = robotlab.build(name="alone", model=ScriptedModel(["ok"]))
    started = time.perf_counter()
    robot.run("go")
    return time.perf_counter() - started


def main(quick: bool | None = None) -> dict:
    import robotlab

    quick = quick_mode(quick)
    call_s, repeats, chain, chain_repeats = (0.002, 2, 20, 1) if quick else (0.100, 7, 200, 3)
    missing = subinterpreters_missing()
    announce(missing)
    modes = [THREAD, PROCESS] + ([SUBINTERPRETER] if missing is None else [])
    n = calibrate(call_s)
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    chain_samples: dict[str, list[float]] = {mode: [] for mode in modes}
    try:
        for mode in modes:  # starts the default pools; workers import robotlab and the tool module
            run_fanout(mode, 1)
            timed_run(chain_network(mode, 2), mode)
        for rep in range(repeats):  # interleaved, order rotated, so noise hits every mode alike
            for mode in rotated(modes, rep):
                samples[mode].append(run_fanout(mode, n))
        for rep in range(chain_repeats):
            for mode in rotated(modes, rep):
                chain_samples[mode].append(timed_run(chain_network(mode, chain), mode)[0])
    finally:
        robotlab.shutdown_pool()
    robot_run_s = statistics.median(direct_robot_run() for _ in range(max(5, chain_repeats * 20)))

    medians = {mode: statistics.median(times) for mode, times in samples.items()}
    speedups = {mode: medians[THREAD] / median for mode, median in medians.items()}
    chain_medians = {mode: statistics.median(times) for mode, times in chain_samples.items()}
    per_task = {mode: median / chain for mode, median in chain_medians.items()}
    figures: dict = {
        "benchmark": "network_fanout", "quick": quick, "python": sys.version.split()[0],
        "subinterpreters": "included" if missing is None else f"not run: {missing}",
        "workers": WORKERS, "parallel_tasks": PARALLEL, "burn_n": n, "call_target_s": call_s, "repeats": repeats,
        "median_s": medians, "speedup_vs_thread": speedups,
        "chain_tasks": chain, "chain_repeats": chain_repeats, "chain_median_s": chain_medians,
        "chain_per_task_s": per_task, "direct_robot_run_s": robot_run_s,
    }
    print(f"network fan-out: source -> {PARALLEL} tasks, each robot calling crunch once (calibrated to "
          f"{call_s * 1000:g} ms) -> join; pools of {WORKERS} workers; median of {repeats}")
    print_table(["parallel_mode", "median (s)", "speedup vs thread"],
                [[mode, medians[mode], speedups[mode]] for mode in modes])
    check(figures, "process_speedup", speedups[PROCESS], ">=", 1.7, "process mode speedup over thread mode")
    if missing is None:
        check(figures, "subinterpreter_speedup", speedups[SUBINTERPRETER], ">=", 1.7,
              "subinterpreter mode speedup over thread mode")
    print(f"\nscheduler overhead: a chain of {chain} trivial robots, each task depending on the previous one; "
          f"median of {chain_repeats} (no target)")
    print_table(["parallel_mode", "chain (s)", "per task (ms)"],
                [[mode, chain_medians[mode], per_task[mode] * 1000] for mode in modes])
    print(f"one trivial robot.run called directly, no network: {robot_run_s * 1000:.3f} ms")
    name = published_name("network_fanout", missing is None)
    publish(name, figures, quick)
    bar_chart(name, f"Network: source -> {PARALLEL} CPU-bound tasks -> join (median wall time)",
              [(f"parallel_mode={mode!r}", median) for mode, median in medians.items()], "s", quick)
    return figures


if __name__ == "__main__":
    main()
