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
(d) on CPython 3.13+: the transport floor under (a), bare echo round trips of a 64-byte frame
    over a socket (``benchmarks._echo``), no Python work besides the reads and writes: to a
    subinterpreter that polls 0.2 ms before it sleeps (as robotlab's subinterpreter worker),
    to a process that sleeps in ``read`` (as robotlab's process worker), and to a process
    that polls like the subinterpreter. Its ratio is what (a)'s subinterpreter / process ratio
    would be if both backends did no work at all (docs/performance.md explains why that matters).

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
from contextlib import ExitStack

from benchmarks import _echo
from benchmarks._backends import announce, published_name, subinterpreters_missing
from benchmarks._jobs import noop
from benchmarks._report import bar_chart, check, print_table, publish, quick_mode, rotated
from robotlab.parallel import WorkerPool

WORKERS = 2
RL, PPE, MP = "robotlab WorkerPool", "ProcessPoolExecutor", "multiprocessing.Pool"
RL_SUB = "robotlab WorkerPool (subinterpreter)"
TPE = "ThreadPoolExecutor (reference)"
ECHO_SUB, ECHO_PROC = "echo: subinterpreter (polls first)", "echo: process (sleeps in read)"
ECHO_PROC_POLLS = "echo: process (polls first)"


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


def per_call_medians(one: dict[str, Callable[[], object]], samples: int, blocks: int) -> dict[str, float]:
    """Median seconds of each callable, timed in *blocks* interleaved blocks of calls in rotated order."""
    per_call: dict[str, list[float]] = {name: [] for name in one}
    for block in range(blocks):
        for name in rotated(list(one), block):
            per_call[name] += [timed(one[name]) for _ in range(samples // blocks)]
    return {name: statistics.median(times) for name, times in per_call.items()}


def transport_floor(samples: int, blocks: int) -> dict[str, float]:
    """(d): median seconds of a bare echo round trip to each kind of worker end."""
    with ExitStack() as stack:
        one = {ECHO_PROC: stack.enter_context(_echo.process_echo()),
               ECHO_PROC_POLLS: stack.enter_context(_echo.process_echo(_echo.WORKER_SPIN)),
               ECHO_SUB: stack.enter_context(_echo.subinterpreter_echo())}
        for round_trip in one.values():
            round_trip()
        return per_call_medians(one, samples, blocks)


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
        rtt = per_call_medians(one, round_trips, blocks)
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

    floor = None if missing else transport_floor(round_trips, blocks)
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
        figures["transport_floor_median_s"] = floor
        figures["ratios"].update(transport_floor_subinterpreter_to_process=floor[ECHO_SUB] / floor[ECHO_PROC],
                                 transport_floor_subinterpreter_to_polling_process=floor[ECHO_SUB]
                                 / floor[ECHO_PROC_POLLS])
    print(f"(a) round trip of one noop, median of {round_trips} calls")
    print_table(["contender", "median (us)", "vs robotlab"], [[n, t * 1e6, t / rtt[RL]] for n, t in rtt.items()])
    print(f"(b) {jobs} noop jobs submitted one by one, then collected; median of {repeats}")
    print_table(["contender", "median (s)", "us per job", "vs robotlab"],
                [[n, t, t / jobs * 1e6, t / batch_s[RL]] for n, t in batch_s.items()])
    print(f"(c) map of {jobs} noop jobs; median of {repeats}")
    print_table(["contender", "median (s)", "vs robotlab"], [[n, t, t / map_s[RL]] for n, t in map_s.items()])
    if floor is not None:
        print(f"(d) transport floor: bare echo round trip of a 64-byte frame, median of {round_trips} calls")
        print_table(["worker end", "median (us)", "vs process"],
                    [[n, t * 1e6, t / floor[ECHO_PROC]] for n, t in floor.items()])
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
        print("      floor: (d) subinterpreter / process echo: "
              f"{ratios['transport_floor_subinterpreter_to_process']:.3g} (the (a) ratio with no work on either side)")
    with_sub = missing is None
    publish(published_name("overhead", with_sub), figures, quick)
    bar_chart(published_name("overhead_round_trip", with_sub), "Round trip of one trivial job (median)",
              [(n, t * 1e6) for n, t in rtt.items()], "us", quick)
    bar_chart(published_name("overhead_batch", with_sub), f"{jobs} trivial jobs submitted then collected (median)",
              list(batch_s.items()), "s", quick)
    bar_chart(published_name("overhead_map", with_sub), f"map of {jobs} trivial jobs (median)",
              list(map_s.items()), "s", quick)
    if floor is not None:
        bar_chart(published_name("overhead_transport_floor", with_sub), "Bare echo round trip, 64 bytes (median)",
                  [(n, t * 1e6) for n, t in floor.items()], "us", quick)
    return figures


if __name__ == "__main__":
    main()
