"""Large payloads cross the worker boundary through shared memory: exact round trips, read-only views, no leaks.

Leaks are looked for where they would be: files in /dev/shm (a worker process's results) and
this process's memfds (a job's arguments), listed before and after each failure mode.
"""

from __future__ import annotations

import array
import contextlib
import os
import pickle
import signal
import subprocess
import sys
import time
from concurrent.futures import CancelledError
from pathlib import Path

import pytest

from robotlab.errors import JobTimeout, RactorBoundaryError, WireError, WorkerCrashed
from robotlab.parallel import WorkerPool, shared_buffers, wire
from robotlab.parallel.boundary import FrozenDict, freeze_deep
from tests import backends
from tests import payload_jobs as jobs
from tests.doc_blocks import python_blocks, run_block

pytestmark = pytest.mark.skipif(not shared_buffers.supported(), reason="shared memory needs Linux")
BIG = jobs.BIG
DOCS = "docs/parallel.md"


def shm_files() -> set[str]:
    return {name for name in os.listdir(shared_buffers.SHM_DIR) if name.startswith("robotlab-")}


def own_memfds() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed since listed
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:robotlab-buffers")
    return count


def settled_clean(shm_before: set[str], memfds_before: int, within: float = 10.0) -> bool:
    """True once /dev/shm holds no robotlab file it did not hold before, and this process no extra memfd."""
    deadline = time.monotonic() + within
    while shm_files() - shm_before or own_memfds() > memfds_before:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def numpy_or_none(backend: str):
    if backend == "subinterpreter":
        return None  # numpy refuses to load in a subinterpreter
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def sent_values(numpy) -> dict:
    values = {
        "bytes": b"b" * BIG, "small bytes": b"s", "bytearray": bytearray(b"a" * BIG),
        "memoryview": memoryview(b"m" * BIG), "writable memoryview": memoryview(bytearray(b"w" * BIG)),
        "shaped memoryview": memoryview(array.array("d", range(BIG // 8))).cast("B").cast("d", (BIG // 80, 10)),
        "small memoryview": memoryview(b"tiny"), "array": array.array("q", range(BIG // 8)),
        "PickleBuffer": pickle.PickleBuffer(bytearray(b"p" * BIG)),
        "nested": {"list": [b"1" * BIG, (bytearray(b"2" * BIG), {"deep": memoryview(b"3" * BIG)})]},
    }
    if numpy is not None:
        values["numpy"] = numpy.arange(BIG // 8, dtype=numpy.float64).reshape(10, -1)
        values["numpy in a tuple"] = (numpy.ones(BIG, dtype=numpy.uint8), 5)
    return values


def same(sent, got, numpy) -> bool:
    """Equal content, and the type the boundary promises (bytearray → bytes, list → tuple, dict → FrozenDict)."""
    if isinstance(sent, bytearray):
        return type(got) is bytes and got == sent
    if isinstance(sent, pickle.PickleBuffer):
        return bytes(got) == bytes(sent.raw())
    if isinstance(sent, memoryview):
        return (type(got) is memoryview and got.readonly and got.format == sent.format
                and got.shape == sent.shape and got.tobytes() == sent.tobytes())
    if numpy is not None and isinstance(sent, numpy.ndarray):
        return type(got) is numpy.ndarray and got.dtype == sent.dtype and numpy.array_equal(got, sent)
    if isinstance(sent, dict):
        return type(got) is FrozenDict and got.keys() == sent.keys() and all(
            same(sent[k], got[k], numpy) for k in sent)
    if isinstance(sent, (list, tuple)):
        return type(got) is tuple and len(got) == len(sent) and all(
            same(a, b, numpy) for a, b in zip(sent, got, strict=True))
    return type(got) is type(sent) and got == sent


def test_every_buffer_type_round_trips_exactly(backend):
    numpy = numpy_or_none(backend)
    values = sent_values(numpy)
    with WorkerPool(size=1, backend=backend) as pool:
        echoed = pool.submit(jobs.echo, values).result(60)
        made = pool.submit(jobs.made_here, numpy is not None).result(60)
    assert type(echoed) is FrozenDict and echoed.keys() == values.keys()
    for name, sent in values.items():
        assert same(sent, echoed[name], numpy), name
    # What a worker makes comes back as it made it, with its own type, and writable where it was.
    expected = jobs.made_here(numpy is not None)
    for name in ("bytes", "bytearray", "array", "small"):
        assert type(made[name]) is type(expected[name]) and made[name] == expected[name], name
    made["bytearray"][0] = 1
    assert not made["memoryview"].readonly and made["memoryview"] == expected["memoryview"]
    assert made["nested"] == expected["nested"] and type(made["nested"][0][1]["deep"]) is bytearray
    if numpy is not None:
        assert made["numpy"].flags.writeable and numpy.array_equal(made["numpy"], expected["numpy"])


def test_a_worker_gets_read_only_views_and_cannot_change_the_callers_buffer(backend):
    numpy = numpy_or_none(backend)
    source = bytearray(b"x" * BIG)
    buffers = [memoryview(source), pickle.PickleBuffer(source)]
    if numpy is not None:
        buffers.append(numpy.zeros(BIG, dtype=numpy.uint8))
    with WorkerPool(size=1, backend=backend) as pool:
        for value in buffers:
            name, readonly = pool.submit(jobs.describe, value).result(60)
            assert readonly is not False, (name, readonly)
            assert pool.submit(jobs.write_into, value).result(60) in ("TypeError", "ValueError")
    assert source == b"x" * BIG
    if numpy is not None:
        assert buffers[-1].flags.writeable and not buffers[-1].any()  # the caller's array: untouched, still its own


def test_a_frame_without_large_buffers_stays_in_the_pipe():
    outbox = shared_buffers.JobOutbox()
    frame = wire.encode((1, "call", "m:f", (b"x" * (BIG // 10), list(range(100))), {}, None, None), outbox=outbox)
    assert frame[:1] == b"P" and not outbox.holds()
    many = tuple(f"Bob {i}" for i in range(50_000))  # a large pickle, but no large buffer in it
    assert wire.encode((1, "batch", "m:f", ((), {}, many), {}, None, None), outbox=outbox)[:1] == b"P"
    assert not outbox.holds()
    deep_outbox = shared_buffers.JobOutbox()
    deep = wire.encode((1, "call", "m:f", ([[[[bytearray(BIG)]]]],), {}, None, None), outbox=deep_outbox)
    deep_outbox.release()
    assert deep[:1] == b"B" and len(deep) < 1000  # found below the levels looked at before pickling
    frame = wire.encode((1, "call", "m:f", (b"x" * BIG,), {}, None, None), outbox=outbox)
    assert frame[:1] == b"B" and len(frame) < 1000 and outbox.holds()
    assert wire.decode(frame)[3] == (b"x" * BIG,)
    outbox.release()
    with pytest.raises(Exception, match="segment of this frame is gone"):
        wire.decode(frame)  # its job ended: the segment was freed


def test_segments_are_freed_after_failure_timeout_and_cancel():
    shm_before, memfds_before = shm_files(), own_memfds()
    with WorkerPool(size=1) as pool:
        with pytest.raises(ValueError, match=f"failed holding {BIG} bytes"):
            pool.submit(jobs.fail_holding, b"f" * BIG).result(60)
        assert settled_clean(shm_before, memfds_before)
        with pytest.raises(JobTimeout):
            pool.submit(jobs.sleep_holding, b"t" * BIG, 30, timeout=0.5).result(60)
        assert settled_clean(shm_before, memfds_before)
        running = pool.submit(jobs.sleep_holding, b"r" * BIG, 0.5)
        queued = pool.submit(jobs.sleep_holding, b"q" * BIG, 0.5)
        assert queued.cancel() or queued.running()  # queued behind the first, unless handed over already
        if queued.running():
            assert queued.result(60) == BIG
        else:
            with pytest.raises(CancelledError):
                queued.result()
        assert running.result(60) == BIG
        stopped = pool.submit(jobs.sleep_holding, b"s" * BIG, 30)
        while not stopped.running():
            time.sleep(0.01)
        time.sleep(0.2)
        assert pool.stop(stopped)
        with pytest.raises(CancelledError):
            stopped.result(60)
        assert settled_clean(shm_before, memfds_before)


def test_segments_are_freed_when_a_worker_is_killed_or_crashes_holding_one():
    shm_before, memfds_before = shm_files(), own_memfds()
    with WorkerPool(size=1) as pool:
        with pytest.raises(WorkerCrashed):
            pool.submit(jobs.crash_holding, b"c" * BIG).result(60)
        holding = pool.submit(jobs.sleep_holding, b"k" * BIG, 10)
        while not holding.running():
            time.sleep(0.01)
        time.sleep(0.2)
        (pid,) = pool.worker_ids
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(WorkerCrashed):
            holding.result(60)
        # A worker that dies after writing a result file the parent never read: the pool removes the file.
        with pytest.raises(WorkerCrashed):
            pool.submit(jobs.leave_result_file_and_crash).result(60)
        assert settled_clean(shm_before, memfds_before)


def test_a_sigkilled_parent_leaves_no_segment_behind(tmp_path: Path):
    """A result file is waiting for a stopped parent when it is SIGKILLed: its worker removes it."""
    shm_before = shm_files()
    owner = subprocess.Popen([sys.executable, "-m", "tests.payload_owner"], cwd=Path(__file__).resolve().parent.parent,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        line = owner.stdout.readline().split()
        assert line and line[0] == "ready", owner.stderr.read()
        workers = [int(pid) for pid in line[1:]]
        os.kill(owner.pid, signal.SIGSTOP)  # the parent cannot take the result a worker writes now
        deadline = time.monotonic() + 10
        while not shm_files() - shm_before and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any(name.split("-")[1] in line[1:] for name in shm_files() - shm_before)  # a worker's result file
        owner.kill()
        owner.wait(30)
        assert backends.gone(workers, within=20)
    finally:
        owner.kill()
        owner.communicate()
    assert shm_files() - shm_before == set()


def test_bytes_a_job_returns_unchanged_come_back_as_the_callers_own_object(backend):
    sent = b"e" * BIG
    with WorkerPool(size=1, backend=backend) as pool:
        echoed = pool.submit(jobs.echo, {"data": sent}).result(60)["data"]
        rebuilt = pool.submit(jobs.made_here, False).result(60)["bytes"]
    shares = backend != "ray" and shared_buffers.supported()
    assert echoed == sent and (echoed is sent) is shares  # no copy back where memory is shared
    assert rebuilt == b"b" * BIG


def test_the_docs_example_runs():
    index = next(i for i, block in enumerate(python_blocks(DOCS)) if "crosses in shared memory" in block)
    run_block(DOCS, index)


def test_freeze_deep_makes_buffers_read_only_without_copying_them():
    source = bytearray(b"abc")
    frozen = freeze_deep({"view": memoryview(source)})["view"]
    assert frozen.readonly and frozen.obj is source  # a view of the caller's memory, not a copy
    assert freeze_deep(frozen) is frozen  # already read-only: as it is
    assert freeze_deep(pickle.PickleBuffer(source)).raw().readonly
    numpy = numpy_or_none("process")
    if numpy is not None:
        array_ = numpy.zeros(3)
        view = freeze_deep(array_)
        assert not view.flags.writeable and array_.flags.writeable and view.base is array_
        with pytest.raises(RactorBoundaryError, match=r"args\[0\]: a numpy array of Python objects"):
            freeze_deep((numpy.array([[]], dtype=object),), root="args")


def test_memory_proxy_values_cross_through_shared_memory(backend):
    from robotlab import create_memory

    memory = create_memory()
    memory.set("from parent", b"p" * BIG)
    calls: list[bytes] = []
    original = wire.decode

    def decode(frame, **kwargs):  # the call frames the pool reads: large values must not travel inside them
        message = original(frame, **kwargs)
        if type(message) is tuple and message and message[0] == "call":
            calls.append(bytes(frame[:1]) + len(frame).to_bytes(8, "big"))
        return message

    shm_before, memfds_before = shm_files(), own_memfds()
    with WorkerPool(size=1, backend=backend, memory=memory) as pool:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(wire, "decode", decode)
            assert pool.submit(jobs.through_memory, "from worker").result(60) == ("bytes", BIG, b"p")
    assert memory.get("from worker") == b"w" * BIG
    if backend != "ray":
        assert calls and all(int.from_bytes(c[1:], "big") < 2000 for c in calls), calls
    assert settled_clean(shm_before, memfds_before)


@pytest.fixture
def lending_pool():
    """A one-worker subinterpreter pool on CPython 3.13, where the parent's bytes are lent, not copied."""
    backends.use("subinterpreter")
    if sys.version_info >= (3, 14):
        pytest.skip("bytes are lent to subinterpreters on CPython 3.13 (the PEP 734 backport) only")
    with WorkerPool(size=1, backend="subinterpreter") as pool:
        yield pool


def test_bytes_are_lent_to_a_subinterpreter_worker_and_released_when_it_lets_go(lending_pool):
    data = bytes(range(256)) * 4096  # 1 MiB
    alone = sys.getrefcount(data) - 1
    memfds_before = own_memfds()
    holding = lending_pool.submit(jobs.sleep_holding, memoryview(data), 0.5)
    while not holding.running():
        time.sleep(0.01)
    time.sleep(0.1)
    assert own_memfds() == memfds_before  # no segment: the worker reads this process's own bytes
    assert sys.getrefcount(data) - 1 > alone  # and they are kept alive for it
    assert holding.result(60) == len(data)
    assert backends.until(lambda: sys.getrefcount(data) - 1 == alone)
    assert lending_pool.submit(jobs.echo, data).result(60) is data  # lent there, and the same object back


def test_an_abandoned_job_still_reads_the_bytes_it_was_lent(lending_pool, tmp_path: Path):
    import hashlib

    data = os.urandom(1 << 20)  # freed memory of this size is unmapped: reading it would crash, not pass
    expected, path = hashlib.sha256(data).hexdigest(), tmp_path / "digest"
    with pytest.raises(JobTimeout):
        lending_pool.submit(jobs.digest_later, memoryview(data), 0.5, str(path), timeout=0.1).result(60)
    del data  # the caller lets go before the abandoned job reads its argument
    deadline = time.monotonic() + 20
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.05)
    assert path.read_text() == expected


def test_bytes_lent_to_a_job_that_never_ran_are_taken_back():
    backends.use("subinterpreter")
    with WorkerPool(size=1, backend="subinterpreter") as pool:
        data = b"q" * BIG
        alone = sys.getrefcount(data) - 1
        running = pool.submit(jobs.sleep_holding, b"r", 0.5)
        queued = pool.submit(jobs.sleep_holding, data, 0.5)
        if queued.cancel():  # not yet handed over: its loan comes back at once
            assert backends.until(lambda: sys.getrefcount(data) - 1 == alone)
        else:
            assert queued.result(60) == BIG
        assert running.result(60) == 1


def test_a_job_outbox_takes_back_loans_nobody_read():
    backends.use("subinterpreter")
    from robotlab.parallel.subinterpreter_backend import SubinterpreterBackend, load_interpreters

    queues = SubinterpreterBackend().interpreter_queues
    if queues is None:
        pytest.skip("bytes are lent on CPython 3.13 only")
    data = b"z" * BIG
    alone = sys.getrefcount(data) - 1
    outbox = shared_buffers.JobOutbox(queues)
    ref = outbox.store([data, memoryview(data)])
    assert ref[0] == "lent" and ref[2] == (BIG, BIG) and sys.getrefcount(data) - 1 > alone
    mixed = outbox.store([data, bytearray(b"m" * BIG)])  # not all immutable: copied as before
    assert mixed[0] == "fd"
    with pytest.raises(WireError, match="reached the main interpreter"):
        shared_buffers.open_segment(ref)  # say, a result forged by a process worker: the parent takes no loan
    outbox.release()
    assert sys.getrefcount(data) - 1 == alone
    interp = load_interpreters().create()  # a worker reading the frame after its job ended: a clear error
    try:
        with pytest.raises(Exception, match="lent to this frame are gone"):
            interp.exec(f"import sys\nsys.path[:] = {sys.path!r}\nfrom robotlab.parallel import shared_buffers\n"
                        f"shared_buffers.open_segment({ref!r})")
    finally:
        interp.close()
