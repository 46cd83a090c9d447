"""The built-in ``record_knowledge`` and ``recall_knowledge`` tools (robot_lab's RecordKnowledge, RecallKnowledge).

Give them to a robot (``local_tools=[RecordKnowledge, RecallKnowledge]``) and
attach a store to the memory its tools use (``KnowledgeStore(path).attach(robot)``,
or ``.attach(network.memory)`` in a network). The tools find the store by the
path in ``memory["knowledge.store"]``, so they work unchanged in worker
processes (``pool.submit_tool(RecordKnowledge, ..., memory=memory)``) and from
every process sharing a Redis memory.

- ``record_knowledge(content, reasoning, category, domain)`` records (or
  confirms) an entry, and has the robot ``learn`` it when it runs in-process;
  it answers ``Recorded: <content>``.
- ``recall_knowledge(query, domain=None)`` lists the matching entries as
  ``[category/conf:0.1] content — reasoning``, most confident first, and
  confirms each one it returns (as robot_lab does); or says nothing was found.

Example:
    >>> import tempfile, robotlab
    >>> from robotlab.knowledge import KnowledgeStore
    >>> memory = robotlab.create_memory()
    >>> _ = KnowledgeStore(tempfile.mkdtemp()).attach(memory)
    >>> RecordKnowledge(memory=memory).call({"content": "Ada prefers email", "reasoning": "she said so",
    ...                                      "category": "preference", "domain": "support"})
    'Recorded: Ada prefers email'
    >>> print(RecallKnowledge(memory=memory).call({"query": "should we email Ada"}))
    Relevant past knowledge:
    [preference/conf:0.1] Ada prefers email — she said so
"""

from __future__ import annotations

from typing import Any

from robotlab.knowledge import KNOWLEDGE_STORE_KEY, KnowledgeStore
from robotlab.tools import Tool, param

__all__ = ["NO_STORE", "RecallKnowledge", "RecordKnowledge", "knowledge_store_of"]

NO_STORE = "No durable store configured on this robot."  # robot_lab's answer, word for word


def knowledge_store_of(tool: Tool) -> KnowledgeStore | None:
    """The store *tool*'s memory names under ``"knowledge.store"`` (``None`` when it names none)."""
    memory = tool.memory if tool.memory is not None else getattr(tool.robot, "memory", None)
    path = memory.get(KNOWLEDGE_STORE_KEY) if memory is not None else None
    return KnowledgeStore(path) if path else None


class RecordKnowledge(Tool):
    name = "record_knowledge"
    description = (
        "Record a piece of knowledge learned during this session. Use after a decision or discussion reveals "
        "something worth remembering: a user preference, a reliable pattern, or a factual insight. "
        "Recorded knowledge persists across future sessions."
    )
    param("content", type="string", desc="The knowledge to record, in plain language (one clear statement)")
    param("reasoning", type="string",
          desc="Why this is worth remembering — the observation or discussion that led to it")
    param("category", type="string", desc="One of: fact, preference, pattern, correction")
    param("domain", type="string", desc="Topic area this applies to (e.g. 'newsletter curation', 'ruby tooling')")

    def execute(self, *, content: str, reasoning: str, category: str, domain: str) -> Any:
        store = knowledge_store_of(self)
        if store is None:
            return NO_STORE
        store.record(content, domain=domain, reasoning=reasoning, category=category)
        if self.robot is not None and hasattr(self.robot, "learn"):
            self.robot.learn(f"{content} ({domain})")
        return f"Recorded: {content}"


class RecallKnowledge(Tool):
    name = "recall_knowledge"
    description = (
        "Recall relevant knowledge from past sessions before making a decision. Use this when uncertain whether "
        "to include or skip content, or when you want to check if you have seen a similar situation before. "
        "When in doubt and no relevant knowledge is found, skip the action."
    )
    param("query", type="string", desc="Natural language description of the decision you are about to make")
    param("domain", type="string", desc="Topic area to search (e.g. 'newsletter curation')", required=False)

    def execute(self, *, query: str, domain: str | None = None) -> Any:
        store = knowledge_store_of(self)
        if store is None:
            return NO_STORE
        entries = store.recall(query, domain=domain, min_confidence=0.0)
        if not entries:
            return f"No relevant past knowledge found for: {query}. When in doubt, skip."
        for entry in entries:
            store.confirm(entry)
        lines = [f"[{e.category}/conf:{e.confidence:.1f}] {e.content} — {e.reasoning}" for e in entries]
        return "Relevant past knowledge:\n" + "\n".join(lines)
