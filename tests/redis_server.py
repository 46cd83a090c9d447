"""A real redis-server for the tests: started on a free 127.0.0.1 port in a temporary dir, stopped after.

Use the ``redis_server`` session fixture (import it into the test module), or
``RedisServer`` directly for a test that needs its own server (to stop and
restart it). Without the ``redis-server`` binary the fixture skips, unless
``ROBOTLAB_REQUIRE_REDIS=1`` (set by CI), where it fails: the Redis tests must
never be skipped silently there.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

__all__ = ["RedisServer", "redis_server", "require_redis_server"]

_INSTALL_HINT = "install it with `apt-get install -y redis-server` (Debian/Ubuntu)"


def require_redis_server() -> str:
    """The redis-server path; otherwise fail (``ROBOTLAB_REQUIRE_REDIS=1``) or skip the test."""
    path = shutil.which("redis-server")
    if path is not None:
        return path
    message = f"redis-server is not installed: {_INSTALL_HINT}"
    if os.environ.get("ROBOTLAB_REQUIRE_REDIS") == "1":
        pytest.fail(f"{message} (ROBOTLAB_REQUIRE_REDIS=1: the Redis memory tests must run)", pytrace=False)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """One redis-server process with no persistence, in its own temporary directory."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.directory = tempfile.mkdtemp(prefix="robotlab-redis-")
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 30.0) -> None:
        """Start (or restart, on the same port) and wait until it answers PING."""
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.directory,
             "--save", "", "--appendonly", "no", "--logfile", os.path.join(self.directory, "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while not self.ping():
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}: {self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer PING within {timeout} s: {self.log()}")
            time.sleep(0.05)

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 10 s); the directory stays for a restart."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None

    def log(self) -> str:
        try:
            with open(os.path.join(self.directory, "redis.log")) as f:
                return f.read()[-2000:]
        except OSError:
            return "(no log)"

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server():
    """A redis-server for the whole session (tests isolate themselves by namespace)."""
    binary = require_redis_server()
    for attempt in range(3):  # the free port may be taken between choosing and binding it
        server = RedisServer(binary)
        try:
            server.start()
            break
        except RuntimeError:
            server.cleanup()
            if attempt == 2:
                raise
    try:
        yield server
    finally:
        server.cleanup()
