"""Round trip of this checkout vs an earlier commit, each against ProcessPoolExecutor, in one run.

A change to the parallel layer must not cost round-trip speed (issue 28: "process backend
within 5% of its ratio to ProcessPoolExecutor before the change"). PPE's own round trip
drifts by tens of percent between runs on this VM, so ratios from separate runs cannot show
5%. Here both trees are measured in the same run: the earlier commit's ``src`` is exported
to a temporary directory (its C extension built there), and rounds alternate between a
fresh interpreter on each tree, in rotated order. Each round times robotlab's process
backend and ProcessPoolExecutor in interleaved blocks (as ``overhead.py`` (a) does) and
reports both medians; the figures are the medians over rounds of robotlab's time and of
its ratio to PPE, per tree, and after / before.

Run: ``python -m benchmarks.round_trip_versions [REF]`` (default: ``6ff74b0``, the last
commit before issue 28's hardening; ``ROBOTLAB_BENCH_QUICK=1``: few rounds).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from benchmarks._report import check, print_table, publish, quick_mode, rotated

REPO = Path(__file__).resolve().parents[1]
BEFORE = "6ff74b0"

# One round, in a fresh interpreter on one tree: medians (s) of robotlab's and PPE's round trip.
ROUND = """
import json, multiprocessing, statistics, time
from concurrent.futures import ProcessPoolExecutor
from benchmarks._jobs import noop
from robotlab.parallel import WorkerPool

def per_call(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter(); fn(); out.append(time.perf_counter() - t)
    return out

pool = WorkerPool(size=2)
ppe = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver"))
pool.wait_until_ready()
for _ in range(8):
    pool.submit(noop).result(); ppe.submit(noop).result()
one = {"robotlab": lambda: pool.submit(noop).result(), "ppe": lambda: ppe.submit(noop).result()}
times = {"robotlab": [], "ppe": []}
for block in range(BLOCKS):
    for name in (list(one) if block % 2 else list(one)[::-1]):
        times[name] += per_call(one[name], 25)
pool.shutdown(); ppe.shutdown()
print(json.dumps({name: statistics.median(t) for name, t in times.items()}))
"""


def export_tree(ref: str, into: Path) -> Path:
    """*ref*'s ``src`` under *into*, with its ``_freeze`` extension built in place; returns that ``src``."""
    archive = into / "src.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "-o", str(archive), ref, "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    build = ("from setuptools import Extension, setup; "
             "setup(name='robotlab_before', package_dir={'': 'src'}, script_args=['-q', 'build_ext', '--inplace'], "
             "ext_modules=[Extension('robotlab.parallel._freeze', ['src/robotlab/parallel/_freeze.c'])])")
    subprocess.run([sys.executable, "-c", build], cwd=into, check=True, capture_output=True)
    return into / "src"


def one_round(src: Path, blocks: int) -> dict[str, float]:
    """Medians (s) of one round on the tree whose package directory is *src*."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{REPO}", "ROBOTLAB_REQUIRE_ACCELERATOR": "1"}
    out = subprocess.run([sys.executable, "-c", ROUND.replace("BLOCKS", str(blocks))], env=env, cwd=REPO,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def main(quick: bool | None = None, before: str = BEFORE) -> dict:
    quick = quick_mode(quick)
    rounds, blocks = (1, 2) if quick else (24, 20)
    with tempfile.TemporaryDirectory(prefix="robotlab-before-") as tmp:
        trees = {f"before ({before})": export_tree(before, Path(tmp)), "this checkout": REPO / "src"}
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for rep in range(rounds):
            for name in rotated(list(trees), rep):
                samples[name].append(one_round(trees[name], blocks))
    figures: dict = {"benchmark": "round_trip_versions", "quick": quick, "before": before, "rounds": rounds}
    for name, runs in samples.items():
        figures[name] = {"robotlab_us": statistics.median(r["robotlab"] for r in runs) * 1e6,
                         "ppe_us": statistics.median(r["ppe"] for r in runs) * 1e6,
                         "ratio_to_ppe": statistics.median(r["robotlab"] / r["ppe"] for r in runs)}
    old, new = figures[f"before ({before})"], figures["this checkout"]
    figures["after_over_before"] = {"robotlab": new["robotlab_us"] / old["robotlab_us"],
                                    "ratio_to_ppe": new["ratio_to_ppe"] / old["ratio_to_ppe"]}
    print_table(["tree", "robotlab (µs)", "PPE (µs)", "robotlab / PPE"],
                [[name, f[name]["robotlab_us"], f[name]["ppe_us"], f[name]["ratio_to_ppe"]]
                 for f in (figures,) for name in trees])
    check(figures, "ratio_within_5pct", figures["after_over_before"]["ratio_to_ppe"], "<=", 1.05,
          "robotlab/PPE ratio, this checkout / before")
    publish("round_trip_versions", figures, quick)
    return figures


if __name__ == "__main__":
    main(before=sys.argv[1] if len(sys.argv) > 1 else BEFORE)
