"""Durable knowledge: KnowledgeStore (confirm on re-record, recall, locking across processes) and its tools."""

from __future__ import annotations

import json
import multiprocessing
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import robotlab
from robotlab.errors import ConfigurationError, KnowledgeError
from robotlab.knowledge import KNOWLEDGE_STORE_KEY, KnowledgeEntry, KnowledgeStore, domain_file_name
from robotlab.knowledge_tools import NO_STORE, RecallKnowledge, RecordKnowledge
from robotlab.llm import ScriptedModel
from robotlab.llm.scripted import call
from robotlab.parallel import WorkerPool
from robotlab.testing import available_backends
from tests.doc_blocks import python_blocks, run_block
from tests.knowledge_jobs import write_entries


def test_recording_again_confirms_the_entry(tmp_path):
    store = KnowledgeStore(tmp_path)
    first = store.record("Ada prefers email", domain="Support", reasoning="she said so", category="preference")
    assert (first.confidence, first.use_count, first.category, first.reasoning) == (0.1, 0, "preference",
                                                                                    "she said so")
    again = store.record("ADA PREFERS EMAIL", domain="support", reasoning="ignored")   # same content, any case
    assert (again.content, again.confidence, again.use_count, again.reasoning) == ("Ada prefers email", 0.2, 1,
                                                                                   "she said so")
    for _ in range(12):
        last = store.record("ada prefers email", domain="SUPPORT")
    assert (last.confidence, last.use_count) == (1.0, 13)                               # capped at 1.0
    assert [e.content for e in store.entries("support")] == ["Ada prefers email"]
    assert json.loads((tmp_path / "support.json").read_text())[0]["use_count"] == 13
    assert store.confirm(first).use_count == 14
    with pytest.raises(KnowledgeError, match="Cannot confirm: entry not found in domain 'support'"):
        store.confirm(KnowledgeEntry(content="never recorded", domain="support"))


def test_recall_by_keywords_and_minimum_confidence(tmp_path):
    store = KnowledgeStore(tmp_path)
    store.record("Refunds over 100 EUR need a manager", domain="billing")
    store.record("VAT applies to shipping in the EU", domain="billing")
    store.record("VAT applies to shipping in the EU", domain="billing")
    store.record("Ship orders before noon", domain="Logistics")
    assert [e.content for e in store.recall("shipping vat")] == ["VAT applies to shipping in the EU"]
    assert [e.content for e in store.recall("ship")] == ["VAT applies to shipping in the EU", "Ship orders before noon"]
    assert [e.content for e in store.recall("ship", domain="logistics")] == ["Ship orders before noon"]
    assert [e.content for e in store.recall("ship", min_confidence=0.15)] == ["VAT applies to shipping in the EU"]
    assert len(store.recall("billing")) == 2              # the domain matches too
    assert store.recall("is to an") == []                 # words under 3 characters are ignored
    assert store.domains() == ["Logistics", "billing"]
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["billing.json", "logistics.json"]


def test_bad_domains_and_content_are_refused(tmp_path):
    store = KnowledgeStore(tmp_path)
    message = "domain must contain a letter or digit (a-z, 0-9), got '!!'"
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        store.record("x", domain="!!")
    with pytest.raises(ConfigurationError, match="knowledge content must be a non-empty string"):
        store.record("  ", domain="billing")
    with pytest.raises(ConfigurationError, match=re.escape("confidence must be a number in [0.0, 1.0], got 2")):
        store.record("x", domain="billing", confidence=2)
    assert list(tmp_path.glob("*.json")) == []
    (tmp_path / "file").write_text("")
    with pytest.raises(KnowledgeError, match=r"cannot use .* as a knowledge directory"):
        KnowledgeStore(tmp_path / "file" / "sub")


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ09 _-./!é\u00df\u0130\u212a\t"), max_size=30))
def test_domain_file_names_are_safe(domain):
    try:
        name = domain_file_name(domain)
    except ConfigurationError:
        assert not re.search(r"[a-z0-9]", domain.lower())
        return
    assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*\.json", name)


@settings(max_examples=100, deadline=None)
@given(st.floats(0.0, 1.0), st.integers(0, 10**6), st.integers(0, 15))
def test_confirming_raises_confidence_by_a_tenth_up_to_one(confidence, uses, times):
    entry = KnowledgeEntry(content="c", domain="d", confidence=confidence, use_count=uses)
    for _ in range(times):
        entry = entry.confirmed()
    assert entry.use_count == uses + times
    assert entry.confidence == pytest.approx(min(confidence + 0.1 * times, 1.0), abs=1e-9)
    assert KnowledgeEntry.from_dict(json.loads(json.dumps(entry.to_dict()))) == entry


def test_corrupt_file_raises_and_is_never_overwritten(tmp_path):
    store = KnowledgeStore(tmp_path)
    store.record("Ship before noon", domain="logistics")
    (tmp_path / "billing.json").write_text("[{\"content\": \"VAT\", ")
    with pytest.raises(KnowledgeError, match=r"knowledge file '.*billing.json' is not valid JSON .*robotlab will "
                                             "not overwrite it"):
        store.record("Refunds need a manager", domain="billing")
    with pytest.raises(KnowledgeError, match=r"billing\.json' is not valid JSON"):
        store.recall("ship")
    assert (tmp_path / "billing.json").read_text() == "[{\"content\": \"VAT\", "
    assert [e.content for e in store.recall("ship", domain="logistics")] == ["Ship before noon"]  # others intact
    (tmp_path / "billing.json").write_text('[{"content": 3}]')
    with pytest.raises(KnowledgeError, match=r"entry 0 of '.*billing.json' is not a knowledge entry"):
        store.entries("billing")


def test_four_writer_processes_lose_nothing(tmp_path):
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    writers = [context.Process(target=write_entries, args=(str(tmp_path), w, 25, start)) for w in range(4)]
    for p in writers:
        p.start()
    start.set()
    for p in writers:
        p.join(60)
    assert [p.exitcode for p in writers] == [0, 0, 0, 0]
    entries = KnowledgeStore(tmp_path).entries("shared domain")
    contents = {e.content for e in entries}
    assert len(entries) == len(contents) == 4 * 25 + 1
    assert contents >= {f"writer {w} fact {n}" for w in range(4) for n in range(25)}
    shared = next(e for e in entries if e.content == "The shared fact")
    assert (shared.use_count, shared.confidence) == (4 * 25 - 1, 1.0)    # 100 records: 1 new + 99 confirmations
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_tools_in_a_robot_run(tmp_path):
    store = KnowledgeStore(tmp_path)
    robot = robotlab.build(name="advisor", local_tools=[RecordKnowledge, RecallKnowledge], model=ScriptedModel([
        call("recall_knowledge", query="risk tolerance"), "Nothing stored.",
        call("recall_knowledge", query="risk tolerance"),
        call("record_knowledge", content="The user has a low risk tolerance", reasoning="they said bonds only",
             category="preference", domain="investing"),
        call("recall_knowledge", query="what risk tolerance", domain="investing"),
        "Bonds it is.",
    ]))
    assert robot.run("hello", tools="inherit").tool_calls[0].result == NO_STORE   # no store attached yet
    store.attach(robot)
    assert robot.memory.get(KNOWLEDGE_STORE_KEY) == str(tmp_path)
    result = robot.run("What should I buy?", tools="inherit")
    assert [c.result for c in result.tool_calls] == [
        "No relevant past knowledge found for: risk tolerance. When in doubt, skip.",
        "Recorded: The user has a low risk tolerance",
        "Relevant past knowledge:\n[preference/conf:0.1] The user has a low risk tolerance — they said bonds only",
    ]
    assert robot.learnings == ("The user has a low risk tolerance (investing)",)
    assert store.entries("investing")[0].use_count == 1          # recall confirmed it, as robot_lab does


@pytest.mark.parametrize("backend", available_backends())
def test_tools_run_in_workers(tmp_path, backend):
    memory = robotlab.create_memory()
    KnowledgeStore(tmp_path).attach(memory)
    args = {"content": "Workers can record too", "reasoning": "shipped by path", "category": "fact",
            "domain": "parallel"}
    with WorkerPool(size=2, backend=backend, memory=memory) as pool:
        results = [f.result(60) for f in [pool.submit_tool(RecordKnowledge, args) for _ in range(4)]]
        recalled = pool.run_tool(RecallKnowledge, {"query": "record"}, timeout=60)
    assert results == ["Recorded: Workers can record too"] * 4
    assert recalled == "Relevant past knowledge:\n[fact/conf:0.4] Workers can record too — shipped by path"
    (entry,) = KnowledgeStore(tmp_path).entries("parallel")
    assert (entry.use_count, entry.confidence) == (4, 0.5)


@pytest.mark.parametrize("index", range(len(python_blocks("docs/knowledge.md"))))
def test_docs_knowledge_examples_run(index):
    run_block("docs/knowledge.md", index, __name__="docs_knowledge")


def test_knowledge_demo_example_output():
    root = Path(__file__).parent.parent
    out = subprocess.run([sys.executable, str(root / "examples" / "knowledge_demo.py")], capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert "[preference/conf:0.1] The user wants low-risk investments — asked for bonds only" in out.stdout
    assert "entry now: confidence 0.2, use count 1" in out.stdout
    assert "x4 -> confidence 0.4, use count 3, 2 entries in investing.json" in out.stdout
