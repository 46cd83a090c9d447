"""Networks: the same suite in every parallel mode ("thread", "process", "ray" on the session's local Ray
cluster, and "subinterpreter" on 3.13+)."""

import os
import threading
import time

import pytest

import robotlab
from robotlab import ConfigurationError, DependencyError, RactorBoundaryError, WorkerCrashed
from robotlab.hooks import Hook
from robotlab.llm import EchoModel, LlmReply, ScriptedModel, Usage, call
from robotlab.parallel import shutdown_pool
from robotlab.task import UpstreamFailed
from tests import backends
from tests import network_jobs as jobs


@pytest.fixture(autouse=True, scope="module")
def _stop_pools():
    yield
    shutdown_pool()


def tool_robot(name, seconds=0.2):
    return robotlab.build(
        name=name, model=ScriptedModel([call("wait_io", seconds=seconds), f"{name} done"]), local_tools=[jobs.wait_io]
    )


def test_independent_tasks_run_at_the_same_time(mode):
    # Each task waits (through the shared memory) for the other one to arrive: run one
    # after the other, the first would wait 30 s and fail.
    net = robotlab.create_network(name="fan", parallel_mode=mode)
    for me, partner in (("a", "b"), ("b", "a")):
        model = ScriptedModel([call("rendezvous", me=me, partner=partner), f"{me} done"])
        net.task(me, robotlab.build(name=me, model=model, local_tools=[jobs.Rendezvous]), tools="inherit")
    result = net.run("go")
    assert result.ok, result.errors
    a, b = (result[name].result.tool_calls[0].result for name in ("a", "b"))
    assert a.startswith("a met b from pid") and b.startswith("b met a from pid")
    assert type(result) is robotlab.NetworkResult and {o.worker for o in result.tasks.values()} == {mode}


def test_dependants_see_results_and_start_without_waiting_for_unrelated_tasks(mode):
    net = robotlab.create_network(name="dag", parallel_mode=mode)
    net.task("slow", tool_robot("slow", 0.6), tools="inherit")
    net.task("fast", tool_robot("fast", 0.05), tools="inherit")
    after_fast = ScriptedModel(lambda messages, tools: messages[-1]["content"])
    net.task("after_fast", robotlab.build(name="af", model=after_fast), depends_on=["fast"])
    result = net.run("start")
    assert result["after_fast"].finished < result["slow"].finished  # no waves
    assert "[fast] fast done" in result.results["after_fast"].last_text_content
    assert set(result.sinks) == {"slow", "after_fast"}


def test_failed_task_fails_dependants_and_fires_on_error_while_other_branches_finish(mode):
    jobs.Watch.seen.clear()

    def boom(messages, tools):
        raise ConnectionError("down")

    net = robotlab.create_network(name="f", parallel_mode=mode)
    net.task("bad", robotlab.build(name="bad", model=ScriptedModel(boom)))
    net.task("child", robotlab.build(name="child", model=EchoModel()), depends_on=["bad"])
    net.task("grandchild", robotlab.build(name="gc", model=EchoModel()), depends_on=["child"])
    net.task("ok", robotlab.build(name="okr", model=EchoModel()))
    net.on(jobs.Watch)
    result = net.run("x")
    assert not result.ok
    assert result["ok"].status == "ok"
    assert isinstance(result.errors["bad"], robotlab.InferenceError)
    assert "model 'scripted' failed: down" in str(result.errors["bad"])
    assert isinstance(result.errors["child"], UpstreamFailed)
    assert isinstance(result.errors["grandchild"], UpstreamFailed)
    seen = jobs.Watch.seen  # task hooks fire in the parent, in every mode
    assert ("task", "bad", "InferenceError") in seen and ("task", "child", "UpstreamFailed") in seen
    with pytest.raises(robotlab.InferenceError):
        result.raise_for_errors()


def tool_then_failure(messages, tools):
    """A model function: ask for the ``where`` tool (10 + 4 tokens, $0.01), then fail."""
    if not any(m["role"] == "tool" for m in messages):
        return LlmReply(tool_calls=[call("where")], usage=Usage(10, 4), cost=0.01)
    raise ValueError("model broke")


def test_a_failed_network_task_holds_its_partial_result(mode):
    net = robotlab.create_network(name="partial", parallel_mode=mode)
    failing = robotlab.build(name="f", model=ScriptedModel(tool_then_failure),
                             local_tools=[jobs.where])
    net.task("t", failing, tools="inherit", retries=3)  # not retryable: one attempt
    net.task("after", robotlab.build(name="a", model=ScriptedModel(["never"])), depends_on=["t"])
    result = net.run("where are you?")
    outcome = result["t"]
    assert outcome.status == "failed" and outcome.result is None and outcome.attempts == 1
    partial = outcome.partial_result
    assert partial.llm_calls == 1 and partial.total_tokens == 14 and partial.cost == pytest.approx(0.01)
    assert [c.name for c in partial.tool_calls] == ["where"]
    assert [m["role"] for m in partial.messages] == ["user", "assistant", "tool"]
    assert outcome.error.partial_result == outcome.partial_result
    if mode in ("process", "ray"):  # the tool ran in a worker; what it did came back with the error
        assert outcome.partial_result.tool_calls[0].result != os.getpid()
    assert result["after"].partial_result is None  # never ran
    data = outcome.to_dict()["partial_result"]
    assert data["total_tokens"] == 14 and [c["name"] for c in data["tool_calls"]] == ["where"]
    assert result.results == {} and len(result.memory.results) == 0


def test_cycles_and_unknown_dependencies_are_refused_before_anything_runs():
    model = ScriptedModel([])
    net = robotlab.create_network(name="c")
    net.task("a", robotlab.build(name="a", model=model), depends_on=["b"])
    net.task("b", robotlab.build(name="b", model=model), depends_on=["a"])
    with pytest.raises(ConfigurationError, match="cycle: a -> b -> a"):
        net.run("x")
    net2 = robotlab.create_network(name="u")
    net2.task("a", robotlab.build(name="a", model=model), depends_on=["ghost"])
    with pytest.raises(ConfigurationError, match="unknown task"):
        net2.run("x")
    assert model.calls == []


def test_shared_memory_blocking_read_between_tasks(mode):
    net = robotlab.create_network(name="m", parallel_mode=mode)

    def waiter(messages, tools):  # models run in this process in every mode
        return f"got {net.memory.get('sentiment', wait=30)}"

    net.task("writer", robotlab.build(name="w", model=ScriptedModel([call("publish", key="sentiment",
                                                                          value="positive"), "ok"]),
                                      local_tools=[jobs.Publish]), tools="inherit")
    net.task("reader", robotlab.build(name="rd", model=ScriptedModel(waiter)))
    result = net.run("x", customer="ada")
    assert result.results["reader"].last_text_content == "got positive"
    assert result.memory.data.customer == "ada"
    assert len(result.memory.results) == 2


def test_network_and_task_hooks_fire_in_order(mode):
    log = []
    lock = threading.Lock()

    class Trace(Hook):  # network_run and task hooks stay in the parent: a local class is fine
        @classmethod
        def before_network_run(cls, ctx):
            log.append("network.before")

        @classmethod
        def after_network_run(cls, ctx):
            log.append(f"network.after:{ctx.result.ok}")

        @classmethod
        def before_task(cls, ctx):
            with lock:
                log.append(f"task:{ctx.task_name}")

    net = robotlab.create_network(name="h", parallel_mode=mode)
    net.task("a", robotlab.build(name="a", model=EchoModel()))
    net.task("b", robotlab.build(name="b", model=EchoModel()), depends_on=["a"])
    net.on(Trace)
    net.run("x")
    assert log == ["network.before", "task:a", "task:b", "network.after:True"]


def test_optional_task_runs_only_when_activated(mode):
    net = robotlab.create_network(name="o", parallel_mode=mode)
    triage = robotlab.build(name="triage", model=ScriptedModel(["escalating"]))
    triage.on(jobs.Escalate)  # activates "billing" after the run, from wherever the robot runs
    net.task("triage", triage)
    net.task("billing", robotlab.build(name="b", model=EchoModel()), depends_on="optional")
    net.task("never", robotlab.build(name="n", model=EchoModel()), depends_on="optional")
    result = net.run("refund please")
    assert result["billing"].status == "ok" and result["never"].status == "skipped"
    with pytest.raises(ConfigurationError):
        net.activate("billing")


def test_retries_only_for_retryable_errors(mode):
    attempts = []

    def flaky(messages, tools):
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("flaky")  # becomes a retryable InferenceError
        return "third time lucky"

    net = robotlab.create_network(name="r", parallel_mode=mode)
    net.task("t", robotlab.build(name="t", model=ScriptedModel(flaky)), retries=2)
    result = net.run("x")
    assert result.value == "third time lucky" and result["t"].attempts == 3

    def config_bug(messages, tools):
        attempts.append(1)
        raise robotlab.ConfigurationError("not retryable")

    attempts.clear()
    net2 = robotlab.create_network(name="r2", parallel_mode=mode)
    net2.task("t", robotlab.build(name="t", model=ScriptedModel(config_bug)), retries=5)
    assert net2.run("x")["t"].attempts == 1 and len(attempts) == 1


def test_shared_budget_allows_exactly_k_parallel_calls(mode):
    def costly(messages, tools):
        time.sleep(0.05)  # keep the calls overlapping
        return LlmReply(text="answer", usage=Usage(0, 100))

    # Each call reserves its prompt estimate + max_tokens (~102) and spends 100: 310 fits exactly three.
    net = robotlab.create_network(name="b", config=robotlab.RunConfig(token_budget=310, max_tokens=100),
                                  parallel_mode=mode)
    for i in range(6):
        net.task(f"t{i}", robotlab.build(name=f"r{i}", model=ScriptedModel(costly)))
    result = net.run("go")
    assert len(result.results) == 3
    assert all(isinstance(e, robotlab.BudgetExceeded) for e in result.errors.values()) and len(result.errors) == 3
    assert net._ledger.committed("tokens") == 300 and net._ledger.pending("tokens") == 0


def test_a_robot_keeps_its_conversation_from_one_task_to_the_next(mode):
    model = ScriptedModel(lambda messages, tools: f"turn {sum(m['role'] == 'user' for m in messages)}")
    robot = robotlab.build(name="same", model=model, system_prompt="be brief")
    net = robotlab.create_network(name="twice", parallel_mode=mode)
    net.task("first", robot)
    net.task("second", robot, depends_on=["first"], message=lambda message, results: "again")
    result = net.run("hello")
    assert result.value == "turn 2"
    assert [m["content"] for m in robot.messages] == ["be brief", "hello", "turn 1", "again", "turn 2"]


def test_hooks_of_every_level_fire_where_the_robot_runs_and_their_metadata_returns(mode):
    robotlab.on(jobs.RunStamp)
    net = robotlab.create_network(name="stamped", parallel_mode=mode)
    robot = robotlab.build(name="r", model=ScriptedModel([call("where"), "done"]), local_tools=[jobs.where])
    net.task("t", robot, tools="inherit")
    result = net.run("go")
    record = result["t"].result.tool_calls[0]
    assert result["t"].result.hook_metadata["run_stamp"]["run_pid"] == record.result
    assert record.hook_metadata["run_stamp"]["tool_pid"] == record.result
    if mode in ("process", "ray"):
        assert record.result != os.getpid()
    else:  # threads and subinterpreters share this process
        assert record.result == os.getpid()


def test_unknown_parallel_mode_is_refused():
    with pytest.raises(ConfigurationError, match="parallel_mode must be one of"):
        robotlab.create_network(name="x", parallel_mode="gpu")


@pytest.mark.parametrize("mode", ["process", "subinterpreter", "ray"], indirect=True)
def test_what_cannot_run_in_a_worker_is_refused_before_anything_runs(mode):
    @robotlab.tool
    def local_tool() -> str:
        """Defined in a function: workers cannot import it."""
        return "x"

    model = ScriptedModel(["never called"])
    net = robotlab.create_network(name="refuse", parallel_mode=mode)
    net.task("fine", robotlab.build(name="fine", model=model))
    net.task("bad", robotlab.build(name="bad", model=model, local_tools=[local_tool]))
    with pytest.raises(RactorBoundaryError, match=r"task 'bad' cannot run with parallel_mode=.*tool 'local_tool'.*"
                                                  r"inside a function"):
        net.run("x")

    class LocalHook(Hook):
        @classmethod
        def before_run(cls, ctx):
            pass

    net2 = robotlab.create_network(name="refuse_hook", parallel_mode=mode)
    robot = robotlab.build(name="hooked", model=model)
    robot.on(LocalHook)
    net2.task("hooked", robot)
    with pytest.raises(RactorBoundaryError, match=r"task 'hooked'.*Hook .*LocalHook cannot be registered in a worker"):
        net2.run("x")
    assert model.calls == []


def test_subinterpreter_mode_refuses_robots_whose_modules_cannot_load_there_before_the_run():
    backends.use("subinterpreter")
    model = ScriptedModel(["never called"])
    net = robotlab.create_network(name="sub", parallel_mode="subinterpreter")
    net.task("mcp", robotlab.build(name="mcp_user", model=model,
                                   mcp=[{"name": "time", "transport": "stdio", "command": "mcp-server-time"}]))
    with pytest.raises(DependencyError, match=r"task 'mcp'.*cannot be imported in a subinterpreter.*"
                                              r"backend='process'"):
        net.run("x")
    assert model.calls == []


@pytest.mark.parametrize("mode", ["process", "ray"], indirect=True)  # workers that are processes of their own
def test_a_worker_crash_fails_its_task_and_a_retry_runs_it_again(mode):
    net = robotlab.create_network(name="crash", parallel_mode=mode)
    crashing = robotlab.build(name="c", model=ScriptedModel([call("crash_once"), "unreachable"]),
                              local_tools=[jobs.CrashOnce])
    net.task("crashes", crashing, tools="inherit")
    net.task("after", robotlab.build(name="a", model=EchoModel()), depends_on=["crashes"])
    net.task("unrelated", robotlab.build(name="u", model=EchoModel()))
    result = net.run("x")
    # Ray tells the driver that the actor was lost, not the signal that ended it
    cause = "the loss of its Ray actor" if mode == "ray" else "signal SIGKILL"
    assert isinstance(result.errors["crashes"], WorkerCrashed) and cause in str(result.errors["crashes"])
    assert isinstance(result.errors["after"], UpstreamFailed) and result["unrelated"].status == "ok"

    again = robotlab.create_network(name="crash_retry", parallel_mode=mode)
    model = ScriptedModel(lambda messages, tools: "recovered" if messages[-1]["role"] == "tool" else call("crash_once"))
    again.task("crashes", robotlab.build(name="c2", model=model, local_tools=[jobs.CrashOnce]), tools="inherit",
               retries=1)
    result = again.run("x")
    assert result.ok and result["crashes"].attempts == 2 and result.value == "recovered"
    assert result.memory.get("crashed") not in (None, os.getpid())


def test_demo_runs_offline(capsys):
    from robotlab.demo import run_demo

    assert run_demo() == 0
    out = capsys.readouterr().out
    assert "final answer: Dear customer" in out and "hook events:" in out and "tool_call=3" in out


def test_a_litellm_model_is_called_in_the_parent_and_its_raw_response_stays_there(mode):
    # One worker runs both tasks: after the litellm robot's run there, the next task's tool
    # looks whether the worker had to import litellm (a subinterpreter could not: pydantic_core).
    from robotlab.llm import LiteLLMModel

    net = robotlab.create_network(name="llm", parallel_mode=mode, config=robotlab.RunConfig(pool_size=1))
    net.task("ask", robotlab.build(name="ask", model=LiteLLMModel("openai/gpt-4o-mini", mock_response="mocked!")))
    net.task("probe", robotlab.build(name="probe", model=ScriptedModel([call("litellm_loaded"), "done"]),
                                     local_tools=[jobs.litellm_loaded]), depends_on=["ask"], tools="inherit")
    result = net.run("hi")
    assert result.ok, result.errors
    assert result.results["ask"].last_text_content == "mocked!"
    assert result.results["probe"].tool_calls[0].result is (mode == "thread")


def test_robots_that_rebuild_alike_are_checked_once_and_a_pool_remembers(monkeypatch):
    from robotlab.parallel import default_pool

    shutdown_pool()  # a fresh pool has checked nothing yet
    pool = default_pool("process", 2)
    checks = []
    submit = pool.submit

    def counting_submit(fn, *args, **kwargs):
        if fn == "robotlab.parallel.robot_job:check_robot":
            checks.append(args[0].name)
        return submit(fn, *args, **kwargs)

    monkeypatch.setattr(pool, "submit", counting_submit)

    def network():
        net = robotlab.create_network(name="alike", parallel_mode="process", config=robotlab.RunConfig(pool_size=2))
        for name in ("a", "b", "c"):  # same tools, other names: they rebuild alike
            net.task(name, tool_robot(name, 0.01), tools="inherit")
        net.task("d", robotlab.build(name="d", model=ScriptedModel([call("where"), "d done"]),
                                     local_tools=[jobs.where]), tools="inherit")
        return net

    assert network().run("go").ok
    assert sorted(checks) == ["a", "d"]
    assert network().run("again").ok
    assert sorted(checks) == ["a", "d"]  # nothing new to check on this pool
