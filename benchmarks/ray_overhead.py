"""What Ray costs per job: robotlab's Ray backend next to its process backend, in the same run.

Contenders, 2 workers each, started and warmed up before timing:

- ``robotlab WorkerPool (process)``: ``WorkerPool(size=2)``, forkserver;
- ``robotlab WorkerPool (ray)``: ``WorkerPool(size=2, backend="ray")`` on a local Ray (2 CPUs);
- ``Ray tasks``: one plain ``ray.remote`` task per job, for reference — what the
  "one Ray task per job" design would cost (robotlab's Ray backend keeps one actor
  per worker and sends jobs over its own connection instead).

(a) round trip: one ``noop`` job submitted and waited at a time; median of per-call
    times, taken in interleaved blocks.
(b) batch: N ``noop`` jobs submitted one by one, then all collected; per-job time.
(c) fan-out at several job sizes (0, 1, 5, 20 and 50 ms of CPU): N = 12 jobs per worker
    of ``burn(n)`` calibrated to each size, submit all then collect; wall time per job
    (wall / N) and speedup over a serial loop. Break-even: the smallest measured job
    size from which on (at it and every larger measured size) a Ray contender's
    fan-out takes at most 10 % longer than the process backend's; and the smallest
    size from which on it beats the serial loop.

Repetitions are interleaved with the order rotated. Ray is started here (and shut
down at the end) unless this process is already connected to one.
Run: ``python -m benchmarks.ray_overhead``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from benchmarks._jobs import burn, noop
from benchmarks._report import bar_chart, check, print_table, publish, quick_mode, rotated
from benchmarks.fanout import calibrate
from benchmarks.overhead import interleaved, timed
from robotlab.errors import DependencyError
from robotlab.parallel import WorkerPool

WORKERS = 2
PROC, RAY, TASKS = "robotlab WorkerPool (process)", "robotlab WorkerPool (ray)", "Ray tasks"
BREAK_EVEN_MARGIN = 1.10  # "breaks even": at most 10 % slower than the process backend


def main(quick: bool | None = None) -> dict:
    quick = quick_mode(quick)
    try:
        import ray
    except ImportError:
        print(DependencyError.missing("benchmarks.ray_overhead", "robotlab[ray]"))
        return {"benchmark": "ray_overhead", "quick": quick, "skipped": "ray is not installed"}
    round_trips, blocks, jobs, repeats = (60, 3, 200, 2) if quick else (1000, 40, 5000, 5)
    sizes = (0.0005, 0.002) if quick else (0.0, 0.001, 0.005, 0.020, 0.050)
    fan_jobs = (2 if quick else 12) * WORKERS
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False, configure_logging=False)

    remote_noop, remote_burn = ray.remote(noop), ray.remote(burn)
    ready_s: dict[str, float] = {}
    pools: dict[str, WorkerPool] = {}
    try:
        for name, backend in ((PROC, "process"), (RAY, "ray")):
            started = time.perf_counter()
            pools[name] = WorkerPool(size=WORKERS, backend=backend)
            pools[name].wait_until_ready()
            ready_s[name] = time.perf_counter() - started
        for _ in range(2 * WORKERS):  # every worker started and has imported the job modules
            for pool in pools.values():
                pool.submit(noop).result()
                pool.submit(burn, 1).result()
            ray.get([remote_noop.remote(), remote_burn.remote(1)])

        one = {PROC: lambda: pools[PROC].submit(noop).result(), RAY: lambda: pools[RAY].submit(noop).result(),
               TASKS: lambda: ray.get(remote_noop.remote())}
        per_call: dict[str, list[float]] = {name: [] for name in one}
        for block in range(blocks):
            for name in rotated(list(one), block):
                per_call[name] += [timed(one[name]) for _ in range(round_trips // blocks)]

        batch = interleaved({PROC: lambda: [f.result() for f in [pools[PROC].submit(noop, i) for i in range(jobs)]],
                             RAY: lambda: [f.result() for f in [pools[RAY].submit(noop, i) for i in range(jobs)]],
                             TASKS: lambda: ray.get([remote_noop.remote(i) for i in range(jobs)])},
                            repeats)

        fanout: dict[str, dict[str, float]] = {}
        burn_n: dict[str, int] = {}
        for size in sizes:
            n = burn_n[f"{size * 1000:g} ms"] = calibrate(size)
            samples = interleaved({
                "serial": lambda n=n: [burn(n) for _ in range(fan_jobs)],
                PROC: lambda n=n: [f.result() for f in [pools[PROC].submit(burn, n) for _ in range(fan_jobs)]],
                RAY: lambda n=n: [f.result() for f in [pools[RAY].submit(burn, n) for _ in range(fan_jobs)]],
                TASKS: lambda n=n: ray.get([remote_burn.remote(n) for _ in range(fan_jobs)]),
            }, repeats)
            fanout[f"{size * 1000:g} ms"] = {name: statistics.median(times) for name, times in samples.items()}
    finally:
        for pool in pools.values():
            pool.shutdown()
        if started_ray:
            ray.shutdown()

    rtt = {name: statistics.median(times) for name, times in per_call.items()}
    batch_s = {name: statistics.median(times) for name, times in batch.items()}
    speedups = {size: {name: walls["serial"] / wall for name, wall in walls.items()} for size, walls in fanout.items()}
    per_job = {size: {name: wall / fan_jobs for name, wall in walls.items()} for size, walls in fanout.items()}

    def break_even(name: str) -> dict[str, float | None]:
        walls = [(size, fanout[f"{size * 1000:g} ms"]) for size in sizes]
        return {"within_10pct_of_process_s": _from_on(walls, lambda w: w[name] <= BREAK_EVEN_MARGIN * w[PROC]),
                "beats_serial_s": _from_on(walls, lambda w: w[name] < w["serial"])}

    largest = f"{sizes[-1] * 1000:g} ms"
    figures: dict = {
        "benchmark": "ray_overhead", "quick": quick, "workers": WORKERS, "ray_started_here": started_ray,
        "round_trip_samples": round_trips, "jobs": jobs, "repeats": repeats, "fanout_jobs": fan_jobs,
        "job_sizes_s": list(sizes), "burn_n": burn_n, "ready_s": ready_s,
        "round_trip_median_s": rtt, "batch_median_s": batch_s,
        "batch_per_job_s": {name: t / jobs for name, t in batch_s.items()},
        "fanout_median_s": fanout, "fanout_per_job_s": per_job, "fanout_speedup_vs_serial": speedups,
        "fanout_ray_to_process": {size: walls[RAY] / walls[PROC] for size, walls in fanout.items()},
        "ratios": {
            "round_trip_ray_to_process": rtt[RAY] / rtt[PROC],
            "round_trip_ray_tasks_to_process": rtt[TASKS] / rtt[PROC],
            "batch_ray_to_process": batch_s[RAY] / batch_s[PROC],
            "batch_ray_tasks_to_process": batch_s[TASKS] / batch_s[PROC],
        },
        "break_even": {RAY: break_even(RAY), TASKS: break_even(TASKS)},
    }
    print(f"pool ready (one sample): {', '.join(f'{n} {t:.3g} s' for n, t in ready_s.items())}")
    print(f"(a) round trip of one noop, median of {round_trips} calls")
    print_table(["contender", "median (us)", "vs process", "extra us"],
                [[n, t * 1e6, t / rtt[PROC], (t - rtt[PROC]) * 1e6] for n, t in rtt.items()])
    print(f"(b) {jobs} noop jobs submitted one by one, then collected; median of {repeats}")
    print_table(["contender", "median (s)", "us per job", "vs process", "extra us per job"],
                [[n, t, t / jobs * 1e6, t / batch_s[PROC], (t - batch_s[PROC]) / jobs * 1e6]
                 for n, t in batch_s.items()])
    print(f"(c) fan-out of {fan_jobs} burn jobs per size, {WORKERS} workers; median of {repeats}")
    print("    wall time per job (ms):")
    print_table(["job size", *per_job[largest], "ray / process"],
                [[size, *(t * 1e3 for t in times.values()), times[RAY] / times[PROC]]
                 for size, times in per_job.items()])
    print("    speedup over serial:")
    print_table(["job size", *speedups[largest]],
                [[size, *speeds.values()] for size, speeds in speedups.items()])
    for name, even in figures["break_even"].items():
        print(f"break-even for {name}: within 10 % of process from {_ms(even['within_10pct_of_process_s'])}, "
              f"beats serial from {_ms(even['beats_serial_s'])} per job (and at every larger size measured)")
    ratios = figures["ratios"]
    check(figures, "round_trip", ratios["round_trip_ray_to_process"], "<=", 3.0,
          "(a) robotlab Ray / process round trip")
    check(figures, "batch", ratios["batch_ray_to_process"], "<=", 3.0, "(b) robotlab Ray / process batch")
    check(figures, "fanout", speedups[largest][RAY], ">=", 1.6,
          f"(c) robotlab Ray speedup over serial at {largest} jobs")
    publish("ray_overhead", figures, quick)
    bar_chart("ray_overhead_round_trip", "Round trip of one trivial job (median)",
              [(n, t * 1e6) for n, t in rtt.items()], "us", quick)
    bar_chart("ray_overhead_fanout", f"Fan-out speedup over serial, {largest} jobs, {WORKERS} workers",
              list(speedups[largest].items()), "x", quick)
    return figures


def _from_on(walls: list[tuple[float, dict[str, float]]], holds: Callable[[dict[str, float]], bool]) -> float | None:
    """The smallest job size from which *holds* is true at every larger measured size too (None: not even at the
    largest): a single lucky sample below a failing size does not count as breaking even."""
    since = None
    for size, wall in reversed(walls):
        if not holds(wall):
            break
        since = size
    return since


def _ms(seconds: float | None) -> str:
    return "no measured size" if seconds is None else f"{seconds * 1000:g} ms"


if __name__ == "__main__":
    main()
