"""What OpenTelemetry tracing costs: tracing off vs on, on the 200-task chain and on robot_fanout.

Side by side in one run, repetitions interleaved (order rotated), three contenders:

- ``off``: ``robotlab.configure(tracing=False)``, nothing registered (the default);
- ``on, not sampled``: tracing on, the SDK's TracerProvider with the ``ALWAYS_OFF`` sampler:
  robotlab's hooks run and make spans, the SDK records none (robotlab's own share of the cost);
- ``on``: tracing on, the SDK's TracerProvider recording every span into a ``BatchSpanProcessor``
  whose exporter drops them (what an application exporting to a collector pays in this process).

Workloads: the 200-task chain of ``network_io_scale`` (each task a scripted one-reply robot:
3 spans per task: task, robot run, LLM call), a 100-task chain with ``parallel_mode="process"``
(the worker's spans come back with one more call per task), and ``robot_fanout`` (one reply with 16 ~50 ms CPU-bound
``parallel_safe`` calls on a 2-worker process pool). Reports medians and the on / off ratios, and,
as the floor under ``on``, what the SDK alone takes per span (start, attributes, end).
Run: ``python -m benchmarks.tracing_overhead`` (``ROBOTLAB_BENCH_QUICK=1``: tiny sizes).
"""

from __future__ import annotations

import statistics
import sys
import time

from benchmarks import robot_fanout
from benchmarks._report import check, print_table, publish, quick_mode, rotated
from benchmarks.fanout import calibrate
from benchmarks.network_io_scale import chain, timed_run

OFF, UNSAMPLED, ON = "off", "on, not sampled", "on"
CONTENDERS = (OFF, UNSAMPLED, ON)


def _providers() -> tuple[dict, object]:
    """The TracerProvider of each contender (None: tracing off), and the exporter counting what ``on`` exported."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    class Dropped(SpanExporter):
        count = 0

        def export(self, spans):
            Dropped.count += len(spans)
            return SpanExportResult.SUCCESS

    recording = TracerProvider()
    recording.add_span_processor(BatchSpanProcessor(Dropped()))
    return {OFF: None, UNSAMPLED: TracerProvider(sampler=ALWAYS_OFF), ON: recording}, Dropped


def _use(provider: object) -> None:
    import robotlab
    from robotlab import tracing

    robotlab.configure(tracing=provider is not None)
    if provider is not None:
        tracing.set_tracer_provider(provider)


def sdk_span_us(provider: object, spans: int) -> float:
    """Microseconds the SDK alone takes to start and end one child span with robotlab's usual attributes."""
    from opentelemetry import trace

    tracer = provider.get_tracer("floor")
    parent = trace.set_span_in_context(tracer.start_span("parent"))
    started = time.perf_counter()
    for _ in range(spans):
        span = tracer.start_span("chat m", context=parent, attributes={"gen_ai.operation.name": "chat",
                                                                       "gen_ai.request.model": "m",
                                                                       "gen_ai.system": "m"})
        span.set_attributes({"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2,
                             "robotlab.cost_usd": 0.0})
        span.end()
    return (time.perf_counter() - started) / spans * 1e6


def main(quick: bool | None = None) -> dict:
    import robotlab

    quick = quick_mode(quick)
    tasks, process_tasks, repeats, call_s = (20, 10, 2, 0.002) if quick else (200, 100, 9, 0.050)
    providers, exported = _providers()
    n = calibrate(call_s)
    workloads = {
        f"chain of {tasks}, thread": lambda: timed_run(chain(tasks)),
        f"chain of {process_tasks}, process": lambda: timed_run(chain(process_tasks, "process")),
        "robot_fanout (16 calls, process pool)": lambda: robot_fanout.run_robot(robot_fanout.PROCESS, n),
    }
    samples = {w: {c: [] for c in CONTENDERS} for w in workloads}
    try:
        for contender in CONTENDERS:  # pools started, modules imported, before any timing
            _use(providers[contender])
            for run in workloads.values():
                run()
        for rep in range(repeats):
            for workload, run in workloads.items():
                for contender in rotated(list(CONTENDERS), rep):
                    _use(providers[contender])
                    samples[workload][contender].append(run())
    finally:
        robotlab.configure(tracing=False)
        robotlab.shutdown_pool()
    floor = statistics.median(sdk_span_us(providers[ON], 200 if quick else 2000) for _ in range(repeats))
    providers[ON].force_flush()
    medians = {w: {c: statistics.median(v) for c, v in by.items()} for w, by in samples.items()}
    ratios = {w: {c: by[c] / by[OFF] for c in (UNSAMPLED, ON)} for w, by in medians.items()}
    chain_name = f"chain of {tasks}, thread"
    per_task_us = {c: medians[chain_name][c] / tasks * 1e6 for c in CONTENDERS}
    figures: dict = {"benchmark": "tracing_overhead", "quick": quick, "python": sys.version.split()[0],
                     "repeats": repeats, "chain_tasks": tasks, "burn_n": n, "median_s": medians,
                     "ratio_vs_off": ratios, "chain_us_per_task": per_task_us, "sdk_us_per_span": floor,
                     "spans_exported": exported.count}
    print(f"tracing off vs on, median of {repeats} interleaved repetitions")
    print_table(["workload", *(f"{c} (s)" for c in CONTENDERS), "not sampled / off", "on / off"],
                [[w, *(medians[w][c] for c in CONTENDERS), ratios[w][UNSAMPLED], ratios[w][ON]] for w in workloads])
    print(f"200-task chain, per task: {per_task_us[OFF]:.0f} us off, {per_task_us[UNSAMPLED]:.0f} us on but not "
          f"sampled, {per_task_us[ON]:.0f} us on; the SDK alone: {floor:.1f} us per span (3 spans a task)")
    check(figures, "chain_overhead", ratios[chain_name][ON], "<=", 1.10, "tracing on / off, 200-task chain")
    check(figures, "fanout_overhead", ratios["robot_fanout (16 calls, process pool)"][ON], "<=", 1.10,
          "tracing on / off, robot_fanout")
    publish("tracing_overhead", figures, quick)
    return figures


if __name__ == "__main__":
    main()
