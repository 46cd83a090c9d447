"""Doom-loop detection (robot_lab's DoomLoopDetector) and the tool-round circuit breaker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import robotlab
from robotlab import ToolLoopError
from robotlab.doom_loop import MAX_PERIOD, DoomLoopDetector
from robotlab.hooks import Hook
from robotlab.llm import ScriptedModel, call

ADVICE = ("You appear to be stuck in a loop. Try a fundamentally different approach, use a different tool, "
          "or ask for clarification.")


def detector(names, threshold=3):
    d = DoomLoopDetector(threshold)
    for name in names:
        d.track(name)
    return d


def test_one_tool_called_threshold_times_in_a_row():
    assert not detector(["a", "a"]).doom_loop()
    d = detector(["b", "a", "a", "a"])
    assert d.doom_loop() and d.pattern() == ["a"]
    assert d.warning_message() == f"Tool 'a' has been called 3+ times consecutively with no progress. {ADVICE}"
    assert detector(["a"] * 5, threshold=5).warning_message().startswith("Tool 'a' has been called 5+ times")


def test_a_repeating_pattern_of_calls():
    assert not detector(["a", "b", "a", "b"]).doom_loop()
    d = detector(["x", "a", "b", "a", "b", "a", "b"])
    assert d.pattern() == ["a", "b"]
    assert d.warning_message() == f"Tool call pattern [a → b] has repeated 3+ times. {ADVICE}"
    assert detector(["a", "b", "c"] * 3).pattern() == ["a", "b", "c"]
    long = [f"t{i}" for i in range(MAX_PERIOD + 1)]
    assert detector(long * 3).pattern() == []  # patterns longer than robot_lab's 10 are not looked for
    assert detector(long[:MAX_PERIOD] * 3).doom_loop()


def test_threshold_zero_turns_detection_off_and_no_loop_gives_no_message():
    assert not detector(["a"] * 10, threshold=0).doom_loop()
    assert detector(["a", "b", "c"]).warning_message() == ""


@given(st.lists(st.sampled_from("abc"), max_size=30), st.integers(1, 5))
def test_a_detected_pattern_really_repeats_at_the_tail(names, threshold):
    pattern = detector(names, threshold).pattern()
    if pattern:
        assert names[-len(pattern) * threshold:] == pattern * threshold
    elif threshold == 1 and names:
        pytest.fail("with threshold 1 any call is a loop of one")


# -- in a run ------------------------------------------------------------------------------------------------


@robotlab.tool
def search(query: str) -> str:
    """Search."""
    return f"nothing for {query}"


@robotlab.tool
def fetch(url: str) -> str:
    """Fetch."""
    return "empty page"


def looping_robot(*calls):
    return robotlab.build(name="looper", model=ScriptedModel([*calls, "giving up"]), local_tools=[search, fetch])


def tool_answers(result):
    return [m["content"] for m in result.messages if m["role"] == "tool"]


def test_the_warning_is_appended_to_the_result_that_completes_the_loop():
    robot = looping_robot(*(call("search", query="x") for _ in range(3)))
    events = list(robot.stream("find x", tools="inherit"))
    result = next(e.result for e in events if e.type == "run.completed")
    answers = tool_answers(result)
    assert answers[:2] == ["nothing for x", "nothing for x"]
    assert answers[2] == "nothing for x\n\n" + \
        f"Tool 'search' has been called 3+ times consecutively with no progress. {ADVICE}"
    detected = [e.data for e in events if e.type == "doom_loop.detected"]
    assert detected == [{"tool_name": "search", "pattern": ["search"], "warning": answers[2].split("\n\n")[1]}]
    assert result.last_text_content == "giving up"


def test_an_alternating_pattern_is_detected_across_rounds():
    calls = [call("search", query="x"), call("fetch", url="u")] * 3
    result = looping_robot(*calls).run("go", tools="inherit")
    answers = tool_answers(result)
    assert all("stuck in a loop" not in a for a in answers[:5])
    assert answers[5].endswith(f"Tool call pattern [search → fetch] has repeated 3+ times. {ADVICE}")


def test_threshold_setting_and_zero_turns_it_off():
    calls = [call("search", query="x") for _ in range(4)]
    assert not any("stuck" in a for a in tool_answers(looping_robot(*calls).run("go", tools="inherit",
                                                                                doom_loop_threshold=0)))
    answers = tool_answers(looping_robot(*calls).run("go", tools="inherit", doom_loop_threshold=4))
    assert [("stuck" in a) for a in answers] == [False, False, False, True]


def test_on_doom_loop_hook_sees_the_loop_and_may_rewrite_the_warning():
    seen = []

    class Rewrite(Hook):
        @classmethod
        def on_doom_loop(cls, ctx):
            seen.append((ctx.tool_name, ctx.pattern, ctx.sequence, ctx.robot.name))
            ctx.warning = "STOP searching." if len(seen) == 1 else ""

    calls = [call("search", query="x") for _ in range(4)]
    result = looping_robot(*calls).run("go", tools="inherit", hooks=Rewrite)
    assert tool_answers(result)[2:] == ["nothing for x\n\nSTOP searching.", "nothing for x"]
    assert seen[0] == ("search", ("search",), ("search",) * 3, "looper")
    assert len(seen) == 2


def test_max_tool_rounds_counts_model_turns_not_calls():
    eight = [call("search", query=str(i)) for i in range(8)]
    robot = robotlab.build(name="wide", model=ScriptedModel([eight, "done"]), local_tools=[search])
    result = robot.run("go", tools="inherit", max_tool_rounds=1)
    assert len(result.tool_calls) == 8 and result.last_text_content == "done"
    robot = robotlab.build(name="deep", model=ScriptedModel([eight, eight, "done"]), local_tools=[search])
    with pytest.raises(ToolLoopError, match="2 tool rounds exceeded max_tool_rounds \\(1\\)"):
        robot.run("go", tools="inherit", max_tool_rounds=1)
