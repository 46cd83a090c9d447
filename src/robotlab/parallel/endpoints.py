"""Parent-side endpoints: what a job in a worker may call on objects that stay in the parent.

An endpoint wraps one parent object for one job and is reached from the
worker by name (``robotlab.parallel.parent_calls``). The pool hands each call
of the job to :meth:`Endpoint.handle`; a call for which :meth:`Endpoint.blocks`
is true (a blocking memory read, an LLM call) runs on a thread of its own, so
it never holds up the pool's other work. :meth:`Endpoint.close` runs once the
job has ended, however it ended (a budget reservation a crashed worker held is
released there).

- :class:`MemoryEndpoint` — the parent's ``Memory`` (``robotlab.parallel.memory()`` in a job);
- :class:`LedgerEndpoint` — a budget ``Ledger``: reserve / reconcile / release by handle;
- :class:`ModelEndpoint` — a model's ``complete``: LLM calls stay in the parent.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from robotlab.budget import Ledger, Reservation
from robotlab.errors import AwaitTimeout, Error, RactorBoundaryError
from robotlab.memory import Memory
from robotlab.parallel.boundary import freeze_deep

__all__ = ["Endpoint", "LedgerEndpoint", "MemoryEndpoint", "ModelEndpoint", "answer"]

# A blocking memory read for a worker re-checks, this often, that the worker still waits for it.
_WAIT_SLICE = 0.25

StillWaiting = Callable[[], bool]


class Endpoint:
    """One parent object exposed to one job. Subclasses implement :meth:`handle`."""

    def blocks(self, op: str, args: tuple) -> bool:
        """Whether this call may take long: then it runs on a thread of its own."""
        return False

    def handle(self, op: str, args: tuple, still_waiting: StillWaiting) -> Any:
        """Run call *op*; *still_waiting()* tells whether the worker still waits for the answer."""
        raise NotImplementedError

    def close(self) -> None:
        """The job ended."""

    @staticmethod
    def unknown(op: str) -> Error:
        return Error(f"unknown operation {op!r}")


def answer(endpoint: Endpoint | None, op: str, args: tuple, still_waiting: StillWaiting,
           reply: Callable[[Any], None]) -> None:
    """Run call *op* on *endpoint* and pass what it returned or raised to *reply*.

    A call that :meth:`~Endpoint.blocks` runs on a thread of its own: it must not hold up
    the thread that reads results. *endpoint* None: the job that asked has ended.
    """
    if endpoint is None:
        reply(Error(f"{op}: the job that asked has ended"))
        return

    def run() -> None:
        try:
            outcome = endpoint.handle(op, args, still_waiting)
        except Exception as exc:
            outcome = exc
        reply(outcome)

    if endpoint.blocks(op, args):
        threading.Thread(target=run, daemon=True, name=f"robotlab-pool-{op}").start()
    else:
        run()


class MemoryEndpoint(Endpoint):
    """The parent's Memory; what goes back to the worker is frozen (``freeze_deep``)."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def blocks(self, op: str, args: tuple) -> bool:
        return op == "get" and args[1] is not False and args[1] is not None

    def handle(self, op: str, args: tuple, still_waiting: StillWaiting) -> Any:
        memory = self.memory
        if op == "get":
            keys, wait, default = args
            if self.blocks(op, args):
                return self._wait_for_keys(keys, wait, still_waiting)
            return freeze_deep(memory.get(*keys, default=default), root="memory")
        if op == "getitem":
            return freeze_deep(memory[args[0]], root=f"memory[{args[0]!r}]")
        if op == "set":
            return memory.set(*args)
        if op == "update":
            return memory.update(args[0])
        if op == "increment":
            return memory.increment(*args)
        if op == "compare_and_set":
            key, expected, new = args
            return memory._compare_and_set(key, lambda current: _frozen_equal(current, expected), new)
        if op == "delete":
            return freeze_deep(memory.delete(args[0]), root=f"memory[{args[0]!r}]")
        if op == "delitem":
            del memory[args[0]]
            return None
        if op == "keys":
            return tuple(memory.keys())
        if op == "data":
            return freeze_deep(memory.data.to_dict(), root="memory.data")
        raise self.unknown(op)

    def _wait_for_keys(self, keys: tuple, wait: bool | float, still_waiting: StillWaiting) -> Any:
        """``memory.get(*keys, wait=wait)`` in slices, giving up when the worker no longer waits."""
        values = {}
        for key in keys:
            deadline = None if wait is True else time.monotonic() + wait
            while True:
                left = _WAIT_SLICE if deadline is None else deadline - time.monotonic()
                try:
                    values[key] = self.memory.get(key, wait=max(0.0, min(left, _WAIT_SLICE)))
                    break
                except AwaitTimeout:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise AwaitTimeout.for_key(key, wait) from None
                    if not still_waiting():
                        raise Error("the worker that asked no longer waits") from None
        return freeze_deep(values[keys[0]] if len(keys) == 1 else values, root="memory")


def _frozen_equal(current: Any, expected: Any) -> bool:
    """Whether *current* (a parent value) is what a worker reading it got and sent back as *expected*."""
    if current is expected:
        return True
    try:
        return bool(freeze_deep(current, root="memory") == expected)
    except RactorBoundaryError:  # a value no worker can read equals nothing a worker sends
        return False


class LedgerEndpoint(Endpoint):
    """A budget ledger. The worker holds reservations by handle; a handle still open when the job ends is released."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._handles = itertools.count()
        self._open: dict[int, Reservation] = {}
        self._lock = threading.Lock()

    def handle(self, op: str, args: tuple, still_waiting: StillWaiting) -> Any:
        if op == "reserve":
            reservation = self.ledger.reserve(*args)
            with self._lock:
                handle = next(self._handles)
                self._open[handle] = reservation
            return handle
        if op in ("reconcile", "release"):
            with self._lock:
                reservation = self._open.pop(args[0], None)
            if reservation is None:
                raise Error(f"budget reservation {args[0]} is not open")
            if op == "release":
                return self.ledger.release(reservation)
            return self.ledger.reconcile(reservation, args[1])
        if op == "overspend_error":
            return self.ledger.overspend_error()
        if op == "limit":
            return self.ledger.limit(*args)
        raise self.unknown(op)

    def close(self) -> None:
        with self._lock:
            reservations, self._open = list(self._open.values()), {}
        for reservation in reservations:
            self.ledger.release(reservation)


class ModelEndpoint(Endpoint):
    """A model's ``complete(request)``: the LLM call runs here, on a thread of its own.

    With *on_delta* (a streamed run), the call streams and its deltas go there as they come.
    """

    def __init__(self, model: Any, on_delta: Callable[[str, dict[str, Any]], None] | None = None) -> None:
        self.model = model
        self.on_delta = on_delta

    def blocks(self, op: str, args: tuple) -> bool:
        return op == "complete"

    def handle(self, op: str, args: tuple, still_waiting: StillWaiting) -> Any:
        if op == "complete":
            # The provider's raw response (litellm's pydantic objects) stays here: unpickling it in the
            # worker would import litellm there, and a subinterpreter cannot load pydantic_core at all.
            if self.on_delta is None:
                reply = self.model.complete(*args)
            else:
                from robotlab.llm.calls import complete_async
                from robotlab.sync_bridge import run_sync

                reply = run_sync(lambda: complete_async(self.model, *args, self.on_delta))
            return dataclasses.replace(reply, raw=None)
        raise self.unknown(op)
