"""Robot messaging (robotlab.bus) and delegation (robot.delegate, DelegationFuture), with real threads."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import robotlab
from robotlab import BusError, ConfigurationError, DelegationTimeout, InferenceError, retryable
from robotlab.hooks import Hook
from robotlab.llm import EchoModel, ScriptedModel, call
from robotlab.tools import Tool
from tests.doc_blocks import python_blocks, run_block


class Tell(Tool):
    """Send each word to a robot, one message per word."""

    def execute(self, to: str, words: str) -> str:
        sent = [self.robot.send_message(to=to, content=w) for w in words.split()]
        return f"sent {len(sent)}"


class Collect(Tool):
    """Wait for n messages and list them as sender:content."""

    def execute(self, n: int) -> str:
        messages = [self.robot.receive(timeout=10) for _ in range(n)]
        return ",".join(f"{m.sender}:{m.content}" for m in messages)


class Delegate(Tool):
    """Delegate a question to the helper robot held by the test, synchronously or not."""

    helper: robotlab.Robot

    def execute(self, question: str, asynchronous: bool) -> str:
        if asynchronous:
            future = self.robot.delegate(type(self).helper, question, async_=True, tools="inherit")
            return future.result(timeout=10).last_text_content
        return self.robot.delegate(type(self).helper, question, tools="inherit").last_text_content


class Stall(Tool):
    """Time out on an upstream call, raising (not reporting) the error."""

    raise_on_error = True

    def execute(self) -> str:
        raise TimeoutError("its own upstream timed out")


def delegating_robot(helper, *, asynchronous=True, name="boss"):
    tool_class = type("DelegateTo", (Delegate,), {"helper": helper, "name": "delegate"})
    model = ScriptedModel([call("delegate", question="sub-question", asynchronous=asynchronous), "boss done"])
    return robotlab.build(name=name, model=model, local_tools=[tool_class])


# -- the bus ---------------------------------------------------------------


def test_each_receiver_gets_messages_in_order_under_concurrent_senders():
    bus = robotlab.Bus("team")
    receivers = [robotlab.build(name=f"r{i}", model=EchoModel(), bus=bus) for i in range(2)]
    senders = [robotlab.build(name=f"s{i}", model=EchoModel(), bus=bus) for i in range(4)]
    start = threading.Barrier(len(senders))

    def blast(sender):
        start.wait()
        for n in range(300):
            for receiver in receivers:
                sender.send_message(to=receiver.name, content=n)
            time.sleep(0)  # give the other senders the GIL, so sends interleave

    threads = [threading.Thread(target=blast, args=(s,)) for s in senders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    for receiver in receivers:
        inbox = receiver.inbox()
        assert len(inbox) == 4 * 300
        assert [m.id for m in inbox] == sorted(m.id for m in inbox)  # the bus's acceptance order
        for sender in senders:
            assert [m.content for m in inbox if m.sender == sender.name] == list(range(300))
        assert {m.to for m in inbox} == {receiver.name}
        assert receiver.inbox() == []  # reading emptied the mailbox
        # The senders interleaved: otherwise this test would prove nothing about concurrency.
        assert sum(a.sender != b.sender for a, b in itertools.pairwise(inbox)) >= 2


def test_handler_deliveries_are_serial_and_in_order_per_receiver(caplog):
    bus = robotlab.Bus("push")
    for name in ("bob", "carol"):
        bus.register(name)
    got = {"bob": [], "carol": []}
    active = {"bob": 0, "carol": 0}
    most = {"bob": 0, "carol": 0}
    lock = threading.Lock()

    def handler_for(name):
        def handle(message):
            with lock:
                active[name] += 1
                most[name] = max(most[name], active[name])
            try:
                if message.content == ("s1", 5):
                    raise ValueError("handler bug")
                time.sleep(0.0005)  # let other deliveries try to overlap
                got[name].append(message.content)
            finally:
                with lock:
                    active[name] -= 1
        return handle

    bus.send("early", "bob", ("early", 0))  # waiting before the handler exists: delivered first
    for name in got:
        bus.subscribe(name, handler_for(name))

    def blast(sender):
        for n in range(100):
            for to in got:
                bus.send(sender, to, (sender, n))

    threads = [threading.Thread(target=blast, args=(f"s{i}",)) for i in range(3)]
    with caplog.at_level(logging.ERROR, logger="robotlab.bus"):
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert bus.wait_idle(timeout=30)

    assert most == {"bob": 1, "carol": 1}
    assert got["bob"][0] == ("early", 0)
    for name, contents in got.items():
        for sender in ("s0", "s1", "s2"):
            expected = [n for n in range(100) if (sender, n) != ("s1", 5)]
            assert [n for s, n in contents if s == sender] == expected, name
    failures = [r for r in caplog.records if "handler of" in r.getMessage()]
    assert len(failures) == 2  # the one bad message, once per receiver; later ones still came
    with pytest.raises(BusError, match="has a handler"):
        bus.inbox("bob")


def test_unknown_receiver_raises_and_leaves_the_bus_as_it_was():
    bus = robotlab.Bus("team")
    alice = robotlab.build(name="alice", model=EchoModel(), bus=bus)
    bob = robotlab.build(name="bob", model=EchoModel(), bus=bus)
    first = alice.send_message(to="bob", content="one")
    with pytest.raises(BusError, match=r"bus 'team' has no robot named 'zed'.*known: 'alice', 'bob'.*register"):
        alice.send_message(to="zed", content="lost")
    second = alice.send_message(to="bob", content="two", in_reply_to=first.id)
    assert second.id == first.id + 1  # the failed send took no place in the order
    assert [(m.content, m.in_reply_to) for m in bob.inbox()] == [("one", None), ("two", first.id)]
    with pytest.raises(BusError, match="no robot named 'zed'"):
        bus.receive("zed", timeout=0)


def test_robot_without_a_bus_raises_bus_error_saying_what_to_do():
    loner = robotlab.build(name="loner", model=EchoModel())
    with pytest.raises(BusError, match=r"robot 'loner' cannot send a message to 'bob': no bus configured.*bus="):
        loner.send_message(to="bob", content="hi")
    with pytest.raises(BusError, match="no bus configured"):
        loner.inbox()
    assert not retryable(BusError("x"))


def test_receive_waits_for_a_message_and_returns_none_when_none_comes():
    bus = robotlab.Bus()
    bob = robotlab.build(name="bob", model=EchoModel(), bus=bus)
    assert bob.receive(timeout=0.01) is None
    timer = threading.Timer(0.05, lambda: bus.send("alice", "bob", "late"))
    timer.start()
    message = bob.receive(timeout=10)
    timer.join()
    assert (message.sender, message.content) == ("alice", "late")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.content = "changed"


def test_a_name_taken_by_another_robot_is_refused():
    bus = robotlab.Bus("team")
    robotlab.build(name="bob", model=EchoModel(), bus=bus)
    with pytest.raises(BusError, match="already has a different robot named 'bob'"):
        robotlab.build(name="bob", model=EchoModel(), bus=bus)


# -- a network's bus -----------------------------------------------------------


def test_robots_of_a_network_message_each_other_during_a_run():
    net = robotlab.create_network(name="chat")
    writer = robotlab.build(
        name="writer",
        model=ScriptedModel([call("tell", to="reader", words="alpha beta gamma"),
                             call("tell", to="nobody", words="lost"), "writer done"]),
        local_tools=[Tell],
    )
    reader = robotlab.build(name="reader", model=ScriptedModel([call("collect", n=3), "reader done"]),
                            local_tools=[Collect])
    net.task("write", writer, tools="inherit")
    net.task("read", reader, tools="inherit")  # runs at the same time: it waits for the messages
    result = net.run("talk")
    assert result.ok, result.errors
    assert result["read"].result.tool_calls[0].result == "writer:alpha,writer:beta,writer:gamma"
    assert result["write"].result.tool_calls[0].result == "sent 3"
    lost = result["write"].result.tool_calls[1]
    assert "bus 'chat' has no robot named 'nobody'" in lost.result  # the BusError, as the tool's error text
    assert net.bus.members == ("writer", "reader")
    with pytest.raises(BusError, match="no bus configured"):  # outside the run, the robot has no bus
        writer.send_message(to="reader", content="after")


def test_same_named_robots_in_a_network_cannot_be_messaged_by_that_name():
    net = robotlab.create_network(name="twins")
    sender = robotlab.build(name="sender", model=ScriptedModel([call("tell", to="robot", words="hi"), "ok"]),
                            local_tools=[Tell])
    net.task("send", sender, tools="inherit")
    net.task("a", robotlab.build(model=EchoModel()))
    net.task("b", robotlab.build(model=EchoModel()))
    result = net.run("go")
    assert result.ok
    assert "several different robots named 'robot'" in result["send"].result.tool_calls[0].result


def test_robots_in_worker_processes_get_a_bus_error_naming_the_mode():
    from robotlab.parallel import shutdown_pool

    net = robotlab.create_network(name="procnet", parallel_mode="process")
    sender = robotlab.build(name="sender", model=ScriptedModel([call("tell", to="other", words="hi"), "ok"]),
                            local_tools=[Tell])
    net.task("send", sender, tools="inherit")
    net.task("other", robotlab.build(name="other", model=EchoModel()))
    try:
        result = net.run("go")
    finally:
        shutdown_pool()
    assert result.ok, result.errors
    error = result["send"].result.tool_calls[0].result
    assert "runs in a worker of network 'procnet' (parallel_mode='process')" in error
    assert net.bus.inbox("other") == []


# -- delegation ----------------------------------------------------------------


def test_sync_delegate_returns_the_delegates_result():
    helper = robotlab.build(name="helper", model=ScriptedModel(["42"]))
    boss = robotlab.build(name="boss", model=EchoModel())
    result = boss.delegate(helper, "What is six times seven?")
    assert isinstance(result, robotlab.RobotResult)
    assert (result.robot_name, result.last_text_content) == ("helper", "42")
    assert helper.messages[-2] == {"role": "user", "content": "What is six times seven?"}


def test_async_delegate_returns_a_future_with_the_result():
    release = threading.Event()
    helper = robotlab.build(name="helper", model=ScriptedModel(lambda messages, tools: release.wait(10) and "done"))
    future = robotlab.build(name="boss", model=EchoModel()).delegate(helper, "work", async_=True)
    assert isinstance(future, robotlab.DelegationFuture)
    assert not future.done()  # the caller was not blocked
    release.set()
    assert future.result(timeout=10).last_text_content == "done"
    assert future.done()


def test_delegation_timeout_names_both_robots_and_the_delegate_keeps_running():
    release = threading.Event()
    helper = robotlab.build(name="helper", model=ScriptedModel(lambda messages, tools: release.wait(10) and "late"))
    future = robotlab.build(name="boss", model=EchoModel()).delegate(helper, "slow work", async_=True)
    with pytest.raises(DelegationTimeout, match=r"robot 'helper' did not finish .* robot 'boss' within 0.05s") as err:
        future.result(timeout=0.05)
    assert not retryable(err.value)  # the seed's table: never
    assert not future.done()
    release.set()
    assert future.result(timeout=10).last_text_content == "late"


def test_the_delegates_exception_is_re_raised_sync_and_async():
    def broken(messages, tools):
        raise RuntimeError("upstream exploded")

    helper = robotlab.build(name="helper", model=ScriptedModel(broken))
    boss = robotlab.build(name="boss", model=EchoModel())
    with pytest.raises(InferenceError, match="upstream exploded"):
        boss.delegate(helper, "x")
    future = boss.delegate(helper, "x", async_=True)
    with pytest.raises(InferenceError, match="upstream exploded"):
        future.result(timeout=10)
    assert future.done()
    # A TimeoutError of the delegate's own is its error, not a DelegationTimeout.
    helper2 = robotlab.build(name="helper2", model=ScriptedModel([call("stall")]), local_tools=[Stall])
    with pytest.raises(TimeoutError, match="its own") as err:
        boss.delegate(helper2, "x", async_=True, tools="inherit").result(timeout=10)
    assert not isinstance(err.value, DelegationTimeout)


def test_delegating_to_a_robot_already_running_is_refused():
    boss = robotlab.build(name="boss", model=EchoModel())
    with pytest.raises(ConfigurationError, match="cannot delegate to robot 'boss'"):
        boss.delegate(boss, "x")
    # boss -> helper -> boss would re-enter boss's run: the helper's tool gets the error instead.
    back = type("Back", (Delegate,), {"name": "delegate"})
    helper = robotlab.build(name="helper", local_tools=[back],
                            model=ScriptedModel([call("delegate", question="loop", asynchronous=False), "gave up"]))
    boss = delegating_robot(helper, asynchronous=False)
    back.helper = boss
    result = boss.run("go", tools="inherit")
    assert (result.last_text_content, result.tool_calls[0].result) == ("boss done", "gave up")
    loop_error = next(m["content"] for m in helper.messages if m["role"] == "tool")
    assert "cannot delegate to robot 'boss': it is already running (boss -> helper -> boss)" in loop_error


class Seen(Hook):
    """Records each run and tool call it sees: robot, network, thread."""

    log: list = []

    @classmethod
    def before_run(cls, ctx):
        cls.log.append(("run", ctx.robot.name, getattr(ctx.network, "name", None), threading.current_thread().name))

    @classmethod
    def before_tool_call(cls, ctx):
        cls.log.append(("tool", ctx.tool.name, ctx.robot.name, threading.current_thread().name))


@pytest.fixture
def seen():
    Seen.log = []
    return Seen


def test_per_run_hooks_reach_an_async_delegate_on_its_thread(seen):
    helper = robotlab.build(name="helper", model=ScriptedModel([call("tell", to="x", words=""), "helped"]),
                            local_tools=[Tell])
    boss = delegating_robot(helper, asynchronous=True)
    result = boss.run("go", tools="inherit", hooks=[seen])
    assert result.last_text_content == "boss done"
    assert result.tool_calls[0].result == "helped"
    helper_runs = [e for e in seen.log if e[:2] == ("run", "helper")]
    assert len(helper_runs) == 1
    assert helper_runs[0][3].startswith("delegate-boss-to-helper")  # it ran on the delegate's thread
    assert [e[0:3] for e in seen.log] == [
        ("run", "boss", None), ("tool", "delegate", "boss"), ("run", "helper", None), ("tool", "tell", "helper")
    ]
    assert seen.log[3][3] == helper_runs[0][3]  # the delegate's tool call too, on the delegate's thread


def test_network_hooks_and_budget_reach_a_delegate(seen):
    helper = robotlab.build(name="helper", model=ScriptedModel(["helped"]))
    net = robotlab.create_network(name="office", config=robotlab.RunConfig(token_budget=10_000))
    net.on(seen)
    net.task("manage", delegating_robot(helper, asynchronous=True), tools="inherit")
    result = net.run("go")
    assert result.ok, result.errors
    assert result.value == "boss done"
    runs = [(e[1], e[2]) for e in seen.log if e[0] == "run"]
    assert runs == [("boss", "office"), ("helper", "office")]
    assert net._ledger is not None and net._ledger.committed("tokens") > 0
    spent_by_tasks = sum(r.prompt_tokens + r.completion_tokens for r in result.results.values())
    assert net._ledger.committed("tokens") > spent_by_tasks  # the helper's tokens count against the network too


# -- docs and example ----------------------------------------------------------


@pytest.mark.parametrize("index", range(len(python_blocks("docs/messaging.md"))))
def test_docs_messaging_examples_run(index, capsys):
    run_block("docs/messaging.md", index)


def test_messaging_demo_output():
    path = Path(__file__).parent.parent / "examples" / "messaging_demo.py"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert "editor got message #1 from reporter: 'bridge opens Monday'" in out.stdout
    assert "editor got message #2 from reporter: 'mayor to attend'" in out.stdout
    assert "network hook: checker runs in 'newsroom' on thread delegate-editor-to-checker" in out.stdout
    assert "fact check: Verified: the bridge opens Monday." in out.stdout
