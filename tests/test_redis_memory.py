"""create_memory(backend="redis"): the Memory API over a real redis-server, shared between processes."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import logging
import os
import pickle
import re
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

import robotlab
from robotlab.errors import AwaitTimeout, BoundaryError, ConfigurationError, DependencyError, Error, WireError
from robotlab.memory import RESERVED_KEYS, Memory, MemoryChange, create_memory
from tests import memory_jobs as jobs
from tests.doc_blocks import python_blocks, run_block
from tests.redis_server import RedisServer, redis_server, require_redis_server  # noqa: F401  (fixture)

ROOT = Path(__file__).parent.parent
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT)}


@pytest.fixture
def namespace():
    return f"test:{uuid.uuid4().hex}"


@pytest.fixture
def raw(redis_server):  # noqa: F811
    """A plain redis-py client, to look at what is really stored."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    yield client
    client.close()


@pytest.fixture
def open_memory(redis_server, namespace, raw):  # noqa: F811
    """``open_memory(**options)``: a RedisMemory on this test's namespace; all closed and wiped afterwards."""
    opened = []

    def open_(**options):
        options.setdefault("namespace", namespace)
        memory = create_memory(backend="redis", url=redis_server.url, **options)
        opened.append(memory)
        return memory

    yield open_
    for memory in opened:
        memory.close()
    for ns in {namespace, *(m.namespace for m in opened)}:
        keys = raw.keys(f"{ns}:*")
        if keys:
            raw.delete(*keys)


@pytest.fixture(params=["memory", "redis"])
def any_memory(request):
    """The same contract, checked on the in-process memory and on the Redis one."""
    if request.param == "memory":
        return create_memory
    return request.getfixturevalue("open_memory")


def run_peer(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)


@contextlib.contextmanager
def stopped_on_exit(proc: subprocess.Popen):
    """Kill *proc* if the test leaves while it still runs (a failed assertion)."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def read_line(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline()
    assert line, f"peer exited early ({proc.poll()}): {proc.stderr.read()}"
    return line.strip()


# -- the Memory contract, on both backends ------------------------------------------------------


def test_is_a_memory_wherever_one_is_accepted(open_memory):
    from robotlab.redis_memory import RedisMemory

    memory = open_memory()
    assert isinstance(memory, RedisMemory) and isinstance(memory, Memory) and robotlab.RedisMemory is RedisMemory
    assert memory.cache is None and memory.enable_cache is True
    assert memory  # truthy even when empty, like Memory


def test_set_get_delete_keys_order_and_defaults(any_memory):
    m = any_memory()
    assert m.get("x") is None and m.get("x", default=7) == 7
    m.set("x", 1)
    m.set("y", None)
    assert m.get("y", default="d") is None  # a stored None is a value
    assert "x" in m and "y" in m and "z" not in m and "data" not in m
    for k in ("b", "a"):
        m.set(k, k)
    m.set("x", "again")  # keeps its place
    assert m.keys() == ["x", "y", "b", "a"]
    assert m.delete("x") == "again" and m.delete("x") is None
    m.set("x", 2)  # deleted then re-set: moves to the end
    assert m.keys() == ["y", "b", "a", "x"]
    assert m.get("a", "zz", "y", default=0) == {"a": "a", "zz": 0, "y": None}
    assert list(m.get("b", "a")) == ["b", "a"]
    m.set(42, "answer")
    assert m.get("42") == "answer" and 42 in m
    m["item"] = {"n": 1}
    assert m["item"] == {"n": 1}
    del m["item"]
    with pytest.raises(KeyError):
        m["item"]
    with pytest.raises(KeyError):
        del m["item"]
    m.update({"u": 1}, v=2)
    assert m.snapshot() == {"y": None, "b": "b", "a": "a", "x": 2, "42": "answer", "u": 1, "v": 2}
    m.clear()
    assert m.keys() == [] and m.snapshot() == {}


def test_reserved_keys_raise_the_same_errors(any_memory):
    m = any_memory()
    reference = Memory()
    operations = [
        lambda mem, k: mem.set(k, 1),
        lambda mem, k: mem.get(k),
        lambda mem, k: mem.get("fine", k),
        lambda mem, k: mem.delete(k),
        lambda mem, k: mem.update({"fine": 1, k: 2}),
        lambda mem, k: mem[k],
        lambda mem, k: mem.__setitem__(k, 1),
        lambda mem, k: mem.__delitem__(k),
        lambda mem, k: mem.subscribe(k, print),
    ]
    for key in RESERVED_KEYS:
        for operation in operations:
            with pytest.raises(ConfigurationError) as expected:
                operation(reference, key)
            with pytest.raises(ConfigurationError) as got:
                operation(m, key)
            assert str(got.value) == str(expected.value)
            assert "reserved memory key" in str(got.value)
    assert m.keys() == []  # the update with a reserved key wrote nothing


def test_blocking_reads(any_memory):
    m = any_memory()
    threading.Timer(0.1, m.set, args=("sentiment", "positive")).start()
    started = time.monotonic()
    assert m.get("sentiment", wait=30) == "positive"
    assert time.monotonic() - started < 20  # woken by the write, not by the timeout
    threading.Timer(0.05, m.set, args=("later", 1)).start()
    assert m.get("later", wait=True) == 1
    with pytest.raises(AwaitTimeout) as caught:
        m.get("verdict", wait=0.1)
    assert str(caught.value) == "Timeout waiting for 'verdict' after 0.1 seconds"
    with pytest.raises(AwaitTimeout):
        m.get("verdict", wait=0)
    with pytest.raises(ValueError, match="wait must be"):
        m.get("verdict", wait=-1)
    threading.Timer(0.15, m.set, args=("b", 2)).start()
    with pytest.raises(AwaitTimeout, match="'a'"):  # per key, in order: 'a' never comes
        m.get("a", "b", wait=0.1)
    threading.Timer(0.1, m.set, args=("d", 4)).start()
    m.set("c", 3)
    assert m.get("c", "d", wait=20) == {"c": 3, "d": 4}


def test_subscriptions_fire_on_the_writers_thread_in_order(any_memory, caplog):
    m = any_memory()
    log = []

    def on_user(change: MemoryChange) -> None:
        assert change.memory is m
        log.append((change.key, change.value, change.previous, change.created, change.deleted,
                    threading.current_thread() is threading.main_thread()))

    def broken(change):
        raise RuntimeError("subscriber bug")

    m.subscribe("user.*", broken)
    sub = m.subscribe("user.*", on_user)
    m.subscribe("status", lambda c: log.append(("status", c.value)))
    with caplog.at_level(logging.ERROR, logger="robotlab.memory"):
        m.set("user.name", "Ada")
    assert log == [("user.name", "Ada", None, True, False, True)]  # already fired, here
    assert "subscriber bug" in caplog.text
    m.update({"user.name": "Ada L.", "status": "ready", "user.plan": "pro"})
    m.delete("user.name")
    m.delete("user.name")  # absent: nothing fires
    m.set("username", "not matched")
    assert sub.cancel() is True
    m.set("user.plan", "free")
    assert log == [
        ("user.name", "Ada", None, True, False, True),
        ("user.name", "Ada L.", "Ada", False, False, True),
        ("status", "ready"),
        ("user.plan", "pro", None, True, False, True),
        ("user.name", None, "Ada L.", False, True, True),
    ]


def test_update_validates_every_key_and_value_before_writing(any_memory):
    m = any_memory()
    m.set("kept", 1)
    with pytest.raises(ConfigurationError):
        m.update({"a": 1, "results": 2})
    assert m.keys() == ["kept"]


# -- atomic read-modify-write, on both backends ---------------------------------------------------


def test_increment_adds_atomically_and_starts_missing_keys_at_zero(any_memory):
    m = any_memory()
    assert m.increment("hits") == 1
    assert m.increment("hits", by=41) == 42 and m.get("hits") == 42
    assert m.increment("hits", -2) == 40
    assert m.increment("score", 0.5) == 0.5 and m.increment("score", 2) == 2.5
    assert type(m.increment("mixed", 1)) is int and m.increment("mixed", 0.25) == 1.25
    m.set("big", 2**70)  # beyond HINCRBY's 64 bits: still exact
    assert m.increment("big") == 2**70 + 1
    m.set("edge", 2**63 - 1)  # the sum overflows 64 bits
    assert m.increment("edge") == 2**63
    assert m.keys() == ["hits", "score", "mixed", "big", "edge"]


@pytest.mark.parametrize("value", ["3", None, True, [1], {"n": 1}])
def test_increment_refuses_a_value_that_is_not_a_number_and_keeps_it(any_memory, value):
    m = any_memory()
    m.set("k", value)
    seen = []
    m.subscribe("*", seen.append)
    with pytest.raises(ConfigurationError) as caught:
        m.increment("k")
    assert str(caught.value) == (f"cannot increment memory['k']: it holds a {type(value).__name__}, not a number "
                                 "(only int and float values can be incremented)")
    assert m.get("k") == value and seen == []


@pytest.mark.parametrize("by", ["1", None, True, [1]])
def test_increment_by_must_be_a_number(any_memory, by):
    m = any_memory()
    with pytest.raises(TypeError, match=r"increment by= must be an int or a float, got "):
        m.increment("k", by)
    assert "k" not in m
    with pytest.raises(ConfigurationError, match="reserved memory key"):
        m.increment("data")


def test_increment_and_compare_and_set_wake_readers_and_fire_subscriptions(any_memory):
    m = any_memory()
    log = []
    m.subscribe("*", lambda c: log.append((c.key, c.value, c.previous, c.created)))
    threading.Timer(0.1, m.increment, args=("count",)).start()
    started = time.monotonic()
    assert m.get("count", wait=30) == 1
    assert time.monotonic() - started < 20  # woken by the increment, not by the timeout
    threading.Timer(0.1, m.compare_and_set, args=("owner", None, "ada")).start()
    assert m.get("owner", wait=30) == "ada"
    m.increment("count", 2)
    assert m.compare_and_set("owner", "bob", "eve") is False  # a failed compare writes and fires nothing
    assert m.compare_and_set("owner", "ada", "bob") is True
    assert log == [("count", 1, None, True), ("owner", "ada", None, True), ("count", 3, 1, False),
                   ("owner", "bob", "ada", False)]


def test_compare_and_set_writes_only_over_the_expected_value(any_memory):
    m = any_memory()
    assert m.compare_and_set("k", "x", 1) is False and "k" not in m  # missing compares as None
    assert m.compare_and_set("k", None, 1) is True and m.get("k") == 1
    assert m.compare_and_set("k", None, 2) is False and m.get("k") == 1
    assert m.compare_and_set("k", 1, {"ids": [1, 2]}) is True
    assert m.compare_and_set("k", {"ids": [1, 2]}, None) is True  # equal by ==, not identity
    assert m.get("k", default="absent") is None and "k" in m  # a stored None
    assert m.compare_and_set("k", None, "back") is True and m.get("k") == "back"
    assert m.keys() == ["k"]
    with pytest.raises(ConfigurationError, match="reserved memory key"):
        m.compare_and_set("results", None, 1)


def test_eight_threads_of_increments_and_compare_and_set_loops_lose_nothing(any_memory):
    m = any_memory()
    barrier = threading.Barrier(8)
    values = []

    def increments():
        barrier.wait()
        values.extend(m.increment("hits") for _ in range(1000))

    def cas_loop():
        for _ in range(100):
            while True:
                old = m.get("cas")
                if m.compare_and_set("cas", old, (old or 0) + 1):
                    break

    for work in (increments, cas_loop):
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert m.get("hits") == 8000 and sorted(values) == list(range(1, 8001))  # each increment got its own value
    assert m.get("cas") == 800


def test_increments_from_eight_processes_on_one_namespace_end_exact(open_memory, redis_server):  # noqa: F811
    from robotlab.parallel import WorkerPool

    memory = open_memory()
    seen = []
    memory.subscribe("hits", lambda c: seen.append(c.value))  # other processes' writes: the dispatch thread
    memory.set("state", {"n": 0})
    with WorkerPool(size=8, backend="process") as pool:
        futures = [pool.submit(jobs.redis_increments, redis_server.url, memory.namespace, "hits", 1000)
                   for _ in range(8)]
        assert [f.result(120) for f in futures] == [1000] * 8
        futures = [pool.submit(jobs.redis_compare_and_set_adds, redis_server.url, memory.namespace, "state", 100)
                   for _ in range(8)]
        [f.result(120) for f in futures]
    assert memory.get("hits") == 8000 and memory.get("state") == {"n": 800}
    deadline = time.monotonic() + 30
    while len(seen) < 8000 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sorted(seen) == list(range(1, 8001))


def test_increment_stores_plain_json_numbers(open_memory, raw, namespace):
    memory = open_memory()
    memory.increment("n", 5)
    memory.increment("f", 0.1)
    memory.increment("f", 0.2)
    assert raw.hget(f"{namespace}:values", "n") == b"5"
    assert raw.hget(f"{namespace}:values", "f") == json.dumps(0.1 + 0.2).encode()
    assert memory.get("f") == 0.1 + 0.2  # Python's arithmetic, not Redis's


def test_increment_and_compare_and_set_work_with_the_pickle_serializer(open_memory):
    memory = open_memory(serializer="pickle")
    assert memory.increment("n") == 1 and memory.increment("n", 1.5) == 2.5
    point = Point(1, 2)
    assert memory.compare_and_set("p", None, point) is True
    assert memory.compare_and_set("p", Point(1, 2), Point(3, 4)) is True and memory.get("p") == Point(3, 4)


# -- sharing between memories and processes -----------------------------------------------------


def test_two_memories_on_one_namespace_share_everything(open_memory):
    a = open_memory(data={"category": "billing"}, session_id="s-1")
    b = open_memory()
    a.set("k", {"ids": [1, 2]})
    assert b.get("k") == {"ids": [1, 2]} and b.keys() == ["k"]
    assert b.data.category == "billing" and b.session_id == "s-1"
    b.data.priority = "high"
    assert a.data.to_dict() == {"category": "billing", "priority": "high"}
    a.results.append({"robot": "r1"})
    b.messages.append({"role": "user", "content": "hi"})
    assert b.results == [{"robot": "r1"}] and a.messages == [{"role": "user", "content": "hi"}]


def test_a_write_in_one_memory_fires_subscriptions_of_another_on_its_dispatch_thread(open_memory):
    writer, reader = open_memory(), open_memory()
    seen, own = [], []
    done = threading.Event()

    def record(change):
        seen.append((change.key, change.value, change.previous, change.created, change.deleted))
        assert change.memory is reader
        assert threading.current_thread().name.startswith("robotlab-memory-dispatch")
        if change.key == "order.done":
            done.set()

    reader.subscribe("order.*", record)
    writer.subscribe("order.*", lambda c: own.append(c.key))
    writer.set("order.1", "new")
    writer.update({"order.1": "paid", "order.2": None})
    writer.delete("order.1")
    writer.set("other", 1)
    writer.set("order.done", True)
    assert done.wait(30)
    assert seen == [
        ("order.1", "new", None, True, False),
        ("order.1", "paid", "new", False, False),
        ("order.2", None, None, True, False),
        ("order.1", None, "paid", False, True),
        ("order.done", True, None, True, False),
    ]
    assert own == ["order.1", "order.1", "order.2", "order.1", "order.done"]  # exactly once each, no echo


PEER_SUBSCRIBER = """
    import json, sys, threading, time
    from robotlab import create_memory

    url, namespace = sys.argv[1:3]
    seen, done = [], threading.Event()

    def record(change):
        seen.append([change.key, change.value, change.previous, change.created, change.deleted])
        if change.key == "order.done":
            done.set()

    with create_memory(backend="redis", url=url, namespace=namespace) as memory:
        memory.subscribe("order.*", record)
        print("ready", flush=True)
        started = time.monotonic()
        woken = memory.get("go", wait=60)
        print(json.dumps({"woken": woken, "waited": time.monotonic() - started}), flush=True)
        print(json.dumps({"done": done.wait(60), "seen": seen}), flush=True)
"""


def test_a_write_in_this_process_wakes_and_notifies_another_process(open_memory, redis_server, namespace):  # noqa: F811
    memory = open_memory()
    with run_peer(PEER_SUBSCRIBER, redis_server.url, namespace) as peer, stopped_on_exit(peer):
        assert read_line(peer) == "ready"
        time.sleep(0.3)  # the peer is blocked in get("go", wait=60) by now
        memory.set("go", {"when": "now"})
        woken = json.loads(read_line(peer))
        assert woken["woken"] == {"when": "now"}
        assert woken["waited"] >= 0.2  # it really blocked, and the write woke it
        memory.set("order.1", "new")
        memory.update({"order.1": "paid", "order.2": [1, 2]})
        memory.delete("order.1")
        memory.set("unrelated", 1)
        memory.set("order.done", True)
        result = json.loads(read_line(peer))
        assert peer.wait(30) == 0
    assert result == {"done": True, "seen": [
        ["order.1", "new", None, True, False],
        ["order.1", "paid", "new", False, False],
        ["order.2", [1, 2], None, True, False],
        ["order.1", None, "paid", False, True],
        ["order.done", True, None, True, False],
    ]}


PEER_WRITER = """
    import sys, time
    from robotlab import create_memory

    url, namespace = sys.argv[1:3]
    with create_memory(backend="redis", url=url, namespace=namespace) as memory:
        memory.get("start", wait=60)
        time.sleep(0.3)
        for i in range(50):
            memory.set(f"n.{i}", i)
        memory.update({"verdict": "approved", "score": 0.9})
"""


def test_another_process_write_wakes_a_blocked_read_and_fires_subscriptions_here(open_memory, redis_server,  # noqa: F811
                                                                               namespace):
    memory = open_memory()
    seen = []
    memory.subscribe("n.*", lambda c: seen.append(c.value))
    with run_peer(PEER_WRITER, redis_server.url, namespace) as peer, stopped_on_exit(peer):
        memory.set("start", True)
        assert memory.get("verdict", "score", wait=60) == {"verdict": "approved", "score": 0.9}
        assert peer.wait(60) == 0, peer.stderr.read()
    deadline = time.monotonic() + 30
    while len(seen) < 50 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert seen == list(range(50))  # every write, in the order it was made


def test_update_is_atomic_for_readers_and_arrives_as_one_step(open_memory):
    writer, reader = open_memory(), open_memory()
    pairs = []
    reader.subscribe("*", lambda c: pairs.append((c.key, c.value)))
    stop = threading.Event()
    torn = []

    def read():
        while not stop.is_set():
            snap = reader.snapshot()
            if snap.get("a") != snap.get("b"):
                torn.append(snap)

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for i in range(200):
            writer.update({"a": i, "b": i})
    finally:
        stop.set()
        thread.join(30)
    assert torn == []
    writer.set("end", True)
    assert reader.get("end", wait=30)
    deadline = time.monotonic() + 30
    while len(pairs) < 401 and time.monotonic() < deadline:
        time.sleep(0.02)
    expected = [pair for i in range(200) for pair in (("a", i), ("b", i))] + [("end", True)]
    assert pairs == expected


def test_concurrent_writers_each_keep_their_order_and_nothing_is_lost(open_memory):
    reader = open_memory()
    writers = [open_memory() for _ in range(3)]
    seen = []
    lock = threading.Lock()

    def record(change):
        with lock:
            seen.append((change.key.split(".")[0], change.value))

    reader.subscribe("*", record)

    def write(i, memory):
        for n in range(300):
            memory.set(f"w{i}.{n}", n)

    threads = [threading.Thread(target=write, args=(i, w)) for i, w in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(reader.keys()) == 900
    deadline = time.monotonic() + 30
    while len(seen) < 900 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(seen) == 900
    for i in range(3):
        assert [value for who, value in seen if who == f"w{i}"] == list(range(300))


# -- values: JSON by default, pickle by opt-in ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Point:  # module level: picklable by reference
    x: int
    y: int


def test_json_values_are_stored_as_readable_json(open_memory, raw, namespace):
    from robotlab.parallel import FrozenDict

    m = open_memory()
    m.set("k", {"ids": (1, 2), "nested": FrozenDict({"ok": True}), "pi": 3.5, "none": None, "text": "é"})
    assert m.get("k") == {"ids": [1, 2], "nested": {"ok": True}, "pi": 3.5, "none": None, "text": "é"}
    assert json.loads(raw.hget(f"{namespace}:values", "k")) == m.get("k")
    assert raw.zrange(f"{namespace}:order", 0, -1) == [b"k"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"s": {1, 2}}, r"^cannot store memory\['bad'\]\['s'\] in Redis as JSON: set is not plain data"),
        ([b"x"], r"memory\['bad'\]\[0\] in Redis as JSON: bytes is not plain data"),
        ({1: "one"}, r"key 1 \(int\) is not a str, and JSON object keys must be$"),
        (float("nan"), r"nan is not a finite number"),
        (Point(1, 2), r"Point is not plain data .*serializer='pickle'"),
    ],
    ids=["set", "bytes", "int-key", "nan", "object"],
)
def test_json_refuses_values_it_cannot_store_faithfully(open_memory, value, problem):
    m = open_memory()
    m.set("kept", 1)
    with pytest.raises(BoundaryError, match=problem):
        m.set("bad", value)
    with pytest.raises(BoundaryError):
        m.update({"fine": 1, "bad": value})
    with pytest.raises(BoundaryError):
        m.data["bad"] = value
    with pytest.raises(BoundaryError):
        m.results.append(value)
    assert m.snapshot() == {"kept": 1} and m.data.to_dict() == {} and m.results == []  # nothing written


def test_a_value_that_contains_itself_is_refused(open_memory):
    loop = []
    loop.append(loop)
    with pytest.raises(BoundaryError, match="contains itself"):
        open_memory().set("loop", loop)


def test_pickle_is_opt_in_and_a_json_memory_never_unpickles(open_memory, caplog):
    trusted, careful, marker = open_memory(serializer="pickle"), open_memory(), open_memory()
    seen = []
    done = threading.Event()
    careful.subscribe("*", lambda c: (seen.append(c.key), c.key == "end" and done.set()))
    with caplog.at_level(logging.ERROR, logger="robotlab.memory"):
        trusted.set("point", Point(1, 2))
        marker.set("end", 1)  # frames arrive in commit order: 'point' is handled before 'end'
        assert done.wait(30)
    assert seen == ["end"]  # the pickled write was not decoded for the subscription ...
    assert "cannot decode" in caplog.text and "refusing to unpickle" in caplog.text  # ... but logged
    assert trusted.get("point") == Point(1, 2) and trusted.serializer == "pickle"
    with pytest.raises(WireError, match=r"refusing to unpickle memory\['point'\].*serializer='pickle'"):
        careful.get("point")
    careful.set("plain", [1])
    assert trusted.get("plain") == [1]  # JSON values stay readable by a pickle memory
    with pytest.raises(ConfigurationError, match="unknown serializer 'yaml'"):
        open_memory(serializer="yaml")


# -- reserved state: data, results, messages, session_id ----------------------------------------------


def test_data_is_a_shared_state_proxy(open_memory):
    a, b = open_memory(data={"category": "billing"}), open_memory()
    data = b.data
    assert data["category"] == "billing" and data.category == "billing"
    data.priority = "high"
    data["owner"] = "ada"
    assert a.data.keys() == ["category", "priority", "owner"]
    assert "owner" in a.data and len(a.data) == 3 and list(a.data) == ["category", "priority", "owner"]
    assert a.data.get("missing", "n/a") == "n/a" and a.data.missing is None
    with pytest.raises(KeyError):
        a.data["missing"]
    a.data.update(region="eu")
    del a.data.owner
    with pytest.raises(AttributeError):
        del a.data.owner
    assert b.data.items() == [("category", "billing"), ("priority", "high"), ("region", "eu")]
    assert b.data == {"category": "billing", "priority": "high", "region": "eu"}
    b.data = {"category": "sales"}  # replaces the contents, same proxy
    assert a.data.to_dict() == {"category": "sales"} and b.data is data
    with pytest.raises(TypeError):
        b.data = ["not", "a", "mapping"]
    assert pickle.loads(pickle.dumps(a.data)) == {"category": "sales"}  # a plain snapshot


def test_results_and_messages_are_shared_lists(open_memory):
    from robotlab.result import RobotResult

    a, b = open_memory(), open_memory()
    result = RobotResult(robot_name="r1", last_text_content="hi", messages=[{"role": "assistant", "content": "hi"}])
    a.results.append(result)
    stored = b.results[0]
    assert stored == result.to_dict()  # JSON: stored through to_dict(), as Memory.to_dict() does
    assert RobotResult.from_dict(stored).robot_name == "r1"
    msgs = b.messages
    msgs.extend([1, 2, 3])
    msgs += [4]
    assert a.messages == [1, 2, 3, 4] and len(a.messages) == 4 and a.messages[-1] == 4 and a.messages[1:3] == [2, 3]
    msgs.insert(0, 0)
    msgs[1] = "one"
    del msgs[-1]
    assert msgs.pop() == 3 and msgs.pop(0) == 0
    msgs.remove(2)
    assert a.messages == ["one"]
    msgs[0:1] = ["x", "y", "z"]
    del msgs[::2]
    assert a.messages == ["y"] and a.messages.copy() == ["y"] and list(a.messages) == ["y"]
    with pytest.raises(IndexError):
        msgs[5]
    with pytest.raises(IndexError):
        msgs[5] = 1
    with pytest.raises(IndexError):
        del msgs[5]
    with pytest.raises(ValueError):
        msgs.remove("absent")
    a.messages = [{"role": "user", "content": "hi"}]
    assert b.messages == [{"role": "user", "content": "hi"}]
    a.results = []
    assert b.results == [] and b.results != ()


def test_list_appends_from_many_threads_all_land(open_memory):
    a, b = open_memory(), open_memory()
    threads = [threading.Thread(target=lambda m=m, i=i: [m.results.append([i, n]) for n in range(100)])
               for i, m in enumerate((a, b, a, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    items = list(a.results)
    assert len(items) == 400 and sorted(map(tuple, items)) == sorted((i, n) for i in range(4) for n in range(100))


def test_session_id_names_the_namespace_and_is_shared(open_memory):
    sid = f"sess-{uuid.uuid4().hex}"
    a = open_memory(session_id=sid, namespace=None)
    assert a.namespace == f"robotlab:{sid}" and a.session_id == sid
    b = open_memory(session_id=sid, namespace=None)
    b.set("shared", True)
    assert a.get("shared") is True
    a.session_id = "renamed"
    assert b.session_id == "renamed" and b.namespace == a.namespace  # the namespace is fixed at creation
    a.session_id = None
    assert b.session_id is None
    with pytest.raises(TypeError):
        a.session_id = 42
    fresh = open_memory(namespace=None)
    assert fresh.namespace.startswith("robotlab:") and fresh.namespace != a.namespace and fresh.session_id is None


# -- persistence and lifetime ------------------------------------------------------------------------


def test_to_dict_from_dict_and_pickle_reattach(open_memory, redis_server, namespace, raw):  # noqa: F811
    m = open_memory(data={"category": "billing"}, session_id="s-1")
    m.set("sentiment", "positive")
    m.messages.append({"role": "user", "content": "hi"})
    state = m.to_dict()
    assert state == {
        "data": {"category": "billing"},
        "results": [],
        "messages": [{"role": "user", "content": "hi"}],
        "session_id": "s-1",
        "values": {"sentiment": "positive"},
    }
    assert Memory.from_dict(state).to_dict() == state  # into an in-process memory ...
    from robotlab.redis_memory import RedisMemory

    copy_ns = f"{namespace}-copy"
    try:
        with RedisMemory.from_dict(state, url=redis_server.url, namespace=copy_ns) as copy:  # ... or another namespace
            assert copy.to_dict() == state
        clone = pickle.loads(pickle.dumps(m))  # a handle: re-attaches to the same namespace
        try:
            assert clone.namespace == m.namespace and clone is not m
            clone.set("from_clone", 1)
            assert m.get("from_clone") == 1 and clone.subscriptions() == []
        finally:
            clone.close()
    finally:
        raw.delete(*raw.keys(f"{copy_ns}:*"))


def memory_threads(memory) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.endswith(f":{memory.namespace}")]


def client_names(raw) -> list[str]:
    return [c.get("name", "") for c in raw.client_list()]


def test_close_stops_threads_and_connections_and_refuses_further_use(open_memory, raw):
    m = open_memory()
    m.set("kept", 1)
    origin_names = [n for n in client_names(raw) if n.startswith("robotlab-memory:")]
    assert len(memory_threads(m)) == 2 and origin_names
    before = set(client_names(raw))
    with m:
        pass
    assert m.closed and memory_threads(m) == []
    assert set(client_names(raw)) < before  # its connections are gone
    m.close()  # idempotent
    for use in (lambda: m.get("kept"), lambda: m.set("k", 1), m.keys, m.data.to_dict, lambda: m.results.append(1)):
        with pytest.raises(Error, match="is closed"):
            use()
    assert "closed" in repr(m)
    other = open_memory()
    assert other.get("kept") == 1  # the data stays in Redis


def test_close_wakes_a_blocked_reader_with_the_closed_error(open_memory):
    m = open_memory()
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(_raised(m.get, "never", wait=60)))
    reader.start()
    time.sleep(0.3)
    m.close()
    reader.join(30)
    assert not reader.is_alive()
    assert isinstance(outcome[0], Error) and "is closed" in str(outcome[0])


def _raised(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as exc:
        return exc
    return None


def test_a_forgotten_memory_stops_its_threads_when_collected(redis_server, namespace, raw):  # noqa: F811
    memory = create_memory(backend="redis", url=redis_server.url, namespace=namespace)
    name = f":{namespace}"
    assert any(t.name.endswith(name) for t in threading.enumerate())
    del memory
    gc.collect()
    deadline = time.monotonic() + 30
    while any(t.name.endswith(name) for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name.endswith(name) for t in threading.enumerate())


def test_destroy_wipes_the_namespace(open_memory, raw, namespace):
    m = open_memory(data={"a": 1}, session_id="s")
    m.set("k", 1)
    m.results.append(1)
    assert raw.keys(f"{namespace}:*")
    m.destroy()
    assert raw.keys(f"{namespace}:*") == [] and m.keys() == [] and m.session_id is None


def test_subscriptions_and_blocking_reads_survive_a_server_restart():
    server = RedisServer(require_redis_server())
    server.start()
    opened = []
    try:
        writer = create_memory(backend="redis", url=server.url, namespace="restart")
        opened.append(writer)
        reader = create_memory(backend="redis", url=server.url, namespace="restart")
        opened.append(reader)
        seen = []
        reader.subscribe("k*", lambda c: seen.append(c.key))
        server.stop()
        server.start()
        deadline = time.monotonic() + 60
        while True:  # the writer's next command reconnects; retry while the server comes back
            try:
                writer.set("k1", 1)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        threading.Timer(0.5, writer.set, args=("k2", 2)).start()
        assert reader.get("k2", wait=60) == 2
        deadline = time.monotonic() + 30
        while "k2" not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "k2" in seen  # the change feed was re-subscribed
    finally:
        for memory in opened:
            memory.close()
        server.cleanup()


# -- robotlab components on a Redis memory ------------------------------------------------------------


def test_a_worker_pool_reads_and_writes_a_redis_memory(open_memory):
    from robotlab.parallel import FrozenDict, WorkerPool

    memory, elsewhere = open_memory(data={"topic": ["billing"]}), open_memory()
    seen = []
    elsewhere.subscribe("w.*", lambda c: seen.append(c.value))
    with WorkerPool(size=1, backend="process", memory=memory) as pool:
        assert pool.submit(jobs.write_many, "w", 20).result(60) == 20
        round_trip = pool.submit(jobs.round_trip, "k", [1, {"a": 2}]).result(60)
        waiting = pool.submit(jobs.wait_for, "from-elsewhere", 60)
        time.sleep(0.3)
        elsewhere.set("from-elsewhere", {"ids": [1]})
        assert waiting.result(60) == FrozenDict({"ids": (1,)})
        with pytest.raises(AwaitTimeout, match=r"'never' after 0\.2 seconds"):
            pool.submit(jobs.wait_for, "never", 0.2).result(60)
    assert round_trip["get"] == (1, FrozenDict({"a": 2})) and round_trip["deleted"] == (1, {"a": 2})
    assert round_trip["data"] == {"topic": ("billing",)} and round_trip["after"] == "gone"
    assert [elsewhere.get(f"w.{n}") for n in range(20)] == list(range(20))
    deadline = time.monotonic() + 30
    while len(seen) < 20 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert seen == list(range(20))


def test_a_network_runs_on_a_redis_memory(open_memory):
    from robotlab.llm import ScriptedModel

    memory, observer = open_memory(), open_memory()
    net = robotlab.create_network(name="redis-net", memory=memory)
    net.task("answer", robotlab.build(name="answerer", model=ScriptedModel(["42"])))
    result = net.run("question", customer="ada")
    assert result.ok and result.memory is memory
    assert observer.data.customer == "ada"
    (stored,) = observer.results
    assert stored["robot_name"] == "answerer" and "42" in json.dumps(stored)


# -- options, errors, extras -------------------------------------------------------------------------------


def test_without_the_redis_package_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis", None)  # `import redis` now fails as if it were not installed
    with pytest.raises(DependencyError) as info:
        create_memory(backend="redis", url="redis://127.0.0.1:1/0")
    assert str(info.value) == (
        "create_memory(backend='redis') requires robotlab[redis]. Install it with `pip install 'robotlab[redis]'`."
    )
    from robotlab.redis_memory import RedisMemory

    with pytest.raises(DependencyError, match=r"^RedisMemory requires robotlab\[redis\]"):
        RedisMemory("redis://127.0.0.1:1/0")


def test_importing_robotlab_and_the_backend_module_does_not_import_redis():
    code = ("import sys, robotlab, robotlab.memory, robotlab.redis_memory; "
            "robotlab.create_memory().set('k', 1); print('redis' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120,
                         check=True)
    assert out.stdout.strip() == "False"


def test_options_are_checked(redis_server, monkeypatch):  # noqa: F811
    monkeypatch.delenv("REDIS_URL", raising=False)
    with pytest.raises(ConfigurationError, match=r"needs url= \(or the REDIS_URL environment variable\)"):
        create_memory(backend="redis")
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    with create_memory(backend="redis") as memory:  # REDIS_URL is used
        memory.set("k", 1)
        assert create_memory(backend="redis", url=redis_server.url, namespace=memory.namespace).get("k") == 1
        memory.destroy()
    with pytest.raises(ConfigurationError, match=r"url, namespace apply to backend='redis' only"):
        create_memory(url=redis_server.url, namespace="x")
    with pytest.raises(ConfigurationError, match=r"unknown create_memory option.*colour.*valid: backend, session_id, "
                                                 r"url, namespace, serializer"):
        create_memory(backend="redis", url=redis_server.url, colour="blue")
    with pytest.raises(ConfigurationError, match="namespace must be a non-empty str"):
        create_memory(backend="redis", url=redis_server.url, namespace="")
    with pytest.raises(ConfigurationError, match="invalid Redis url"):
        create_memory(backend="redis", url="http://example.com")


def test_an_unreachable_server_fails_fast_without_leaking_the_password():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket is closed
    with pytest.raises(ConfigurationError) as info:
        create_memory(backend="redis", url=f"redis://:hunter2@127.0.0.1:{port}/0")
    assert f"cannot reach Redis at redis://:***@127.0.0.1:{port}/0" in str(info.value)
    assert "hunter2" not in str(info.value)


SEED_DOCUMENTS_MESSAGE = (  # robot_lab's, with the gem / Gemfile line adapted to the Python extra
    "document storage requires the robotlab[documents] extra. Install it with `pip install 'robotlab[documents]'`."
)


@pytest.mark.parametrize("method", ["store_document", "search_documents", "document_keys", "delete_document"])
def test_document_methods_need_their_extra_on_both_backends(any_memory, method):
    args = {"store_document": ("doc", "text"), "search_documents": ("query",), "document_keys": (),
            "delete_document": ("doc",)}[method]
    with pytest.raises(DependencyError) as info:
        getattr(any_memory(), method)(*args)
    assert str(info.value) == SEED_DOCUMENTS_MESSAGE


# -- docs and example ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["codec", "scripts", "link", "listener", "structures", "store", "__init__"])
def test_module_docstring_examples_run(module):
    import doctest
    import importlib

    name = "robotlab.redis_memory" if module == "__init__" else f"robotlab.redis_memory.{module}"
    failures, _ = doctest.testmod(importlib.import_module(name))
    assert failures == 0


@pytest.mark.parametrize("index", range(len(python_blocks("docs/persistence.md"))))
def test_docs_persistence_examples_run(index, redis_server, raw):  # noqa: F811
    code = python_blocks("docs/persistence.md")[index].replace("redis://localhost:6379/0", redis_server.url)
    namespaces_before = set(raw.keys("*"))
    run_block("docs/persistence.md", index, code, __name__="docs_persistence")
    leftovers = set(raw.keys("*")) - namespaces_before
    if leftovers:
        raw.delete(*leftovers)


def test_persistence_demo_example_output(redis_server):  # noqa: F811
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "persistence_demo.py")], capture_output=True,
                         text=True, env=ENV, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "analyst process wrote ticket.sentiment = 'frustrated'" in out.stdout
    assert re.search(r"responder was woken after \d+\.\d+ s: frustrated", out.stdout), out.stdout
    assert "subscription saw: ticket.sentiment created -> 'frustrated'" in out.stdout
    assert "redis-server stopped" in out.stdout


# -- the server fixture itself ----------------------------------------------------------------------------------

FIXTURE_USER = """
from tests.redis_server import redis_server  # noqa: F401

def test_needs_a_server(redis_server):
    pass
"""


@pytest.mark.parametrize("required", [False, True], ids=["skips", "fails-on-ci"])
def test_without_redis_server_the_tests_skip_or_fail_when_required(tmp_path, required):
    (tmp_path / "test_user.py").write_text(FIXTURE_USER)
    env = {**ENV, "PATH": str(tmp_path)}  # no redis-server on this PATH
    env.pop("ROBOTLAB_REQUIRE_REDIS", None)
    if required:
        env["ROBOTLAB_REQUIRE_REDIS"] = "1"
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--rootdir",
                          str(tmp_path), str(tmp_path / "test_user.py")], capture_output=True, text=True, env=env,
                         timeout=120, check=False)
    assert "redis-server is not installed: install it with `apt-get install -y redis-server`" in out.stdout
    if required:
        assert out.returncode == 1 and "1 error" in out.stdout and "ROBOTLAB_REQUIRE_REDIS=1" in out.stdout
    else:
        assert out.returncode == 0 and "1 skipped" in out.stdout, out.stdout
