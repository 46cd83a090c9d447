"""Persistence demo: two processes meet through a Redis-backed Memory. Offline.

The demo starts its own throw-away ``redis-server`` (on a free 127.0.0.1 port,
with no persistence, in a temporary directory) and stops it at the end. Then:

* this process runs a "responder" network whose tool blocks on
  ``memory.get("ticket.sentiment", wait=30)``, and subscribes to ``ticket.*``;
* a second Python process (this file with ``--analyst``) opens the same
  memory (same URL, same ``session_id``), runs an "analyst" network whose tool
  writes the sentiment, and exits.

The write in the analyst process wakes the responder's blocked read and fires
its subscription. Without ``redis-server`` (or the ``robotlab[redis]`` extra)
the demo says what to install and exits.

Run: python examples/persistence_demo.py
"""

import shutil
import socket
import subprocess
import sys
import tempfile
import time

import robotlab
from robotlab.llm import ScriptedModel, call

SESSION = "ticket-42"


class PublishSentiment(robotlab.Tool):
    """Write the ticket's sentiment into the shared memory."""

    description = "Record the customer's sentiment for other robots."

    def execute(self, *, sentiment: str) -> str:
        self.memory.update({"ticket.sentiment": sentiment, "ticket.priority": "high"})
        return "recorded"


class AwaitSentiment(robotlab.Tool):
    """Block until some process has published the sentiment."""

    description = "Wait for the customer's sentiment."

    def execute(self) -> str:
        start = time.monotonic()
        sentiment = self.memory.get("ticket.sentiment", wait=30)  # woken by the other process's write
        return f"{sentiment} (waited {time.monotonic() - start:.2f} s)"


def analyst(url: str) -> None:
    """The second process: write the sentiment through a robot's tool, then exit."""
    with robotlab.create_memory(backend="redis", url=url, session_id=SESSION) as memory:
        memory.get("responder.ready", wait=30)  # start once the responder is listening
        time.sleep(0.3)  # ... and has been blocked for a moment
        network = robotlab.create_network(name="analysis", memory=memory)
        robot = robotlab.build(
            name="analyst",
            model=ScriptedModel([call("publish_sentiment", sentiment="frustrated"), "Sentiment recorded."]),
            local_tools=[PublishSentiment],
        )
        network.task("analyse", robot, tools="inherit")
        network.run("My order is late again!")
        print(f"analyst process wrote ticket.sentiment = {memory.get('ticket.sentiment')!r}")


def responder(url: str) -> None:
    seen: list[str] = []
    with robotlab.create_memory(backend="redis", url=url, session_id=SESSION, data={"customer": "Ada"}) as memory:
        memory.subscribe("ticket.sentiment", lambda c: seen.append(
            f"subscription saw: {c.key} {'created' if c.created else 'changed'} -> {c.value!r}"))
        helper = subprocess.Popen([sys.executable, __file__, "--analyst", url], stdout=subprocess.PIPE, text=True)

        def respond(messages, tools):
            if messages[-1]["role"] != "tool":
                return call("await_sentiment")
            return f"I'm sorry for the trouble, {memory.data.customer}."

        network = robotlab.create_network(name="support", memory=memory)
        robot = robotlab.build(name="responder", model=ScriptedModel(respond), local_tools=[AwaitSentiment])
        network.task("respond", robot, tools="inherit")
        memory.set("responder.ready", True)
        result = network.run("My order is late again!")
        analyst_output, _ = helper.communicate(timeout=60)

        print(analyst_output.strip())
        waited = result.results["respond"].tool_calls[0].result
        sentiment, _, rest = waited.partition(" (waited ")
        print(f"responder was woken after {rest.rstrip(')')}: {sentiment}")
        print("reply:", result.results["respond"].last_text_content)
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:  # remote changes fire on the memory's dispatch thread
            time.sleep(0.01)
        print(*seen, sep="\n")
        print("shared keys:", memory.keys())
        print("results stored in Redis:", len(memory.results), "(one per network run, both processes)")
        memory.destroy()  # a demo cleans up after itself; real sessions keep their state


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    binary = shutil.which("redis-server")
    if binary is None:
        print("This demo needs a redis-server binary (Debian/Ubuntu: apt-get install -y redis-server); skipped.")
        return 0
    try:
        import redis  # noqa: F401
    except ImportError:
        print("This demo needs the Redis extra (in a checkout: pip install -e '.[redis]'); skipped.")
        return 0
    directory = tempfile.mkdtemp(prefix="robotlab-demo-redis-")
    port = free_port()
    server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory, "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):  # wait until it accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        print(f"redis-server started on 127.0.0.1:{port}")
        responder(f"redis://127.0.0.1:{port}/0")
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(directory, ignore_errors=True)
        print("redis-server stopped")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--analyst":
        analyst(sys.argv[2])
    else:
        sys.exit(main())
