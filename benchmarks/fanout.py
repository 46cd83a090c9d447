"""Fan-out of 64 CPU-bound pure-Python jobs (~20 ms each) over 2 workers.

Side by side in one run, same jobs: a serial loop, ThreadPoolExecutor(2),
robotlab WorkerPool(2) with worker processes, the same with subinterpreters
(CPython 3.13+ only: elsewhere the run says so and leaves them out) and
ProcessPoolExecutor(2, forkserver). Pools are started and warmed up (one job
per worker) before timing; every pool is driven the same way (submit all,
then collect). Repetitions are rounds of every contender back to back, with
the order rotated each round. Reports median wall times; a speedup (X over
serial, robotlab over ProcessPoolExecutor) is the median of the per-round
ratios, so the slow drifts of a shared VM's speed fall on both sides of each
ratio instead of on whichever contender ran during a slow spell.
Run: ``python -m benchmarks.fanout`` (under 3.13 for the subinterpreter row).
"""

from __future__ import annotations

import multiprocessing
import statistics
import sys
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor

from benchmarks._backends import announce, published_name, subinterpreters_missing
from benchmarks._jobs import burn
from benchmarks._report import bar_chart, check, print_table, publish, quick_mode, rotated
from robotlab.parallel import WorkerPool

WORKERS = 2
RL, RL_SUB, PPE = "robotlab WorkerPool", "robotlab WorkerPool (subinterpreter)", "ProcessPoolExecutor"


def calibrate(seconds: float) -> int:
    """The n for which ``burn(n)`` takes about *seconds* here: a rough guess, then refined on 5 runs at that n."""

    def median_time(n: int) -> float:
        times = []
        for _ in range(5):
            started = time.perf_counter()
            burn(n)
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    n = 10_000
    for _ in range(2):
        n = max(1, round(n * seconds / median_time(n)))
    return n


def fan_out(executor: Executor | None, jobs: int, n: int) -> float:
    """Wall time of *jobs* calls of ``burn(n)``: serially if *executor* is None, else submit all then collect."""
    started = time.perf_counter()
    if executor is None:
        for _ in range(jobs):
            burn(n)
    else:
        futures = [executor.submit(burn, n) for _ in range(jobs)]
        for future in futures:
            future.result()
    return time.perf_counter() - started


def main(quick: bool | None = None) -> dict:
    quick = quick_mode(quick)
    jobs, job_s, repeats = (8, 0.002, 2) if quick else (64, 0.020, 11)
    missing = subinterpreters_missing()
    announce(missing)
    n = calibrate(job_s)
    pools: dict[str, Executor | None] = {"serial": None, "ThreadPoolExecutor": ThreadPoolExecutor(WORKERS),
                                         RL: WorkerPool(size=WORKERS)}
    if missing is None:
        pools[RL_SUB] = WorkerPool(size=WORKERS, backend="subinterpreter")
    pools[PPE] = ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("forkserver"))
    samples: dict[str, list[float]] = {name: [] for name in pools}
    try:
        for pool in pools.values():
            if isinstance(pool, WorkerPool):
                pool.wait_until_ready()
        for pool in pools.values():
            if pool is not None:
                for future in [pool.submit(burn, 1) for _ in range(WORKERS)]:
                    future.result()
        for rep in range(repeats):  # interleaved, order rotated, so noise hits every contender alike
            for name in rotated(list(pools), rep):
                samples[name].append(fan_out(pools[name], jobs, n))
    finally:
        for pool in pools.values():
            if pool is not None:
                pool.shutdown()

    medians = {name: statistics.median(times) for name, times in samples.items()}

    def paired(slower: str, faster: str) -> float:
        """Median over rounds of slower's time / faster's time in the same round."""
        return statistics.median(a / b for a, b in zip(samples[slower], samples[faster], strict=True))

    speedups = {name: paired("serial", name) for name in pools}
    figures: dict = {
        "benchmark": "fanout", "quick": quick, "python": sys.version.split()[0],
        "subinterpreters": "included" if missing is None else f"not run: {missing}",
        "workers": WORKERS, "jobs": jobs, "burn_n": n,
        "job_target_s": job_s, "serial_per_job_s": medians["serial"] / jobs, "repeats": repeats,
        "median_s": medians, "samples_s": samples, "speedup_vs_serial": speedups,
        "robotlab_speedup_over_ppe_speedup": paired(PPE, RL),
    }
    if missing is None:
        figures["subinterpreter_speedup_over_ppe_speedup"] = paired(PPE, RL_SUB)
    print(f"fan-out: {jobs} x burn({n}) (calibrated to {job_s * 1000:g} ms, measured "
          f"{figures['serial_per_job_s'] * 1000:.1f} ms serially), {WORKERS} workers, median of {repeats} rounds")
    print_table(["contender", "median (s)", "speedup vs serial (median of rounds)"],
                [[name, medians[name], speedups[name]] for name in pools])
    check(figures, "robotlab_speedup", speedups[RL], ">=", 1.8, "robotlab speedup over serial")
    check(figures, "robotlab_vs_ppe_speedup", figures["robotlab_speedup_over_ppe_speedup"], ">=", 1.0,
          "robotlab speedup / ProcessPoolExecutor speedup")
    if missing is None:
        check(figures, "subinterpreter_speedup", speedups[RL_SUB], ">=", 1.8,
              "robotlab subinterpreter speedup over serial")
    name = published_name("fanout", missing is None)
    publish(name, figures, quick)
    bar_chart(name, f"Fan-out: {jobs} CPU-bound jobs, {WORKERS} workers (median wall time)",
              list(medians.items()), "s", quick)
    return figures


if __name__ == "__main__":
    main()
