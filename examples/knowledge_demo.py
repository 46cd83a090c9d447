"""Knowledge demo: robots record what they learn and recall it in a later session, also from workers. Offline.

1. Session 1: an advisor robot calls ``record_knowledge`` with what it learned.
2. Session 2: a fresh robot (a new session, same store) calls ``recall_knowledge``
   before answering, and recalling confirms the entry (confidence 0.1 -> 0.2).
3. Two worker processes record the same fact four times at once through the
   store's file lock: nothing is lost, the entry is confirmed three times.

Run: python examples/knowledge_demo.py
"""

import tempfile

import robotlab
from robotlab import KnowledgeStore, RecallKnowledge, RecordKnowledge
from robotlab.llm import ScriptedModel, call
from robotlab.parallel import WorkerPool

TOOLS = [RecordKnowledge, RecallKnowledge]


def main() -> None:
    store = KnowledgeStore(tempfile.mkdtemp())

    first = robotlab.build(name="advisor", local_tools=TOOLS, model=ScriptedModel([
        call("record_knowledge", content="The user wants low-risk investments", reasoning="asked for bonds only",
             category="preference", domain="investing"),
        "Noted: bonds only.",
    ]))
    store.attach(first)
    result = first.run("I only want bonds.", tools="inherit")
    print(f"session 1: {result.tool_calls[0].result!r}; robot learned {first.learnings}")

    second = robotlab.build(name="advisor", local_tools=TOOLS, model=ScriptedModel([
        call("recall_knowledge", query="which investments suit this user", domain="investing"),
        "Government bonds, given your low risk tolerance.",
    ]))
    store.attach(second)
    result = second.run("What should I buy?", tools="inherit")
    print(f"session 2 recalled:\n  {result.tool_calls[0].result.replace(chr(10), chr(10) + '  ')}")
    print(f"session 2 answer: {result.last_text_content}")
    (entry,) = store.entries("investing")
    print(f"entry now: confidence {entry.confidence}, use count {entry.use_count}")

    memory = robotlab.create_memory()
    store.attach(memory)
    args = {"content": "Rebalance the portfolio yearly", "reasoning": "worker insight", "category": "pattern",
            "domain": "investing"}
    with WorkerPool(size=2, backend="process", memory=memory) as pool:
        answers = [f.result(60) for f in [pool.submit_tool(RecordKnowledge, args) for _ in range(4)]]
    rebalance = next(e for e in store.entries("investing") if e.content.startswith("Rebalance"))
    print(f"workers: {answers[0]!r} x{len(answers)} -> confidence {rebalance.confidence}, "
          f"use count {rebalance.use_count}, {len(store.entries('investing'))} entries in investing.json")


if __name__ == "__main__":
    main()
