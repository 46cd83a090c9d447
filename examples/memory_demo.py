"""Memory demo: two robots that run at the same time and meet through a shared Memory. Offline.

The "analyst" task takes a moment, then publishes a sentiment with a tool. The
"responder" task is *not* declared as depending on it: it starts at once and
its tool blocks on ``memory.get("sentiment", wait=5)``, waking the instant the
analyst writes. A subscription logs every write to the ``ticket.*`` keys.

Run: python examples/memory_demo.py
"""

import time

import robotlab
from robotlab.llm import ScriptedModel, call


class PublishSentiment(robotlab.Tool):
    """Write the ticket's sentiment into the shared memory."""

    description = "Record the customer's sentiment for other robots."

    def execute(self, *, sentiment: str) -> str:
        time.sleep(0.2)  # the analysis takes a while
        self.memory.update({"ticket.sentiment": sentiment, "ticket.priority": "high"})
        return "recorded"


class AwaitSentiment(robotlab.Tool):
    """Block until the analyst has published the sentiment."""

    description = "Wait for the customer's sentiment."

    def execute(self) -> str:
        start = time.monotonic()
        sentiment = self.memory.get("ticket.sentiment", wait=5)  # raises AwaitTimeout after 5 s
        return f"{sentiment} (waited {time.monotonic() - start:.2f} s)"


def main() -> None:
    network = robotlab.create_network(name="support")
    memory = network.memory
    memory.subscribe("ticket.*", lambda change: print(f"  memory: {change.key} = {change.value!r}"))

    analyst = robotlab.build(
        name="analyst",
        model=ScriptedModel([call("publish_sentiment", sentiment="frustrated"), "Sentiment recorded."]),
        local_tools=[PublishSentiment],
    )

    def respond(messages, tools):
        last = messages[-1]
        if last["role"] != "tool":
            return call("await_sentiment")
        mood = last["content"].split(" ")[0]
        return f"I'm sorry for the trouble, {memory.data.customer}. (tone chosen for a {mood} customer)"

    responder = robotlab.build(name="responder", model=ScriptedModel(respond), local_tools=[AwaitSentiment])

    network.task("analyse", analyst, tools="inherit")
    network.task("respond", responder, tools="inherit")  # no depends_on: both start together

    result = network.run("My order is late again!", customer="Ada")

    respond_result = result.results["respond"]
    print("responder's tool returned:", respond_result.tool_calls[0].result)
    print("reply:", respond_result.last_text_content)
    print("user keys:", result.memory.keys())
    print("data:", result.memory.data.to_dict())
    print("results stored:", len(result.memory.results))


if __name__ == "__main__":
    main()
