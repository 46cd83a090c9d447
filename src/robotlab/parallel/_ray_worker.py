"""The worker side of ``WorkerPool(backend="ray")``: a Ray actor that runs robotlab's worker loop.

Each pool worker is one :class:`RayWorker` actor. Its single long-running
method, :meth:`RayWorker.serve`, opens a TCP connection back to the driver
(the process that owns the pool), proves it holds the worker's one-time
token, and then runs the same loop as a process worker
(``robotlab.parallel._worker.serve``) over that socket, with the same
framing. Jobs, results, log records and memory requests therefore travel
exactly as they do for the process backend; Ray places the actor, gives it
its resources and runtime environment, and reports its death.

The handshake (before any pickle is read on either side)::

    worker -> driver   hello  = b"robotlab-ray/1 <key> <pid> <node ip> <actor id>"
    driver -> worker   nonce_d (32 random bytes)
    worker -> driver   HMAC(token, "worker", nonce_d, hello) + nonce_w (32 random bytes)
    driver -> worker   HMAC(token, "driver", nonce_w, hello)

Both sides authenticate: the driver never unpickles frames from a peer that
does not know the worker's token, and the worker never runs jobs sent by a
peer that does not know it either. Frames use the 4-byte big-endian length
prefix of ``multiprocessing.connection.Connection``.

After the handshake every frame is sealed (:class:`SealedChannel`): it carries
a keyed BLAKE2b tag over its direction, its sequence number and its bytes,
with a key both sides derive from the token and both nonces
(:func:`link_key`). A frame injected into the TCP stream, replayed,
reordered, reflected back or changed is refused, and the link closed.

Worker-side module: standard library and robotlab's worker-side modules;
``ray`` is imported only inside the actor.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any

__all__ = ["PROTOCOL", "RayWorker", "SealedChannel", "TurnedAway", "link_key", "proof", "recv_frame",
           "send_frame"]

PROTOCOL = b"robotlab-ray/1"
# How long a worker tries to reach the driver (and, when turned away before the challenge, keeps retrying).
CONNECT_TIMEOUT = 30.0
NONCE_SIZE = 32
_LENGTH = struct.Struct("!i")


def send_frame(sock: socket.socket, data: bytes, deadline: float | None = None) -> None:
    """Send one length-prefixed frame (``Connection.send_bytes`` framing), by *deadline* (``time.monotonic``)."""
    _until(sock, deadline)
    sock.sendall(_LENGTH.pack(len(data)) + data)


def recv_frame(sock: socket.socket, limit: int, deadline: float | None = None) -> bytes:
    """Receive one length-prefixed frame of at most *limit* bytes (a longer one ends the handshake).

    With a *deadline* (a ``time.monotonic()`` value) the whole frame must
    arrive by then, however the peer spaces its bytes; past it ``TimeoutError``.
    """
    (size,) = _LENGTH.unpack(_recv_exact(sock, _LENGTH.size, deadline))
    if not 0 <= size <= limit:
        raise ConnectionError(f"unexpected handshake frame of {size} bytes (at most {limit} expected)")
    return _recv_exact(sock, size, deadline)


def _until(sock: socket.socket, deadline: float | None) -> None:
    """Give *sock*'s next call only the time left until *deadline* (nothing to do without one)."""
    if deadline is None:
        return
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the handshake did not finish in time")
    sock.settimeout(left)


def _recv_exact(sock: socket.socket, size: int, deadline: float | None = None) -> bytes:
    chunks, left = [], size
    while left:
        _until(sock, deadline)
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("the peer closed the connection during the handshake")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def proof(token: bytes, role: bytes, nonce: bytes, hello: bytes) -> bytes:
    """What *role* (``b"worker"`` or ``b"driver"``) answers to *nonce*: an HMAC-SHA256 keyed by the token."""
    return hmac.new(token, b"\0".join((role, nonce, hello)), hashlib.sha256).digest()


def link_key(token: bytes, driver_nonce: bytes, worker_nonce: bytes, hello: bytes) -> bytes:
    """The key that seals one link's frames: fresh per connection, known only to the two ends."""
    return hmac.new(token, b"\0".join((b"link", driver_nonce, worker_nonce, hello)), hashlib.sha256).digest()


class SealedChannel:
    """A channel (``send_bytes`` / ``recv_bytes``) whose frames carry a tag: its direction, number and bytes.

    *sends* and *receives* name the two directions (``b"driver"``, ``b"worker"``): a frame
    is checked against the number the receiver expects next, so a frame that was injected,
    replayed, reordered, reflected back or altered fails the check with ``ConnectionError``,
    and the link is over: the worker's loop ends on it, the driver closes the connection.

    Example:
        >>> import socket
        >>> from multiprocessing.connection import Connection
        >>> a, b = socket.socketpair()
        >>> driver = SealedChannel(Connection(a.detach()), b"k" * 32, sends=b"driver", receives=b"worker")
        >>> worker = SealedChannel(Connection(b.detach()), b"k" * 32, sends=b"worker", receives=b"driver")
        >>> driver.send_bytes(b"job"); worker.recv_bytes()
        b'job'
    """

    TAG_SIZE = 16

    def __init__(self, inner: Any, key: bytes, *, sends: bytes, receives: bytes) -> None:
        self._inner = inner
        self._key = key
        self._sends, self._receives = sends, receives
        self._sent = self._received = 0
        self._send_lock = threading.Lock()  # numbers must go out in the order they were given

    def _tag(self, direction: bytes, number: int, data: bytes | memoryview) -> bytes:
        seal = hashlib.blake2b(number.to_bytes(8, "big"), key=self._key, digest_size=self.TAG_SIZE,
                               person=direction)
        seal.update(data)
        return seal.digest()

    def send_bytes(self, data: bytes) -> None:
        with self._send_lock:
            tag = self._tag(self._sends, self._sent, data)
            self._inner.send_bytes(bytes(data) + tag)
            self._sent += 1

    def recv_bytes(self) -> bytes:
        frame = self._inner.recv_bytes()
        view = memoryview(frame)
        body, tag = view[:-self.TAG_SIZE], view[-self.TAG_SIZE:]
        if len(frame) < self.TAG_SIZE or not hmac.compare_digest(tag, self._tag(self._receives, self._received, body)):
            raise ConnectionError(f"frame {self._received} from the {self._receives.decode()} failed its check "
                                  "(injected, replayed, reordered or altered on the way): the link is closed")
        self._received += 1
        return bytes(body)

    def poll(self, timeout: float | None = 0.0) -> bool:
        return self._inner.poll(timeout)

    def fileno(self) -> int:
        return self._inner.fileno()

    def close(self) -> None:
        self._inner.close()


class TurnedAway(ConnectionError):
    """The driver closed the connection before challenging the worker: busy with other handshakes, or it
    no longer expects this worker. Trying again (for a while) is right; it is not an authentication failure."""


def authenticate(sock: socket.socket, hello: bytes, token: bytes) -> bytes:
    """The worker's half of the handshake, returning the link's key (:func:`link_key`); raises
    ``ConnectionError`` if the driver does not know the token (``TurnedAway`` if it closed the
    connection before its challenge)."""
    try:
        send_frame(sock, hello)
        driver_nonce = recv_frame(sock, NONCE_SIZE)
    except ConnectionError as exc:  # closed or reset before the challenge
        raise TurnedAway(str(exc)) from None
    worker_nonce = os.urandom(NONCE_SIZE)
    send_frame(sock, proof(token, b"worker", driver_nonce, hello) + worker_nonce)
    answer = recv_frame(sock, 64)
    if not hmac.compare_digest(answer, proof(token, b"driver", worker_nonce, hello)):
        raise ConnectionError("the peer at the pool's address failed authentication: it is not this worker's pool")
    return link_key(token, driver_nonce, worker_nonce, hello)


def merge_sys_path(driver_path: list[str]) -> None:
    """The driver's ``sys.path`` first (as a process worker gets it), then this process's own other entries.

    The entries Ray added (a ``runtime_env`` working_dir or py_modules) stay
    importable; entries of the driver that do not exist on this node do nothing.
    """
    sys.path[:] = list(driver_path) + [entry for entry in sys.path if entry not in driver_path]


def _exit_on_sigterm(signum: int, frame: object) -> None:
    os._exit(128 + signum)


def _connect(driver: tuple[str, int], hello: bytes, token: bytes, node_ip: str) -> tuple[socket.socket, bytes]:
    """An authenticated socket to the pool at *driver*, and the link's key; turned away (the driver caps
    its concurrent handshakes), the worker tries again for up to ``CONNECT_TIMEOUT`` seconds."""
    host, port = driver
    deadline, pause = time.monotonic() + CONNECT_TIMEOUT, 0.05
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            raise ConnectionError(f"a Ray worker on {node_ip} cannot reach its pool at {host}:{port}: {exc}. "
                                  "Make that address reachable from the cluster, or set ROBOTLAB_RAY_LISTEN on "
                                  "the driver (see docs/distributed.md)") from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # frames are small: no Nagle delay
            return sock, authenticate(sock, hello, token)
        except TurnedAway as exc:
            sock.close()
            if time.monotonic() + pause > deadline:
                raise ConnectionError(
                    f"the pool at {host}:{port} closed every connection of this Ray worker (on {node_ip}) before "
                    f"authenticating it for {CONNECT_TIMEOUT:.0f} s ({exc}): it no longer expects this worker, or "
                    "other peers keep its handshake slots busy (see docs/distributed.md)") from None
        except BaseException:
            sock.close()
            raise
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


class RayWorker:
    """The Ray actor hosting one pool worker (made a Ray actor class by the driver with ``ray.remote``)."""

    def serve(self, driver: tuple[str, int], key: str, token: bytes, sys_path: list[str], log_level: int,
              initializer: str | None, initargs_frame: bytes) -> int:
        """Connect to the pool at *driver*, authenticate, and run the worker loop until the pool stops it.

        Returns this process's pid. Raises ``ConnectionError`` (with what to
        check) when the driver cannot be reached or authenticated.
        """
        import ray

        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        merge_sys_path(sys_path)
        if threading.current_thread() is threading.main_thread():
            # Ray stops a worker with SIGTERM, and its handler raises SystemExit inside the running job,
            # which would reach the driver as the job's own exception (and end the driver's program).
            # The process ends instead: the driver sees a lost worker (WorkerCrashed).
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
        context = ray.get_runtime_context()
        hello = b" ".join(part.encode() for part in (PROTOCOL.decode(), key, str(os.getpid()),
                                                    ray.util.get_node_ip_address(), context.get_actor_id()))
        sock, key = _connect(driver, hello, token, ray.util.get_node_ip_address())
        with sock:
            sock.settimeout(None)
            from robotlab.parallel import _worker, wire

            channel = SealedChannel(_worker._FdChannel(sock.fileno()), key, sends=b"worker", receives=b"driver")
            _worker.serve(channel, os.getpid(), log_level, initializer, wire.decode(initargs_frame))
        return os.getpid()

    def __repr__(self) -> str:
        return f"<robotlab RayWorker pid {os.getpid()}>"
