"""Large payloads across the worker boundary: robotlab vs ProcessPoolExecutor, side by side in one run.

All pools: 2 workers (forkserver for process pools), started and warmed up before timing.
Payloads: bytes of 1 KiB, 1 MiB, 16 MiB and 100 MiB, and a numpy float64 array of 100 MB
(when numpy is installed; not on subinterpreters, where numpy cannot load); two jobs each:
*send* (the job returns the payload's size: it crosses once) and *echo* (the job returns the
payload: it crosses there and back). Contenders:
robotlab's process backend, its subinterpreter backend on CPython 3.13+, its Ray backend with
``--ray`` (a local Ray start takes seconds; Ray keeps buffers in the frame), and
ProcessPoolExecutor. Each sample times a few calls (one for 100 MiB), one submit and result at a
time; samples are interleaved, the contenders' order rotated every round. Reports medians (ms per
call) and each contender's ratio to ProcessPoolExecutor.
Run: ``python -m benchmarks.payload`` (under 3.13 for the subinterpreter rows).
"""

from __future__ import annotations

import multiprocessing
import statistics
import sys
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import ExitStack

from benchmarks._backends import announce, published_name, subinterpreters_missing
from benchmarks._payload_jobs import echo, size
from benchmarks._report import check, print_table, publish, quick_mode, rotated
from benchmarks.overhead import timed
from robotlab.parallel import WorkerPool

WORKERS = 2
RL, RL_SUB, RL_RAY, PPE = ("robotlab (process)", "robotlab (subinterpreter)", "robotlab (ray)",
                           "ProcessPoolExecutor")
KIB, MIB = 1 << 10, 1 << 20


def payloads(quick: bool) -> dict[str, tuple[Callable[[], object], int]]:
    """Name -> (a function making the payload, calls per sample)."""
    sizes = {"1 KiB": (KIB, 50), "256 KiB": (256 * KIB, 5)} if quick else {
        "1 KiB": (KIB, 50), "1 MiB": (MIB, 10), "16 MiB": (16 * MIB, 3), "100 MiB": (100 * MIB, 1)}
    made: dict[str, tuple[Callable[[], object], int]] = {
        name: (lambda n=n: bytes(range(256)) * (n // 256), calls) for name, (n, calls) in sizes.items()}
    try:
        import numpy
    except ImportError:
        return made
    elements = (256 * KIB if quick else 100_000_000) // 8
    made["numpy 2 MB" if quick else "numpy 100 MB"] = (lambda: numpy.arange(elements, dtype=numpy.float64),
                                                      5 if quick else 1)
    return made


def _median_ms(pools: dict[str, Executor], job: Callable, data: object, calls: int, rounds: int) -> dict[str, float]:
    """Median ms per call of ``pool.submit(job, data).result()``, for each pool, in interleaved rounds."""
    samples: dict[str, list[float]] = {name: [] for name in pools}
    for pool in pools.values():  # warm: the payload's pages and the workers' imports
        pool.submit(job, data).result()
    for rep in range(rounds):
        for name in rotated(list(pools), rep):
            samples[name].append(timed(lambda p=pools[name]: [p.submit(job, data).result() for _ in range(calls)])
                                 / calls)
    return {name: statistics.median(times) * 1e3 for name, times in samples.items()}


def _start_pools(stack: ExitStack, missing: str | None, with_ray: bool) -> dict[str, Executor]:
    ctx = multiprocessing.get_context("forkserver")
    pools: dict[str, Executor] = {RL: stack.enter_context(WorkerPool(size=WORKERS)),
                                  PPE: stack.enter_context(ProcessPoolExecutor(WORKERS, mp_context=ctx))}
    if missing is None:
        pools[RL_SUB] = stack.enter_context(WorkerPool(size=WORKERS, backend="subinterpreter"))
    if with_ray:
        pools[RL_RAY] = stack.enter_context(WorkerPool(size=WORKERS, backend="ray"))
    for pool in pools.values():
        for _ in range(2 * WORKERS):
            pool.submit(size, b"").result()
    return pools


def main(quick: bool | None = None, with_ray: bool = False) -> dict:
    quick = quick_mode(quick)
    rounds = 2 if quick else 7
    missing = subinterpreters_missing()
    announce(missing)
    medians: dict[str, dict[str, float]] = {}
    with ExitStack() as stack:
        pools = _start_pools(stack, missing, with_ray)
        for name, (make, calls) in payloads(quick).items():
            data = make()
            # numpy does not load in a subinterpreter: its rows leave that backend out.
            runs = {n: p for n, p in pools.items() if not (n == RL_SUB and name.startswith("numpy"))}
            for mode, job in (("send", size), ("echo", echo)):
                medians[f"{name} {mode}"] = _median_ms(runs, job, data, calls, rounds)
            del data
    ratios = {case: {name: ms / row[PPE] for name, ms in row.items() if name != PPE} for case, row in medians.items()}
    figures: dict = {"benchmark": "payload", "quick": quick, "python": sys.version.split()[0],
                     "subinterpreters": "included" if missing is None else f"not run: {missing}",
                     "ray": "included" if with_ray else "not run (pass --ray)", "workers": WORKERS,
                     "rounds": rounds, "median_ms": medians, "ratio_to_ppe": ratios}
    names = list(pools)
    print(f"median ms per call (ratio to {PPE}); {rounds} interleaved rounds")
    print_table(["payload", *names], [[case, *(_cell(row, n) for n in names)] for case, row in medians.items()])
    _targets(figures, ratios, quick, missing is None)
    publish(published_name("payload", missing is None), figures, quick)
    return figures


def _cell(row: dict[str, float], name: str) -> str:
    if name not in row:
        return "-"
    return f"{row[name]:.4g}" if name == PPE else f"{row[name]:.4g} ({row[name] / row[PPE]:.2f}x)"


def _targets(figures: dict, ratios: dict, quick: bool, with_sub: bool) -> None:
    big, mid = ("256 KiB", "256 KiB") if quick else ("100 MiB", "1 MiB")
    check(figures, "large_echo_process", ratios[f"{big} echo"][RL], "<=", 0.3,
          f"{big} echo, robotlab process / ProcessPoolExecutor")
    check(figures, "medium_echo_process", ratios[f"{mid} echo"][RL], "<=", 0.6,
          f"{mid} echo, robotlab process / ProcessPoolExecutor")
    if with_sub:
        check(figures, "large_echo_subinterpreter", ratios[f"{big} echo"][RL_SUB], "<=", 0.15,
              f"{big} echo, robotlab subinterpreter / ProcessPoolExecutor")


if __name__ == "__main__":
    main(with_ray="--ray" in sys.argv[1:])
