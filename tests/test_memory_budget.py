import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

import robotlab
from robotlab import AwaitTimeout, BudgetExceeded, ConfigurationError, DependencyError, Memory, create_memory
from robotlab.budget import Ledger


def test_set_get_delete_keys_and_reserved_keys():
    memory = create_memory(data={"category": "billing"})
    memory.set("a", 1)
    memory.update({"b": 2})
    assert memory.get("a") == 1 and memory.get("a", "b") == {"a": 1, "b": 2}
    assert memory.get("missing", default="d") == "d"
    assert memory.keys() == ["a", "b"]  # reserved keys never listed
    assert memory.delete("a") == 1 and memory.delete("a") is None
    assert memory.data["category"] == "billing" and memory.data.category == "billing"
    memory.data.priority = "high"
    assert memory.data.to_dict() == {"category": "billing", "priority": "high"}
    assert memory.results == [] and memory.messages == [] and memory.session_id is None and memory.cache is None
    with pytest.raises(ConfigurationError, match="reserved"):
        memory.set("data", {})


def test_blocking_get_wakes_on_write_from_another_thread():
    memory = Memory()
    threading.Timer(0.1, memory.set, args=("sentiment", "positive")).start()
    started = time.perf_counter()
    assert memory.get("sentiment", wait=5) == "positive"
    assert time.perf_counter() - started < 1.0
    threading.Timer(0.05, memory.set, args=("later", 1)).start()
    assert memory.get("later", wait=True) == 1


def test_await_timeout_message_and_per_key_timeout():
    memory = Memory()
    with pytest.raises(AwaitTimeout) as caught:
        memory.get("sentiment", wait=0.1)
    assert str(caught.value) == "Timeout waiting for 'sentiment' after 0.1 seconds"
    threading.Timer(0.15, memory.set, args=("b", 2)).start()
    started = time.perf_counter()
    with pytest.raises(AwaitTimeout, match="'a'"):
        memory.get("a", "b", wait=0.1)
    assert time.perf_counter() - started >= 0.1
    threading.Timer(0.12, memory.set, args=("d", 4)).start()
    memory.set("c", 3)
    assert memory.get("c", "d", wait=0.2) == {"c": 3, "d": 4}  # each missing key gets its own 0.2 s


def test_subscriptions_exact_glob_order_isolation_and_unsubscribe(caplog):
    memory = Memory()
    seen = []
    exact = memory.subscribe("order.1", lambda c: seen.append(("exact", c.key, c.value, c.previous)))

    def broken(change):
        raise RuntimeError("subscriber bug")

    memory.subscribe("order.*", broken)
    memory.subscribe("order.*", lambda c: seen.append(("glob", c.key, c.value, c.deleted)))
    memory.set("order.1", "new")
    memory.set("order.1", "shipped")
    memory.delete("order.1")
    memory.set("other", 1)
    assert seen == [
        ("exact", "order.1", "new", None), ("glob", "order.1", "new", False),
        ("exact", "order.1", "shipped", "new"), ("glob", "order.1", "shipped", False),
        ("exact", "order.1", None, "shipped"), ("glob", "order.1", None, True),
    ]
    assert "subscriber bug" in caplog.text
    exact.cancel()
    memory.set("order.1", "again")
    assert seen[-1][0] == "glob"


def test_many_writers_lose_nothing():
    memory = Memory()
    count, lock = [0], threading.Lock()

    def on_change(change):
        with lock:
            count[0] += 1

    memory.subscribe("*", on_change)
    threads = [threading.Thread(target=lambda i=i: [memory.set(f"w{i}.{j}", j) for j in range(1000)])
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(memory.keys()) == 8000 and count[0] == 8000


def test_round_trip_and_document_store_guard():
    memory = Memory({"x": 1}, session_id="s1")
    memory.set("k", "v")
    memory.results.append(robotlab.RobotResult(robot_name="r", last_text_content="t"))
    clone = Memory.from_dict(memory.to_dict())
    assert clone.get("k") == "v" and clone.data.x == 1 and clone.session_id == "s1"
    assert clone.results[0]["last_text_content"] == "t"
    with pytest.raises(DependencyError, match=r"pip install 'robotlab\[documents\]'"):
        memory.store_document("d", "text")
    with pytest.raises(ConfigurationError, match="unknown memory backend"):
        create_memory(backend="sqlite")


def test_ledger_reserve_reconcile_release():
    ledger = Ledger(token_budget=1000, cost_budget=0.5)
    r = ledger.reserve("tokens", 400)
    assert ledger.pending("tokens") == 400
    assert ledger.reconcile(r, 1200) == 1200
    assert str(ledger.overspend_error()) == "Token budget exceeded: 1200 tokens used, budget is 1000"
    with pytest.raises(BudgetExceeded, match=r"^budget exceeded for tokens: 1201 > 1000$"):
        ledger.reserve("tokens", 1)
    with pytest.raises(ValueError, match="already"):
        ledger.reconcile(r, 1)
    c = ledger.reserve("cost", 0.1)
    ledger.release(c)
    assert ledger.pending("cost") == 0 and ledger.remaining("cost") == 0.5
    with pytest.raises(ValueError):
        ledger.reserve("gpus", 1)
    with pytest.raises(ValueError):
        ledger.reserve("tokens", -1)
    assert Ledger().reserve("tokens", 10**9).amount == 10**9  # no limit


def test_exactly_k_concurrent_reservations_succeed():
    ledger = Ledger(token_budget=5 * 100)
    barrier = threading.Barrier(16)
    wins, lock = [], threading.Lock()

    def attempt():
        barrier.wait()
        try:
            reservation = ledger.reserve("tokens", 100)
        except BudgetExceeded:
            return
        with lock:
            wins.append(reservation)

    threads = [threading.Thread(target=attempt) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 5


@given(st.lists(st.integers(min_value=0, max_value=300), max_size=40), st.integers(min_value=0, max_value=2000))
def test_ledger_never_commits_past_its_limit_through_exact_reservations(amounts, limit):
    ledger = Ledger(token_budget=limit)
    for amount in amounts:
        try:
            r = ledger.reserve("tokens", amount)
        except BudgetExceeded:
            assert ledger.committed("tokens") + amount > limit
            continue
        ledger.reconcile(r, amount)
        assert ledger.committed("tokens") <= limit
    assert ledger.overspend_error() is None
