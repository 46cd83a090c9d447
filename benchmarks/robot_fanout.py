"""A robot whose one reply asks for 16 calls of a ~50 ms CPU-bound ``parallel_safe`` tool.

Side by side in one run, the same robot and script (a scripted model: one
reply with 16 ``burn_cpu`` calls, then a final text), the calls run:

- in-process: ``parallel_tools=False``, so the robot runs them as it runs any
  tool calls of one reply, on 16 threads of this process (bound by the GIL);
- on worker processes: ``pool_backend="process"``, ``pool_size=2`` (the robot
  sends them to ``robotlab.parallel.default_pool``);
- on subinterpreters: ``pool_backend="subinterpreter"`` (CPython 3.13+ only:
  elsewhere the run says so and leaves them out).

The tool's n is calibrated here to ~50 ms. Pools are started and warmed up by
one untimed run per contender. Each timed round builds a fresh robot and
times ``robot.run`` from call to result; rounds are interleaved with the
order rotated. Reports median wall time and speedup over in-process.
Run: ``python -m benchmarks.robot_fanout`` (under 3.13 for the subinterpreter row).
"""

from __future__ import annotations

import statistics
import sys
import time

from benchmarks._backends import announce, published_name, subinterpreters_missing
from benchmarks._report import bar_chart, check, print_table, publish, quick_mode, rotated
from benchmarks.fanout import calibrate

WORKERS, CALLS = 2, 16
IN_PROCESS, PROCESS, SUBINTERPRETER = ("in-process (16 threads)", "robotlab process pool",
                                       "robotlab subinterpreter pool")
OPTIONS = {IN_PROCESS: {"parallel_tools": False}, PROCESS: {"pool_backend": "process", "pool_size": WORKERS},
           SUBINTERPRETER: {"pool_backend": "subinterpreter", "pool_size": WORKERS}}
WHERE = {IN_PROCESS: "thread", PROCESS: "process", SUBINTERPRETER: "subinterpreter"}


def run_robot(contender: str, n: int) -> float:
    """Seconds of one ``robot.run`` whose reply asks for CALLS ``burn_cpu(n)`` calls, run as *contender* runs them."""
    import robotlab
    from benchmarks._robot_jobs import burn_cpu
    from robotlab.llm import ScriptedModel, call

    model = ScriptedModel([[call("burn_cpu", n=n) for _ in range(CALLS)], "done"])
    # max_tool_rounds counts tool calls (default 10): allow the reply's 16.
    robot = robotlab.build(name="fanout_bot", model=model, local_tools=[burn_cpu], max_tool_rounds=CALLS,
                           **OPTIONS[contender])
    started = time.perf_counter()
    result = robot.run("go", tools="inherit")
    elapsed = time.perf_counter() - started
    calls = result.tool_calls
    # Every call ran, where it should have, and returned a number (not an error text).
    assert len(calls) == CALLS and all(c.error is None and c.where == WHERE[contender] for c in calls), calls
    assert result.last_text_content == "done"
    return elapsed


def main(quick: bool | None = None) -> dict:
    import robotlab

    quick = quick_mode(quick)
    call_s, repeats = (0.002, 2) if quick else (0.050, 7)
    missing = subinterpreters_missing()
    announce(missing)
    contenders = [IN_PROCESS, PROCESS] + ([SUBINTERPRETER] if missing is None else [])
    n = calibrate(call_s)
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    try:
        for name in contenders:  # starts the default pools; workers import the tool module
            run_robot(name, 1)
        for rep in range(repeats):  # interleaved, order rotated, so noise hits every contender alike
            for name in rotated(contenders, rep):
                samples[name].append(run_robot(name, n))
    finally:
        robotlab.shutdown_pool()

    medians = {name: statistics.median(times) for name, times in samples.items()}
    speedups = {name: medians[IN_PROCESS] / median for name, median in medians.items()}
    figures: dict = {
        "benchmark": "robot_fanout", "quick": quick, "python": sys.version.split()[0],
        "subinterpreters": "included" if missing is None else f"not run: {missing}",
        "workers": WORKERS, "calls": CALLS, "burn_n": n, "call_target_s": call_s, "repeats": repeats,
        "median_s": medians, "speedup_vs_in_process": speedups,
    }
    print(f"robot fan-out: one reply with {CALLS} burn_cpu calls (calibrated to {call_s * 1000:g} ms each), "
          f"pools of {WORKERS} workers, median of {repeats}")
    print_table(["contender", "median (s)", "speedup vs in-process"],
                [[name, medians[name], speedups[name]] for name in contenders])
    check(figures, "process_speedup", speedups[PROCESS], ">=", 1.7, "process pool speedup over in-process")
    if missing is None:
        check(figures, "subinterpreter_speedup", speedups[SUBINTERPRETER], ">=", 1.7,
              "subinterpreter pool speedup over in-process")
    name = published_name("robot_fanout", missing is None)
    publish(name, figures, quick)
    bar_chart(name, f"A robot's {CALLS} CPU-bound tool calls in one reply (median wall time)",
              list(medians.items()), "s", quick)
    return figures


if __name__ == "__main__":
    main()
