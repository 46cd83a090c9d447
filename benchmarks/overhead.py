"""Per-job overhead of trivial jobs (``noop``): robotlab vs ProcessPoolExecutor vs multiprocessing.Pool.

All pools: 2 workers, forkserver, started and warmed up before timing.

(a) round trip: one job submitted and waited at a time; median of per-call times. On CPython
    3.13+ also robotlab with subinterpreter workers, against its process backend in the same
    run (elsewhere the run says it is left out), and, for reference, concurrent.futures'
    ThreadPoolExecutor: a thread in the same interpreter, no crossing at all, so the least
    that any design running jobs on another thread of this process pays.
(b) batch: 10,000 jobs submitted one by one, then all collected.
(c) map: 10,000 jobs through each pool's ``map`` with its default chunksize, plus
    ProcessPoolExecutor with the chunksize robotlab picks (about four chunks per worker).

Samples of (a) are taken in 40 interleaved blocks of 25 calls (latency here drifts between
levels over seconds, so short blocks spread it over all pools); repetitions of (b) and (c) are
interleaved with the order rotated. Reports medians and ratios.
Run: ``python -m benchmarks.overhead`` (under 3.13 for the subinterpreter row).
"""

from __future__ import annotations

import math
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

from benchmarks._backends import announce, published_name, subinterpreters_missing
from benchmarks._jobs import noop
from benchmarks._report import bar_chart, check, print_table, publish, quick_mode, rotated
from robotlab.parallel import WorkerPool

WORKERS = 2
RL, PPE, MP = "robotlab WorkerPool", "ProcessPoolExecutor", "multiprocessing.Pool"
RL_SUB = "robotlab WorkerPool (subinterpreter)"
TPE = "ThreadPoolExecutor (reference)"


def timed(run: Callable[[], object]) -> float:
    """Seconds *run* takes."""
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def interleaved(contenders: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Time each contender *repeats* times, one round of all at a time, in rotated order."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for rep in range(repeats):
        for name in rotated(list(contenders), rep):
            samples[name].append(timed(contenders[name]))
    return samples


def main(quick: bool | None = None) -> dict:
    quick = quick_mode(quick)
    round_trips, blocks, jobs, repeats = (60, 3, 200, 2) if quick else (1000, 40, 10_000, 7)
    chunksize = max(1, math.ceil(jobs / (4 * WORKERS)))  # what WorkerPool.map and Pool.map pick by default
    missing = subinterpreters_missing()
    announce(missing)
    ctx = multiprocessing.get_context("forkserver")
    robotlab, ppe, mp = WorkerPool(size=WORKERS), ProcessPoolExecutor(WORKERS, mp_context=ctx), ctx.Pool(WORKERS)
    subinterpreters = None if missing else WorkerPool(size=WORKERS, backend="subinterpreter")
    threads = ThreadPoolExecutor(WORKERS)
    try:
        robotlab.wait_until_ready()
        for _ in range(2 * WORKERS):  # every worker started and has imported the job module
            robotlab.submit(noop).result()
            ppe.submit(noop).result()
            mp.apply_async(noop).get()
        one = {RL: lambda: robotlab.submit(noop).result(), PPE: lambda: ppe.submit(noop).result(),
               MP: lambda: mp.apply_async(noop).get()}
        if subinterpreters is not None:
            subinterpreters.wait_until_ready()
            for _ in range(2 * WORKERS):
                subinterpreters.submit(noop).result()
            one[RL_SUB] = lambda: subinterpreters.submit(noop).result()
            for _ in range(2 * WORKERS):
                threads.submit(noop).result()
            one[TPE] = lambda: threads.submit(noop).result()
        per_call: dict[str, list[float]] = {name: [] for name in one}
        for block in range(blocks):
            for name in rotated(list(one), block):
                per_call[name] += [timed(one[name]) for _ in range(round_trips // blocks)]

        batch = interleaved({RL: lambda: [f.result() for f in [robotlab.submit(noop, i) for i in range(jobs)]],
                             PPE: lambda: [f.result() for f in [ppe.submit(noop, i) for i in range(jobs)]],
                             MP: lambda: [r.get() for r in [mp.apply_async(noop, (i,)) for i in range(jobs)]]},
                            repeats)
        mapped = interleaved({RL: lambda: list(robotlab.map(noop, range(jobs))),
                              MP: lambda: mp.map(noop, range(jobs)),
                              f"{PPE} (chunksize=1)": lambda: list(ppe.map(noop, range(jobs))),
                              f"{PPE} (chunksize={chunksize})": lambda: list(ppe.map(noop, range(jobs),
                                                                                      chunksize=chunksize))},
                             repeats)
    finally:
        robotlab.shutdown()
        if subinterpreters is not None:
            subinterpreters.shutdown()
        threads.shutdown()
        ppe.shutdown()
        mp.close()
        mp.join()

    rtt = {name: statistics.median(times) for name, times in per_call.items()}
    batch_s = {name: statistics.median(times) for name, times in batch.items()}
    map_s = {name: statistics.median(times) for name, times in mapped.items()}
    figures: dict = {
        "benchmark": "overhead", "quick": quick, "python": sys.version.split()[0],
        "subinterpreters": "included in (a)" if missing is None else f"not run: {missing}",
        "workers": WORKERS, "round_trip_samples": round_trips,
        "jobs": jobs, "repeats": repeats, "map_chunksize_robotlab": chunksize,
        "round_trip_median_s": rtt, "batch_median_s": batch_s, "map_median_s": map_s,
        "ratios": {
            "round_trip_robotlab_to_ppe": rtt[RL] / rtt[PPE],
            "round_trip_robotlab_to_mp_pool": rtt[RL] / rtt[MP],
            "batch_robotlab_to_ppe": batch_s[RL] / batch_s[PPE],
            "batch_robotlab_to_mp_pool": batch_s[RL] / batch_s[MP],
            "map_robotlab_to_mp_pool": map_s[RL] / map_s[MP],
            "map_robotlab_to_ppe_chunksize_1": map_s[RL] / map_s[f"{PPE} (chunksize=1)"],
            "map_robotlab_to_ppe_same_chunksize": map_s[RL] / map_s[f"{PPE} (chunksize={chunksize})"],
        },
    }
    if missing is None:
        figures["ratios"]["round_trip_subinterpreter_to_process"] = rtt[RL_SUB] / rtt[RL]
        figures["ratios"]["round_trip_thread_pool_executor_to_process"] = rtt[TPE] / rtt[RL]
    print(f"(a) round trip of one noop, median of {round_trips} calls")
    print_table(["contender", "median (us)", "vs robotlab"], [[n, t * 1e6, t / rtt[RL]] for n, t in rtt.items()])
    print(f"(b) {jobs} noop jobs submitted one by one, then collected; median of {repeats}")
    print_table(["contender", "median (s)", "us per job", "vs robotlab"],
                [[n, t, t / jobs * 1e6, t / batch_s[RL]] for n, t in batch_s.items()])
    print(f"(c) map of {jobs} noop jobs; median of {repeats}")
    print_table(["contender", "median (s)", "vs robotlab"], [[n, t, t / map_s[RL]] for n, t in map_s.items()])
    ratios = figures["ratios"]
    check(figures, "round_trip", ratios["round_trip_robotlab_to_ppe"], "<=", 0.5,
          "(a) robotlab / ProcessPoolExecutor round trip")
    check(figures, "batch", ratios["batch_robotlab_to_ppe"], "<=", 0.4, "(b) robotlab / ProcessPoolExecutor batch")
    check(figures, "map", ratios["map_robotlab_to_mp_pool"], "<=", 1.5, "(c) robotlab / multiprocessing.Pool map")
    if missing is None:
        check(figures, "subinterpreter_round_trip", ratios["round_trip_subinterpreter_to_process"], "<=", 0.5,
              "(a) robotlab subinterpreter / process round trip")
        print(f"      reference: ThreadPoolExecutor / robotlab process round trip: "
              f"{ratios['round_trip_thread_pool_executor_to_process']:.3g} (a thread, no interpreter crossing)")
    with_sub = missing is None
    publish(published_name("overhead", with_sub), figures, quick)
    bar_chart(published_name("overhead_round_trip", with_sub), "Round trip of one trivial job (median)",
              [(n, t * 1e6) for n, t in rtt.items()], "us", quick)
    bar_chart(published_name("overhead_batch", with_sub), f"{jobs} trivial jobs submitted then collected (median)",
              list(batch_s.items()), "s", quick)
    bar_chart(published_name("overhead_map", with_sub), f"map of {jobs} trivial jobs (median)",
              list(map_s.items()), "s", quick)
    return figures


if __name__ == "__main__":
    main()
