"""The sealed link between a Ray worker and its driver (issue 28): no Ray needed.

After the handshake, every frame carries a keyed tag over its direction, its
number and its bytes (``_ray_worker.SealedChannel``). These tests play the
man in the middle on a socket pair: what an attacker on the TCP stream could
inject, replay, reorder, reflect or alter is refused, and the driver drops the link.
"""

from __future__ import annotations

import os
import socket
from multiprocessing.connection import Connection

import pytest

from robotlab.parallel._ray_worker import SealedChannel, link_key

KEY = link_key(os.urandom(32), os.urandom(32), os.urandom(32), b"robotlab-ray/1 key 1 127.0.0.1 actor")


def pipe() -> tuple[Connection, Connection]:
    a, b = socket.socketpair()
    return Connection(a.detach()), Connection(b.detach())


def sealed_frames(*messages: bytes, sends: bytes = b"driver", key: bytes = KEY) -> list[bytes]:
    """The raw frames a sealed channel puts on the wire for *messages*, in order."""
    ours, tap = pipe()
    sender = SealedChannel(ours, key, sends=sends, receives=b"worker" if sends == b"driver" else b"driver")
    for message in messages:
        sender.send_bytes(message)
    frames = [tap.recv_bytes() for _ in messages]
    ours.close()
    tap.close()
    return frames


def worker_reading(*frames: bytes) -> SealedChannel:
    """A worker's sealed channel whose peer put exactly these raw *frames* on the wire."""
    wire, ours = pipe()
    for frame in frames:
        wire.send_bytes(frame)
    return SealedChannel(ours, KEY, sends=b"worker", receives=b"driver")


def test_frames_cross_both_ways_in_order():
    a, b = pipe()
    driver = SealedChannel(a, KEY, sends=b"driver", receives=b"worker")
    worker = SealedChannel(b, KEY, sends=b"worker", receives=b"driver")
    for i in range(5):
        driver.send_bytes(b"job %d" % i)
        assert worker.recv_bytes() == b"job %d" % i
        worker.send_bytes(b"result %d" % i * 1000)
        assert driver.recv_bytes() == b"result %d" % i * 1000
    assert sealed_frames(b"x")[0] != b"x"  # the tag travels with the frame


def test_the_genuine_stream_is_accepted():
    channel = worker_reading(*sealed_frames(b"one", b"two", b""))
    assert [channel.recv_bytes() for _ in range(3)] == [b"one", b"two", b""]


@pytest.mark.parametrize("tampered", [
    pytest.param(lambda one, two: [one, one], id="replayed"),
    pytest.param(lambda one, two: [two, one], id="reordered"),
    pytest.param(lambda one, two: [one[:3] + bytes([one[3] ^ 1]) + one[4:], two], id="altered"),
    pytest.param(lambda one, two: [b"forged" + bytes(16), two], id="injected"),
    pytest.param(lambda one, two: [b"", two], id="too short"),
])
def test_a_tampered_stream_is_refused(tampered):
    one, two = sealed_frames(b"one", b"two")
    frames = tampered(one, two)
    channel = worker_reading(*frames)
    if frames[0] == one:  # the tampering is in the second frame
        assert channel.recv_bytes() == b"one"
    with pytest.raises(ConnectionError, match="failed its check"):
        channel.recv_bytes()


def test_a_frame_reflected_back_to_its_sender_is_refused():
    (from_worker,) = sealed_frames(b"result", sends=b"worker")
    with pytest.raises(ConnectionError, match="from the driver failed its check"):
        worker_reading(from_worker).recv_bytes()  # the worker's own frame, echoed: the wrong direction


def test_another_links_frames_are_refused():
    (job,) = sealed_frames(b"job", key=link_key(b"token", b"nonce", b"nonce", b"hello"))
    with pytest.raises(ConnectionError, match="failed its check"):
        worker_reading(job).recv_bytes()


def test_the_driver_drops_a_link_whose_frame_fails_and_the_worker_sees_it_end():
    ray_backend = pytest.importorskip("robotlab.parallel.ray_backend")
    driver_end, worker_end = socket.socketpair()
    channel = ray_backend._RayChannel()
    assert channel.attach(driver_end, KEY)
    raw_worker = Connection(worker_end.detach())
    raw_worker.send_bytes(b"not sealed at all")
    with pytest.raises(ConnectionError):
        channel.recv_bytes()
    with pytest.raises(EOFError):  # the driver closed its end: the worker's loop ends on it
        raw_worker.recv_bytes()
    channel.close()
