"""I/O-bound networks at scale, scheduler overhead, and streaming latency.

Side by side in one run, repetitions interleaved (rotated order):

- 10, 100 and 1,000 independent tasks, each robot awaiting a 0.1 s I/O tool:
  ``concurrency="auto"`` (the asyncio scheduler: 1,000 at once) vs
  ``concurrency=32`` (what "auto" meant with the old thread scheduler);
  also a *sync* 0.1 s tool under "auto" (it runs on robotlab's helper threads).
  Peak RSS of a 1,000-task run is measured in a fresh process per contender.
- a 200-task chain (each task depends on the previous): wall time per task.
- streaming: from the loopback server writing its first SSE text chunk to the
  first ``text.delta`` event of ``robot.astream``, vs litellm's own stream
  yielding that chunk (the floor robotlab adds to).

Run: ``python -m benchmarks.network_io_scale`` (``ROBOTLAB_BENCH_QUICK=1``: tiny sizes).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time

import robotlab
from benchmarks import _report
from robotlab.llm import LiteLLMModel, ScriptedModel, call

SLEEP = 0.1


@robotlab.tool
async def io_call(seconds: float) -> str:
    """An I/O-bound call (awaits)."""
    await asyncio.sleep(seconds)
    return "done"


@robotlab.tool
def sync_io_call(seconds: float) -> str:
    """A blocking I/O-bound call (sleeps)."""
    time.sleep(seconds)
    return "done"


CONTENDERS = {
    "async tool, concurrency=auto": ("auto", io_call),
    "async tool, concurrency=32": (32, io_call),
    "sync tool, concurrency=auto": ("auto", sync_io_call),
}


def fan_out(tasks: int, concurrency: int | str, tool_class: type) -> robotlab.Network:
    network = robotlab.create_network(name="io", concurrency=concurrency)
    for i in range(tasks):
        robot = robotlab.build(name=f"r{i}", model=ScriptedModel([call(tool_class.name, seconds=SLEEP), "ok"]),
                               local_tools=[tool_class])
        network.task(f"t{i}", robot, tools="inherit")
    return network


def chain(tasks: int, parallel_mode: str = "thread") -> robotlab.Network:
    """*tasks* one-reply robots, each task depending on the one before."""
    network = robotlab.create_network(name="chain", parallel_mode=parallel_mode)
    for i in range(tasks):
        robot = robotlab.build(name=f"c{i}", model=ScriptedModel(["ok"]))
        network.task(f"t{i}", robot, depends_on=[f"t{i - 1}"] if i else "none")
    return network


def timed_run(network: robotlab.Network) -> float:
    started = time.perf_counter()
    result = network.run("go")
    elapsed = time.perf_counter() - started
    assert result.ok, result.errors
    return elapsed


def peak_rss_mb(contender: str, tasks: int) -> float:
    """Peak RSS (MB) of a fresh interpreter that builds and runs one *tasks*-task network of *contender*."""
    code = (
        "import benchmarks.network_io_scale as b\n"
        f"c, t = b.CONTENDERS[{contender!r}]\n"
        f"b.timed_run(b.fan_out({tasks}, c, t))\n"
        # VmHWM, not ru_maxrss: Linux's ru_maxrss keeps the forking parent's size across exec.
        "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')) / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    return float(out.stdout.split()[-1])


async def _robotlab_first_delta(base: str, script: object) -> float:
    model = LiteLLMModel("openai/gpt-4o-mini", api_base=base, api_key="sk-test", num_retries=0)
    seen = None
    async for event in robotlab.build(name="s", model=model).astream("go"):
        if seen is None and event.type == "text.delta" and event.data["text"]:
            seen = time.perf_counter()
    return seen - script.chunk_times[1]  # chunk 0 is the role chunk; the stream is read to its end first


async def _litellm_first_chunk(base: str, script: object) -> float:
    import litellm

    stream = await litellm.acompletion(model="openai/gpt-4o-mini", api_base=base, api_key="sk-test",
                                       messages=[{"role": "user", "content": "go"}], stream=True)
    seen = None
    async for chunk in stream:
        if seen is None and chunk.choices and chunk.choices[0].delta.content:
            seen = time.perf_counter()
    return seen - script.chunk_times[1]


def streaming(repeats: int) -> dict:
    """Median ms from the server writing the first text chunk to robotlab's event / litellm's chunk."""
    from tests.openai_server import Script, completion, serve

    samples: dict[str, list[float]] = {"robotlab": [], "litellm": []}
    measures = {"robotlab": _robotlab_first_delta, "litellm": _litellm_first_chunk}
    for rep in range(repeats):
        for name in _report.rotated(list(measures), rep):
            script = Script([(200, completion("one two three four"))], chunk_delay=0.02)
            with serve(script) as base:
                samples[name].append(asyncio.run(measures[name](base, script)))
    return {"robotlab_first_delta_ms": statistics.median(samples["robotlab"]) * 1e3,
            "litellm_first_chunk_ms": statistics.median(samples["litellm"]) * 1e3}


def main(quick: bool | None = None) -> dict:
    quick = _report.quick_mode(quick)
    sizes = [10, 50] if quick else [10, 100, 1000]
    repeats = 1 if quick else 5
    chain_tasks = 20 if quick else 200
    times: dict[str, dict[int, list[float]]] = {c: {n: [] for n in sizes} for c in CONTENDERS}
    chain_times: list[float] = []
    for rep in range(repeats):
        for n in sizes:
            for contender in _report.rotated(list(CONTENDERS), rep):
                concurrency, tool_class = CONTENDERS[contender]
                times[contender][n].append(timed_run(fan_out(n, concurrency, tool_class)))
        chain_times.append(timed_run(chain(chain_tasks)))
    figures: dict = {"benchmark": "network_io_scale", "quick": quick, "tool_seconds": SLEEP, "repeats": repeats,
                     "median_s": {c: {str(n): statistics.median(v) for n, v in by_n.items()}
                                  for c, by_n in times.items()}}
    biggest = sizes[-1]
    figures["peak_rss_mb"] = {c: peak_rss_mb(c, biggest) for c in CONTENDERS}
    figures["chain"] = {"tasks": chain_tasks, "ms_per_task": statistics.median(chain_times) / chain_tasks * 1e3}
    figures["streaming"] = streaming(3 if quick else 20)
    auto, old = figures["median_s"]["async tool, concurrency=auto"], figures["median_s"]["async tool, concurrency=32"]
    figures["speedup_auto_vs_32"] = {n: old[n] / auto[n] for n in auto}
    rows = [[c, *(figures["median_s"][c][str(n)] for n in sizes), figures["peak_rss_mb"][c]] for c in CONTENDERS]
    _report.print_table(["contender", *(f"{n} tasks (s)" for n in sizes), f"peak RSS {biggest} (MB)"], rows)
    print(f"200-task chain: {figures['chain']['ms_per_task']:.3f} ms/task; first text.delta "
          f"{figures['streaming']['robotlab_first_delta_ms']:.2f} ms after the SSE chunk "
          f"(litellm alone: {figures['streaming']['litellm_first_chunk_ms']:.2f} ms)")
    auto_big = auto[str(biggest)]
    _report.check(figures, "fanout_wall", auto_big, "<=", 0.3 if not quick else 10.0,
                  f"{biggest} tasks x {SLEEP} s, concurrency=auto, wall seconds")
    _report.check(figures, "fanout_rss", figures["peak_rss_mb"]["async tool, concurrency=auto"], "<=", 150.0,
                  f"{biggest} tasks, peak RSS MB")
    _report.check(figures, "chain_overhead", figures["chain"]["ms_per_task"], "<=", 0.25 if not quick else 10.0,
                  "chain ms per task")
    _report.check(figures, "first_delta", figures["streaming"]["robotlab_first_delta_ms"], "<=", 2.0,
                  "first text.delta after the SSE chunk, ms")
    _report.publish("network_io_scale", figures, quick)
    return figures


if __name__ == "__main__":
    main()
