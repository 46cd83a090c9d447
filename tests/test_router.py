"""Router networks: a router (callable or robot) picks the next robot after each step, in every parallel mode."""

import asyncio
import itertools

import pytest

import robotlab
from robotlab import ConfigurationError, RouterArgs, RouterError, RouterLoopError
from robotlab.llm import ScriptedModel
from robotlab.parallel import shutdown_pool
from tests import backends
from tests.doc_blocks import python_blocks, run_block


@pytest.fixture(autouse=True, scope="module")
def _stop_pools():
    yield
    shutdown_pool()


def echoing(name, reply=None):
    """A robot that answers ``<name>: <its prompt's first line>`` (or *reply*), so a test sees what it was given."""
    def answer(messages, tools):
        return reply if reply is not None else f"{name}: {messages[-1]['content'].splitlines()[0]}"

    return robotlab.build(name=name, model=ScriptedModel(answer))


def support_desk(mode="thread", **options):
    classifier = robotlab.build(name="classifier", model=ScriptedModel(
        lambda messages, tools: "billing" if "charged" in messages[-1]["content"] else "technical"))
    net = robotlab.create_network(name="desk", router=classifier, parallel_mode=mode, **options)
    net.task("billing", echoing("billing"))
    net.task("technical", echoing("technical"))
    return net


@pytest.fixture(params=["thread", "process", "subinterpreter", "ray"])
def mode(request):
    """Each mode in turn; one this interpreter lacks is skipped with its DependencyError (failed if required)."""
    return backends.prepared(request, request.param)


def test_a_robot_router_classifies_then_the_robot_it_names_runs(mode):
    result = support_desk(mode).run("I was charged twice")

    assert list(result.tasks) == ["classifier", "billing"]
    assert result.value == "billing: I was charged twice"
    assert {o.worker for o in result.tasks.values()} == {mode}
    # The routed robot's prompt carries the step before it, as a dependency's answer would.
    assert result["billing"].result.messages[-2]["content"].endswith("[classifier] billing")
    assert support_desk(mode).run("my screen is blank").value == "technical: my screen is blank"


def test_a_robot_routers_answer_may_name_several_robots_loosely_or_none():
    answers = iter(["Billing, 'technical'.", "none"])
    classifier = robotlab.build(name="classifier", model=ScriptedModel(lambda m, t: next(answers)))
    net = robotlab.create_network(name="desk", router=classifier)
    net.task("billing", echoing("billing"))
    net.task("technical", echoing("technical"))
    assert list(net.run("both?").tasks) == ["classifier", "billing", "technical"]
    assert list(net.run("neither?").tasks) == ["classifier"]


def test_a_callable_router_sees_its_args_and_a_list_runs_one_robot_after_another():
    seen = []

    def route(args: RouterArgs):
        seen.append((args.call_count, [r.name for r in args.stack],
                     args.last_result.robot_name if args.last_result else None, args.message, args.context["lang"]))
        assert args.memory is args.network.memory
        if args.call_count == 0:
            return ["a", net.tasks["b"].robot, "a"]  # a robot already queued is not queued twice
        if args.call_count == 2:
            return "a"  # the same robot again: a second step of its task
        return None

    net = robotlab.create_network(name="seq", router=route)
    net.task("a", echoing("a"))
    net.task("b", echoing("b"))
    result = net.run("hello", lang="en")

    assert seen == [(0, [], None, "hello", "en"), (1, ["b"], "a", "hello", "en"),
                    (2, [], "b", "hello", "en"), (3, [], "a", "hello", "en")]
    assert list(result.tasks) == ["a", "b", "a#2"]
    steps = list(result.tasks.values())
    assert all(before.finished <= after.started for before, after in itertools.pairwise(steps))
    assert result.value == "a: hello" and result.ok
    assert [r.robot_name for r in result.memory.results] == ["a", "b", "a"]


def test_an_async_router_works_with_run_async_and_stream():
    async def route(args):
        await asyncio.sleep(0)
        return None if args.call_count else "only"

    net = robotlab.create_network(name="async", router=route)
    net.task("only", echoing("only"))
    assert asyncio.run(net.run_async("ping")).value == "only: ping"

    events = list(net.stream("pong"))
    assert [(e.task, e.type) for e in events if e.type.startswith("task.")] == [
        ("only", "task.started"), ("only", "task.completed")]
    assert events[-1].type == "stream.ended" and events[-1].result.value == "only: pong"


def test_an_unknown_robot_name_is_a_router_error_listing_the_known_robots():
    net = robotlab.create_network(name="desk", router=lambda args: "sales")
    net.task("billing", echoing("billing"))
    net.task("tech", echoing("technical"))
    with pytest.raises(RouterError, match=r"returned 'sales', which is not a robot of the network; "
                                          r"known robots: billing, tech, technical"):
        net.run("hi")
    with pytest.raises(RouterError, match="returned 42"):
        robotlab.create_network(name="n", router=lambda args: 42).run("hi")


def test_a_router_that_never_stops_hits_max_steps():
    net = robotlab.create_network(name="loop", router=lambda args: "ping", max_steps=3)
    net.task("ping", echoing("ping"))
    with pytest.raises(RouterLoopError) as info:
        net.run("again")
    assert str(info.value) == (
        "Router loop: network 'loop' ran max_steps (3) robots and its router routed to another; return None from "
        "the router to stop, or raise the limit with create_network(..., max_steps=N)")
    assert list(info.value.network_result.tasks) == ["ping", "ping#2", "ping#3"]

    bounded = robotlab.create_network(name="loop", router=lambda a: "ping" if a.call_count < 4 else None,
                                      max_steps=4)
    bounded.task("ping", echoing("ping"))
    assert len(bounded.run("again").tasks) == 4  # exactly max_steps is allowed


def test_a_failed_step_ends_the_run_and_the_result_reports_it():
    calls = []

    def route(args):
        calls.append(args.call_count)
        return "broken" if args.call_count == 0 else "never"

    net = robotlab.create_network(name="fails", router=route)
    net.task("broken", robotlab.build(name="broken", model=ScriptedModel([])))  # no reply left: it fails
    result = net.run("go")
    assert calls == [0] and not result.ok and result.value is None
    assert result["broken"].status == "failed"


def test_router_networks_refuse_bad_configuration():
    with pytest.raises(ConfigurationError, match="router must be a callable"):
        robotlab.create_network(name="n", router="billing")
    with pytest.raises(ConfigurationError, match="max_steps must be an integer >= 1, got 0"):
        robotlab.create_network(name="n", router=lambda a: None, max_steps=0)
    net = robotlab.create_network(name="n", router=lambda a: None)
    net.task("a", echoing("a"))
    net.task("b", echoing("b"), depends_on=["a"])
    with pytest.raises(ConfigurationError, match="has a router: its tasks take no depends_on"):
        net.run("x")


@pytest.mark.parametrize("index", [i for i, code in enumerate(python_blocks("docs/networks.md")) if "router=" in code])
def test_the_router_examples_of_the_networks_page_run(index):
    run_block("docs/networks.md", index)
