"""Streaming: a robot's answer word by word, and a network's task events as they happen (offline).

Prints the streamed answer, then each task of a two-task network as it completes.
Run: ``python examples/streaming_demo.py``.
"""

import asyncio

import robotlab
from robotlab.llm import ScriptedModel, call


@robotlab.tool
async def forecast(city: str) -> str:
    """Tomorrow's weather in *city*."""
    await asyncio.sleep(0.05)  # an HTTP call in real life
    return f"sunny in {city}"


def main() -> None:
    robot = robotlab.build(
        name="weather",
        model=ScriptedModel([call("forecast", city="Oslo"), "Tomorrow will be sunny in Oslo."]),
        local_tools=[forecast],
    )
    for event in robot.stream("Weather in Oslo tomorrow?", tools="inherit"):
        if event.type == "tool_call.started":
            print(f"[calling {event.data['name']}({event.data['arguments']})]")
        elif event.type == "text.delta":
            print(event.data["text"], end="", flush=True)
    print()

    net = robotlab.create_network(name="report")
    net.task("research", robotlab.build(name="researcher", model=ScriptedModel(["facts"])))
    net.task("write", robotlab.build(name="writer", model=ScriptedModel(["a report"])), depends_on=["research"])
    for event in net.stream("Write a report"):
        if event.type == "task.completed":
            print(f"task {event.task} done: {event.result.last_text_content}")


if __name__ == "__main__":
    main()
