"""ask_user: the robot's input/output streams (StringIO and real pipes), handlers, the hitl hooks and events,
and a question from a worker answered in the parent."""

import io
import os

import pytest

import robotlab
from robotlab import AskUser, AskUserError
from robotlab.hooks import Hook
from robotlab.human_input import MAX_ATTEMPTS, Question, read_answer
from robotlab.llm import ScriptedModel, call
from robotlab.parallel import WorkerPool, shutdown_pool
from tests import backends
from tests.doc_blocks import python_blocks, run_block


@pytest.fixture(autouse=True, scope="module")
def _stop_pools():
    yield
    shutdown_pool()


def asking(name="helper", **arguments):
    """A robot that calls ask_user(**arguments) once, then answers ``answer: <what the tool returned>``."""
    arguments.setdefault("question", "Pick one")

    def reply(messages, tools):
        if messages[-1]["role"] == "tool":
            return f"answer: {messages[-1]['content']}"
        return call("ask_user", **arguments)

    return robotlab.build(name=name, local_tools=[AskUser], model=ScriptedModel(reply))


def test_numbered_choices_on_the_robots_streams_and_enter_takes_the_default():
    robot = asking(choices=["tea", "coffee"], default="tea")
    robot.input, robot.output = io.StringIO("2\n\n"), io.StringIO()

    assert robot.run("drink?", tools="inherit").last_text_content == "answer: coffee"
    assert robot.run("again?", tools="inherit").last_text_content == "answer: tea"  # Enter: the default
    assert robot.output.getvalue() == "\n[helper] Pick one\n  1. tea\n  2. coffee\n> [tea] " * 2


def test_answers_through_real_pipes_and_eof_gives_the_default_or_an_error():
    read_fd, write_fd = os.pipe()
    out_read, out_write = os.pipe()
    with os.fdopen(read_fd) as answers, os.fdopen(write_fd, "w") as typing, \
            os.fdopen(out_write, "w") as shown, os.fdopen(out_read) as screen:
        robot = asking(question="Your name?")
        robot.input, robot.output = answers, shown
        typing.write("Ada Lovelace\n")
        typing.flush()
        assert robot.run("who?", tools="inherit").last_text_content == "answer: Ada Lovelace"
        typing.close()  # the user is gone: EOF from now on
        assert robot.run("who?", tools="inherit").last_text_content.startswith(
            "answer: Error (ask_user): no answer to 'Your name?': the input ended (EOF) and the question has no "
            "default")
        with_default = asking(question="Proceed?", default="yes")
        with_default.input, with_default.output = answers, shown
        assert with_default.run("go?", tools="inherit").last_text_content == "answer: yes"
        shown.close()
        assert screen.read() == "\n[helper] Your name?\n> " * 2 + "\n[helper] Proceed?\n> [yes] "


def test_a_choice_out_of_range_or_unknown_text_is_asked_again_then_refused():
    question = Question("Size?", ("small", "large"), None, "shop")
    shown = io.StringIO()
    assert read_answer(question, io.StringIO("3\nhuge\nLARGE\n"), shown) == "large"
    assert shown.getvalue().count("is not one of the choices: answer with a number from 1 to 2") == 2

    with pytest.raises(AskUserError, match=rf"no valid answer to 'Size\?' after {MAX_ATTEMPTS} attempts"):
        read_answer(question, io.StringIO("0\n-1\nabc\n1\n"), io.StringIO())


def test_a_programmatic_handler_answers_sync_or_async_and_bad_answers_are_errors():
    robot = asking(choices=["red", "green"], default="green")
    robot.input = io.StringIO("")  # never read: a handler is set
    asked = []

    def pick(question):
        asked.append(question)
        return 1

    robot.ask_user_handler = pick
    assert robot.run("colour?", tools="inherit").last_text_content == "answer: red"
    assert asked == [Question("Pick one", ("red", "green"), "green", "helper")]

    async def later(question):
        return None  # the default

    robot.ask_user_handler = later
    assert robot.run("colour?", tools="inherit").last_text_content == "answer: green"
    robot.ask_user_handler = lambda question: "blue"
    assert robot.run("colour?", tools="inherit").last_text_content == (
        "answer: Error (ask_user): 'blue' is not a valid answer to 'Pick one' (choices: red, green): answer with "
        "a number from 1 to 2 or one of the choices, or Enter for 'green'")


class Answering(Hook):
    """Answers questions about the weather itself; records every question's answer and source."""

    seen: list = []

    @classmethod
    def before_hitl(cls, ctx):
        if "weather" in ctx.question:
            ctx.answer = "sunny"

    @classmethod
    def after_hitl(cls, ctx):
        cls.seen.append((ctx.robot.name, ctx.question, ctx.answer, ctx.source))


def test_hitl_hooks_fire_may_answer_and_the_events_are_streamed():
    Answering.seen = []
    robot = asking(question="What is the weather?")
    robot.on(Answering)
    assert robot.run("?", tools="inherit").last_text_content == "answer: sunny"

    other = asking(question="Your city?")
    other.input, other.output = io.StringIO("Paris\n"), io.StringIO()
    events = list(other.stream("?", tools="inherit", hooks=Answering))
    hitl = [(e.type, e.data) for e in events if e.type.startswith("hitl.")]
    assert hitl == [("hitl.requested", {"question": "Your city?", "choices": [], "default": None}),
                    ("hitl.resolved", {"question": "Your city?", "answer": "Paris", "source": "terminal"})]
    order = [e.type for e in events]
    assert order.index("tool_call.started") < order.index("hitl.requested") < order.index("tool_call.completed")
    assert Answering.seen == [("helper", "What is the weather?", "sunny", "hook"),
                              ("helper", "Your city?", "Paris", "terminal")]


@pytest.fixture(params=["process", "subinterpreter", "ray"])
def mode(request):
    """Each mode in turn; one this interpreter lacks is skipped with its DependencyError (failed if required)."""
    return backends.prepared(request, request.param)


def test_a_robot_in_a_worker_asks_and_the_parent_answers(mode):
    robot = asking(choices=["tea", "coffee"])
    robot.input, robot.output = io.StringIO("2\n"), io.StringIO()
    net = robotlab.create_network(name="cafe", parallel_mode=mode)
    net.task("order", robot, tools="inherit")

    events = list(net.stream("drink?"))
    result = events[-1].result
    assert result["order"].worker == mode and result.value == "answer: coffee"
    assert robot.output.getvalue() == "\n[helper] Pick one\n  1. tea\n  2. coffee\n> "  # written in the parent
    assert [(e.task, e.type, e.data.get("answer")) for e in events if e.type.startswith("hitl.")] == [
        ("order", "hitl.requested", None), ("order", "hitl.resolved", "coffee")]

    where = []
    robot.ask_user_handler = lambda question: where.append(os.getpid()) or "tea"
    assert net.run("drink?").value == "answer: tea"
    assert where == [os.getpid()]
    robot.ask_user_handler = lambda question: "juice"  # the parent's AskUserError reaches the worker's tool
    assert net.run("drink?").value.startswith("answer: Error (ask_user): 'juice' is not a valid answer")


@pytest.mark.parametrize("index", [i for i, code in enumerate(python_blocks("docs/robots-and-tools.md"))
                                   if "ask_user" in code])
def test_the_ask_user_example_of_the_robots_page_runs(index):
    run_block("docs/robots-and-tools.md", index)


def test_a_bare_pool_job_cannot_ask_and_says_why():
    with WorkerPool(size=1, backend="thread") as pool:
        with pytest.raises(robotlab.ToolError, match="ask_user cannot ask from a bare pool job"):
            pool.submit_tool(AskUser, {"question": "Anyone?"}).result()
