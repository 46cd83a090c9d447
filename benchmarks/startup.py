"""Pool start-up time and idle worker memory, 2 workers, forkserver.

Start-up, interleaved with the order rotated, median of the repetitions:

- robotlab: ``WorkerPool(size=2)`` until ``wait_until_ready()`` returns (and, for
  a like-for-like row, until the first two trivial results are back);
- ``ProcessPoolExecutor(2)``: construction until the first two trivial results
  (it starts its workers on demand);
- ``multiprocessing.Pool(2)``: construction until the first trivial result.

One untimed round runs first, so the forkserver process (shared by all three)
is already up. robotlab starts it, as in a program whose first pool is
robotlab's, so it preloads robotlab's worker runtime (under a forkserver that
other code started, robotlab's workers import the runtime after the fork).
Memory: RSS and USS (``memory_full_info().uss``) of every worker of an idle
pool after start-up. Workers re-import the ``__main__`` module, so this module
imports only the standard library at the top.
Run: ``python -m benchmarks.startup``.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from collections.abc import Callable

from benchmarks._jobs import noop
from benchmarks._report import bar_chart, check, print_table, publish, quick_mode, rotated

WORKERS = 2
MB = 1024 * 1024
RL, RL2, PPE, MP = ("robotlab WorkerPool (ready)", "robotlab WorkerPool (2 results)",
                    "ProcessPoolExecutor (2 results)", "multiprocessing.Pool (1 result)")


def start_robotlab(results: int) -> tuple[float, object, list[int]]:
    """Seconds from ``WorkerPool(size=2)`` to ready (and *results* noop results), the pool and its worker pids."""
    from robotlab.parallel import WorkerPool

    started = time.perf_counter()
    pool = WorkerPool(size=WORKERS)
    pool.wait_until_ready()
    for future in [pool.submit(noop) for _ in range(results)]:
        future.result()
    # worker_pids is being renamed worker_ids (for process workers the ids are the pids): accept either.
    pids = pool.worker_ids if hasattr(pool, "worker_ids") else pool.worker_pids
    return time.perf_counter() - started, pool, list(pids)


def start_ppe() -> tuple[float, object, list[int]]:
    """Seconds from ``ProcessPoolExecutor(2)`` to two noop results, the executor and its worker pids."""
    from concurrent.futures import ProcessPoolExecutor

    started = time.perf_counter()
    pool = ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("forkserver"))
    for future in [pool.submit(noop) for _ in range(2)]:
        future.result()
    return time.perf_counter() - started, pool, list(pool._processes)


def start_mp_pool() -> tuple[float, object, list[int]]:
    """Seconds from ``multiprocessing.Pool(2)`` to one noop result, the pool and its worker pids."""
    started = time.perf_counter()
    pool = multiprocessing.get_context("forkserver").Pool(WORKERS)
    pool.apply(noop)
    return time.perf_counter() - started, pool, [p.pid for p in pool._pool]


def stop(pool: object) -> None:
    """Shut down any of the three pools and wait for its workers."""
    if hasattr(pool, "shutdown"):
        pool.shutdown()
    else:
        pool.close()
        pool.join()


def memory(pids: list[int]) -> dict[str, float]:
    """Largest RSS and USS, in MB, over the processes *pids*."""
    import psutil

    infos = [psutil.Process(pid).memory_full_info() for pid in pids]
    return {"rss_mb": max(i.rss for i in infos) / MB, "uss_mb": max(i.uss for i in infos) / MB}


def main(quick: bool | None = None) -> dict:
    quick = quick_mode(quick)
    repeats, settle = (1, 0.1) if quick else (7, 1.0)
    starters: dict[str, Callable[[], tuple[float, object, list[int]]]] = {
        RL: lambda: start_robotlab(0), RL2: lambda: start_robotlab(2), PPE: start_ppe, MP: start_mp_pool}
    samples: dict[str, list[float]] = {name: [] for name in starters}
    for rep in range(repeats + 1):  # round 0 starts the shared forkserver (robotlab first) and is not kept
        for name in rotated(list(starters), rep):
            seconds, pool, _ = starters[name]()
            stop(pool)
            if rep > 0:
                samples[name].append(seconds)

    idle: dict[str, dict[str, float]] = {}
    for name in (RL, PPE, MP):
        _, pool, pids = starters[name]()
        time.sleep(settle)  # idle: start-up garbage collected, nothing running
        idle[name] = {"workers": len(pids), **memory(pids)}
        stop(pool)

    medians = {name: statistics.median(times) for name, times in samples.items()}
    figures: dict = {
        "benchmark": "startup", "quick": quick, "workers": WORKERS, "repeats": repeats,
        "startup_median_s": medians,
        "ratios": {"robotlab_ready_to_ppe": medians[RL] / medians[PPE],
                   "robotlab_2_results_to_ppe": medians[RL2] / medians[PPE],
                   "robotlab_ready_to_mp_pool": medians[RL] / medians[MP]},
        "idle_worker_memory_mb": idle,
    }
    print(f"start-up of a {WORKERS}-worker pool, median of {repeats}")
    print_table(["contender", "median (ms)", "vs robotlab ready"],
                [[name, t * 1000, t / medians[RL]] for name, t in medians.items()])
    print(f"idle worker memory (largest over the {WORKERS} workers), {settle:g} s after start-up")
    print_table(["pool", "RSS (MB)", "USS (MB)"], [[name, m["rss_mb"], m["uss_mb"]] for name, m in idle.items()])
    check(figures, "idle_worker_rss", idle[RL]["rss_mb"], "<=", 40.0, "robotlab idle worker RSS, MB")
    publish("startup", figures, quick)
    bar_chart("startup", f"Start-up of a {WORKERS}-worker pool (median)",
              [(name, t * 1000) for name, t in medians.items()], "ms", quick)
    bar_chart("startup_memory", "Idle worker memory (largest worker)",
              [(f"{name.split(' (')[0]} {kind.upper()}", m[f"{kind}_mb"]) for name, m in idle.items()
               for kind in ("rss", "uss")], "MB", quick)
    return figures


if __name__ == "__main__":
    main()
