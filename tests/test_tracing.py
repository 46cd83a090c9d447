"""OpenTelemetry tracing: the span tree of a network in each parallel mode, on the SDK's in-memory exporter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import robotlab
from robotlab import tracing
from robotlab.llm import LlmReply, ScriptedModel, Usage, call
from robotlab.parallel import default_pool, shutdown_pool
from robotlab.tracing import TracingHook
from tests import network_jobs, tool_jobs
from tests.doc_blocks import python_blocks, run_block

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
ERROR = trace.StatusCode.ERROR


@pytest.fixture(autouse=True)
def _traced():
    tracing.set_tracer_provider(PROVIDER)
    EXPORTER.clear()
    robotlab.configure(tracing=True)
    yield
    tracing.set_tracer_provider(None)


@pytest.fixture(autouse=True, scope="module")
def _stop_pools():
    yield
    shutdown_pool()


def tree(spans) -> list[tuple[int, str]]:
    """(depth, name) of every span, depth first, children in start order; all in one trace."""
    assert len({s.context.trace_id for s in spans}) == 1
    children: dict = {}
    for span in spans:
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)
    out: list[tuple[int, str]] = []

    def walk(parent_id, depth):
        for span in sorted(children.get(parent_id, []), key=lambda s: s.start_time):
            assert span.start_time <= span.end_time
            out.append((depth, span.name))
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    assert len(out) == len(spans)  # every span reached from the root: no broken parent link
    return out


def named(spans, name):
    return [s for s in spans if s.name == name]


def priced(messages, tools):
    """Ask for the ``where`` tool (10 + 4 tokens, $0.01), then answer (20 + 2 tokens, $0.02)."""
    if not any(m["role"] == "tool" for m in messages):
        return LlmReply(tool_calls=[call("where")], usage=Usage(10, 4), cost=0.01, model="openai/gpt-x")
    return LlmReply(text="done", usage=Usage(20, 2), cost=0.02, model="openai/gpt-x")


def test_a_network_gives_one_span_tree_in_every_mode(mode):
    net = robotlab.create_network(name="pipeline", parallel_mode=mode)
    net.task("a", robotlab.build(name="ra", model=ScriptedModel(priced, name="openai/gpt-x"),
                                 local_tools=[network_jobs.where]), tools="inherit")
    net.task("b", robotlab.build(name="rb", model=ScriptedModel(["B"])), depends_on=["a"])
    result = net.run("go")
    assert result.ok
    spans = EXPORTER.get_finished_spans()
    assert tree(spans) == [
        (0, "network_run pipeline"),
        (1, "task a"), (2, "invoke_agent ra"), (3, "chat openai/gpt-x"), (3, "execute_tool where"),
        (3, "chat openai/gpt-x"),
        (1, "task b"), (2, "invoke_agent rb"), (3, "chat scripted"),
    ]
    first, second = named(spans, "chat openai/gpt-x")
    assert first.attributes["gen_ai.system"] == "openai" and first.attributes["gen_ai.request.model"] == "openai/gpt-x"
    assert (first.attributes["gen_ai.usage.input_tokens"], first.attributes["gen_ai.usage.output_tokens"]) == (10, 4)
    assert first.attributes["robotlab.cost_usd"] == pytest.approx(0.01) and first.attributes["robotlab.tool_calls"] == 1
    assert second.attributes["gen_ai.usage.input_tokens"] == 20 and second.attributes["gen_ai.response.model"]
    run = named(spans, "invoke_agent ra")[0]
    assert run.attributes["gen_ai.usage.input_tokens"] == 30
    assert run.attributes["robotlab.cost_usd"] == pytest.approx(0.03)
    assert run.attributes["gen_ai.agent.name"] == "ra" and run.attributes["robotlab.task.name"] == "a"
    (tool,) = named(spans, "execute_tool where")
    assert tool.attributes["gen_ai.tool.name"] == "where" and tool.status.is_ok
    task = named(spans, "task a")[0]
    # Spans recorded in a worker keep their own times, inside the task that ran them.
    assert task.start_time <= run.start_time <= tool.start_time <= tool.end_time <= run.end_time <= task.end_time
    network = named(spans, "network_run pipeline")[0]
    assert network.attributes["robotlab.network.parallel_mode"] == mode


def failing_model(messages, tools):
    """Ask for the failing tool, then break."""
    if not any(m["role"] == "tool" for m in messages):
        return LlmReply(tool_calls=[call("explode_in_process", reason="boom")], usage=Usage(3, 1))
    raise ValueError("model broke")


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_errors_end_their_spans_with_error_status(mode):
    net = robotlab.create_network(name="bad", parallel_mode=mode)
    robot = robotlab.build(name="r", model=ScriptedModel(failing_model), local_tools=[tool_jobs.ExplodeInProcess])
    net.task("t", robot, tools="inherit")
    result = net.run("go")
    assert not result.ok
    spans = EXPORTER.get_finished_spans()
    assert tree(spans) == [(0, "network_run bad"), (1, "task t"), (2, "invoke_agent r"), (3, "chat scripted"),
                           (3, "execute_tool explode_in_process"), (3, "chat scripted")]
    (tool,) = named(spans, "execute_tool explode_in_process")
    assert tool.status.status_code == ERROR and "boom" in tool.status.description
    assert tool.attributes["error.type"] == "ValueError"
    ok_call, broken_call = named(spans, "chat scripted")
    assert ok_call.status.is_ok
    # The LLM call that raised never reached its after hook: it ends with the run, failed.
    for span in (broken_call, *named(spans, "invoke_agent r"), *named(spans, "task t")):
        assert span.status.status_code == ERROR and "model broke" in span.status.description, span.name
    assert named(spans, "network_run bad")[0].attributes["robotlab.tasks.failed"] == 1


def test_parallel_safe_tool_spans_come_back_from_the_pool_under_their_run():
    robot = robotlab.build(name="r", model=ScriptedModel([[call("where_am_i", tag="x"), call("explode", reason="no")],
                                                          "done"]),
                           local_tools=[tool_jobs.WhereAmI, tool_jobs.Explode], pool_backend="process", pool_size=2)
    result = robot.run("go", tools="inherit")
    assert [c.where for c in result.tool_calls] == ["process", "process"]
    spans = EXPORTER.get_finished_spans()
    shape = tree(spans)
    assert shape[:2] == [(0, "invoke_agent r"), (1, "chat scripted")]
    assert sorted(shape[2:4]) == [(1, "execute_tool explode"), (1, "execute_tool where_am_i")]
    assert named(spans, "execute_tool explode")[0].status.status_code == ERROR


def test_a_tool_submitted_to_a_pool_directly_is_traced_under_the_applications_span():
    with PROVIDER.get_tracer("app").start_as_current_span("request") as outer:
        assert default_pool("process").run_tool(tool_jobs.word_count, {"text": "a b c"}) == 3
    (span,) = named(EXPORTER.get_finished_spans(), "execute_tool word_count")
    assert span.parent.span_id == outer.get_span_context().span_id


def test_robotlab_spans_join_the_applications_trace_and_tracing_turns_off():
    tracer = PROVIDER.get_tracer("app")
    robot = robotlab.build(name="r", model=ScriptedModel(["hi", "again"]))
    with tracer.start_as_current_span("request") as outer:
        robot.run("go")
    run = named(EXPORTER.get_finished_spans(), "invoke_agent r")[0]
    assert run.parent.span_id == outer.get_span_context().span_id
    robotlab.configure(tracing=False)
    EXPORTER.clear()
    robot.run("go")
    assert EXPORTER.get_finished_spans() == ()
    assert not any(r.handler_class is TracingHook for r in robotlab.global_hooks().registrations())


PROBE = """
import json, os, sys
import robotlab
from robotlab.llm import ScriptedModel
net = robotlab.create_network(name="n")
net.task("t", robotlab.build(name="r", model=ScriptedModel(["ok"])))
assert net.run("go").ok
print(json.dumps({"otel": any(m.startswith("opentelemetry") for m in sys.modules),
                  "tracing": "robotlab.tracing" in sys.modules,
                  "hooks": len(robotlab.global_hooks().registrations())}))
"""


@pytest.mark.parametrize("setting", ["", "1"])
def test_tracing_off_imports_no_opentelemetry_and_the_environment_turns_it_on(setting):
    env = {**os.environ, "ROBOTLAB_TRACING": setting, "PYTHONPATH": os.pathsep.join(sys.path)}
    if not setting:
        del env["ROBOTLAB_TRACING"]
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, env=env)
    seen = json.loads(out.stdout.splitlines()[-1])
    if setting:  # on from the environment alone: the first network run is traced
        assert seen == {"otel": True, "tracing": True, "hooks": 1}
    else:
        assert seen == {"otel": False, "tracing": False, "hooks": 0}


@pytest.mark.parametrize("index", range(len(python_blocks("docs/tracing.md"))))
def test_docs_examples_run(index):
    run_block("docs/tracing.md", index)


MISSING = """
import sys
sys.modules["opentelemetry"] = None  # as if robotlab[otel] were not installed
import robotlab
try:
    robotlab.configure(tracing=True)
except robotlab.DependencyError as exc:
    print(exc)
print(robotlab.config().tracing, len(robotlab.global_hooks().registrations()))
"""


def test_turning_tracing_on_without_the_api_says_what_to_install_and_changes_nothing():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("ROBOTLAB_TRACING", None)
    out = subprocess.run([sys.executable, "-c", MISSING], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.splitlines() == ["tracing needs the OpenTelemetry API: pip install 'robotlab[otel]'",
                                       "False 0"]
