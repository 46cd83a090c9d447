"""Memory: reactive key/value store, blocking reads, subscriptions, reserved keys, persistence."""

from __future__ import annotations

import copy
import json
import logging
import pickle
import sys
import threading
import time
from enum import Enum

import pytest

import robotlab
from robotlab.errors import AwaitTimeout, ConfigurationError, DependencyError
from robotlab.extensions import register_extension, unregister_extension
from robotlab.memory import RESERVED_KEYS, Memory, MemoryChange, StateProxy, Subscription, create_memory
from robotlab.memory_backends import memory_backends, register_memory_backend, unregister_memory_backend
from tests.doc_blocks import python_blocks, run_block


def later(seconds: float, fn, *args):
    """Run fn(*args) on another thread after *seconds*; returns the started thread."""

    def run():
        time.sleep(seconds)
        fn(*args)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# -- basics ---------------------------------------------------------------------------------


def test_public_exports():
    assert robotlab.Memory is Memory
    assert robotlab.StateProxy is StateProxy
    assert robotlab.create_memory is create_memory


def test_set_get_delete_contains_keys():
    m = Memory()
    assert m.get("x") is None
    assert m.get("x", default=7) == 7
    m.set("x", 1)
    m.set("y", None)
    assert m.get("x") == 1
    assert m.get("y", default="d") is None  # a stored None is a value, not a miss
    assert "x" in m and "y" in m and "z" not in m
    assert m.keys() == ["x", "y"]
    assert m.delete("x") == 1
    assert m.delete("x") is None
    assert "x" not in m
    assert m.keys() == ["y"]


def test_keys_are_in_first_write_order_and_reset_moves_to_end():
    m = Memory()
    for k in ("b", "a", "c"):
        m.set(k, k)
    m.set("b", "again")
    assert m.keys() == ["b", "a", "c"]
    m.delete("b")
    m.set("b", 1)
    assert m.keys() == ["a", "c", "b"]


def test_multi_key_get_returns_dict_in_asked_order():
    m = Memory()
    m.update({"a": 1, "b": 2})
    assert m.get("b", "a", "missing") == {"b": 2, "a": 1, "missing": None}
    assert list(m.get("b", "a")) == ["b", "a"]
    assert m.get("a", "zz", default=0) == {"a": 1, "zz": 0}


def test_keys_are_normalised_with_str():
    class Color(Enum):
        RED = "red"

    m = Memory()
    m.set(42, "answer")
    assert m.get("42") == "answer"
    assert 42 in m
    m.set(Color.RED, 1)
    assert m.get(str(Color.RED)) == 1


def test_item_access_and_update_kwargs():
    m = Memory()
    m["a"] = 1
    assert m["a"] == 1
    with pytest.raises(KeyError):
        m["missing"]
    del m["a"]
    with pytest.raises(KeyError):
        del m["a"]
    m.update({"x": 1}, y=2)
    assert m.snapshot() == {"x": 1, "y": 2}


def test_snapshot_is_a_copy():
    m = Memory()
    m.set("a", 1)
    snap = m.snapshot()
    snap["b"] = 2
    assert m.keys() == ["a"]


def test_clear_deletes_user_keys_only():
    m = Memory(data={"k": 1}, session_id="s")
    m.update(a=1, b=2)
    deleted = []
    m.subscribe("*", lambda c: deleted.append(c.key) if c.deleted else None)
    m.clear()
    assert m.keys() == []
    assert deleted == ["a", "b"]
    assert m.data.k == 1 and m.session_id == "s"


def test_empty_memory_is_truthy():
    assert Memory()  # no __len__: `memory or Memory()` must not replace an empty memory


# -- blocking get -----------------------------------------------------------------------------


def test_blocking_get_is_woken_by_another_thread_quickly():
    m = Memory()
    later(0.05, m.set, "sentiment", "positive")
    start = time.monotonic()
    assert m.get("sentiment", wait=5) == "positive"
    elapsed = time.monotonic() - start
    assert elapsed < 1.0, elapsed  # woken by the write, not by the 5 s timeout


def test_blocking_get_wait_true_blocks_until_written():
    m = Memory()
    later(0.05, m.set, "k", 3)
    start = time.monotonic()
    assert m.get("k", wait=True) == 3
    assert time.monotonic() - start < 2.0


def test_blocking_get_latency_is_small():
    """The reader wakes within milliseconds of the write (Condition.wait, no sleep polling)."""
    m = Memory()
    written_at: list[float] = []

    def writer():
        time.sleep(0.05)
        written_at.append(time.monotonic())
        m.set("k", 1)

    latencies = []
    for _ in range(5):
        m.delete("k")
        written_at.clear()
        t = threading.Thread(target=writer)
        t.start()
        m.get("k", wait=5)
        latencies.append(time.monotonic() - written_at[0])
        t.join()
    assert min(latencies) < 0.02, latencies


def test_present_key_returns_immediately_without_waiting():
    m = Memory()
    m.set("k", 1)
    start = time.monotonic()
    assert m.get("k", wait=10) == 1
    assert time.monotonic() - start < 0.1


def test_timeout_raises_await_timeout_with_exact_message():
    m = Memory()
    start = time.monotonic()
    with pytest.raises(AwaitTimeout) as info:
        m.get("sentiment", wait=0.1)
    assert time.monotonic() - start >= 0.1
    assert str(info.value) == "Timeout waiting for 'sentiment' after 0.1 seconds"
    assert not robotlab.retryable(info.value)


def test_await_timeout_message_with_whole_seconds():
    assert str(AwaitTimeout.for_key("sentiment", 30)) == "Timeout waiting for 'sentiment' after 30 seconds"
    with pytest.raises(AwaitTimeout, match=r"^Timeout waiting for 'k' after 0 seconds$"):
        Memory().get("k", wait=0)


def test_wait_false_and_none_never_block():
    m = Memory()
    start = time.monotonic()
    assert m.get("k", wait=False, default=1) == 1
    assert m.get("k", wait=None) is None
    assert time.monotonic() - start < 0.05


@pytest.mark.parametrize("bad", [-1, float("nan"), "5", object()])
def test_invalid_wait_values_raise_value_error(bad):
    with pytest.raises(ValueError, match="wait must be"):
        Memory().get("k", wait=bad)


def test_several_missing_keys_time_out_on_the_first_one():
    m = Memory()
    start = time.monotonic()
    with pytest.raises(AwaitTimeout, match="'a'"):
        m.get("a", "b", wait=0.2)
    elapsed = time.monotonic() - start
    assert 0.2 <= elapsed < 0.39, elapsed  # timed out on 'a'; never started on 'b'


def test_timeout_applies_per_missing_key():
    """'a' arrives after 0.15 s (within its 0.2 s), then 'b' gets its own full 0.2 s and times out."""
    m = Memory()
    later(0.15, m.set, "a", 1)
    start = time.monotonic()
    with pytest.raises(AwaitTimeout, match="'b'"):
        m.get("a", "b", wait=0.2)
    elapsed = time.monotonic() - start
    assert elapsed >= 0.35, elapsed  # 0.15 on 'a' + a fresh 0.2 on 'b'


def test_per_key_timeout_can_exceed_the_single_timeout():
    """Each key arrives within 0.3 s of the previous one, 0.5 s in total: a 0.3 s per-key wait succeeds."""
    m = Memory()

    def writer():
        time.sleep(0.25)
        m.set("a", 1)
        time.sleep(0.25)
        m.set("b", 2)

    threading.Thread(target=writer, daemon=True).start()
    start = time.monotonic()
    assert m.get("a", "b", wait=0.3) == {"a": 1, "b": 2}
    assert time.monotonic() - start >= 0.45


def test_multi_key_wait_with_keys_written_in_any_order():
    m = Memory()
    later(0.05, m.update, {"b": 2})
    later(0.1, m.set, "a", 1)
    assert m.get("a", "b", wait=2) == {"a": 1, "b": 2}


def test_many_readers_are_all_woken_by_one_write():
    m = Memory()
    results = []
    readers = [threading.Thread(target=lambda: results.append(m.get("go", wait=5))) for _ in range(10)]
    for r in readers:
        r.start()
    time.sleep(0.05)
    start = time.monotonic()
    m.set("go", "now")
    for r in readers:
        r.join(2)
    assert results == ["now"] * 10
    assert time.monotonic() - start < 1.0


def test_blocked_reader_is_not_woken_by_other_keys():
    m = Memory()
    later(0.05, m.set, "other", 1)
    with pytest.raises(AwaitTimeout):
        m.get("wanted", wait=0.2)


# -- subscriptions ----------------------------------------------------------------------------


def test_subscription_exact_key_receives_change_events():
    m = Memory()
    events: list[MemoryChange] = []
    sub = m.subscribe("status", events.append)
    assert isinstance(sub, Subscription)
    m.set("status", "new")
    m.set("status", "done")
    m.set("status.extra", "ignored")
    m.set("other", 1)
    m.delete("status")
    assert [(e.key, e.value, e.previous, e.deleted, e.created) for e in events] == [
        ("status", "new", None, False, True),
        ("status", "done", "new", False, False),
        ("status", None, "done", True, False),
    ]
    assert all(e.memory is m for e in events)


def test_subscription_glob_patterns():
    m = Memory()
    seen = []
    m.subscribe("user.*", lambda c: seen.append(c.key))
    m.subscribe("item?", lambda c: seen.append("?" + c.key))
    m.update({"user.name": "ada", "user.age": 36, "username": "x", "item1": 1, "item10": 2, "USER.x": 0})
    assert seen == ["user.name", "user.age", "?item1"]


def test_exact_pattern_with_no_glob_chars_does_not_match_prefixes():
    m = Memory()
    seen = []
    m.subscribe("a", lambda c: seen.append(c.key))
    m.set("ab", 1)
    m.set("a", 2)
    assert seen == ["a"]


def test_unsubscribe_and_cancel():
    m = Memory()
    seen = []
    sub1 = m.subscribe("k", lambda c: seen.append(1))
    sub2 = m.subscribe("k", lambda c: seen.append(2))
    m.set("k", 0)
    assert m.unsubscribe(sub1) is True
    assert m.unsubscribe(sub1) is False
    m.set("k", 0)
    assert sub2.cancel() is True
    assert sub2.cancel() is False
    m.set("k", 0)
    assert seen == [1, 2, 2]
    assert m.subscriptions() == []


def test_callback_cancelling_a_later_subscription_stops_it_for_the_same_write():
    m = Memory()
    seen = []
    second: list[Subscription] = []
    m.subscribe("k", lambda c: second[0].cancel())
    second.append(m.subscribe("k", lambda c: seen.append("second")))
    m.set("k", 1)
    assert seen == []


def test_callbacks_run_in_subscription_order_on_the_writer_thread():
    m = Memory()
    calls = []
    for i in range(5):
        m.subscribe("*", lambda c, i=i: calls.append((i, c.value, threading.get_ident())))
    m.set("k", "v1")
    m.set("k", "v2")
    me = threading.get_ident()
    assert calls == [(i, v, me) for v in ("v1", "v2") for i in range(5)]


def test_callbacks_from_another_writer_thread_run_on_that_thread():
    m = Memory()
    threads = []
    m.subscribe("k", lambda c: threads.append(threading.get_ident()))
    t = threading.Thread(target=m.set, args=("k", 1))
    t.start()
    t.join()
    assert threads == [t.ident]


def test_callback_exception_is_logged_and_isolated(caplog):
    m = Memory()
    seen = []

    def boom(change):
        raise RuntimeError("subscriber broke")

    m.subscribe("k", lambda c: seen.append("before"))
    m.subscribe("k", boom)
    m.subscribe("k", lambda c: seen.append("after"))
    with caplog.at_level(logging.ERROR, logger="robotlab.memory"):
        m.set("k", 1)  # does not raise
    assert m.get("k") == 1
    assert seen == ["before", "after"]
    records = [r for r in caplog.records if r.name == "robotlab.memory"]
    assert len(records) == 1
    assert "'k'" in records[0].getMessage()
    assert records[0].exc_info[1].args == ("subscriber broke",)


def test_callbacks_run_outside_the_lock():
    """A callback may read, write and block on the memory; another thread's write gets through."""
    m = Memory()
    got = []

    def on_ping(change):
        m.set("pong", change.value + 1)  # re-entrant write
        other = threading.Thread(target=m.set, args=("from_thread", "ok"))
        other.start()
        got.append(m.get("from_thread", wait=2))  # would deadlock if the lock were held
        other.join()

    m.subscribe("ping", on_ping)
    m.set("ping", 1)
    assert m.get("pong") == 2
    assert got == ["ok"]


def test_subscription_fires_after_the_value_is_visible():
    m = Memory()
    seen = []
    m.subscribe("k", lambda c: seen.append(m.get("k")))
    m.set("k", "visible")
    assert seen == ["visible"]


def test_delete_of_missing_key_fires_nothing():
    m = Memory()
    seen = []
    m.subscribe("*", seen.append)
    m.delete("nope")
    assert seen == []


def test_subscribe_requires_callable():
    with pytest.raises(TypeError):
        Memory().subscribe("k", "not callable")


def test_update_is_validated_before_anything_is_written():
    m = Memory()
    with pytest.raises(ConfigurationError):
        m.update({"ok": 1, "data": 2})
    assert m.keys() == []


# -- thread safety ----------------------------------------------------------------------------


def test_many_writers_all_writes_present_and_callbacks_counted_exactly():
    m = Memory()
    threads_n, writes_n = 8, 1000
    counter = {"all": 0, "t0": 0}
    count_lock = threading.Lock()

    def count_all(change):
        with count_lock:
            counter["all"] += 1

    def count_t0(change):
        with count_lock:
            counter["t0"] += 1

    m.subscribe("*", count_all)
    m.subscribe("t0.*", count_t0)
    barrier = threading.Barrier(threads_n)

    def writer(t):
        barrier.wait()
        for i in range(writes_n):
            m.set(f"t{t}.{i}", (t, i))

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(m.keys()) == threads_n * writes_n
    snap = m.snapshot()
    assert all(snap[f"t{t}.{i}"] == (t, i) for t in range(threads_n) for i in range(writes_n))
    assert counter == {"all": threads_n * writes_n, "t0": writes_n}


def test_one_writer_per_key_sees_its_own_order_under_contention():
    m = Memory()
    per_key: dict[str, list[int]] = {}
    lock = threading.Lock()

    def record(change):
        with lock:
            per_key.setdefault(change.key, []).append(change.value)

    m.subscribe("*", record)

    def writer(name):
        for i in range(500):
            m.set(name, i)

    threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert per_key == {f"w{n}": list(range(500)) for n in range(6)}


def test_concurrent_counter_increments_with_subscription_and_reads():
    """Readers blocked on a key that many writers race to create all get a value."""
    m = Memory()
    got = []
    readers = [threading.Thread(target=lambda: got.append(m.get("winner", wait=5))) for _ in range(4)]
    writers = [threading.Thread(target=m.set, args=("winner", n)) for n in range(4)]
    for t in readers + writers:
        t.start()
    for t in readers + writers:
        t.join(5)
    assert len(got) == 4 and all(v in range(4) for v in got)


# -- reserved keys ---------------------------------------------------------------------------


def test_reserved_keys_have_accessors_and_are_excluded_from_keys():
    m = Memory(data={"category": "billing"}, session_id="sess-1")
    m.set("user", 1)
    assert m.keys() == ["user"]
    assert isinstance(m.data, StateProxy)
    assert m.results == []
    assert m.messages == []
    assert m.session_id == "sess-1"
    assert m.cache is None
    assert set(RESERVED_KEYS).isdisjoint(m.keys())
    for key in RESERVED_KEYS:
        assert key not in m


@pytest.mark.parametrize("key", RESERVED_KEYS)
def test_reserved_keys_cannot_be_used_through_the_key_space(key):
    m = Memory()
    with pytest.raises(ConfigurationError, match=rf"^'{key}' is a reserved memory key; use memory\.{key}"):
        m.set(key, 1)
    with pytest.raises(ConfigurationError, match="reserved memory key"):
        m.get(key)
    with pytest.raises(ConfigurationError, match="reserved memory key"):
        m.delete(key)
    with pytest.raises(ConfigurationError, match="reserved memory key"):
        m[key] = 1
    with pytest.raises(ConfigurationError, match="reserved memory key"):
        m.subscribe(key, print)


def test_reserved_key_message_names_the_data_accessor():
    with pytest.raises(ConfigurationError) as info:
        Memory().set("data", {})
    assert str(info.value) == (
        "'data' is a reserved memory key; use memory.data (memory.data['name'] or memory.data.name) instead"
    )


def test_reserved_accessors_are_settable_with_the_right_types():
    m = Memory()
    m.results = ("r1",)
    m.messages = [{"role": "user", "content": "hi"}]
    m.session_id = "abc"
    m.data = {"a": 1}
    proxy = m.data
    m.data = {"b": 2}
    assert m.data is proxy and m.data.to_dict() == {"b": 2}
    assert m.results == ["r1"]
    assert m.messages == [{"role": "user", "content": "hi"}]
    assert m.session_id == "abc"
    m.session_id = None
    with pytest.raises(TypeError):
        m.session_id = 42
    with pytest.raises(TypeError):
        m.data = ["not", "a", "mapping"]
    with pytest.raises(AttributeError):
        m.cache = object()


def test_results_append_is_live():
    m = Memory()
    m.results.append("x")
    m.messages.append({"role": "assistant", "content": "ok"})
    assert m.results == ["x"]
    assert len(m.messages) == 1


# -- StateProxy --------------------------------------------------------------------------------


def test_state_proxy_item_and_attribute_access():
    m = Memory(data={"category": "billing"})
    data = m.data
    assert data["category"] == "billing"
    assert data.category == "billing"
    data.priority = "high"
    data["owner"] = "ada"
    assert data["priority"] == "high"
    assert data.owner == "ada"
    assert data.to_dict() == {"category": "billing", "priority": "high", "owner": "ada"}
    assert data.keys() == ["category", "priority", "owner"]
    assert "owner" in data and "nope" not in data
    assert data.get("nope", 5) == 5
    assert data.nope is None  # attribute reads of missing keys give None, as in robot_lab
    with pytest.raises(KeyError):
        data["nope"]
    assert list(data) == ["category", "priority", "owner"]
    assert len(data) == 3
    assert data == {"category": "billing", "priority": "high", "owner": "ada"}
    del data.owner
    del data["priority"]
    assert data.to_dict() == {"category": "billing"}
    with pytest.raises(AttributeError):
        del data.owner


def test_state_proxy_update_items_and_private_names():
    data = Memory().data
    data.update({"a": 1}, b=2)
    assert data.items() == [("a", 1), ("b", 2)]
    with pytest.raises(AttributeError):
        data._secret  # noqa: B018
    with pytest.raises(AttributeError):
        data._secret = 1
    assert not hasattr(data, "__wrapped__")


def test_state_proxy_to_dict_is_a_copy_and_shared_with_memory():
    m = Memory()
    m.data.x = 1
    d = m.data.to_dict()
    d["y"] = 2
    assert m.data.to_dict() == {"x": 1}
    assert m.to_dict()["data"] == {"x": 1}


def test_state_proxy_pickles_and_copies_as_a_detached_copy():
    m = Memory(data={"a": [1, 2]})
    clone = pickle.loads(pickle.dumps(m.data))
    assert isinstance(clone, StateProxy)
    assert clone.to_dict() == {"a": [1, 2]}
    clone.b = 1
    assert "b" not in m.data
    assert copy.deepcopy(m.data).to_dict() == {"a": [1, 2]}


def test_state_proxy_is_thread_safe_under_concurrent_writes():
    data = Memory().data

    def writer(t):
        for i in range(500):
            data[f"{t}-{i}"] = i

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(data) == 2000


# -- persistence -----------------------------------------------------------------------------------


class _Result:
    def __init__(self, text):
        self.text = text

    def to_dict(self):
        return {"text": self.text}


def test_to_dict_from_dict_round_trip():
    m = Memory(data={"category": "billing"}, session_id="s-1")
    m.update({"a": 1, "b": [1, 2]})
    m.results.append(_Result("hello"))
    m.results.append({"plain": True})
    m.messages.append({"role": "user", "content": "hi"})
    d = m.to_dict()
    assert d == {
        "data": {"category": "billing"},
        "results": [{"text": "hello"}, {"plain": True}],
        "messages": [{"role": "user", "content": "hi"}],
        "session_id": "s-1",
        "values": {"a": 1, "b": [1, 2]},
    }
    json.dumps(d)  # plain data
    back = Memory.from_dict(json.loads(json.dumps(d)))
    assert back.to_dict() == d
    assert back.keys() == ["a", "b"]
    assert back.data.category == "billing"
    assert back.session_id == "s-1"


def test_to_dict_does_not_share_state():
    m = Memory()
    m.set("a", 1)
    d = m.to_dict()
    d["values"]["b"] = 2
    d["data"]["x"] = 1
    assert m.keys() == ["a"]
    assert m.data.to_dict() == {}


def test_from_dict_tolerates_missing_parts_and_rejects_reserved_user_keys():
    assert Memory.from_dict({}).to_dict() == {
        "data": {}, "results": [], "messages": [], "session_id": None, "values": {},
    }
    with pytest.raises(ConfigurationError):
        Memory.from_dict({"values": {"cache": 1}})


def test_pickle_round_trip_keeps_state_but_not_subscriptions():
    m = Memory(data={"x": 1}, session_id="s")
    m.set("k", [1, 2])
    m.results.append(_Result("kept as object"))
    m.subscribe("k", lambda c: None)  # a lambda: would not pickle if it travelled
    clone = pickle.loads(pickle.dumps(m))
    assert clone.get("k") == [1, 2]
    assert clone.data.x == 1
    assert clone.session_id == "s"
    assert clone.results[0].text == "kept as object"
    assert clone.subscriptions() == []
    # the clone is live: its own lock and condition work
    later(0.05, clone.set, "late", 1)
    assert clone.get("late", wait=2) == 1
    assert "late" not in m


def test_deepcopy_gives_an_independent_memory():
    m = Memory()
    m.set("k", {"nested": 1})
    c = copy.deepcopy(m)
    c.get("k")["nested"] = 2
    assert m.get("k") == {"nested": 1}


# -- cache and extensions --------------------------------------------------------------------------


def test_cache_is_none_without_the_extension():
    assert not robotlab.extension_loaded("semantic_cache")
    assert Memory().cache is None
    assert create_memory(enable_cache=True).cache is None


def test_cache_comes_from_the_semantic_cache_extension():
    sentinel = object()
    register_extension("semantic_cache", sentinel)
    try:
        assert Memory().cache is sentinel
        assert Memory(enable_cache=False).cache is None
        assert create_memory(enable_cache=False).cache is None
        m = pickle.loads(pickle.dumps(Memory()))
        assert m.cache is sentinel  # re-resolved in the receiving process
    finally:
        unregister_extension("semantic_cache")


DOCUMENTS_MESSAGE = (
    "document storage requires the robotlab[documents] extra. Install it with `pip install 'robotlab[documents]'`."
)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.store_document("doc", "text"),
        lambda m: m.search_documents("query"),
        lambda m: m.document_keys(),
        lambda m: m.delete_document("doc"),
    ],
    ids=["store_document", "search_documents", "document_keys", "delete_document"],
)
def test_document_methods_need_the_extension(call):
    with pytest.raises(DependencyError) as info:
        call(Memory())
    assert str(info.value) == DOCUMENTS_MESSAGE


def test_document_methods_delegate_to_the_extension():
    calls = []

    class Store:
        def store_document(self, memory, key, text, **metadata):
            calls.append(("store", memory, key, text, metadata))
            return key

        def search_documents(self, memory, query, limit):
            calls.append(("search", memory, query, limit))
            return [("doc", 0.9)]

        def document_keys(self, memory):
            return ["doc"]

        def delete_document(self, memory, key):
            calls.append(("delete", memory, key))
            return True

    register_extension("document_store", Store())
    try:
        m = Memory()
        assert m.store_document("doc", "hello", source="test") == "doc"
        assert m.search_documents("hello", limit=3) == [("doc", 0.9)]
        assert m.document_keys() == ["doc"]
        assert m.delete_document("doc") is True
        assert calls == [
            ("store", m, "doc", "hello", {"source": "test"}),
            ("search", m, "hello", 3),
            ("delete", m, "doc"),
        ]
    finally:
        unregister_extension("document_store")


# -- create_memory -------------------------------------------------------------------------------


def test_create_memory_options():
    m = create_memory(data={"a": 1}, session_id="s")
    assert isinstance(m, Memory)
    assert m.data.a == 1 and m.session_id == "s"
    assert create_memory(backend="memory").keys() == []
    assert create_memory(backend=None).keys() == []


def test_create_memory_redis_needs_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis", None)  # `import redis` fails, as without robotlab[redis]
    with pytest.raises(DependencyError) as info:
        create_memory(backend="redis")
    assert str(info.value) == (
        "create_memory(backend='redis') requires robotlab[redis]. Install it with `pip install 'robotlab[redis]'`."
    )


def test_create_memory_unknown_backend_and_option():
    with pytest.raises(ConfigurationError) as info:
        create_memory(backend="sqlite")
    assert not isinstance(info.value, DependencyError)
    assert str(info.value) == "unknown memory backend 'sqlite'; valid backends: 'memory', 'redis'"
    with pytest.raises(ConfigurationError, match="unknown create_memory option"):
        create_memory(colour="blue")


class TaggedMemory(Memory):
    """A user backend: an in-process memory that also carries a tag option."""

    def __init__(self, data=None, *, enable_cache=True, session_id=None, tag="none"):
        super().__init__(data, enable_cache=enable_cache, session_id=session_id)
        self.tag = tag


def test_create_memory_opens_a_registered_backend():
    register_memory_backend("tagged", TaggedMemory, options=("tag",))
    register_memory_backend("by-path", "tests.test_memory:TaggedMemory")  # imported on first use
    try:
        assert memory_backends() == ["memory", "redis", "tagged", "by-path"]
        memory = create_memory(data={"a": 1}, backend="tagged", session_id="s", tag="blue")
        assert type(memory) is TaggedMemory
        assert memory.tag == "blue" and memory.data.a == 1 and memory.session_id == "s"
        assert create_memory(backend="tagged").tag == "none"  # only the options given are passed on
        assert type(create_memory(backend="by-path")) is TaggedMemory
        with pytest.raises(ConfigurationError) as info:
            create_memory(tag="red")  # the in-process backend does not take it
        assert str(info.value) == "create_memory option(s) tag apply to backend='tagged' only"
        with pytest.raises(ConfigurationError) as info:
            create_memory(backend="by-path", tag="red")
        assert str(info.value) == "create_memory option(s) tag apply to backend='tagged' only"
    finally:
        unregister_memory_backend("tagged")
        unregister_memory_backend("by-path")
    assert memory_backends() == ["memory", "redis"]


def test_unknown_memory_backend_names_the_registered_ones():
    register_memory_backend("tagged", TaggedMemory, options=("tag",))
    try:
        with pytest.raises(ConfigurationError) as info:
            create_memory(backend="sqlite")
        assert str(info.value) == "unknown memory backend 'sqlite'; valid backends: 'memory', 'redis', 'tagged'"
        with pytest.raises(ConfigurationError) as info:
            create_memory(colour="blue")
        assert str(info.value) == (
            "unknown create_memory option(s): colour; valid: backend, session_id, url, namespace, serializer, tag"
        )
        assert robotlab.memory.BACKENDS == ("memory", "redis", "tagged")
    finally:
        unregister_memory_backend("tagged")
    assert robotlab.memory.BACKENDS == ("memory", "redis")


def test_register_memory_backend_rejects_bad_registrations():
    with pytest.raises(TypeError, match="factory must be callable or an import path"):
        register_memory_backend("bad", 42)
    with pytest.raises(ConfigurationError, match=r"an import path must look like 'package\.module:attribute'"):
        register_memory_backend("bad", "robotlab.memory.Memory")
    with pytest.raises(ConfigurationError, match=r"option\(s\) session_id belong to create_memory"):
        register_memory_backend("bad", Memory, options=("session_id",))
    with pytest.raises(ConfigurationError, match="cannot be unregistered"):
        unregister_memory_backend("memory")
    register_memory_backend("missing", "robotlab.memory:NoSuchMemory")
    try:
        with pytest.raises(ConfigurationError) as info:
            create_memory(backend="missing")
        assert str(info.value) == (
            "memory backend 'missing' is registered as 'robotlab.memory:NoSuchMemory', "
            "but robotlab.memory has no NoSuchMemory"
        )
    finally:
        unregister_memory_backend("missing")
    assert "bad" not in memory_backends()


def test_memory_module_imports_only_the_standard_library():
    import subprocess
    import sys

    code = (
        "import sys; import robotlab.memory, robotlab.budget; "
        "bad = [m for m in ('pydantic', 'msgspec', 'litellm', 'pydantic_settings') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("index", range(len(python_blocks("docs/memory.md"))))
def test_docs_memory_examples_run(index, capsys):
    run_block("docs/memory.md", index)


def test_memory_demo_example_output():
    import os
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).parent.parent / "examples" / "memory_demo.py"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert "memory: ticket.sentiment = 'frustrated'" in out.stdout
    import re

    waited = re.search(r"responder's tool returned: frustrated \(waited (\d+\.\d+) s\)", out.stdout)
    assert waited is not None, out.stdout
    assert 0.05 < float(waited.group(1)) < 2.0  # it really blocked, and was woken by the write
    assert "reply: I'm sorry for the trouble, Ada." in out.stdout
    assert "user keys: ['ticket.sentiment', 'ticket.priority']" in out.stdout
