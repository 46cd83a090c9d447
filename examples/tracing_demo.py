"""OpenTelemetry spans, the Narrator and tool call records of a network whose robots run in worker processes.

Two tasks run with ``parallel_mode="process"``: a researcher that calls a
tool, then a writer. With ``robotlab.configure(tracing=True)`` every network
run, task, robot run, LLM call and tool call is a span; the worker's spans
come back to this process and land in the same trace. Prints the span tree
(with each LLM call's tokens), the Narrator's lines (worker lines included)
and where each tool call ran. Offline: scripted models, the SDK's in-memory
exporter (``pip install 'robotlab[otel]' opentelemetry-sdk``).

Run: ``python examples/tracing_demo.py``.
"""

import io
import os

import robotlab
from robotlab import tracing
from robotlab.llm import LlmReply, ScriptedModel, Usage, call

try:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
except ImportError:
    raise SystemExit("this example needs the OpenTelemetry SDK: pip install opentelemetry-sdk") from None


@robotlab.tool
def lookup(topic: str) -> str:
    """Look a topic up (here: say which process did)."""
    return f"notes on {topic} from pid {os.getpid()}"


def research(messages, tools):
    """Ask for the lookup tool, then summarise (a priced scripted model)."""
    if not any(m["role"] == "tool" for m in messages):
        return LlmReply(tool_calls=[call("lookup", topic="tides")], usage=Usage(40, 8), cost=0.0004)
    return LlmReply(text="tides follow the moon", usage=Usage(60, 6), cost=0.0006)


def print_tree(spans) -> None:
    children = {}
    for span in spans:
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)

    def walk(parent_id, depth):
        for span in sorted(children.get(parent_id, []), key=lambda s: s.start_time):
            tokens = span.attributes.get("gen_ai.usage.input_tokens")
            extra = f"  ({tokens} in / {span.attributes['gen_ai.usage.output_tokens']} out)" if tokens else ""
            print(f"  {'  ' * depth}{span.name}{extra}  {(span.end_time - span.start_time) / 1e6:.1f} ms")
            walk(span.context.span_id, depth + 1)

    walk(None, 0)


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.set_tracer_provider(provider)
    robotlab.configure(tracing=True)
    narration = io.StringIO()
    robotlab.Narrator.enable(stream=narration)

    net = robotlab.create_network(name="report", parallel_mode="process")
    net.task("research", robotlab.build(name="researcher", model=ScriptedModel(research, name="openai/gpt-4o-mini"),
                                        local_tools=[lookup]), tools="inherit")
    net.task("write", robotlab.build(name="writer", model=ScriptedModel(["A short report on tides."])),
             depends_on=["research"])
    try:
        result = net.run("Write about tides")
    finally:
        robotlab.shutdown_pool()
    print("answer:", result.value)
    print("spans (one trace, worker spans included):")
    print_tree(exporter.get_finished_spans())
    print("narrator:")
    for line in narration.getvalue().splitlines():
        print("  " + line)
    record = result["research"].result.tool_calls[0]
    print(f"tool call {record.name}: ran on {record.where} worker {record.worker} (this is pid {os.getpid()}), "
          f"{record.duration * 1000:.2f} ms = {record.queued_s * 1000:.2f} queued + {record.run_s * 1000:.2f} run")


if __name__ == "__main__":
    main()
