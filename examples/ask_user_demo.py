"""ask_user: a robot asks a person, from a terminal, a handler, or a worker process (answered here). Offline.

Run: python examples/ask_user_demo.py            (answers are typed for you)
     python examples/ask_user_demo.py --interactive   (you answer on this terminal)
"""

import io
import os
import sys

import robotlab
from robotlab.llm import ScriptedModel, call


def booking_model(messages, tools):
    """Ask which seat, then book what the user answered (the tool's result)."""
    if messages[-1]["role"] == "tool":
        return f"Booked seat: {messages[-1]['content']}"
    return call("ask_user", question="Which seat would you like?", choices=["window", "aisle"], default="aisle")


def agent() -> robotlab.Robot:
    return robotlab.build(name="agent", local_tools=[robotlab.AskUser], model=ScriptedModel(booking_model))


def main() -> None:
    robot = agent()
    if "--interactive" not in sys.argv:  # stdin and stdout otherwise
        robot.input = io.StringIO("3\nwindow\n")  # 3 is out of range: asked again
    print("\n" + robot.run("Book me a seat", tools="inherit").last_text_content)

    async def app_handler(question):  # a non-terminal app (a web form, a chat UI...)
        print(f"\n[app in pid {os.getpid()}] {question.robot} asks {question.text!r}, choices {question.choices}")
        return 2

    worker_robot = agent()
    worker_robot.ask_user_handler = app_handler
    net = robotlab.create_network(name="travel", parallel_mode="process", config=robotlab.RunConfig(pool_size=1))
    net.task("book", worker_robot, tools="inherit")
    for event in net.stream("Book me a seat"):
        if event.type.startswith("hitl."):
            print(f"event {event.type}: {event.data}")
        elif event.type == "stream.ended":
            result = event.result
    print(f"{result.value} (the robot ran on a {result['book'].worker} worker; this is pid {os.getpid()})")
    robotlab.shutdown_pool()


if __name__ == "__main__":
    main()
