"""Ray workers for WorkerPool (``backend="ray"``): one Ray actor per worker, the same worker loop as a process.

Example:
    >>> import ray
    >>> from robotlab.parallel import WorkerPool
    >>> ray.init(address="auto")                                  # doctest: +SKIP
    >>> with WorkerPool(size=8, backend="ray", resources={"CPU": 1}) as pool:   # doctest: +SKIP
    ...     list(pool.map("math:factorial", range(5)))
    [1, 1, 2, 6, 24]

How it works: each worker is a :class:`~robotlab.parallel._ray_worker.RayWorker`
actor whose one long-running method connects back to this process over TCP
(a listener shared by every Ray pool here, see :class:`_Rendezvous`),
authenticates with a one-time token, and runs ``_worker.serve`` — so job
frames, results, errors, log records, hooks and memory requests travel
exactly as with the process backend, and the pool's supervisor treats a Ray
worker like a process. Ray does placement, resources, runtime environments
and failure detection: a thread per worker waits on the actor's method and
closes the worker's sentinel pipe when the actor ends, dies or loses its
node (the pool then fails that worker's job with ``WorkerCrashed``);
``kill`` is ``ray.kill``.

Ray is imported when a Ray pool is created, never when robotlab is; Ray is
initialised by the user (``ray.init``) or, failing that, here on first use.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import secrets
import select
import selectors
import socket
import sys
import threading
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection
from types import ModuleType
from typing import Any

from robotlab.errors import ConfigurationError, DependencyError, Error
from robotlab.parallel import wire
from robotlab.parallel._ray_worker import (
    NONCE_SIZE,
    PROTOCOL,
    RayWorker,
    SealedChannel,
    link_key,
    proof,
    recv_frame,
    send_frame,
)

__all__ = ["LISTEN_ENV", "RayBackend", "RayWorkerHandle", "load_ray"]

logger = logging.getLogger("robotlab.parallel")

LISTEN_ENV = "ROBOTLAB_RAY_LISTEN"
# How long the driver gives a connection to finish the whole handshake (not each read): past it, closed.
_HANDSHAKE_TIMEOUT = 10.0
# At most this many connections are in the handshake at once, each with its own thread; the listener
# closes a connection beyond them as soon as it accepts it (a worker turned away tries again).
_MAX_HANDSHAKES = 64
# The kernel queues this many connections for the accept loop (which closes those over the cap at once);
# a burst beyond it waits for the kernel's SYN-ACK retry, about a second, before it is even accepted.
_BACKLOG = 1024
# A flood of connections beyond the cap is logged once per this many seconds, with a count.
_BUSY_LOG_INTERVAL = 10.0
# A worker's watcher re-checks this often that Ray is still initialised while it waits on the actor.
_WATCH_SLICE = 1.0
# After this long without its worker connecting, a warning says the cluster may lack what it asks for.
_SLOW_START_WARNING = 60.0
# join() after kill() waits at most this long for Ray to confirm the actor's death: a lost node
# can take Ray much longer to declare, and the pool must not stall on it.
_KILL_CONFIRM_WAIT = 5.0
_RESOURCE_OPTIONS = {"CPU": "num_cpus", "GPU": "num_gpus", "memory": "memory"}


def load_ray() -> ModuleType:
    """The ``ray`` module, or a DependencyError naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise DependencyError.missing("backend='ray'", "robotlab[ray]") from None
    return ray


_init_lock = threading.Lock()


def connect(address: str | None) -> ModuleType:
    """Ray, initialised: the connection this process already has, else ``ray.init(address=address)``.

    With no connection and no *address*, a local Ray instance is started and
    a warning says so. An *address* other than ``"auto"`` while Ray is already
    initialised (to a possibly different cluster) is refused.
    """
    ray = load_ray()
    with _init_lock:
        if ray.is_initialized():
            if address not in (None, "auto") and address != _current_gcs_address(ray):
                raise ConfigurationError(
                    f"Ray is already initialised in this process, so address={address!r} cannot take effect: pass "
                    "address=None to use the current connection, or call ray.shutdown() first")
            return ray
        if address is None:
            _refuse_while_subinterpreters_live()
            logger.warning("backend='ray': no Ray connection in this process, so robotlab is starting a local Ray "
                           "instance (call ray.init(...) before creating the pool to use a cluster or other settings)")
            ray.init(include_dashboard=False)
        else:
            logger.info("backend='ray': connecting to Ray at %s", address)
            try:
                ray.init(address=address)
            except Exception as exc:
                raise ConfigurationError(f"backend='ray' cannot connect to Ray at {address!r}: "
                                         f"{type(exc).__name__}: {exc}") from exc
        return ray


def _refuse_while_subinterpreters_live() -> None:
    """A local Ray start forks children that run Python first: with a subinterpreter alive they abort (3.13)."""
    from robotlab.parallel.subinterpreter_backend import live_subinterpreters

    count = live_subinterpreters()
    if count:
        raise ConfigurationError(
            f"backend='ray' cannot start a local Ray instance while {count} subinterpreter(s) exist in this process: "
            "a child forked while a subinterpreter exists aborts (CPython 3.13), and Ray starts its processes that "
            "way. Shut the subinterpreter pools down first (robotlab.shutdown_pool() for the default ones), or "
            "call ray.init(...) before creating them")


def _current_gcs_address(ray: ModuleType) -> str | None:
    with contextlib.suppress(Exception):
        return ray.get_runtime_context().gcs_address
    return None


def actor_options(resources: Mapping[str, float] | None) -> dict[str, Any]:
    """Ray actor options for one pool worker that needs *resources* (Ray's names: CPU, GPU, memory, custom).

    >>> actor_options({"CPU": 1, "GPU": 0.5, "ssd": 1})["resources"]
    {'ssd': 1}

    Without *resources* the actor uses Ray's defaults: it is placed where a
    CPU is free but holds none while it runs (so ``size`` may exceed the
    cluster's CPUs, as a process pool's may exceed the cores).
    """
    options: dict[str, Any] = {"max_restarts": 0, "max_task_retries": 0, "max_concurrency": 1}
    if resources is None:
        return options
    if not isinstance(resources, Mapping):
        raise ConfigurationError(f"resources must be a mapping of Ray resource names to amounts, like "
                                 f"{{'CPU': 1, 'GPU': 0.5}}; got {type(resources).__name__}")
    custom = {}
    for name, amount in resources.items():
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"resources: names must be non-empty strings; got {name!r}")
        if name in ("num_cpus", "num_gpus"):
            raise ConfigurationError(f"resources: use Ray's resource name {name[4:-1].upper()!r}, not {name!r}")
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not amount >= 0:
            raise ConfigurationError(f"resources[{name!r}] must be a number >= 0; got {amount!r}")
        if name in _RESOURCE_OPTIONS:
            options[_RESOURCE_OPTIONS[name]] = amount
        else:
            custom[name] = amount
    if custom:
        options["resources"] = custom
    return options


def listen_address(ray: ModuleType) -> tuple[str, int, str]:
    """``(bind host, port, host workers connect to)`` from ``ROBOTLAB_RAY_LISTEN`` (``host``, ``host:port``,
    ``:port``), defaulting to this node's IP as Ray knows it and a free port."""
    setting = os.environ.get(LISTEN_ENV, "").strip()
    host, port_text = setting, ""
    if setting.startswith("["):  # [IPv6]:port
        host, _, rest = setting[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif setting.count(":") == 1:
        host, _, port_text = setting.partition(":")
    try:
        port = int(port_text) if port_text else 0
        if not 0 <= port <= 65535:
            raise ValueError
    except ValueError:
        raise ConfigurationError(f"{LISTEN_ENV}={setting!r}: expected 'host', 'host:port' or ':port'") from None
    node_ip = ray.util.get_node_ip_address()
    host = host or node_ip
    wildcard = host in ("0.0.0.0", "::")
    with contextlib.suppress(ValueError):
        wildcard = wildcard or ipaddress.ip_address(host).is_unspecified
    return host, port, node_ip if wildcard else host


class _Readiness:
    """A pollable fd that is readable exactly when the socket watched through it is: an epoll (or kqueue) set.

    The pool registers a worker's channel in its selector when the worker is
    started, long before a Ray worker connects; this fd exists from the start
    and the socket joins it on arrival, so no byte is relayed by a thread.
    """

    def __init__(self) -> None:
        self._epoll = hasattr(select, "epoll")
        if self._epoll:
            self._poller: Any = select.epoll()
        elif hasattr(select, "kqueue"):
            self._poller = select.kqueue()
        else:
            raise ConfigurationError(f"backend='ray' needs epoll or kqueue (Linux, macOS, BSD); this is {sys.platform}")

    def fileno(self) -> int:
        return self._poller.fileno()

    def watch(self, fd: int) -> None:
        if self._epoll:
            self._poller.register(fd, select.EPOLLIN)
        else:
            self._poller.control([select.kevent(fd, select.KQ_FILTER_READ, select.KQ_EV_ADD)], 0)

    def close(self) -> None:
        self._poller.close()


class _RayChannel:
    """The pool's end of one Ray worker's connection, with ``Connection``'s interface.

    ``fileno()`` is stable from the start (see :class:`_Readiness`); frames
    sent before the worker connects (only the stop signal can be) wait in an
    outbox. Once connected, every call goes straight to a ``Connection`` over
    the TCP socket.
    """

    def __init__(self) -> None:
        self._readiness = _Readiness()
        self._conn: Connection | None = None
        self._outbox: list[bytes] = []
        self._lock = threading.Lock()
        self._closed = False

    def fileno(self) -> int:
        return self._readiness.fileno()

    @property
    def closed(self) -> bool:
        """True once the pool closed this channel (as ``Connection.closed``): its fd may be reused."""
        return self._closed

    def attach(self, sock: socket.socket, key: bytes) -> bool:
        """Start using the authenticated *sock*, its frames sealed with *key* (see ``_ray_worker.SealedChannel``);
        False (and *sock* closed) if this channel was closed meanwhile."""
        with self._lock:
            if self._closed:
                sock.close()
                return False
            conn = SealedChannel(Connection(sock.detach()), key, sends=b"driver", receives=b"worker")
            try:
                for frame in self._outbox:
                    conn.send_bytes(frame)
            except OSError:
                conn.close()
                return False
            self._outbox.clear()
            self._conn = conn
            self._readiness.watch(conn.fileno())
            return True

    def send_bytes(self, data: bytes) -> None:
        conn = self._conn
        if conn is None:
            with self._lock:
                if self._closed:
                    raise OSError("the channel to this Ray worker is closed")
                if self._conn is None:
                    self._outbox.append(bytes(data))
                    return
                conn = self._conn
        conn.send_bytes(data)

    def recv_bytes(self) -> bytes:
        conn = self._conn
        if conn is None:
            raise OSError("the channel to this Ray worker is closed" if self._closed else
                          "this Ray worker has not connected yet")
        try:
            return conn.recv_bytes()
        except ConnectionError as exc:  # a frame failed its seal: nothing more from this link is trusted
            logger.warning("backend='ray': %s; the worker is dropped", exc)
            conn.close()  # the worker sees EOF and ends: the pool sees it lost (WorkerCrashed)
            raise

    def poll(self, timeout: float | None = 0.0) -> bool:
        conn = self._conn
        if conn is None:
            if self._closed:
                raise OSError("the channel to this Ray worker is closed")
            return False
        return conn.poll(timeout)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
            self._outbox.clear()
        if conn is not None:
            conn.close()
        self._readiness.close()


class _Rendezvous:
    """Where this process's Ray workers connect: one TCP listener shared by every Ray pool here.

    Each worker is expected under a random key with its own token; a
    connection that does not complete the handshake within
    ``_HANDSHAKE_TIMEOUT`` seconds (in all), names an unknown key or fails
    authentication is closed (and logged) without anything of it being
    unpickled. At most ``_MAX_HANDSHAKES`` connections are handshaking at
    once, a thread each; one accepted beyond them is closed at once.
    """

    def __init__(self, host: str, port: int, advertised: str) -> None:
        try:
            self._listener = socket.create_server((host, port), family=_family(host), backlog=_BACKLOG)
        except OSError as exc:
            raise ConfigurationError(f"backend='ray' cannot listen for its workers on {host}:{port}: {exc}; "
                                     f"set {LISTEN_ENV} to an address of this machine the cluster can reach") from None
        self.address = (advertised, self._listener.getsockname()[1])
        self.users = 0
        self._expected: dict[str, tuple[bytes, RayWorkerHandle]] = {}
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(_MAX_HANDSHAKES)
        self._turned_away = 0  # connections closed for want of a slot since the last log line about them
        self._turned_away_logged = -_BUSY_LOG_INTERVAL
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._accept_loop, daemon=True, name="robotlab-ray-rendezvous")
        self._thread.start()

    def expect(self, key: str, token: bytes, handle: RayWorkerHandle) -> None:
        with self._lock:
            self._expected[key] = (token, handle)

    def forget(self, key: str) -> None:
        with self._lock:
            self._expected.pop(key, None)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join(5)
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ, "connection")
            selector.register(self._wake_r, selectors.EVENT_READ, "stop")
            while True:
                for key, _ in selector.select():
                    if key.data == "stop":
                        return
                    try:
                        sock, peer = self._listener.accept()
                    except OSError:
                        continue
                    if not self._slots.acquire(blocking=False):
                        sock.close()
                        self._turn_away(peer)
                        continue
                    try:
                        threading.Thread(target=self._admit, args=(sock, peer), daemon=True,
                                         name="robotlab-ray-handshake").start()
                    except RuntimeError:  # no thread to be had: the connection is closed like any over the cap
                        self._slots.release()
                        sock.close()
                        self._turn_away(peer)

    def _turn_away(self, peer: Any) -> None:
        """Count a connection closed for want of a handshake slot; log it, at most once per interval."""
        self._turned_away += 1
        now = time.monotonic()
        if now - self._turned_away_logged >= _BUSY_LOG_INTERVAL:
            logger.warning("backend='ray': closed %d connection(s) (the last from %s) at once: %d others are "
                           "already in the handshake; is something other than this pool's workers connecting?",
                           self._turned_away, peer, _MAX_HANDSHAKES)
            self._turned_away, self._turned_away_logged = 0, now

    def _admit(self, sock: socket.socket, peer: Any) -> None:
        try:
            self._handshake(sock, peer)
        finally:
            self._slots.release()

    def _handshake(self, sock: socket.socket, peer: Any) -> None:
        deadline = time.monotonic() + _HANDSHAKE_TIMEOUT  # for the whole exchange, however the peer paces it
        try:
            hello = recv_frame(sock, 512, deadline)
            parts = hello.split(b" ")
            if len(parts) != 5 or parts[0] != PROTOCOL:
                raise ConnectionError("it does not speak robotlab's Ray worker protocol")
            key = parts[1].decode("ascii", "replace")
            with self._lock:
                token, handle = self._expected.get(key, (b"", None))
            if handle is None:
                raise ConnectionError("it named no worker this process expects")
            nonce = os.urandom(NONCE_SIZE)
            send_frame(sock, nonce, deadline)
            reply = recv_frame(sock, 64, deadline)
            worker_proof, worker_nonce = reply[:32], reply[32:]
            if len(worker_nonce) != NONCE_SIZE or not secrets.compare_digest(
                    worker_proof, proof(token, b"worker", nonce, hello)):
                raise ConnectionError("it failed authentication")
            with self._lock:
                if self._expected.pop(key, None) is None:
                    raise ConnectionError("its worker has already connected")
            send_frame(sock, proof(token, b"driver", worker_nonce, hello), deadline)
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except TimeoutError:
            logger.warning("backend='ray': refused a connection from %s: it did not finish the handshake "
                           "within %g s", peer, _HANDSHAKE_TIMEOUT)
            sock.close()
            return
        except (OSError, ConnectionError) as exc:
            logger.warning("backend='ray': refused a connection from %s: %s", peer, exc)
            sock.close()
            return
        pid, node_ip, actor_id = (part.decode("ascii", "replace") for part in parts[2:])
        key = link_key(token, nonce, worker_nonce, hello)
        handle._connected(sock, key, int(pid) if pid.isdigit() else None, node_ip, actor_id)


def _family(host: str) -> socket.AddressFamily:
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).version == 6:
            return socket.AF_INET6
    return socket.AF_INET


_rendezvous: dict[tuple[str, int], _Rendezvous] = {}
_rendezvous_lock = threading.Lock()


def _join_rendezvous(host: str, port: int, advertised: str) -> _Rendezvous:
    with _rendezvous_lock:
        point = _rendezvous.get((host, port))
        if point is None:
            point = _rendezvous[(host, port)] = _Rendezvous(host, port, advertised)
        point.users += 1
        return point


def _leave_rendezvous(point: _Rendezvous) -> None:
    with _rendezvous_lock:
        point.users -= 1
        if point.users > 0:
            return
        for key, value in list(_rendezvous.items()):
            if value is point:
                del _rendezvous[key]
    point.close()


def _without_auto_init(api: Any) -> Any:
    """*api* (``ray.wait``, ``ray.get``, ``ray.kill``) without Ray's implicit ``ray.init()``.

    Ray wraps its public calls so that they start a new local Ray when none is
    initialised; after ``ray.shutdown()`` a watcher must fail instead, not start one.
    """
    return getattr(api, "__wrapped__", api)


def describe_death(exc: BaseException) -> str:
    """A one-line account of why a Ray actor's method failed, from Ray's (long) error text."""
    cause = getattr(exc, "cause", None)  # RayTaskError: the exception raised inside the actor
    if isinstance(cause, BaseException):
        return f"an error in its Ray actor: {type(cause).__name__}: {cause}"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() and not line.startswith("\t")]
    if len(lines) > 1 and lines[0].startswith("The actor died"):
        lines = lines[1:]  # "... before finishing this task": the next line says why
    text = " ".join(lines).split(" Some common causes")[0].split(" There are some potential root causes")[0]
    if len(text) > 400:
        text = text[:400] + " ..."
    return f"the loss of its Ray actor ({type(exc).__name__}: {text})"


class RayWorkerHandle:
    """The pool's handle on one Ray worker: its channel, a sentinel pipe, and the actor.

    ``ident`` is the actor's process id once it has connected (``None``
    while Ray is still starting it); ``label`` names the actor, its pid and node.
    """

    def __init__(self, backend: RayBackend, number: int, initializer: str | None, initargs: tuple) -> None:
        self.conn = _RayChannel()
        self._stopped_r, self._stopped_w = os.pipe()
        self.sentinel = self._stopped_r  # readable once the actor has ended
        self.ident: int | None = None
        self.exitcode: int | None = None
        self._number = number
        self._where: str | None = None
        self._cause = "an unknown cause"
        self._stopped = threading.Event()
        self._connected_at: float | None = None
        self._kill_requested = False
        self._fd_lock = threading.Lock()
        self._ray = backend.ray
        self._rendezvous = backend.rendezvous
        self._key = secrets.token_hex(16)
        token = secrets.token_bytes(32)
        self._rendezvous.expect(self._key, token, self)
        self._actor: Any = None
        try:
            if not self._ray.is_initialized():
                raise Error("Ray is no longer initialised in this process (ray.shutdown() was called)")
            self._actor = backend.actor_class.options(**backend.options).remote()
            ref = self._actor.serve.remote(self._rendezvous.address, self._key, token, list(sys.path),
                                           logging.getLogger().getEffectiveLevel(), initializer,
                                           wire.encode(initargs, msgpack=False))
        except Exception as exc:  # the pool sees a worker that died at start, and counts it
            self._ended(f"no Ray actor could be started: {type(exc).__name__}: {exc}")
            return
        self._started = time.monotonic()
        threading.Thread(target=self._watch, args=(ref,), daemon=True,
                         name=f"robotlab-ray-watch-{number}").start()

    @property
    def label(self) -> str:
        if self._where is None:
            return f"Ray worker {self._number} (not connected yet)"
        return f"Ray worker {self._number} ({self._where})"

    def _connected(self, sock: socket.socket, key: bytes, pid: int | None, node_ip: str, actor_id: str) -> None:
        """Called by the rendezvous once this worker's actor connected and authenticated."""
        self.ident = pid
        self._where = f"actor {actor_id[:12]}, pid {pid} on {node_ip}"
        self._connected_at = time.monotonic()
        self.conn.attach(sock, key)  # False if the pool dropped this worker meanwhile: the actor then sees EOF

    def _watch(self, ref: Any) -> None:
        # The actor's call is watched through the future Ray resolves from its own thread: no thread of
        # ours is inside a Ray call when the user calls ray.shutdown() (which can end the process then).
        ray, warned, outcome = self._ray, False, ref.future()
        while True:
            try:
                outcome.result(timeout=_WATCH_SLICE)
                self.exitcode, cause = 0, "exit code 0"
                break
            except TimeoutError:
                if not ray.is_initialized():
                    cause = "the end of this process's Ray connection (ray.shutdown() was called)"
                    break
                waited = time.monotonic() - self._started
                if self._connected_at is None and not warned and waited > _SLOW_START_WARNING:
                    warned = True
                    logger.warning("backend='ray': %s has not started after %.0f s; the cluster may lack the "
                                   "resources it asks for (see `ray status`)", self.label, waited)
            except BaseException as exc:
                cause = describe_death(exc)
                break
        self._ended(cause)

    def _ended(self, cause: str) -> None:
        self._cause = cause
        self._rendezvous.forget(self._key)
        if self._actor is not None and self._ray.is_initialized():
            with contextlib.suppress(Exception):  # its loop ended: free the process (and its resources) now
                _without_auto_init(self._ray.kill)(self._actor, no_restart=True)
        self._stopped.set()
        with self._fd_lock:
            if self._stopped_w is not None:
                os.close(self._stopped_w)  # wakes the supervisor: this worker has stopped
                self._stopped_w = None

    def kill(self) -> None:
        """``ray.kill`` the actor: its job ends now, whatever it is doing."""
        self._kill_requested = True
        if self._actor is not None and self._ray.is_initialized():
            with contextlib.suppress(Exception):
                _without_auto_init(self._ray.kill)(self._actor, no_restart=True)

    def join(self, timeout: float | None = None) -> None:
        if timeout is None and self._kill_requested:
            timeout = _KILL_CONFIRM_WAIT
        if not self._stopped.wait(timeout) and self._kill_requested:
            logger.warning("backend='ray': Ray has not confirmed that %s ended %.0f s after ray.kill; "
                           "the pool no longer waits for it", self.label, timeout)

    def is_alive(self) -> bool:
        return not self._stopped.is_set()

    def death_cause(self) -> str:
        return self._cause

    def release(self) -> None:
        """Close the sentinel's read end (the watcher closes the write end when Ray reports the end)."""
        with self._fd_lock:
            if self._stopped_r is not None:
                os.close(self._stopped_r)
                self._stopped_r = None


class RayBackend:
    """Starts Ray actor workers for one pool."""

    name = "ray"
    # ray.kill stops an actor for sure: a timed-out job's worker is killed and replaced.
    can_kill = True
    # Actors may run on other machines: buffers stay in the frame (a sealed socket), not in shared memory.
    shares_memory = False
    interpreter_queues = None  # see SubinterpreterBackend

    def __init__(self, address: str | None = None, resources: Mapping[str, float] | None = None) -> None:
        if address is not None and (not isinstance(address, str) or not address):
            raise ConfigurationError(f"address must be None, 'auto' or a Ray address like 'ray://host:10001'; "
                                     f"got {address!r}")
        self.options = actor_options(resources)
        _Readiness().close()  # fail now, not in the supervisor, on a platform without epoll/kqueue
        self.ray = connect(address)
        self.actor_class = _actor_class(self.ray)
        self.rendezvous = _join_rendezvous(*listen_address(self.ray))
        self._numbers = iter(range(1, sys.maxsize))
        self._closed = False

    def start(self, initializer: str | None, initargs: tuple) -> RayWorkerHandle:
        return RayWorkerHandle(self, next(self._numbers), initializer, initargs)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _leave_rendezvous(self.rendezvous)


_actor_class_cache: list[Any] = []


def _actor_class(ray: ModuleType) -> Any:
    """``ray.remote(RayWorker)``, made once per process."""
    with _init_lock:
        if not _actor_class_cache:
            _actor_class_cache.append(ray.remote(RayWorker))
        return _actor_class_cache[0]
