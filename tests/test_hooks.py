"""The hook system, against hooks.md of the seeds."""

import io
import threading

import pytest

import robotlab
from robotlab.hooks import (
    FAMILIES,
    CompactionHookContext,
    DotState,
    Hook,
    HookContext,
    HookRegistry,
    Hooks,
    LearnHookContext,
    Narrator,
    NetworkRunHookContext,
    Registration,
    RunHookContext,
    ScopedThreadPoolExecutor,
    TaskHookContext,
    ToolCallHookContext,
    current_hook_scope,
    with_hook_scope,
)

CONTEXTS = {
    "run": RunHookContext,
    "llm_generation": robotlab.LlmGenerationHookContext,
    "tool_call": ToolCallHookContext,
    "network_run": NetworkRunHookContext,
    "task": TaskHookContext,
    "compaction": CompactionHookContext,
    "learn": LearnHookContext,
    "hitl": robotlab.HitlHookContext,
}


def recorder(label, log, family="run"):
    """A Hook class recording before/around/after/on_error of *family* into *log*."""

    def before(cls, ctx):
        log.append(f"{label}.before")

    def around(cls, ctx, block):
        log.append(f"{label}.around>")
        value = block()
        log.append(f"{label}.around<")
        return value

    def after(cls, ctx):
        log.append(f"{label}.after")

    def on_error(cls, ctx):
        log.append(f"{label}.on_error:{type(ctx.error).__name__}")

    return type(
        label,
        (Hook,),
        {
            f"before_{family}": classmethod(before),
            f"around_{family}": classmethod(around),
            f"after_{family}": classmethod(after),
            "on_error": classmethod(on_error),
        },
    )


# -- Hook ------------------------------------------------------------------


def test_namespace_derived_set_not_inherited_and_none_on_base():
    class TimerHook(Hook):
        pass

    class Tracer(Hook):
        namespace = "trace"

    class SubTracer(Tracer):
        pass

    class HTTPAudit(Hook):
        pass

    assert TimerHook.namespace == "timer_hook"
    assert Tracer.namespace == "trace"
    assert SubTracer.namespace == "sub_tracer"
    assert HTTPAudit.namespace == "http_audit"
    assert Hook.namespace is None
    Tracer.namespace = "t2"
    assert Tracer.namespace == "t2" and SubTracer.namespace == "sub_tracer"


def test_hook_call_three_cases():
    class H(Hook):
        @classmethod
        def before_run(cls, ctx):
            return "called"

        @classmethod
        def _private(cls, ctx):
            return "never"

    assert H.call("before_run", object()) == "called"
    assert H.call("around_run", object(), lambda: "passthrough") == "passthrough"
    assert H.call("after_run", object()) is None
    assert H.call("_private", object()) is None  # non-public hooks never fire


# -- HookRegistry -------------------------------------------------------------


def test_registry_on_validates_and_filters():
    registry = HookRegistry()
    with pytest.raises(TypeError):
        registry.on(object)
    with pytest.raises(ValueError, match="namespace"):
        registry.on(Hook)
    log = []
    a = recorder("A", log)
    reg = registry.on(a, context={"x": 1})
    assert reg == Registration(a, {"x": 1}) and reg.namespace == "a"

    class Other(Hook):
        @classmethod
        def after_task(cls, ctx): ...

    registry.on(Other)
    assert [r.handler_class for r in registry.registrations_for("before_run")] == [a]
    copy = registry.registrations()
    copy.clear()
    assert len(registry.registrations()) == 2
    internal = registry.clear()
    assert internal == [] and registry.registrations() == []


def test_clear_hooks_replaces_the_global_registry():
    before = robotlab.global_hooks()
    robotlab.on(recorder("G", []))
    after = robotlab.clear_hooks()
    assert after is not before and robotlab.global_hooks() is after
    assert after.registrations() == [] and len(before.registrations()) == 1


# -- dispatcher ---------------------------------------------------------------


def test_firing_order_across_four_levels_with_around_nesting():
    log = []
    levels = [HookRegistry(), HookRegistry(), HookRegistry()]
    for label, registry in zip(("Global", "Network", "Robot"), levels, strict=True):
        registry.on(recorder(label, log))
    per_run = recorder("PerRun", log)

    def body():
        log.append("body")
        return "result"

    ctx = RunHookContext(request="hi")
    assert Hooks.run("run", ctx, levels, per_run, body) == "result"
    assert log == [
        "Global.before", "Network.before", "Robot.before", "PerRun.before",
        "Global.around>", "Network.around>", "Robot.around>", "PerRun.around>",
        "body",
        "PerRun.around<", "Robot.around<", "Network.around<", "Global.around<",
        "Global.after", "Network.after", "Robot.after", "PerRun.after",
    ]
    assert ctx.response == "result"


def test_none_registries_are_skipped_and_per_run_list_accepted():
    log = []
    registry = HookRegistry()
    registry.on(recorder("R", log))
    Hooks.run("run", RunHookContext(), [None, registry, None], [recorder("P1", log), recorder("P2", log)])
    assert [e for e in log if e.endswith(".before")] == ["R.before", "P1.before", "P2.before"]


@pytest.mark.parametrize("family", FAMILIES)
def test_on_error_only_for_run_network_run_task_and_error_reraised_unchanged(family):
    log = []
    registry = HookRegistry()
    registry.on(recorder("H", log, family))
    ctx = CONTEXTS[family]()
    boom = RuntimeError("boom")

    def body():
        raise boom

    with pytest.raises(RuntimeError) as caught:
        Hooks.run(family, ctx, [registry], None, body)
    assert caught.value is boom
    if family == "tool_call":
        assert not hasattr(ctx, "error")  # no error writer: tool errors live on ctx.tool_error
    else:
        assert ctx.error is boom
    fired = "H.on_error:RuntimeError" in log
    assert fired is (family in ("run", "network_run", "task"))
    assert "H.after" not in log


def test_base_exceptions_are_covered_and_reraised():
    log = []
    registry = HookRegistry()
    registry.on(recorder("H", log))
    ctx = RunHookContext()
    interrupt = KeyboardInterrupt()

    def body():
        raise interrupt

    with pytest.raises(KeyboardInterrupt) as caught:
        Hooks.run("run", ctx, [registry], None, body)
    assert caught.value is interrupt and ctx.error is interrupt
    assert "H.on_error:KeyboardInterrupt" in log


def test_around_can_replace_the_result_and_block_the_body():
    class Block(Hook):
        @classmethod
        def around_tool_call(cls, ctx, block):
            ctx.tool_result = "blocked"
            return "blocked"

    ran = []
    registry = HookRegistry()
    registry.on(Block)
    ctx = ToolCallHookContext(tool=None, tool_args={})
    assert Hooks.run("tool_call", ctx, [registry], None, lambda: ran.append(1)) == "blocked"
    assert ran == [] and ctx.tool_result == "blocked"


def test_registration_context_is_defaults_not_override():
    seen = []

    class Cfg(Hook):
        @classmethod
        def before_run(cls, ctx):
            seen.append((ctx.local.level, ctx.local.extra))

    registry = HookRegistry()
    registry.on(Cfg, context={"level": "debug", "extra": 1})
    ctx = RunHookContext()
    ctx.ext("cfg").level = "already-set"
    Hooks.run("run", ctx, [registry])
    assert seen == [("already-set", 1)]
    assert DotState({"a": 1}).merge_defaults({"a": 2, "b": 3}).to_dict() == {"a": 1, "b": 3}


def test_local_is_namespaced_per_handler():
    class First(Hook):
        @classmethod
        def before_run(cls, ctx):
            ctx.local.value = "first"

    class Second(Hook):
        @classmethod
        def before_run(cls, ctx):
            ctx.local.value = "second"

        @classmethod
        def after_run(cls, ctx):
            ctx.local.peek = ctx.ext("first").value

    registry = HookRegistry()
    registry.on(First)
    registry.on(Second)
    ctx = RunHookContext()
    Hooks.run("run", ctx, [registry])
    assert ctx.metadata.to_dict() == {"first": {"value": "first"}, "second": {"value": "second", "peek": "first"}}


def test_local_outside_a_namespace_raises():
    with pytest.raises(ValueError, match=r"^No hook namespace active$"):
        _ = HookContext("run").local
    assert DotState().anything is None


@pytest.mark.parametrize(
    ("family", "attr"),
    [("run", "response"), ("network_run", "result"), ("task", "result"), ("llm_generation", "generation_response")],
)
def test_set_result_mapping(family, attr):
    ctx = CONTEXTS[family]()
    Hooks.run(family, ctx, [], None, lambda: "value")
    assert getattr(ctx, attr) == "value"


def test_set_result_skips_families_without_a_result_field():
    ctx = LearnHookContext(text="x")
    Hooks.set_result(ctx, "learn", "value")
    assert ctx.stored is False
    ctx = ToolCallHookContext(tool=None)
    Hooks.set_result(ctx, "tool_call", "value")
    assert ctx.tool_result is None


def test_readonly_and_rw_fields_and_to_dict():
    class FakeTool:
        name = "fetch"

    ctx = ToolCallHookContext(tool=FakeTool(), tool_args={"id": 1})
    assert ctx.tool_name == "fetch" and ctx.event == "tool_call"
    with pytest.raises(AttributeError):
        ctx.tool_args = {}
    ctx.tool_result = "ok"
    snapshot = ctx.to_dict()
    assert snapshot["tool_result"] == "ok" and snapshot["tool_name"] == "fetch" and snapshot["metadata"] == {}
    assert ToolCallHookContext(tool=object()).tool_name == "object"

    class T:
        name = "triage"
        robot = "the-robot"

    task_ctx = TaskHookContext(task=T())
    assert task_ctx.task_name == "triage" and task_ctx.robot == "the-robot"
    run_ctx = RunHookContext(request="a")
    run_ctx.request = "rewritten"
    with pytest.raises(AttributeError):
        run_ctx.robot = 1
    assert robotlab.LlmGenerationHookContext().iteration == 0
    assert robotlab.LlmGenerationHookContext().event == "run"
    compaction = CompactionHookContext(strategy="custom")
    assert compaction.handled is False
    compaction.compacted_messages = []
    assert compaction.handled is True


def test_point_hooks_via_call():
    seen = []

    class Learner(Hook):
        @classmethod
        def on_learn(cls, ctx):
            seen.append(ctx.text)

    registry = HookRegistry()
    registry.on(Learner)
    Hooks.call("on_learn", LearnHookContext(text="fact"), [registry])
    assert seen == ["fact"]


# -- scope --------------------------------------------------------------------


def test_hook_scope_nests_restores_and_crosses_robotlab_threads_only():
    outer, inner = HookRegistry(), HookRegistry()
    assert current_hook_scope() is None
    with with_hook_scope([outer]) as scope:
        assert current_hook_scope() is scope
        with with_hook_scope([inner], recorder("P", [])):
            assert current_hook_scope().registries == (inner,)
            assert len(current_hook_scope().per_run_hooks) == 1
            with ScopedThreadPoolExecutor(max_workers=2) as pool:
                seen_in_pool = pool.submit(current_hook_scope).result()
            seen_in_thread = []
            t = threading.Thread(target=lambda: seen_in_thread.append(current_hook_scope()))
            t.start()
            t.join()
        assert current_hook_scope() is scope
    assert current_hook_scope() is None
    assert seen_in_pool.registries == (inner,)
    assert seen_in_thread == [None]


# -- Narrator -------------------------------------------------------------------


def test_narrator_traces_a_run():
    stream = io.StringIO()
    registry = HookRegistry()
    Narrator.enable(stream=stream, registry=registry)

    class R:
        name = "writer"

    Hooks.run("run", RunHookContext(robot=R(), request="Summarise this"), [registry], None, lambda: "done")
    with pytest.raises(ValueError):
        Hooks.run("task", TaskHookContext(), [registry], None, lambda: (_ for _ in ()).throw(ValueError("bad")))
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[run] robot=writer request='Summarise this'"
    assert lines[1].startswith("[run] robot=writer -> 'done' (")
    assert any(line == "[task] error: ValueError: bad" for line in lines)
