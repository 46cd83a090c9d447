"""Distributed demo: a WorkerPool whose workers are Ray actors, on a local Ray cluster. Offline.

Each worker is a Ray actor (Ray places it and gives it a CPU); jobs, tools,
hooks and memory writes behave as with worker processes: the tool's writes
fire a subscription here, in the driver, and the hook's timing comes back
with the result. A job that kills its own actor fails alone with
WorkerCrashed, and the pool carries on with a new actor. On a real cluster,
replace the ray.init line with ray.init(address="auto", runtime_env=...) —
see docs/distributed.md.

Run: python examples/distributed_demo.py   (needs the ray extra: pip install -e '.[ray]' in a checkout)
"""

import collections
import importlib
import os
import signal
import time
from pathlib import Path

import robotlab
from robotlab.errors import WorkerCrashed
from robotlab.parallel import WorkerPool

TEXTS = [
    "the quick brown fox jumps over the lazy dog",
    "a distributed pool is a pool whose workers are somewhere else",
    "ray places the actors and robotlab talks to them directly",
    "the fox and the dog share the same memory through the driver",
]


def longest_word(text: str) -> str:
    """A CPU job (runs in a Ray actor)."""
    return max(text.split(), key=len)


def kill_my_worker() -> None:
    """Simulates a lost worker: its Ray actor's process dies mid-job."""
    os.kill(os.getpid(), signal.SIGKILL)


class Tally(robotlab.Tool):
    """Count the words of a text and publish each count in the pool's memory."""

    description = "Count words and publish the counts."

    def execute(self, text: str) -> int:
        counts = collections.Counter(text.split())
        self.memory.update({f"tally.{word}": n for word, n in counts.items() if n > 1})
        return sum(counts.values())


class Timer(robotlab.Hook):
    """Times every tool call, in the worker; the figure comes back as hook metadata."""

    @classmethod
    def around_tool_call(cls, ctx, block):
        started = time.perf_counter()
        try:
            return block()
        finally:
            ctx.local.ms = round((time.perf_counter() - started) * 1000, 3)
            ctx.local.pid = os.getpid()


def main() -> None:
    import ray

    # Workers find jobs by import path. A script's own functions live in __main__, which Ray workers
    # cannot import, so the script uses itself as the module "distributed_demo": its folder is on
    # sys.path, and every worker receives the driver's sys.path.
    demo = importlib.import_module(Path(__file__).stem)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # a local cluster, just for this demo
    try:
        memory = robotlab.create_memory()
        memory.subscribe("tally.*", lambda change: print(f"  driver saw memory write: {change.key} = {change.value}"))
        robotlab.on(demo.Timer)
        with WorkerPool(size=2, backend="ray", resources={"CPU": 1}, memory=memory) as pool:
            pool.wait_until_ready(120)
            print(f"2 workers, each a Ray actor holding 1 CPU: pids {sorted(pool.worker_ids)}; "
                  f"CPUs left on the cluster: {ray.available_resources().get('CPU', 0):g}")
            print("longest words:", list(pool.map(demo.longest_word, TEXTS)))
            for text in TEXTS[-1:]:
                future = pool.submit_tool(demo.Tally, {"text": text})
                print(f"tally: {future.result(60)} words; hook metadata from the worker: {future.hook_metadata}")
            try:
                pool.submit(demo.kill_my_worker).result(60)
            except WorkerCrashed as exc:
                print("lost a worker:", str(exc).split(" while running")[0])
            print("the pool carries on:", pool.submit(demo.longest_word, "survivors keep working").result(60))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
