"""History demo: a support robot that remembers a ticket across restarts, searches and compresses it. Offline.

1. A robot with ``history=<a SQLite file>`` answers on session "ticket-42".
2. A second process (a fresh interpreter: think "after a restart") builds the
   same robot and resumes the session by its id: it sees the earlier turns.
3. ``search_history`` finds the turns about the refund; ``HistoryCompressor``
   drops the small talk that no longer relates to the recent turns.
4. ``Convergence`` tells whether two verifiers reached the same conclusion.

Run: python examples/history_demo.py
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import robotlab
from robotlab.history import Convergence, HistoryCompressor, search_history
from robotlab.llm import ScriptedModel

SECOND_PROCESS = """
import sys
import robotlab
from robotlab.llm import ScriptedModel

def reply(messages, tools):  # an offline model that shows what it was given
    earlier = [m["content"] for m in messages if m["role"] == "user"][:-1]
    return f"I can see {len(earlier)} earlier questions; the first was {earlier[0]!r}."

robot = robotlab.build(name="support", model=ScriptedModel(reply), history=sys.argv[1])
print(robot.run("Do you remember my ticket?", session_id="ticket-42").last_text_content)
"""


def main() -> None:
    path = Path(tempfile.mkdtemp()) / "support.db"
    robot = robotlab.build(name="support", history=path, model=ScriptedModel([
        "Lisbon is sunny this week, around 24 degrees.",
        "Your refund for invoice 42 is being processed.",
        "The refund for invoice 42 waits on the overdue payment.",
    ]))
    for question in ("How is the weather in Lisbon this week?",
                     "I asked for a refund for invoice 42.",
                     "Why is the refund for invoice 42 not paid yet?"):
        print(f"user: {question}\nrobot: {robot.run(question, session_id='ticket-42').last_text_content}")
    print(f"stored: {len(robot.history.load('ticket-42'))} messages of session 'ticket-42' in {path.name}")

    out = subprocess.run([sys.executable, "-c", SECOND_PROCESS, str(path)], capture_output=True, text=True,
                         check=True, timeout=60)
    print(f"second process resumed ticket-42: {out.stdout.strip()}")

    messages = robot.history.load("ticket-42")  # the session as both processes left it
    for hit in search_history(messages, "refund invoice", limit=2):
        print(f"search 'refund invoice': [{hit.role} #{hit.index}] score {hit.score:.2f} {hit.text!r}")

    compressor = HistoryCompressor(recent_turns=2, keep_threshold=0.3, drop_threshold=0.1,
                                   summarizer=lambda text: f"(summary) {text[:24]}...")
    compressed = compressor(messages)
    print(f"compressor: {len(messages)} -> {len(compressed)} messages:")
    for m in compressed:
        print(f"  {m['role']}: {m['content']}")

    a = "The invoice is overdue, so the refund for invoice 42 must wait."
    b = "The refund for invoice 42 must wait because the invoice is overdue."
    print(f"convergence: similarity {Convergence.similarity(a, b):.2f}, detected {Convergence.detected(a, b)}")


if __name__ == "__main__":
    main()
