"""The memory proxy: a worker's ``memory().set`` until the parent's subscription callback runs, and writes/s.

- latency: one worker writes ``perf_counter()`` to a key, one write at a time;
  the parent's subscription callback subtracts it from its own ``perf_counter()``
  (on Linux both read CLOCK_MONOTONIC, one clock for every process);
- writes/s: 1 and 2 workers writing distinct keys, each write confirmed by the
  parent before the next, next to the same writes to a ``multiprocessing.Manager``
  dict proxy (the stdlib's shared dict; it has no subscriptions or blocking reads).

Rounds alternate robotlab and Manager; figures are medians over the rounds.
Run: ``python -m benchmarks.memory_proxy``.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from concurrent.futures import ProcessPoolExecutor

from benchmarks._memory_jobs import manager_writes, proxy_writes, timed_sets
from benchmarks._report import bar_chart, check, print_table, publish, quick_mode, rotated

US = 1e6


def latency_us(pool: object, memory: object, n: int) -> list[float]:
    """Latencies (µs) of *n* worker writes until the parent's callback ran."""
    samples: list[float] = []
    subscription = memory.subscribe("t", lambda change: samples.append((time.perf_counter() - change.value) * US))
    pool.submit(timed_sets, n).result()
    subscription.cancel()
    return samples


def proxy_rate(pool: object, workers: int, n: int, rep: int) -> float:
    """Writes per second of *workers* workers through the memory proxy (wall time of the slowest)."""
    futures = [pool.submit(proxy_writes, f"r{rep}.w{w}", n) for w in range(workers)]
    return workers * n / max(f.result() for f in futures)


def manager_rate(executor: ProcessPoolExecutor, shared: dict, workers: int, n: int, rep: int) -> float:
    """Writes per second of *workers* workers to a Manager dict proxy."""
    futures = [executor.submit(manager_writes, shared, f"r{rep}.w{w}", n) for w in range(workers)]
    return workers * n / max(f.result() for f in futures)


def main(quick: bool | None = None) -> dict:
    from robotlab import create_memory
    from robotlab.parallel import WorkerPool

    quick = quick_mode(quick)
    repeats, n_latency, n_writes = (1, 50, 200) if quick else (7, 2000, 5000)
    context = multiprocessing.get_context("forkserver")
    latencies: list[float] = []
    rates: dict[str, list[float]] = {name: [] for name in ("robotlab 1 worker", "robotlab 2 workers",
                                                           "Manager dict 1 worker", "Manager dict 2 workers")}
    memory = create_memory()
    with WorkerPool(size=2, memory=memory) as pool, context.Manager() as manager, \
            ProcessPoolExecutor(2, mp_context=context) as executor:
        shared = manager.dict()
        pool.wait_until_ready()
        for warm in (pool.submit(timed_sets, 10), executor.submit(manager_writes, shared, "warm", 10)):
            warm.result()
        for rep in range(repeats):
            for contender in rotated(["robotlab", "Manager dict"], rep):
                for workers in (1, 2):
                    name = f"{contender} {workers} worker{'s' if workers > 1 else ''}"
                    if contender == "robotlab":
                        rates[name].append(proxy_rate(pool, workers, n_writes, rep))
                    else:
                        rates[name].append(manager_rate(executor, shared, workers, n_writes, rep))
            latencies += latency_us(pool, memory, n_latency)
    latencies.sort()
    median_rates = {name: statistics.median(values) for name, values in rates.items()}
    figures: dict = {
        "benchmark": "memory_proxy", "quick": quick, "repeats": repeats, "latency_writes": len(latencies),
        "latency_us": {"median": statistics.median(latencies),
                       "p90": latencies[int(0.9 * (len(latencies) - 1))],
                       "p99": latencies[int(0.99 * (len(latencies) - 1))]},
        "writes_per_s": median_rates,
        "ratios": {"robotlab_to_manager_1_worker": median_rates["robotlab 1 worker"]
                   / median_rates["Manager dict 1 worker"],
                   "robotlab_to_manager_2_workers": median_rates["robotlab 2 workers"]
                   / median_rates["Manager dict 2 workers"]},
    }
    print(f"worker memory().set -> parent subscription callback, {len(latencies)} writes")
    print_table(["", "median (us)", "p90 (us)", "p99 (us)"],
                [["latency", *(figures["latency_us"][k] for k in ("median", "p90", "p99"))]])
    print(f"confirmed writes per second, {n_writes} per worker, median of {repeats} rounds")
    print_table(["contender", "writes/s"], [[name, rate] for name, rate in median_rates.items()])
    check(figures, "set_to_callback_latency", figures["latency_us"]["median"], "<=", 300.0,
          "median worker set -> parent callback, us")
    publish("memory_proxy", figures, quick)
    bar_chart("memory_proxy", "Confirmed writes per second from workers (median)",
              list(median_rates.items()), "writes/s", quick)
    return figures


if __name__ == "__main__":
    main()
