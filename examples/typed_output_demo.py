"""Structured output and doom-loop detection (offline, scripted models).

A robot's answer validated into a pydantic model (one invalid answer is sent
back and corrected), the same in a network task on a worker process, and a
robot warned that it is calling the same tool round and round.
Run: ``python examples/typed_output_demo.py``.
"""

from pydantic import BaseModel

import robotlab
from robotlab.llm import ScriptedModel, call


class City(BaseModel):
    name: str
    population: int


@robotlab.tool
def search(query: str) -> str:
    """Search the web."""
    return "no results"


def typed_answer() -> None:
    model = ScriptedModel(['{"name": "Oslo", "population": "about 700k"}', '{"name": "Oslo", "population": 709000}'])
    robot = robotlab.build(name="geo", model=model)
    for event in robot.stream("Largest city of Norway?", output_type=City):
        if event.type == "output.invalid":
            print("invalid answer, asked again:", event.data["problems"][0])
        elif event.type == "stream.ended":
            print("output:", repr(event.result.output))


def typed_answer_in_a_worker() -> None:
    net = robotlab.create_network(name="atlas", parallel_mode="process")
    net.task("city", robotlab.build(name="geo", model=ScriptedModel(['{"name": "Rome", "population": 2800000}'])),
             output_type=City)
    outcome = net.run("Capital of Italy?")["city"]
    print(f"from a {outcome.worker} worker:", repr(outcome.result.output))


def doom_loop() -> None:
    model = ScriptedModel([call("search", query="x")] * 3 + ["I will ask the user instead."])
    robot = robotlab.build(name="seeker", model=model, local_tools=[search])
    for event in robot.stream("Find x", tools="inherit"):
        if event.type == "doom_loop.detected":
            print("doom loop:", event.data["warning"][:60] + "...")


def main() -> None:
    typed_answer()
    typed_answer_in_a_worker()
    doom_loop()
    robotlab.shutdown_pool()


if __name__ == "__main__":
    main()
