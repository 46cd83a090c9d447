"""Conversation history: stores by session id (SQLite, Redis), resume, search, compression, convergence."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import robotlab
from robotlab.errors import ConfigurationError, HistoryError, InferenceError
from robotlab.history import (
    Convergence,
    HistoryCompressor,
    RedisHistoryStore,
    SQLiteHistoryStore,
    compress_history,
    open_history_store,
    search_history,
)
from robotlab.history.porter import stem
from robotlab.history.term_vectors import cosine_similarity, text_vector, tf_cosine_similarity, word_hash
from robotlab.llm import ScriptedModel
from tests.doc_blocks import python_blocks, run_block
from tests.redis_server import redis_server  # noqa: F401  (the session fixture)

# -- text analysis --------------------------------------------------------------

# Porter's own examples (his 1980 paper and test vocabulary), through the whole algorithm.
PORTER = {
    "caresses": "caress", "ponies": "poni", "ties": "ti", "cats": "cat", "feed": "feed", "agreed": "agre",
    "plastered": "plaster", "bled": "bled", "motoring": "motor", "sing": "sing", "conflated": "conflat",
    "troubled": "troubl", "sized": "size", "hopping": "hop", "tanned": "tan", "falling": "fall",
    "hissing": "hiss", "fizzed": "fizz", "failing": "fail", "filing": "file", "happy": "happi", "sky": "sky",
    "relational": "relat", "conditional": "condit", "rational": "ration", "digitizer": "digit",
    "hopefulness": "hope", "goodness": "good", "triplicate": "triplic", "formative": "form",
    "formalize": "formal", "electrical": "electr", "revival": "reviv", "allowance": "allow",
    "inference": "infer", "airliner": "airlin", "adjustable": "adjust", "defensible": "defens",
    "irritant": "irrit", "replacement": "replac", "adjustment": "adjust", "dependent": "depend",
    "adoption": "adopt", "communism": "commun", "activate": "activ", "effective": "effect",
    "bowdlerize": "bowdler", "probate": "probat", "rate": "rate", "cease": "ceas", "controll": "control",
    "roll": "roll", "generalization": "gener", "running": "run", "analogy": "analog",
}


def test_porter_stemmer_matches_porters_examples():
    assert {word: stem(word) for word in PORTER} == PORTER


def test_word_hash_is_the_classifier_gems():
    # stop words and words of <= 2 letters go; the rest is stemmed; punctuation runs count as terms
    assert word_hash("It is an OK day, and the cats were running!! Cats?") == {
        "dai": 1, "cat": 2, "run": 1, ",": 1, "!!": 1, "?": 1,
    }
    assert word_hash("") == {}


texts = st.text(alphabet=st.sampled_from("abcdefghij klmnop,.!?ABC123 "), max_size=120)


@settings(max_examples=150, deadline=None)
@given(texts, texts)
def test_cosine_is_in_unit_interval_and_symmetric(a, b):
    score = tf_cosine_similarity(a, b)
    assert 0.0 <= score <= 1.0
    assert score == pytest.approx(tf_cosine_similarity(b, a))
    if text_vector(a):
        assert tf_cosine_similarity(a, a) == pytest.approx(1.0)
    assert cosine_similarity({}, text_vector(b)) == 0.0


def test_convergence_similarity_and_detected():
    a = "The invoice total is wrong because the discount was applied twice."
    b = "Because the discount was applied twice, the invoice total is wrong."
    other = "Shipping to Portugal takes about four business days from Madrid."
    assert Convergence.similarity(a, b) >= 0.85
    assert Convergence.detected(a, b) and not Convergence.detected(a, other)
    assert Convergence.similarity(a, other) < 0.2
    assert Convergence.similarity("short text", "short text") == 0.0  # under 30 characters
    assert Convergence.similarity(None, a) == 0.0
    assert Convergence.detected(a, other, threshold=0.0)


@pytest.mark.parametrize("threshold", [1.5, -0.1, "high", True])
def test_convergence_rejects_a_threshold_outside_0_1(threshold):
    with pytest.raises(ConfigurationError, match=r"threshold must be in \[0.0, 1.0\], got"):
        Convergence.detected("a" * 40, "a" * 40, threshold=threshold)


# -- search -----------------------------------------------------------------------

CONVERSATION = [
    {"role": "system", "content": "You are the finance assistant for ACME."},
    {"role": "user", "content": "What was our quarterly revenue in Europe?"},
    {"role": "assistant", "content": "Quarterly revenue in Europe was 4.2 million, up 8 percent."},
    {"role": "user", "content": "ok"},
    {"role": "user", "content": [{"type": "text", "text": "And the revenue forecast for next quarter?"}]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                           "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "Weather in Lisbon: sunny, 24 degrees."},
]


def test_search_history_ranks_by_relevance():
    results = search_history(CONVERSATION, "quarterly revenue Europe")
    assert [r.index for r in results] == [1, 2, 4]         # "ok" is too short; unrelated messages score 0
    assert results[0].score >= results[1].score >= results[2].score > 0
    assert results[0].role == "user" and results[0].text == CONVERSATION[1]["content"]
    assert results[2].text == "And the revenue forecast for next quarter?"  # content parts joined
    assert search_history(CONVERSATION, "revenue", limit=1) == search_history(CONVERSATION, "revenue")[:1]
    assert search_history(CONVERSATION, "the a of") == []      # no terms in the query
    robot = robotlab.build(name="r", model=ScriptedModel(["Lisbon is sunny today, around 24 degrees."]))
    robot.run("What is the weather in Lisbon?")
    assert [r.role for r in search_history(robot, "weather Lisbon")] == ["user", "assistant"]


# -- compression ------------------------------------------------------------------

def turn(user: str, assistant: str) -> list[dict]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


RECENT = turn("Which invoice is overdue for the refund request?", "Invoice 42 is overdue; the refund waits on it.")


def test_compressor_keeps_relevant_summarises_middle_and_drops_unrelated():
    relevant = turn("The refund for invoice 42 was requested yesterday.",
                    "I see the refund request for invoice 42 from yesterday.")
    middle = turn("Invoice numbering changed in March for all customers.",
                  "Noted, the new invoice numbering started in March.")
    unrelated = turn("Tell me about the weather in Lisbon this week.", "Sunny all week in Lisbon, around 24 degrees.")
    system = {"role": "system", "content": "You are the billing assistant."}
    messages = [system, *unrelated, *middle, *relevant, {"role": "user", "content": "ok"}, *RECENT]
    summaries = []

    def summarize(text):
        summaries.append(text)
        return f"(summary) {text[:20]}"

    out = HistoryCompressor(recent_turns=1, keep_threshold=0.5, drop_threshold=0.1, summarizer=summarize)(messages)
    scores = {m["content"]: tf_cosine_similarity(m["content"], RECENT[0]["content"] + " " + RECENT[1]["content"])
              for m in [*unrelated, *middle, *relevant]}
    assert scores[unrelated[0]["content"]] < 0.1 and scores[relevant[0]["content"]] >= 0.5
    assert out[0] == system and out[-2:] == RECENT and {"role": "user", "content": "ok"} in out  # short: kept
    assert not any("Lisbon" in str(m["content"]) for m in out)                                   # dropped
    assert relevant[0] in out and relevant[1] in out                                             # kept verbatim
    assert summaries == [m["content"] for m in middle]
    assert [m for m in out if str(m["content"]).startswith("(summary)")] == [
        {"role": m["role"], "content": f"(summary) {m['content'][:20]}"} for m in middle
    ]
    without = HistoryCompressor(recent_turns=1, keep_threshold=0.5, drop_threshold=0.1)(messages)
    assert not any("numbering" in str(m["content"]) for m in without)   # no summarizer: the middle is dropped
    assert messages[1] == unrelated[0]                                   # the input is not changed


def test_compressor_leaves_short_conversations_and_pins_tool_turns():
    assert HistoryCompressor()(RECENT) == RECENT
    assert HistoryCompressor(recent_turns=2)(CONVERSATION) == CONVERSATION  # 4 scorable: all in the window
    compressed = HistoryCompressor(recent_turns=1)(CONVERSATION)
    assert compressed == [CONVERSATION[0], *CONVERSATION[3:]]  # the old revenue turn goes; tool turns are pinned
    with pytest.raises(ConfigurationError, match=r"keep_threshold \(0.2\) must be greater than drop_threshold"):
        HistoryCompressor(keep_threshold=0.2, drop_threshold=0.2)
    with pytest.raises(ConfigurationError, match="recent_turns must be an integer >= 1"):
        HistoryCompressor(recent_turns=0)


roles = st.sampled_from(["system", "user", "assistant", "tool"])
contents = st.one_of(st.none(), st.text(alphabet=st.sampled_from("refund invoice weather lisbon ,."), max_size=80))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(roles, contents, st.booleans()), max_size=16), st.integers(1, 3),
       st.floats(0.0, 0.5), st.floats(0.5, 1.0, exclude_min=True))
def test_compressor_never_drops_system_or_tool_messages(spec, recent_turns, drop, keep):
    messages = []
    for n, (role, content, calls_tool) in enumerate(spec):
        message = {"role": role, "content": content, "n": n}
        if role == "assistant" and calls_tool:
            message["tool_calls"] = [{"id": f"c{n}", "type": "function", "function": {"name": "t", "arguments": "{}"}}]
        messages.append(message)
    out = HistoryCompressor(recent_turns=recent_turns, keep_threshold=keep, drop_threshold=drop,
                            summarizer=lambda text: "summary")(messages)
    kept = [m["n"] for m in out if "n" in m]
    assert kept == sorted(kept)                                             # order preserved
    for m in messages:
        if m["role"] in ("system", "tool") or m.get("tool_calls"):
            assert m in out
    scorable = [m for m in messages if m["role"] == "user" or (m["role"] == "assistant" and not m.get("tool_calls")
                                                               and (m["content"] or "").strip())]
    for m in scorable[-recent_turns * 2:]:
        assert m in out                                                     # the recent window is kept


def test_compressor_as_auto_compact_strategy_and_compress_history():
    seen = []

    class Watch(robotlab.Hook):
        @classmethod
        def after_compaction(cls, ctx):
            seen.append((ctx.strategy, len(ctx.messages_before), len(ctx.compacted_messages)))

    history = [*turn("Tell me about the weather in Lisbon this week.", "Sunny all week in Lisbon, around 24 degrees."),
               *turn("Which invoice is overdue for the refund request?", "Invoice 42 is overdue; refund waits.")]
    robot = robotlab.build(name="billing", model=ScriptedModel(["The refund for invoice 42 is approved now."]),
                           auto_compact=HistoryCompressor(recent_turns=1, keep_threshold=0.5))
    robot.on(Watch)
    robot._messages = [dict(m) for m in history]
    robot.run("Is the refund for invoice 42 approved?")
    assert seen == [("custom", 5, 3)]
    assert [m["content"] for m in robot.messages][:3] == [h["content"] for h in history[2:]] + [
        "Is the refund for invoice 42 approved?"]   # the Lisbon turn (score 0.08) dropped, 0.57 kept
    other = robotlab.build(name="o", model=ScriptedModel([]))
    other._messages = [dict(m) for m in history + RECENT]
    assert compress_history(other, recent_turns=1) is other
    assert not any("Lisbon" in m["content"] for m in other.messages)


# -- stores -----------------------------------------------------------------------

@pytest.fixture(params=["sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "sqlite":
        yield SQLiteHistoryStore(tmp_path / "chat.db")
        return
    server = request.getfixturevalue("redis_server")
    with RedisHistoryStore(server.url, namespace=f"test-{uuid.uuid4().hex}") as redis_store:
        yield redis_store


def test_store_contract(store):
    assert store.load("s-1") == [] and store.sessions() == []
    store.append("s-1", [{"role": "user", "content": "hello"}])
    store.append("s-1", [{"role": "assistant", "content": "hi", "extra": {"k": [1, 2]}}])
    store.append("s-2", [{"role": "user", "content": "The quarterly revenue report for Europe, please."}])
    store.append("s-2", [])
    assert store.load("s-1") == [{"role": "user", "content": "hello"},
                                 {"role": "assistant", "content": "hi", "extra": {"k": [1, 2]}}]
    assert store.sessions() == ["s-1", "s-2"]
    hits = store.search("quarterly revenue")
    assert [(h.session_id, h.index) for h in hits] == [("s-2", 0)]
    assert store.search("quarterly revenue", session_id="s-1") == []
    store.replace("s-1", [{"role": "user", "content": "again"}])
    assert store.load("s-1") == [{"role": "user", "content": "again"}]
    store.delete("s-1")
    store.delete("never-there")
    assert store.load("s-1") == [] and store.sessions() == ["s-2"]


def test_concurrent_appends_lose_nothing(store):
    def writer(w):
        for n in range(20):
            store.append("shared", [{"role": "user", "content": f"{w}-{n}"}])

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    contents = [m["content"] for m in store.load("shared")]
    assert sorted(contents) == sorted(f"{w}-{n}" for w in range(4) for n in range(20))
    for w in range(4):                                   # each writer's messages stay in its order
        mine = [c for c in contents if c.startswith(f"{w}-")]
        assert mine == [f"{w}-{n}" for n in range(20)]


def test_store_refuses_bad_messages_and_writes_nothing(store):
    store.append("s", [{"role": "user", "content": "kept"}])
    with pytest.raises(HistoryError, match=r"cannot store message 1 of session 's' as JSON"):
        store.append("s", [{"role": "user", "content": "ok"}, {"role": "user", "content": {1, 2}}])
    with pytest.raises(HistoryError, match=r"message 0 of session 's': a message is a dict with a string 'role'"):
        store.replace("s", ["just text"])
    with pytest.raises(ConfigurationError, match="session_id must be a non-empty string"):
        store.load("")
    assert store.load("s") == [{"role": "user", "content": "kept"}]


def test_robot_resumes_and_saves_a_session(store):
    robot = robotlab.build(name="r", model=ScriptedModel(["Noted, Ada.", "You are Ada."]),
                           system_prompt="Be brief.", history=store)
    robot.run("My name is Ada.", session_id="ticket-1")
    saved = store.load("ticket-1")
    assert [m["role"] for m in saved] == ["system", "user", "assistant"]
    other = robotlab.build(name="r", model=ScriptedModel(["Hello stranger."]), system_prompt="Be brief.",
                           history=store)
    other.run("Who am I?", session_id="ticket-2")      # another session: starts empty
    robot.clear_messages()
    result = robot.run("What is my name?", session_id="ticket-1")
    assert result.last_text_content == "You are Ada."
    assert [m["content"] for m in result.messages] == ["Be brief.", "My name is Ada.", "Noted, Ada.",
                                                      "What is my name?", "You are Ada."]
    assert store.load("ticket-1") == result.messages
    assert len(store.load("ticket-2")) == 3


def test_failed_run_saves_nothing_and_compaction_replaces(tmp_path):
    def fail(messages, tools):
        raise InferenceError("provider down", retryable=True)

    store = SQLiteHistoryStore(tmp_path / "h.db")
    store.append("s", [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "answer"}])
    robot = robotlab.build(name="r", model=ScriptedModel(fail), history=store)
    with pytest.raises(InferenceError):
        robot.run("next", session_id="s")
    assert store.load("s") == [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "answer"}]
    assert robot.messages == store.load("s")            # resumed, then rolled back to the resumed conversation
    shrink = robotlab.build(name="r", model=ScriptedModel(["done"]), history=store,
                            auto_compact=lambda messages: messages[-1:])
    shrink.run("compact me", session_id="s")
    assert store.load("s") == [{"role": "user", "content": "compact me"}, {"role": "assistant", "content": "done"}]


def test_session_needs_a_history_store_and_history_must_be_known(tmp_path):
    robot = robotlab.build(name="plain", model=ScriptedModel(["x"]))
    with pytest.raises(ConfigurationError, match="robot 'plain' has no history store to resume session 's-1'"):
        robot.run("hi", session_id="s-1")
    with pytest.raises(ConfigurationError, match="history must be a HistoryStore, a SQLite file path or a redis"):
        robotlab.build(name="r", history=3.5)
    with pytest.raises(ConfigurationError, match="session_id must be a non-empty string"):
        robotlab.build(name="r", model=ScriptedModel(["x"]), history=tmp_path / "h.db").run(
            "hi", session_id=" ")


def test_corrupt_history_file_raises_history_error_and_is_left_intact(tmp_path):
    path = tmp_path / "chat.db"
    garbage = b"this is not a SQLite database\n" * 50
    path.write_bytes(garbage)
    with pytest.raises(HistoryError, match=r"chat.db' is not a usable SQLite history \(file is not a database\); "
                                           "move it aside or pass another path"):
        robotlab.build(name="r", history=path)
    assert path.read_bytes() == garbage


def test_corrupt_entry_fails_its_session_only(tmp_path):
    path = tmp_path / "chat.db"
    store = SQLiteHistoryStore(path)
    store.append("good", [{"role": "user", "content": "fine"}])
    store.append("bad", [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE robotlab_history SET message = '{not json' WHERE session_id = 'bad' AND position = 1")
    robot = robotlab.build(name="r", model=ScriptedModel(["never"]), history=path)
    robot._messages = [{"role": "user", "content": "in memory"}]
    with pytest.raises(HistoryError, match=r"message 1 of session 'bad' in .*chat.db' is not valid JSON"):
        robot.run("hi", session_id="bad")
    assert robot.messages == [{"role": "user", "content": "in memory"}]   # nothing resumed, nothing lost
    assert store.load("good") == [{"role": "user", "content": "fine"}]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT message FROM robotlab_history WHERE session_id = 'bad' AND position = 1"
                          ).fetchone() == ("{not json",)


def test_corrupt_redis_entry_raises_history_error(redis_server):  # noqa: F811
    import redis

    namespace = f"test-{uuid.uuid4().hex}"
    with RedisHistoryStore(redis_server.url, namespace=namespace) as store:
        store.append("s", [{"role": "user", "content": "fine"}])
        redis.Redis.from_url(redis_server.url).rpush(f"{namespace}:history:s", b"\xff not json")
        with pytest.raises(HistoryError, match=rf"message 1 of session 's' in Redis key '{namespace}:history:s'"):
            store.load("s")
        store.delete("s")
        assert store.load("s") == []
    with pytest.raises(ConfigurationError, match=re.escape("cannot reach Redis at redis://127.0.0.1:1/0")):
        RedisHistoryStore("redis://127.0.0.1:1/0")
    memory = robotlab.create_memory(backend="redis", url=redis_server.url, namespace=namespace)
    try:
        assert RedisHistoryStore.for_memory(memory).namespace == namespace
    finally:
        memory.close()
    assert isinstance(open_history_store(redis_server.url), RedisHistoryStore)


def test_session_resumes_in_another_process(tmp_path):
    path = tmp_path / "chat.db"
    robot = robotlab.build(name="r", model=ScriptedModel(["Noted: the order is 42."]), history=path)
    robot.run("Remember order 42.", session_id="s-9")
    script = textwrap.dedent(f"""
        import robotlab
        from robotlab.llm import ScriptedModel
        robot = robotlab.build(name="r", model=ScriptedModel(lambda messages, tools: messages[0]["content"]),
                               history={str(path)!r})
        print(robot.run("Which order?", session_id="s-9").last_text_content)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(Path(robotlab.__file__).parents[1])}, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Remember order 42."
    assert [m["content"] for m in SQLiteHistoryStore(path).load("s-9")][-2:] == ["Which order?",
                                                                                  "Remember order 42."]


@pytest.mark.parametrize("index", range(len(python_blocks("docs/history.md"))))
def test_docs_history_examples_run(index, request):
    code = python_blocks("docs/history.md")[index]
    if "redis://localhost:6379/0" in code:
        code = code.replace("redis://localhost:6379/0", request.getfixturevalue("redis_server").url)
    run_block("docs/history.md", index, code, __name__="docs_history")


def test_history_demo_example_output():
    root = Path(__file__).parent.parent
    out = subprocess.run([sys.executable, str(root / "examples" / "history_demo.py")], capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert ("second process resumed ticket-42: I can see 3 earlier questions; the first was "
            "'How is the weather in Lisbon this week?'.") in out.stdout
    assert "compressor: 8 -> 7 messages:" in out.stdout and "convergence: similarity 0.91, detected True" in out.stdout


def test_streaming_and_async_runs_save_the_session_too(tmp_path):
    import asyncio

    robot = robotlab.build(name="r", model=ScriptedModel(["one", "two"]), history=tmp_path / "h.db")
    events = [e.type for e in robot.stream("first", session_id="s")]
    assert events[-2:] == ["run.completed", "stream.ended"]
    asyncio.run(robot.run_async("second", session_id="s"))
    assert [m["content"] for m in robot.history.load("s")] == ["first", "one", "second", "two"]
