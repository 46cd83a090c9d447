"""The async core: run_async, async tools, async networks, cancellation and streaming events."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time

import pytest

import robotlab
from robotlab import Hook
from robotlab.llm import LiteLLMModel, ScriptedModel, call
from tests.async_jobs import (
    AsyncMemoryTool,
    HangAndTell,
    async_cancels_itself,
    async_echo,
    async_fails,
    async_times_out,
    io_wait,
    sync_fails,
    sync_io_wait,
    sync_times_out,
)
from tests.backends import gone, use
from tests.doc_blocks import python_blocks, run_block
from tests.openai_server import Script, completion, serve


def _robot(replies, tools=(), name="r", **options):
    return robotlab.build(name=name, model=ScriptedModel(replies), local_tools=list(tools), **options)


# -- run_async and async tools ---------------------------------------------------


def test_run_async_awaits_an_async_tool_and_returns_the_same_result_as_run():
    robot = _robot([call("async_echo", text="hi"), "done"], [async_echo])
    result = asyncio.run(robot.run_async("go", tools="inherit"))
    assert result.last_text_content == "done"
    assert result.tool_calls[0].result["text"] == "hi" and result.tool_calls[0].result["loop"] is True
    sync_robot = _robot([call("async_echo", text="hi"), "done"], [async_echo], name="s")
    sync_result = sync_robot.run("go", tools="inherit")  # the sync API runs async tools too
    assert sync_result.tool_calls[0].result["text"] == "hi"
    assert [m["role"] for m in result.messages] == [m["role"] for m in sync_result.messages]


def test_a_tool_subclass_with_async_execute_reads_memory_without_blocking_the_loop():
    robot = _robot([call("read_key", key="k"), "ok"], [AsyncMemoryTool])

    async def main():
        run = asyncio.ensure_future(robot.run_async("go", tools="inherit"))
        await asyncio.sleep(0.05)  # the tool waits for "k"; the loop must stay free to set it
        robot.memory.set("k", "v")
        return await run

    assert asyncio.run(main()).tool_calls[0].result == "k=v"


def test_sync_tools_in_an_async_run_do_not_block_the_loop():
    robot = _robot([[call("sync_io_wait", seconds=0.3)], "ok"], [sync_io_wait])
    ticks = []

    async def ticker():
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    async def main():
        beat = asyncio.ensure_future(ticker())
        try:
            return await robot.run_async("go", tools="inherit")
        finally:
            beat.cancel()

    assert asyncio.run(main()).tool_calls[0].result == "waited"
    assert len(ticks) > 10  # the loop kept running while the sync tool slept


def test_hooks_and_the_hook_scope_reach_async_tools():
    seen = []

    class Around(Hook):
        @classmethod
        async def around_tool_call(cls, ctx, block):
            seen.append(("around", ctx.tool.name))
            return await block()

    class Before(Hook):
        @classmethod
        def before_tool_call(cls, ctx):
            seen.append(("before", ctx.tool.name))

    robot = _robot([call("io_wait", seconds=0), "ok"], [io_wait])
    robot.on(Around)
    asyncio.run(robot.run_async("go", tools="inherit", hooks=Before))
    assert seen == [("before", "io_wait"), ("around", "io_wait")]


def test_budgets_hold_in_async_runs():
    robot = _robot(["a long answer " * 50], token_budget=10)
    with pytest.raises(robotlab.Error, match="Token budget exceeded"):
        asyncio.run(robot.run_async("go"))


@pytest.mark.parametrize(("async_tool", "sync_tool", "args"), [
    (async_fails, sync_fails, {"reason": "boom"}),
    (async_times_out, sync_times_out, {"seconds": 0.01}),
])
def test_an_async_tool_that_raises_or_times_out_fails_like_a_sync_one(async_tool, sync_tool, args):
    texts = []
    for tool_class in (async_tool, sync_tool):
        robot = _robot([call(tool_class.name, **args), "ok"], [tool_class])
        record = robot.run("go", tools="inherit").tool_calls[0]
        texts.append(record.result.replace(tool_class.name, "<tool>"))
        assert record.error == record.result
    assert texts[0] == texts[1]


def test_an_async_tool_cancelled_by_its_own_code_fails_the_call_not_the_run():
    robot = _robot([call("async_cancels_itself"), "recovered"], [async_cancels_itself])
    result = robot.run("go", tools="inherit")
    assert result.last_text_content == "recovered"
    assert result.tool_calls[0].result.startswith("Error (async_cancels_itself): cancelled")


def test_run_inside_a_running_event_loop_neither_deadlocks_nor_raises():
    robot = _robot([call("async_echo", text="x"), "inner"], [async_echo])

    async def main():
        return robot.run("go", tools="inherit")  # sync API from async code: runs on a helper thread

    assert asyncio.run(main()).last_text_content == "inner"


def test_runs_of_one_robot_are_serialised_across_coroutines_and_threads():
    robot = _robot([call("io_wait", seconds=0.05), "a"] * 4, [io_wait])
    spans = []

    async def one():
        result = await robot.run_async("go", tools="inherit")
        spans.append((result.messages[-1]["content"], time.perf_counter()))

    def in_thread():
        robot.run("go", tools="inherit")

    async def main():
        thread = threading.Thread(target=in_thread)
        thread.start()
        await asyncio.gather(one(), one(), one())
        await asyncio.to_thread(thread.join)

    asyncio.run(main())
    # Four runs, one after the other: the conversation holds four complete exchanges in order.
    roles = [m["role"] for m in robot.messages]
    assert roles == ["user", "assistant", "tool", "assistant"] * 4


def test_a_robot_cannot_run_inside_its_own_run():
    holder = {}

    @robotlab.tool
    def again() -> str:
        """Run my own robot."""
        return holder["robot"].run("nested").last_text_content

    robot = _robot([call("again"), "ok"], [again])
    holder["robot"] = robot
    record = robot.run("go", tools="inherit").tool_calls[0]
    assert "cannot start a run inside its own run" in record.result


def test_cancelling_run_async_cancels_the_tool_and_restores_the_conversation():
    started, cancelled = asyncio.Event(), []

    @robotlab.tool
    async def hang() -> str:
        """Hang."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    robot = _robot([call("hang"), "never"], [hang])

    async def main():
        run = asyncio.ensure_future(robot.run_async("go", tools="inherit"))
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    threads_before = threading.active_count()
    assert asyncio.run(main()) == []
    assert cancelled == [True]
    assert robot.messages == []  # no user turn without its answer
    assert threading.active_count() <= threads_before + 1
    assert robot.run("again", tools="none").last_text_content == "never"  # the robot still runs


# -- networks on the event loop --------------------------------------------------


def test_a_network_mixes_sync_and_async_tools_and_runs_io_bound_tasks_at_once():
    net = robotlab.create_network(name="mixed")
    for i in range(40):
        tool_class = io_wait if i % 2 else sync_io_wait
        robot = _robot([call(tool_class.name, seconds=0.2), f"done {i}"], [tool_class], name=f"r{i}")
        net.task(f"t{i}", robot, tools="inherit")
    net.task("join", _robot(["joined"], name="join"), depends_on=[f"t{i}" for i in range(40)])
    started = time.perf_counter()
    result = asyncio.run(net.run_async("go"))
    elapsed = time.perf_counter() - started
    assert result.ok and result.value == "joined"
    assert all(result[f"t{i}"].result.tool_calls[0].result == "waited" for i in range(40))
    assert elapsed < 0.2 * 40 / 4  # concurrently, not one after another (serial would be 8 s)


def test_network_concurrency_bounds_the_tasks_running_at_once():
    running, peak = [0], [0]

    @robotlab.tool
    async def count() -> str:
        """Count."""
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        await asyncio.sleep(0.02)
        running[0] -= 1
        return "ok"

    net = robotlab.create_network(name="bounded", concurrency=3)
    for i in range(10):
        net.task(f"t{i}", _robot([call("count"), "ok"], [count], name=f"r{i}"), tools="inherit")
    assert net.run("go").ok
    assert peak[0] == 3


def test_cancelling_network_run_async_cancels_every_running_task():
    started, cancelled = [], []

    @robotlab.tool
    async def hang() -> str:
        """Hang."""
        started.append(1)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(1)
            raise
        return "never"

    net = robotlab.create_network(name="cancel")
    for i in range(3):
        net.task(f"t{i}", _robot([call("hang"), "x"], [hang], name=f"r{i}"), tools="inherit")

    async def main():
        run = asyncio.ensure_future(net.run_async("go"))
        while len(started) < 3:
            await asyncio.sleep(0.01)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert asyncio.run(main()) == []
    assert len(cancelled) == 3


@pytest.mark.parametrize("backend", ["process", "subinterpreter"])
def test_async_tools_run_in_pool_workers(backend):
    use(backend)
    from robotlab.parallel import WorkerPool

    with WorkerPool(2, backend=backend) as pool:
        result = pool.submit_tool(async_echo, {"text": "far"}).result(timeout=60)
    assert result["text"] == "far" and result["loop"] is True
    if backend == "process":
        assert result["pid"] != os.getpid()


@pytest.mark.parametrize("mode", ["process", "subinterpreter"])
def test_a_worker_mode_network_runs_async_tools_and_async_memory_reads(mode):
    use(mode)
    net = robotlab.create_network(name=f"async-{mode}", parallel_mode=mode)
    net.task("write", _robot([call("async_echo", text="a"), "wrote"], [async_echo], name="w"), tools="inherit")
    net.task("read", _robot([call("read_key", key="k"), "read"], [AsyncMemoryTool], name="rd"), tools="inherit")
    net.memory.set("k", "v")
    result = net.run("go")
    assert result.ok, result.errors
    assert result["write"].result.tool_calls[0].result["text"] == "a"
    assert result["read"].result.tool_calls[0].result == "k=v"


def test_cancelling_a_process_mode_network_stops_its_running_worker_job():
    net = robotlab.create_network(name="stop-me", parallel_mode="process")
    net.task("hang", _robot([call("hang_and_tell", key="pid"), "never"], [HangAndTell], name="h"), tools="inherit")

    async def main():
        run = asyncio.ensure_future(net.run_async("go"))
        pid = await net.memory.get_async("pid", wait=60)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        return pid

    pid = asyncio.run(main())
    assert pid != os.getpid() and gone([pid], within=10)  # its worker was stopped, not left running the job
    quick = robotlab.create_network(name="after", parallel_mode="process")
    quick.task("t", _robot(["still serving"], name="q"))
    assert quick.run("go").value == "still serving"


def test_pool_stop_cancels_a_queued_job_and_stops_a_running_one():
    from robotlab.parallel import WorkerPool

    with WorkerPool(1, backend="process") as pool:
        running = pool.submit(time.sleep, 60)
        queued = pool.submit(os.getpid)
        deadline = time.monotonic() + 30
        while not running.running() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pool.stop(queued) and queued.cancelled()
        assert pool.stop(running)
        with pytest.raises(concurrent.futures.CancelledError, match="was stopped"):
            running.result(timeout=30)
        assert pool.submit(os.getpid).result(timeout=30) > 0  # the replacement worker serves
        done = pool.submit(os.getpid)
        done.result(timeout=30)
        assert pool.stop(done) is False


# -- streaming -------------------------------------------------------------------


def test_stream_yields_the_catalogue_in_order_with_sequence_numbers():
    robot = _robot([call("async_echo", text="hi"), "all done now"], [async_echo], name="poet")
    events = list(robot.stream("go", tools="inherit"))
    types = [e.type for e in events]
    assert types[0] == "run.started" and types[-2:] == ["run.completed", "stream.ended"]
    assert [e.seq for e in events] == list(range(len(events)))
    assert {e.robot for e in events} == {"poet"}
    assert types.index("tool_call.arguments.delta") < types.index("tool_call.started") \
        < types.index("tool_call.completed") < types.index("text.delta")
    args = "".join(e.data["arguments"] for e in events if e.type == "tool_call.arguments.delta")
    assert args == '{"text": "hi"}'
    assert "".join(e.data["text"] for e in events if e.type == "text.delta") == "all done now"
    assert events[-1].result.last_text_content == "all done now"
    assert events[-1].result is events[-2].result


def test_astream_and_a_failed_run():
    robot = _robot([], name="empty")  # a scripted model with nothing left to say fails

    async def main():
        seen = []
        with pytest.raises(robotlab.Error):
            async for event in robot.astream("go"):
                seen.append(event.type)
        return seen

    assert asyncio.run(main()) == ["run.started", "run.failed", "stream.ended"]


def test_leaving_a_stream_early_cancels_the_run():
    robot = _robot([call("io_wait", seconds=30), "never"], [io_wait])
    started = time.perf_counter()
    for event in robot.stream("go", tools="inherit"):
        if event.type == "tool_call.started":
            break
    assert time.perf_counter() - started < 5
    assert robot.messages == []


def test_streaming_over_the_loopback_sse_server_gives_exact_events():
    tool_call = {"id": "call_1", "type": "function", "function": {"name": "async_echo", "arguments": '{"text": "hey"}'}}
    script = Script([(200, completion(tool_calls=[tool_call])), (200, completion("Echoed it back."))])
    with serve(script) as base:
        model = LiteLLMModel("openai/gpt-4o-mini", api_base=base, api_key="sk-test", num_retries=0)
        robot = robotlab.build(name="sse", model=model, local_tools=[async_echo])
        events = list(robot.stream("go", tools="inherit"))
    assert all(request["stream"] is True for request in script.requests)
    got = [(e.seq, e.type, e.data.get("text") or e.data.get("arguments")) for e in events
           if e.type in ("text.delta", "tool_call.arguments.delta")]
    kinds = [e.type for e in events]
    assert kinds == (["run.started"] + ["tool_call.arguments.delta"] * 4 + ["usage.updated", "tool_call.started",
                     "tool_call.completed"] + ["text.delta"] * 3 + ["usage.updated", "run.completed", "stream.ended"])
    assert [e.seq for e in events] == list(range(len(events)))
    assert [g[2] for g in got] == ["", '{"text', '": "he', 'y"}', "Echoed ", "it ", "back."]
    assert events[-1].result.tool_calls[0].result["text"] == "hey"
    assert events[-1].result.prompt_tokens == 24


def test_a_network_stream_merges_task_events_and_carries_the_result():
    net = robotlab.create_network(name="streamed")
    net.task("a", _robot(["alpha"], name="ra"))
    net.task("b", _robot(["beta"], name="rb"), depends_on=["a"])
    events = list(net.stream("go"))
    assert events[-1].type == "stream.ended" and events[-1].result.value == "beta"
    for task in ("a", "b"):
        mine = [e for e in events if e.task == task]
        assert [e.seq for e in mine] == list(range(len(mine)))
        assert mine[0].type == "task.started" and mine[-1].type == "task.completed"
    last_a = max(i for i, e in enumerate(events) if e.task == "a")
    first_b = min(i for i, e in enumerate(events) if e.task == "b")
    assert last_a < first_b


@pytest.mark.parametrize("mode", ["process", "subinterpreter"])
def test_worker_task_events_arrive_while_the_task_runs(mode):
    use(mode)
    net = robotlab.create_network(name=f"live-{mode}", parallel_mode=mode)
    net.task("wait", _robot([call("read_key", key="go"), "finished"], [AsyncMemoryTool], name="waiter"),
             tools="inherit")
    seen, text = [], []
    for event in net.stream("start"):
        seen.append(event.type)
        if event.type == "text.delta":
            text.append(event.data["text"])
        if event.type == "tool_call.started":
            # The task is blocked on "go": only an event that arrived while it runs can release it.
            net.memory.set("go", "now")
    assert seen[-1] == "stream.ended" and seen[-2] == "task.completed"
    assert seen.index("tool_call.started") < seen.index("tool_call.completed")
    assert "".join(text) == "finished"  # the parent streamed the model's reply, once


@pytest.mark.parametrize("index", range(len(python_blocks("docs/async-and-streaming.md"))))
def test_docs_async_and_streaming_examples_run(index):
    run_block("docs/async-and-streaming.md", index)
