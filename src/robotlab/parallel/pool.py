"""WorkerPool: a supervised ``concurrent.futures.Executor`` over worker processes or subinterpreters.

Example:
    >>> from robotlab.parallel import WorkerPool
    >>> with WorkerPool(size=2) as pool:                       # doctest: +SKIP
    ...     pool.submit("math:factorial", 10).result()
    3628800

Unlike ``ProcessPoolExecutor``, a worker that dies fails only the job it was
running (``WorkerCrashed`` with the exit code or signal) and is replaced; a job
past its ``timeout`` raises ``JobTimeout`` and its worker is replaced.
Arguments are frozen and encoded in the caller's thread, so a value that
cannot cross raises from ``submit`` itself.

How it works: a backend (``process_backend``, ``subinterpreter_backend``)
starts workers; each has one duplex pipe and a sentinel that becomes readable
when it stops. A job goes straight down the pipe of a free worker from the
submitting thread, else it waits in a queue (and may be handed to a busy
worker just before its job is expected to end). One supervisor thread waits, with
one persistent selector, on every pipe, every sentinel and a wake-up pipe: it
reads results, hands queued jobs to freed workers, replaces stopped ones and
enforces timeouts. A thread blocked in ``future.result()`` reads the result
from its worker's pipe itself (the supervisor stops watching that pipe
meanwhile), so a round trip wakes one parent thread, not two.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import itertools
import logging
import math
import multiprocessing
import os
import select
import selectors
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError, Executor, Future
from dataclasses import dataclass, field
from typing import Any

from robotlab.errors import (
    ConfigurationError,
    Error,
    JobFailed,
    JobTimeout,
    RactorBoundaryError,
    WireError,
    WorkerCrashed,
)
from robotlab.hooks import Hook, current_hook_scope, global_hooks
from robotlab.memory import Memory
from robotlab.parallel import shipped_hooks, wire
from robotlab.parallel.boundary import freeze_deep, import_path
from robotlab.parallel.endpoints import Endpoint, MemoryEndpoint
from robotlab.parallel.process_backend import ProcessBackend
from robotlab.parallel.subinterpreter_backend import SubinterpreterBackend
from robotlab.parallel.thread_backend import ThreadBackend

__all__ = ["BACKENDS", "RemoteTraceback", "WorkerPool"]

BACKENDS = ("process", "thread", "subinterpreter", "ray")
# A worker that dies this many times in a row before becoming ready marks the pool broken
# (a crashing import or interpreter start would otherwise respawn forever).
_MAX_START_FAILURES = 3
# The frame that tells a worker to stop. Pickled: a subinterpreter cannot load msgspec.
_STOP = wire.encode(None, msgpack=False)
# A worker process exits with this code when importing the main script made a pool (see __init__).
_NO_MAIN_GUARD_EXIT = 87
logger = logging.getLogger("robotlab.parallel")
# Jobs in flight per worker. Jobs whose kind and target have taken less than _SHORT_JOB
# on average so far wait in the pipe of a busy worker, up to _PIPELINE of them, so a
# stream of tiny jobs never leaves a worker idle for a round trip through the parent.
# Any other job (slow, or not yet measured) goes only to an idle worker: it never waits
# behind another job while a worker is free, and jobs that wait for each other both run
# (the one exception, for jobs of consistent length, is _HANDOVER_LEAD below).
_PIPELINE = 8
_SHORT_JOB = 0.001  # seconds
# A queued job is handed to a busy worker when that worker's job is expected to end within
# this time, so the worker finds it waiting instead of idling for a round trip through the
# parent (a wake-up on each side, 0.1-0.5 ms on a VM). Only when jobs of the running job's
# kind take consistent times (see _hand_over_at): one that overruns its estimate holds up
# the job behind it, as ProcessPoolExecutor's one-ahead queue always may.
_HANDOVER_LEAD = 0.002  # seconds
# A caller reading its own result re-checks the pool this often: the pipe it waits on may have
# been closed under it (an abandoned interpreter never writes, and poll() does not see a close).
_READ_SLICE = 0.05
# It first polls without sleeping for this long: a short job's result then arrives to a
# thread that is still running, and waking a sleeping thread is what a round trip costs most.
_SPIN = 0.0001


class RemoteTraceback(Exception):
    """Set as ``__cause__`` of an exception re-raised from a worker: its text is the worker's traceback."""

    def __str__(self) -> str:
        return self.args[0]


@dataclass(eq=False)
class _Job:
    id: int
    frame: bytes
    future: Future
    target: str
    timeout: float | None
    deadline: float | None = None
    running: bool = False  # its future is RUNNING (it was sent to a worker at least once)
    started: float | None = None  # about when its worker began it (monotonic), once it is at the front
    worker: _Worker | None = None  # the one it was last sent to
    profile: tuple[str, str] = ("call", "")  # (kind, target): its run time is learned under this key
    endpoints: dict[int, Endpoint] = field(default_factory=dict)  # parent objects it may call, by id
    stopped: bool = False  # WorkerPool.stop() was called while it ran


class _PoolFuture(Future):
    """A Future whose ``result()`` reads the worker's pipe itself while the job runs.

    The result then reaches the waiting thread directly, not through a wake-up of
    the supervisor thread first: one thread hop less per round trip.
    ``hook_metadata`` is what the ``tool_call`` hooks recorded in the worker's
    ``ctx.metadata`` (``{namespace: {key: value}}``), or None.
    """

    def __init__(self, pool: WorkerPool) -> None:
        super().__init__()
        self._pool: WorkerPool | None = pool
        self._job: _Job | None = None
        self.hook_metadata: dict[str, dict[str, Any]] | None = None

    def result(self, timeout: float | None = None) -> Any:
        pool, job = self._pool, self._job
        if pool is not None and job is not None and not self.done():
            end = None if timeout is None else time.monotonic() + timeout
            pool._read_result(job, end)
            if end is not None:
                timeout = max(0.0, end - time.monotonic())
        return super().result(timeout)


@dataclass(eq=False)
class _Worker:
    handle: Any  # a ProcessWorker or an InterpreterWorker
    ready: bool = False
    jobs: collections.deque[_Job] = field(default_factory=collections.deque)  # jobs[0] is running
    jobs_done: int = 0
    reader: bool = False  # a caller is reading its pipe (see _PoolFuture); the supervisor is not
    hung_up: bool = False  # its pipe reached EOF: it stopped, and its sentinel tells the supervisor

    def __post_init__(self) -> None:
        # Connection.poll() builds a new selector on every call; one poll object per pipe costs a
        # single system call, and every drain asks at least twice. Used under the pool's lock only
        # (a poll object refuses concurrent use).
        self._poller = select.poll()
        self._poller.register(self.handle.conn.fileno(), select.POLLIN)

    def has_data(self) -> bool:
        """Whether the pipe has data or reached EOF; OSError once the pool closed it."""
        if self.handle.conn.closed:
            raise OSError("the pool closed this worker's pipe")
        return bool(self._poller.poll(0))


def _rebuild_error(target: str, frame: bytes | None, type_name: str, message: str, tb_text: str) -> BaseException:
    """The worker's exception as its own type when it unpickles here, else a robotlab ``Error``.

    A ``BaseException`` that is not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``)
    becomes ``JobFailed``: re-raised as it is, it would end the caller's program.
    """
    error: BaseException | None = None
    if frame is not None:
        with contextlib.suppress(WireError):
            error = wire.decode(frame)
    if not isinstance(error, BaseException):
        error = Error(f"{type_name}: {message}" if message else type_name)
    elif not isinstance(error, Exception):
        raised = type_name.removeprefix("builtins.") + (f": {message}" if message else "")
        error = JobFailed(f"{target} raised {raised} in the worker (reported as JobFailed: a job cannot end "
                          "this program)", type_name=type_name)
    error.remote_traceback = tb_text  # type: ignore[attr-defined]
    error.__cause__ = RemoteTraceback(f'\n"""\n{tb_text}"""')
    return error


_live_pools: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


@atexit.register
def _terminate_live_pools() -> None:
    # Runs on interpreter exit, also after an uncaught Ctrl-C: no worker outlives its parent.
    for pool in list(_live_pools):
        pool.terminate()


class WorkerPool(Executor):
    """A pool of supervised worker processes behind the ``concurrent.futures`` interface.

    Functions and tools cross as import paths (``"pkg.module:name"``, or the
    module-level object itself); arguments and results cross through
    :func:`~robotlab.parallel.freeze_deep` and the wire codec. As with
    ``ProcessPoolExecutor``, a script that creates a pool needs an
    ``if __name__ == "__main__":`` guard.

    Args:
        size: number of workers, or ``"auto"`` (``os.cpu_count()``). ``max_workers`` is the
            same, under its ``concurrent.futures`` name.
        backend: ``"process"``, ``"subinterpreter"`` (CPython 3.13+), ``"ray"`` (one Ray actor per
            worker, on the cluster this process is connected to; ``pip install 'robotlab[ray]'``) or
            ``"thread"`` (threads of this process, for I/O-bound jobs and tests: no GIL escape).
        start_method: ``"forkserver"`` (the default on Linux) or ``"spawn"``; never ``"fork"``.
        max_tasks_per_child: replace a worker after this many jobs.
        initializer, initargs: called in each worker before its first job.
        memory: a :class:`~robotlab.Memory` that jobs reach as ``robotlab.parallel.memory()``
            (tools as ``self.memory``); see :mod:`robotlab.parallel.memory_proxy`.
        address: ``backend="ray"`` only: ``None`` (the Ray this process is connected to, else a local
            one started now), ``"auto"`` or a cluster address such as ``"ray://head:10001"``.
        resources: ``backend="ray"`` only: what each worker reserves on the cluster, in Ray's resource
            names (``{"CPU": 1, "GPU": 0.5, "memory": 2e9, "my_label": 1}``); see docs/distributed.md.

    Example:
        >>> with WorkerPool(size=2) as pool:                   # doctest: +SKIP
        ...     list(pool.map("math:sqrt", [1, 4, 9]))
        [1.0, 2.0, 3.0]
    """

    def __init__(
        self,
        size: int | str = "auto",
        backend: str = "process",
        start_method: str | None = None,
        max_tasks_per_child: int | None = None,
        initializer: Callable[..., Any] | str | None = None,
        initargs: tuple = (),
        memory: Memory | None = None,
        address: str | None = None,
        resources: dict[str, float] | None = None,
        *,
        max_workers: int | None = None,
    ) -> None:
        _refuse_unguarded_main()
        if max_workers is not None:
            if size != "auto":
                raise ConfigurationError(f"give size or max_workers, not both; got size={size!r}, "
                                         f"max_workers={max_workers!r}")
            if not isinstance(max_workers, int) or isinstance(max_workers, bool) or max_workers < 1:
                # The stdlib's wording: code written for ProcessPoolExecutor may match on it.
                raise ConfigurationError(f"max_workers must be greater than 0; got {max_workers!r}")
            size = max_workers
        if backend not in BACKENDS:
            raise ConfigurationError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
        if size == "auto":
            size = os.cpu_count() or 1
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ConfigurationError(f"size must be 'auto' or an integer >= 1; got {size!r}")
        if max_tasks_per_child is not None and (not isinstance(max_tasks_per_child, int) or max_tasks_per_child < 1):
            raise ConfigurationError(f"max_tasks_per_child must be an integer >= 1; got {max_tasks_per_child!r}")
        _check_memory(memory)
        self.size: int = size
        self.backend: str = backend
        # spawn and forkserver workers import the main script as __main__ when it is a file;
        # a subinterpreter's __main__ is its own, empty one; a thread worker's is this one.
        self._main_importable = backend == "thread" or (
            backend == "process" and getattr(sys.modules.get("__main__"), "__file__", None) is not None)
        self._backend = _make_backend(backend, start_method, address, resources)
        self._max_tasks = max_tasks_per_child
        self._paths: dict[Any, str] = {}
        self._initializer = None if initializer is None else self._path(initializer)
        self._initargs = freeze_deep(tuple(initargs), root="initargs", main_importable=self._main_importable)
        self._memory = memory
        self._calls: collections.deque[tuple[_Worker, tuple]] = collections.deque()  # from jobs, to answer
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._pending: collections.deque[_Job] = collections.deque()
        self._workers: list[_Worker] = []
        self._retiring: list[Any] = []  # workers told to stop, joined once their sentinel fires
        self._abandoned: list[Any] = []  # timed-out interpreters or threads, which cannot be stopped (see _expire)
        self._start_failures = 0
        # Moving averages of run time and of its deviation from that average, by job profile.
        self._durations: dict[tuple[str, str], tuple[float, float]] = {}
        self._supervisor_wakes_at = math.inf  # when its select times out (monotonic), to hand over a job
        self._short: set[tuple[str, str]] = set()  # the profiles whose average is under _SHORT_JOB
        self._broken: str | None = None
        self._shutdown = False
        self._all_ready = threading.Event()
        self._stopped = threading.Event()
        self._wake_r, self._wake_w = multiprocessing.Pipe(duplex=False)
        # One persistent selector over every pipe and process sentinel (cheaper than
        # building one per wake-up, as multiprocessing.connection.wait does).
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._workers = [self._spawn() for _ in range(size)]
        self._supervisor = threading.Thread(target=self._supervise, name="robotlab-pool-supervisor", daemon=True)
        self._supervisor.start()
        _live_pools.add(self)

    # -- public API ------------------------------------------------------------

    def submit(self, fn: Callable[..., Any] | str, /, *args: Any, timeout: float | None = None,
               **kwargs: Any) -> Future:
        """Run ``fn(*args, **kwargs)`` in a worker; ``timeout`` (seconds) bounds its run time.

        *fn* may also be a ``functools.partial`` or a bound method of an instance that can
        cross (a frozen dataclass, say): the function travels by import path, and the arguments
        it binds (the instance first) with the others. Raises ``RactorBoundaryError`` /
        ``WireError`` right here if an argument cannot cross.
        """
        fn, fixed, fixed_kwargs = self._unbind(fn)
        return self._submit("call", self._path(fn), (*fixed, *args), {**fixed_kwargs, **kwargs}, timeout,
                            endpoints=self._memory_endpoint(None))

    def submit_tool(self, tool: type | str, args: dict[str, Any] | None = None, *,
                    timeout: float | None = None, memory: Memory | None = None,
                    hooks: str | None = "inherit", errors: str = "raise") -> Future:
        """Run ``ToolClass().call(args)`` in a worker: a fresh instance, arguments validated, hooks fired.

        - ``memory``: the tool's ``self.memory`` (default: the pool's).
        - ``hooks="inherit"``: the ``tool_call`` hooks in effect here (the current
          hook scope of a run, else the global registry) are registered again in
          the worker by import path and fire there; what they record in
          ``ctx.metadata`` comes back as ``future.hook_metadata``. A hook class
          that cannot be imported by workers raises ``RactorBoundaryError`` here.
          ``hooks=None``: no hooks.
        - ``errors="raise"``: a failure raises
          ``ToolError("Tool 'pkg.mod:Name' failed in worker: ...")``;
          ``errors="text"``: it comes back as the text a model sees
          (``"Error (name): ..."``), exactly as ``Tool.call`` in-process.

        Example:
            >>> future = pool.submit_tool("myapp.tools:Fetch", {"url": "..."})   # doctest: +SKIP
            >>> future.result(), future.hook_metadata                            # doctest: +SKIP
        """
        if errors not in ("raise", "text"):
            raise ConfigurationError(f"errors must be 'raise' or 'text'; got {errors!r}")
        _check_memory(memory)
        kind = "tool" if errors == "raise" else "tool_text"
        return self._submit(kind, self._path(tool), (), dict(args or {}), timeout,
                            endpoints=self._memory_endpoint(memory), hooks=self._tool_call_hooks(hooks))

    def run_tool(self, tool: type | str, args: dict[str, Any] | None = None, *, timeout: float | None = None,
                 memory: Memory | None = None, hooks: str | None = "inherit", errors: str = "raise") -> Any:
        """:meth:`submit_tool` and wait for the result."""
        return self.submit_tool(tool, args, timeout=timeout, memory=memory, hooks=hooks, errors=errors).result()

    def map(self, fn: Callable[..., Any] | str, *iterables: Iterable[Any], timeout: float | None = None,
            chunksize: int | None = None) -> Iterator[Any]:
        """Like ``Executor.map``: results in input order; ``timeout`` bounds the whole iteration.

        Calls travel in chunks of ``chunksize`` (default: about four chunks per
        worker, like ``multiprocessing.Pool.map``); an exception fails its chunk
        and is raised when iteration reaches it.
        """
        fn, fixed, fixed_kwargs = self._unbind(fn)
        path = self._path(fn)
        # Each iterable is frozen once as a flat tuple, and a chunk travels as slices of
        # these columns (the worker runs map(fn, *slices)): no tuple per call to build,
        # freeze or pickle. Slices of frozen tuples are frozen: no second pass.
        columns = [freeze_deep(tuple(iterable), root=f"iterables[{i}]", main_importable=self._main_importable)
                   for i, iterable in enumerate(iterables)]
        count = min(map(len, columns), default=0)
        if chunksize is None:
            chunksize = max(1, math.ceil(count / (4 * self.size)))
        elif not isinstance(chunksize, int) or chunksize < 1:
            raise ConfigurationError(f"chunksize must be an integer >= 1; got {chunksize!r}")
        end = None if timeout is None else time.monotonic() + timeout
        if chunksize == 1:
            futures = [self._submit("call", path, (*fixed, *call), fixed_kwargs, None, frozen=True,
                                    endpoints=self._memory_endpoint(None))
                       for call in zip(*columns, strict=False)]
        else:
            futures = [self._submit("batch", path, (fixed, fixed_kwargs, *(c[i:i + chunksize] for c in columns)),
                                    {}, None, frozen=True, endpoints=self._memory_endpoint(None))
                       for i in range(0, count, chunksize)]

        def results() -> Iterator[Any]:
            # Nothing here keeps a result once it is handed out (CPython issue 14406): the
            # futures and chunk lists are popped, and no local names a yielded value.
            try:
                futures.reverse()
                while futures:
                    left = None if end is None else end - time.monotonic()
                    if chunksize == 1:
                        yield futures.pop().result(left)
                        continue
                    chunk = futures.pop().result(left)
                    chunk.reverse()
                    while chunk:
                        yield chunk.pop()
            finally:
                for future in futures:
                    future.cancel()

        return results()

    def stop(self, future: Future) -> bool:
        """Stop the job of *future* however far it got; returns False when it had already finished.

        A queued job is cancelled (``future.cancel()``). A running one's worker is
        stopped and replaced (process and Ray backends; a subinterpreter or thread
        cannot be stopped, so it is abandoned and replaced) and the future raises
        ``CancelledError``. Cancelling an ``await asyncio.wrap_future(future)`` of a
        robot run or tool call does this.
        """
        if future.cancel():
            return True
        with self._lock:
            job = next((w.jobs[0] for w in self._workers if w.jobs and w.jobs[0].future is future), None)
            if job is None or future.done():
                return False
            job.stopped, job.deadline = True, float("-inf")
        self._wake()
        return True

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting jobs; finish the queued ones (or cancel them) and stop the workers."""
        with self._lock:
            self._shutdown = True
            cancelled = self._drain_pending() if cancel_futures else []
        for job in cancelled:
            job.future.cancel()
        self._wake()
        if wait:
            self._stopped.wait()

    def terminate(self) -> None:
        """Stop now: cancel queued jobs, kill the workers, fail running jobs with ``CancelledError``.

        The pool does this itself when a ``with`` block exits on ``KeyboardInterrupt``
        and at interpreter exit.
        """
        with self._lock:
            self._shutdown = True
            cancelled = self._drain_pending()
            running = [job for worker in self._workers for job in worker.jobs]
            for worker in self._workers:
                worker.jobs.clear()
                worker.handle.kill()
        for job in cancelled:
            _close_endpoints(job.future)
            job.future.cancel()
        for job in running:
            _close_endpoints(job.future)
            if not job.future.done():
                job.future.set_exception(CancelledError(f"{job.target} was stopped: the pool was terminated"))
        self._wake()
        if threading.current_thread() is not self._supervisor:
            self._stopped.wait()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None and not issubclass(exc_type, Exception):
            self.terminate()  # Ctrl-C or SystemExit: do not wait for running jobs
        else:
            self.shutdown(wait=True)

    def wait_until_ready(self, timeout: float | None = None) -> bool:
        """Block until every initial worker has started (and run the initializer); False on timeout.

        Raises ``robotlab.Error`` with the reason when the pool broke instead
        (its workers keep dying at start, or the initializer failed).
        """
        ready = self._all_ready.wait(timeout)
        if self._broken is not None:
            raise Error(self._broken)
        return ready

    @property
    def worker_ids(self) -> list[int]:
        """PIDs of the current worker processes, or ids of the current worker interpreters or threads."""
        with self._lock:
            return [w.handle.ident for w in self._workers]

    # -- submitting ----------------------------------------------------------------

    def _unbind(self, fn: Any) -> tuple[Any, tuple, dict[str, Any]]:
        """The function behind a ``functools.partial`` or bound method, and the arguments it binds, frozen."""
        if isinstance(fn, functools.partial):
            inner, fixed, fixed_kwargs = self._unbind(fn.func)
            fixed += freeze_deep(fn.args, root=f"the arguments of {fn!r}", main_importable=self._main_importable)
            keywords = freeze_deep(fn.keywords, root=f"the keywords of {fn!r}", main_importable=self._main_importable)
            return inner, fixed, {**fixed_kwargs, **keywords}
        if isinstance(fn, types.MethodType) and not isinstance(fn.__self__, type):
            instance = freeze_deep(fn.__self__, root=f"the instance of bound method {fn.__qualname__}",
                                   main_importable=self._main_importable)
            return fn.__func__, (instance,), {}
        return fn, (), {}

    def _path(self, fn: Any) -> str:
        try:
            return self._paths[fn]
        except (KeyError, TypeError):
            pass
        path = import_path(fn, main_importable=self._main_importable)
        with contextlib.suppress(TypeError):
            self._paths[fn] = path
        return path

    def _memory_endpoint(self, memory: Memory | None) -> dict[str, Endpoint] | None:
        memory = memory if memory is not None else self._memory
        return None if memory is None else {"memory": MemoryEndpoint(memory)}

    def _tool_call_hooks(self, hooks: str | None) -> shipped_hooks.Description | None:
        """The ``tool_call`` hooks in effect, as the import paths a job frame carries (see ``shipped_hooks``)."""
        if hooks is None:
            return None
        if hooks != "inherit":
            raise ConfigurationError(f"hooks must be 'inherit' or None; got {hooks!r}")
        scope = current_hook_scope()
        registries, per_run = (scope.registries, scope.per_run_hooks) if scope is not None else ((global_hooks(),), ())
        return self.describe_hooks(registries, per_run, ("tool_call",))

    def describe_hooks(self, registries: Any, per_run: Any, families: Any) -> shipped_hooks.Description | None:
        """The hooks of *families* in *registries* and *per_run*, as workers of this pool can import them."""
        return shipped_hooks.describe(registries, per_run, families, self._hook_path)

    def _hook_path(self, cls: type[Hook]) -> str:
        try:
            return self._path(cls)
        except RactorBoundaryError as exc:
            raise RactorBoundaryError(f"Hook {cls.__module__}.{cls.__qualname__} cannot be registered in a worker: "
                                      f"{exc}. Define it at module level in an importable module, or run the tool "
                                      "in-process") from None

    def _submit(self, kind: str, target: str, args: tuple, kwargs: dict, timeout: float | None, *,
                frozen: bool = False, endpoints: dict[str, Endpoint] | None = None,
                hooks: shipped_hooks.Description | None = None) -> Future:
        """Queue one job. *endpoints*: the parent objects the job may call, by name (see ``parent_calls``)."""
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or timeout <= 0):
            raise ConfigurationError(f"timeout must be a positive number of seconds; got {timeout!r}")
        job_id = next(self._ids)
        main_importable = self._main_importable
        job_args = args if frozen else freeze_deep(args, root="args", main_importable=main_importable)
        # A tool's arguments are one dict, named "args" in errors as in the tool's own call.
        job_kwargs = dict(freeze_deep(kwargs, root="kwargs" if kind == "call" else "args",
                                      main_importable=main_importable)) if kwargs else {}
        endpoint_ids = None if not endpoints else tuple((name, id(e)) for name, e in endpoints.items())
        frame = wire.encode((job_id, kind, target, job_args, job_kwargs, endpoint_ids, hooks))
        future = _PoolFuture(self)
        job = future._job = _Job(job_id, frame, future, target, timeout, profile=(kind, target),
                                 endpoints={id(e): e for e in (endpoints or {}).values()})
        with self._lock:
            if self._broken is not None:
                raise Error(self._broken)
            if self._shutdown:
                raise RuntimeError("cannot submit to a WorkerPool after shutdown")
            worker = None if self._pending else self._worker_for(job)
            if worker is None:
                # Every worker is busy or starting: the next one that reports back takes this
                # job; the supervisor needs waking only if it should hand it over before then
                # (it planned with the jobs queued before this one, if there were any).
                self._pending.append(job)
                wake = len(self._pending) == 1 and self._hand_over_sooner()
            else:
                job.future.set_running_or_notify_cancel()  # a new future: nobody can have cancelled it
                job.running = True
                self._start(worker, job)
                wake = False
        if wake or timeout is not None:
            self._wake()  # the supervisor must learn of a new deadline or hand-over
        return job.future

    def _read_result(self, job: _Job, end: float | None) -> None:
        """Wait for *job* by reading its worker's pipe in this thread, while it is the only reader.

        Returns as soon as the job is settled, or leaves the rest of the wait to
        the future (and the supervisor) when the job is queued, or another
        thread already reads that worker. Memory requests of the job are
        answered here too, so the worker's reader stays the same thread.
        """
        while True:
            with self._lock:
                worker = job.worker
                if (job.future.done() or worker is None or worker.reader or worker.hung_up
                        or worker not in self._workers):
                    return
                conn = worker.handle.conn
                worker.reader = True
                self._selector.unregister(conn)
            try:
                self._read_worker(worker, job, end)
            finally:
                with self._lock:
                    worker.reader = False
                    if worker in self._workers:
                        self._selector.register(conn, selectors.EVENT_READ, ("message", worker))
            if job.future.done() or (end is not None and time.monotonic() >= end):
                return

    def _read_worker(self, worker: _Worker, job: _Job, end: float | None) -> None:
        """The reading loop of :meth:`_read_result`: until *job* is settled or leaves *worker*."""
        poller = select.poll()
        try:
            poller.register(worker.handle.conn.fileno(), select.POLLIN)
        except (OSError, ValueError):  # its pipe was closed: the supervisor settles the job
            return
        while True:
            # A closed pipe shows as POLLNVAL (readable here); the checks under the lock sort it out.
            # No spinning for a result not due yet: on a busy machine it takes CPU from the workers.
            spin_end = time.perf_counter() + (_SPIN if self._may_end_within(job, _SPIN) else 0.0)
            readable = False
            while not readable and time.perf_counter() < spin_end:
                os.sched_yield()  # on a busy machine, let the worker we wait for run
                readable = bool(poller.poll(0))
            if not readable:
                left = _READ_SLICE if end is None else min(_READ_SLICE, end - time.monotonic())
                readable = left > 0 and bool(poller.poll(left * 1000))
            with self._lock:
                settled = self._drain(worker) if readable else []
                leave = worker.hung_up or worker not in self._workers or job.worker is not worker
                wake = bool(settled) and self._hand_over_sooner()
            if wake:
                self._wake()
            self._settle(settled)
            if leave or job.future.done() or (end is not None and time.monotonic() >= end):
                return

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send_bytes(b"")

    # -- the supervisor (all methods below run on its thread, under self._lock unless noted) --

    def _can_queue(self, worker: _Worker, job: _Job, *, hand_over: bool = False) -> bool:
        """Whether *worker* may take *job* now (``hand_over``: behind a job about to end, see _hand_over)."""
        queued = len(worker.jobs)
        if not worker.ready:
            return False
        if queued:
            if job.timeout is not None:
                return False  # its clock must start when it starts: only an idle worker takes it
            if not (hand_over or self._may_wait_behind(worker, job)):
                return False
        return self._max_tasks is None or worker.jobs_done + queued < self._max_tasks

    def _may_wait_behind(self, worker: _Worker, job: _Job) -> bool:
        """Whether *job* may wait in *worker*'s pipe behind the jobs already there (see _PIPELINE)."""
        short = self._short
        return (len(worker.jobs) < _PIPELINE and job.profile in short
                and all(queued.profile in short for queued in worker.jobs))

    def _learn_duration(self, job: _Job, seconds: float) -> None:
        known = self._durations.get(job.profile)
        if known is None:
            average, deviation = seconds, seconds / 2  # one sample says little about the spread
        else:
            average, deviation = known
            deviation = 0.8 * deviation + 0.2 * abs(seconds - average)
            average = 0.8 * average + 0.2 * seconds
        self._durations[job.profile] = (average, deviation)
        if average < _SHORT_JOB:
            self._short.add(job.profile)
        else:
            self._short.discard(job.profile)

    def _may_end_within(self, job: _Job, seconds: float) -> bool:
        """Whether *job* may end within *seconds* from now, as far as run times learned so far tell."""
        known, started = self._durations.get(job.profile), job.started
        return known is None or started is None or started + known[0] - known[1] - time.monotonic() < seconds

    def _hand_over_at(self, worker: _Worker) -> float | None:
        """When to hand *worker* a queued job (monotonic), or None: not while it holds what it holds.

        Half the lead before it should have done every job it holds, if they are all
        of known, consistent, not short run time: a supervisor that wakes then finds
        at most the lead left even when the estimate of the start was a little early.
        With a job already handed over, that is the time to hand over the one after.
        """
        jobs = worker.jobs
        if not jobs or jobs[0].started is None:
            return None
        end = jobs[0].started
        for job in jobs:
            known = self._durations.get(job.profile)
            if known is None or job.profile in self._short or known[1] > known[0] / 4:
                return None
            end += known[0]
        return end - _HANDOVER_LEAD / 2

    def _hand_over_times(self) -> Iterator[tuple[_Worker, float]]:
        """Each worker that may take the first queued job behind its jobs, with when to hand it over."""
        for worker in self._workers:
            if not self._pending:
                return
            at = self._hand_over_at(worker)
            if at is not None and self._can_queue(worker, self._pending[0], hand_over=True):
                yield worker, at

    def _hand_over(self, now: float) -> float | None:
        """Give a queued job to each busy worker about to finish (see _HANDOVER_LEAD); seconds to the next."""
        nearest = None
        for worker, at in self._hand_over_times():
            if len(worker.jobs) == 1 and at - now <= _HANDOVER_LEAD / 2:
                self._start_next(worker)
            elif at > now:  # (past due with a job already handed over: the reply that ends the first comes first)
                nearest = at - now if nearest is None else min(nearest, at - now)
        return nearest if self._pending else None

    def _hand_over_sooner(self) -> bool:
        """Whether a hand-over is now due before the supervisor plans to wake (it must be woken)."""
        return any(at < self._supervisor_wakes_at for _, at in self._hand_over_times())

    def _worker_for(self, job: _Job) -> _Worker | None:
        """An idle worker, else the least loaded one whose pipe can hold *job* behind its jobs."""
        best = None
        for worker in self._workers:
            if self._can_queue(worker, job):
                if not worker.jobs:
                    return worker
                if best is None or len(worker.jobs) < len(best.jobs):
                    best = worker
        return best

    def _start(self, worker: _Worker, job: _Job) -> None:
        """Send *job* (already marked running) down *worker*'s pipe."""
        if job.timeout is not None:
            job.deadline = time.monotonic() + job.timeout
        job.worker = worker
        job.started = None if worker.jobs else time.monotonic()
        worker.jobs.append(job)
        with contextlib.suppress(OSError):  # it died: its sentinel fails the job as crashed
            worker.handle.conn.send_bytes(job.frame)

    def _fill(self, worker: _Worker) -> None:
        """Hand queued jobs, in order, to *worker* while it can take them."""
        while self._pending and self._can_queue(worker, self._pending[0]):
            self._start_next(worker)

    def _start_next(self, worker: _Worker) -> None:
        """Send the first queued job to *worker*, unless its caller cancelled it meanwhile (then drop it)."""
        job = self._pending.popleft()
        if job.running or job.future.set_running_or_notify_cancel():  # False: the caller cancelled it
            job.running = True
            self._start(worker, job)

    def _fill_all(self) -> None:
        for worker in self._workers:
            self._fill(worker)

    def _drain_pending(self) -> list[_Job]:
        jobs = list(self._pending)
        self._pending.clear()
        return jobs

    def _spawn(self) -> _Worker:
        worker = _Worker(self._backend.start(self._initializer, self._initargs))
        self._selector.register(worker.handle.conn, selectors.EVENT_READ, ("message", worker))
        self._selector.register(worker.handle.sentinel, selectors.EVENT_READ, ("death", worker))
        return worker

    def _forget(self, worker: _Worker) -> None:
        """Stop watching *worker* and close the pool's end of its pipe (which a live worker reads as EOF)."""
        for watched in (worker.handle.conn, worker.handle.sentinel):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(watched)
        with contextlib.suppress(OSError):
            worker.handle.conn.close()

    def _replace(self, worker: _Worker) -> None:
        """Drop a finished or dead worker and, unless shutting down, start its successor."""
        self._forget(worker)
        index = self._workers.index(worker)
        if self._shutdown or self._broken is not None:
            del self._workers[index]
        else:
            self._workers[index] = self._spawn()

    def _fail_all(self, reason: str) -> list[tuple[Future, BaseException]]:
        self._broken = reason
        self._all_ready.set()  # wakes wait_until_ready, which raises the reason
        return [(job.future, Error(reason)) for job in self._drain_pending()
                if job.running or job.future.set_running_or_notify_cancel()]

    def _on_death(self, worker: _Worker) -> list[tuple[Future, BaseException]]:
        worker.handle.join()
        cause = worker.handle.death_cause()
        settled: list[tuple[Future, BaseException]] = []
        jobs, worker.jobs = worker.jobs, collections.deque()
        if jobs:
            job = jobs.popleft()
            self._pending.extendleft(reversed(jobs))  # never started: another worker runs them
            error = WorkerCrashed(f"Worker {worker.handle.label} died with {cause} while running {job.target}; "
                                  "the job was not completed and the worker was replaced")
            error.exitcode = worker.handle.exitcode  # type: ignore[attr-defined]
            settled.append((job.future, error))
        if not worker.ready and self._broken is None and worker.handle.exitcode == _NO_MAIN_GUARD_EXIT:
            main = getattr(sys.modules.get("__main__"), "__file__", "the main script")
            settled += self._fail_all(
                f"WorkerPool is broken: its worker processes start by importing {main}, and that creates a "
                "WorkerPool again. Put the code that creates the pool (and the rest of the script's work) under "
                "`if __name__ == \"__main__\":`, as for ProcessPoolExecutor")
        if not worker.ready and self._broken is None:
            self._start_failures += 1
            if self._start_failures >= _MAX_START_FAILURES:
                settled += self._fail_all(f"WorkerPool is broken: {self._start_failures} workers in a row died "
                                          f"before they were ready (last: {cause})")
        self._replace(worker)
        worker.handle.release()
        self._fill_all()
        return settled

    def _on_message(self, worker: _Worker, message: tuple) -> list[tuple[Future, Any]]:
        tag = message[0]
        if tag == "log":
            record = logging.makeLogRecord(message[1])
            target = logging.getLogger(record.name)
            if target.isEnabledFor(record.levelno):
                target.handle(record)
            return []
        if tag == "ready":
            worker.ready, self._start_failures = True, 0
            if all(w.ready for w in self._workers):
                self._all_ready.set()
            self._fill(worker)
            return []
        if tag == "call":
            self._calls.append((worker, message))  # answered by _settle, outside the lock
            return []
        if tag == "init_error":
            worker.ready = True  # it started, the initializer failed: not a start crash
            return self._fail_all(f"WorkerPool is broken: the initializer failed in a worker:\n{message[1]}")
        job = worker.jobs.popleft() if worker.jobs else None
        worker.jobs_done += 1
        if worker.jobs:
            worker.jobs[0].started = time.monotonic()  # the worker went on to it right after this reply
        settled: list[tuple[Future, Any]] = []
        # Replies come in job order; None is a job frame the worker could not decode (see _worker.serve).
        if job is not None and message[1] in (job.id, None):
            *_, job.future.hook_metadata, seconds = message
            self._learn_duration(job, seconds)
            outcome = message[2] if tag == "ok" else _rebuild_error(job.target, *message[2:6])
            settled.append((job.future, outcome))
        if self._max_tasks is not None and worker.jobs_done >= self._max_tasks:
            with contextlib.suppress(OSError):
                worker.handle.conn.send_bytes(_STOP)
            self._replace(worker)
            self._retiring.append(worker.handle)
            self._selector.register(worker.handle.sentinel, selectors.EVENT_READ, ("retired", worker.handle))
        else:
            self._fill(worker)
        return settled

    def _expire(self, now: float) -> tuple[list[tuple[Future, BaseException]], float | None]:
        settled, nearest = [], None
        for worker in list(self._workers):
            job = worker.jobs[0] if worker.jobs else None
            if job is None or job.deadline is None:
                continue
            if now < job.deadline:
                nearest = job.deadline - now if nearest is None else min(nearest, job.deadline - now)
                continue
            worker.jobs.popleft()
            self._pending.extendleft(reversed(worker.jobs))  # queued behind it, never started
            worker.jobs.clear()
            handle = worker.handle
            if self._backend.can_kill:
                handle.kill()
                handle.join()
                fate = "was stopped and replaced"
            else:
                # A running interpreter or thread cannot be stopped: drop it (its next send fails
                # and its loop ends once the job returns) and join it at shutdown.
                self._abandoned.append(handle)
                fate = f"was abandoned (a running {self._backend.name} worker cannot be stopped) and replaced"
            settled.append((job.future, CancelledError(
                f"{job.target} was stopped; worker {handle.label} {fate}") if job.stopped else JobTimeout(
                f"{job.target} ran past its timeout of {job.timeout} s; worker {handle.label} {fate}")))
            self._replace(worker)
            if self._backend.can_kill:
                handle.release()
            self._fill_all()
        return settled, nearest

    def _settle(self, settled: list[tuple[Future, Any]]) -> None:
        # Outside the lock: done-callbacks may submit more work, and memory
        # subscriptions and models may run any code. *settled* is emptied as it goes, and
        # no name here holds a result once its future has it: a caller that drops the
        # result frees it (CPython issue 14406).
        settled.reverse()
        while settled:
            future, outcome = settled.pop()
            _close_endpoints(future)
            if not future.done():
                if isinstance(outcome, BaseException):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)
            del future, outcome
        while self._calls:
            try:
                worker, request = self._calls.popleft()
            except IndexError:  # another thread took the last one
                break
            self._answer_call(worker, request)

    # -- calls from jobs to parent objects (outside the lock) --------------------------------

    def _answer_call(self, worker: _Worker, request: tuple) -> None:
        _, request_id, endpoint_id, op, args = request
        with self._lock:
            job = worker.jobs[0] if worker.jobs and worker in self._workers else None
        endpoint = None if job is None else job.endpoints.get(endpoint_id)
        if endpoint is None:
            self._reply(worker, request_id, Error(f"{op}: the job that asked has ended"))
            return

        def still_waiting() -> bool:
            with self._lock:
                return worker in self._workers and bool(worker.jobs) and worker.jobs[0] is job

        def answer() -> None:
            try:
                outcome = endpoint.handle(op, args, still_waiting)
            except Exception as exc:
                outcome = exc
            self._reply(worker, request_id, outcome)

        if endpoint.blocks(op, args):  # a long call must not hold up the thread that reads results
            threading.Thread(target=answer, daemon=True, name=f"robotlab-pool-{op}").start()
        else:
            answer()

    def _reply(self, worker: _Worker, request_id: int, outcome: Any) -> None:
        # The payload is a frame of its own: one the worker cannot decode fails that call, not its loop.
        if isinstance(outcome, BaseException):
            try:
                frame = wire.encode(outcome, msgpack=False)
            except WireError:
                frame = None
            ok, payload = False, (frame, type(outcome).__qualname__, str(outcome))
        else:
            ok, payload = True, outcome
        try:
            body = wire.encode(payload, msgpack=False)
        except WireError as exc:
            ok, body = False, wire.encode((None, "WireError", str(exc)), msgpack=False)
        data = wire.encode(("reply", request_id, ok, body), msgpack=False)
        with self._lock:
            if worker in self._workers:
                with contextlib.suppress(OSError):  # it died meanwhile: its sentinel tells the supervisor
                    worker.handle.conn.send_bytes(data)

    def _supervise(self) -> None:
        try:
            while True:
                with self._lock:
                    now = time.monotonic()
                    settled, timeout = self._expire(now)
                    due = self._hand_over(now)
                    if due is not None and (timeout is None or due < timeout):
                        timeout = due
                    self._supervisor_wakes_at = math.inf if timeout is None else now + timeout
                    busy = self._pending or any(w.jobs for w in self._workers)
                    done = (self._shutdown or self._broken is not None) and not busy
                self._settle(settled)
                if done:
                    break
                events = self._selector.select(timeout)
                settled = []
                with self._lock:
                    # Messages first: a worker's last result may sit in its pipe when it dies.
                    for key, _ in sorted(events, key=lambda event: event[0].data is not None
                                         and event[0].data[0] != "message"):
                        if key.data is None:
                            while self._wake_r.poll():
                                self._wake_r.recv_bytes()
                            continue
                        what, subject = key.data
                        if what == "message":
                            settled += self._drain(subject)
                        elif what == "death" and subject in self._workers:
                            settled += self._drain(subject)
                            settled += self._on_death(subject)
                        elif what == "retired":
                            self._selector.unregister(key.fileobj)
                            subject.join()
                            subject.release()
                            self._retiring.remove(subject)
                self._settle(settled)
        except BaseException as exc:  # a supervisor bug must not leave futures hanging forever
            with self._lock:
                settled = self._fail_all(f"WorkerPool supervisor failed: {type(exc).__name__}: {exc}")
                settled += [(job.future, Error(self._broken)) for w in self._workers for job in w.jobs]
            self._settle(settled)
            raise
        finally:
            self._stop_workers()

    def _drain(self, worker: _Worker) -> list[tuple[Future, Any]]:
        """Handle every complete message waiting on *worker*'s pipe."""
        settled: list[tuple[Future, Any]] = []
        try:
            while worker in self._workers and worker.has_data():
                frame = worker.handle.conn.recv_bytes()
                try:
                    message = wire.decode(frame)
                except WireError as exc:  # fail the job, keep the pool
                    if not worker.jobs:
                        continue
                    job = worker.jobs[0]
                    error = WireError(f"the reply of {job.target} cannot be decoded here: {exc}")
                    message = ("err", job.id, wire.encode(error, msgpack=False), "robotlab.errors.WireError",
                               str(error), "", None, 0.0)
                settled += self._on_message(worker, message)
        except (EOFError, OSError):
            worker.hung_up = True  # it died: its sentinel is ready too
        return settled

    def _stop_workers(self) -> None:
        """Tell every worker to stop, give them two seconds, then kill; reap all (no zombies)."""
        with self._lock:
            workers, self._workers = self._workers, []
            handles = [w.handle for w in workers] + self._retiring + self._abandoned
            self._retiring, self._abandoned = [], []
        for worker in workers:
            with contextlib.suppress(OSError):
                worker.handle.conn.send_bytes(_STOP)
        deadline = time.monotonic() + 2
        for handle in handles:
            handle.join(max(0.0, deadline - time.monotonic()))
            if handle.is_alive() and self._backend.can_kill:
                handle.kill()
                handle.join()
        for worker in workers:
            self._forget(worker)
        for handle in handles:
            if handle.is_alive():  # an interpreter still inside a job; its thread is a daemon
                logger.warning("worker %s is still running a job at shutdown and was left to finish", handle.label)
            else:
                handle.release()
        self._selector.close()
        self._backend.close()
        for conn in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                conn.close()
        self._stopped.set()
        _live_pools.discard(self)


def _close_endpoints(future: Future) -> None:
    """The job ended: let its endpoints clean up (once), and drop the future's link to it.

    The job holds the future and the future held the job: without the cycle, a result is
    freed as soon as its caller drops the future.
    """
    job = getattr(future, "_job", None)
    if isinstance(future, _PoolFuture):
        future._job = None
    if job is not None and job.endpoints:
        endpoints, job.endpoints = list(job.endpoints.values()), {}
        for endpoint in endpoints:
            try:
                endpoint.close()
            except Exception:
                logger.exception("closing the %s endpoint of %s failed", type(endpoint).__name__, job.target)


def _refuse_unguarded_main() -> None:
    """Exit quietly, with a code the parent pool explains, if this process is a worker importing the main script.

    A worker process imports the parent's main script before its first job; without an
    ``if __name__ == "__main__":`` guard, that runs the script's pool creation again.
    multiprocessing would raise in each worker (a long traceback apiece, and the pool would
    only learn that workers die at start); exiting here lets the parent say why, once.
    ``_inheriting`` is how multiprocessing itself knows it is in that phase.
    """
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        os._exit(_NO_MAIN_GUARD_EXIT)


def _check_memory(memory: Any) -> None:
    if memory is not None and not isinstance(memory, Memory):
        raise ConfigurationError(f"memory must be a robotlab Memory (robotlab.create_memory()); "
                                 f"got {type(memory).__name__}")


def _make_backend(name: str, start_method: str | None, address: str | None = None,
                  resources: dict[str, float] | None = None) -> Any:
    if name != "ray" and (address is not None or resources is not None):
        raise ConfigurationError(f"address= and resources= apply to backend='ray' only; got backend={name!r}")
    if name == "process":
        return ProcessBackend(start_method)
    if start_method is not None:
        raise ConfigurationError(f"start_method applies to backend='process' only; got {start_method!r} "
                                 f"with backend={name!r}")
    if name == "subinterpreter":
        return SubinterpreterBackend()
    if name == "thread":
        return ThreadBackend()
    from robotlab.parallel.ray_backend import RayBackend  # "ray" (names are checked first): imports ray only now

    return RayBackend(address, resources)
