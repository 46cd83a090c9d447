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

This module is the Executor facade: options, arguments and job frames. The
rest of the pool lives beside it, one concern per module: ``supervisor``
(the thread that owns the workers and the job queue), ``scheduling`` (which
worker takes which job, and when: pure), ``worker_set`` (workers' lifetimes),
``pool_protocol`` (the frames between pool and workers), ``caller_reads`` (a
waiting caller reads its own result) and ``pool_state`` (the records they share).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import math
import multiprocessing
import os
import sys
import time
import types
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
from typing import Any

from robotlab.errors import ConfigurationError, Error, RactorBoundaryError
from robotlab.hooks import Hook, current_hook_scope, global_hooks
from robotlab.memory import Memory
from robotlab.parallel import caller_reads, pool_protocol, shared_buffers, shipped_hooks
from robotlab.parallel.boundary import freeze_deep, import_path
from robotlab.parallel.endpoints import Endpoint, MemoryEndpoint
from robotlab.parallel.pool_state import Job, PoolFuture, close_endpoints
from robotlab.parallel.process_backend import ProcessBackend
from robotlab.parallel.subinterpreter_backend import SubinterpreterBackend
from robotlab.parallel.supervisor import Supervisor
from robotlab.parallel.thread_backend import ThreadBackend

__all__ = ["BACKENDS", "WorkerPool"]

BACKENDS = ("process", "thread", "subinterpreter", "ray")

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
        # Large buffers of jobs travel in shared memory (see shared_buffers) unless the workers may be elsewhere.
        self._shares_memory = self._backend.shares_memory and shared_buffers.supported()
        self._paths: dict[Any, str] = {}
        self._initializer = None if initializer is None else self.path_of(initializer)
        self._initargs = freeze_deep(tuple(initargs), root="initargs", main_importable=self._main_importable)
        self._memory = memory
        self._ids = itertools.count()
        self._supervisor = Supervisor(self._backend, size, max_tasks_per_child, self._initializer, self._initargs)
        self._read = functools.partial(caller_reads.read_result, self._supervisor)
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
        return self.submit_job("call", self.path_of(fn), (*fixed, *args), {**fixed_kwargs, **kwargs}, timeout,
                            endpoints=self._memory_endpoint(None))

    def submit_tool(self, tool: type | str, args: dict[str, Any] | None = None, *,
                    timeout: float | None = None, memory: Memory | None = None,
                    hooks: str | None = "inherit", errors: str = "raise") -> Future:
        """Run ``ToolClass().call(args)`` in a worker: a fresh instance, arguments validated, hooks fired.

        - ``memory``: the tool's ``self.memory`` (default: the pool's).
        - ``hooks="inherit"``: the ``tool_call`` hooks in effect here (the current
          hook scope of a run, else the global registry) are registered again in
          the worker by import path and fire there; what they record in
          ``ctx.metadata`` comes back as ``future.hook_metadata``; a hook class with a
          ``parent_endpoint()`` (the Narrator, tracing) reaches its half here. A hook class
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
        shipped, hook_ends = self._tool_call_hooks(hooks)
        return self.submit_job(kind, self.path_of(tool), (), dict(args or {}), timeout,
                               endpoints={**(self._memory_endpoint(memory) or {}), **hook_ends}, hooks=shipped)

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
        path = self.path_of(fn)
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
            futures = [self.submit_job("call", path, (*fixed, *call), fixed_kwargs, None, frozen=True,
                                    endpoints=self._memory_endpoint(None))
                       for call in zip(*columns, strict=False)]
        else:
            futures = [self.submit_job("batch", path, (fixed, fixed_kwargs, *(c[i:i + chunksize] for c in columns)),
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
        return future.cancel() or self._supervisor.stop(future)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting jobs; finish the queued ones (or cancel them) and stop the workers."""
        self._supervisor.shutdown(cancel_futures=cancel_futures)
        if wait:
            self._supervisor.stopped.wait()

    def terminate(self) -> None:
        """Stop now: cancel queued jobs, kill the workers, fail running jobs with ``CancelledError``.

        The pool does this itself when a ``with`` block exits on ``KeyboardInterrupt``
        and at interpreter exit.
        """
        self._supervisor.terminate()

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
        ready = self._supervisor.all_ready.wait(timeout)
        if self._supervisor.broken is not None:
            raise Error(self._supervisor.broken)
        return ready

    @property
    def worker_ids(self) -> list[int]:
        """PIDs of the current worker processes, or ids of the current worker interpreters or threads."""
        supervisor = self._supervisor
        with supervisor.lock:
            return [w.handle.ident for w in supervisor.worker_set.members]

    @property
    def is_shutdown(self) -> bool:
        """Whether :meth:`shutdown` or :meth:`terminate` was called: the pool takes no more jobs."""
        return self._supervisor.shut_down

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

    def path_of(self, fn: Any) -> str:
        """The import path workers load *fn* by (a function, class or tool); RactorBoundaryError if none."""
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

    def _tool_call_hooks(self, hooks: str | None) -> tuple[shipped_hooks.Description | None, dict[str, Endpoint]]:
        """The ``tool_call`` hooks in effect, as the import paths a job frame carries (see ``shipped_hooks``),
        and the parent endpoints those hooks keep here for their worker half."""
        if hooks is None:
            return None, {}
        if hooks != "inherit":
            raise ConfigurationError(f"hooks must be 'inherit' or None; got {hooks!r}")
        scope = current_hook_scope()
        registries, per_run = (scope.registries, scope.per_run_hooks) if scope is not None else ((global_hooks(),), ())
        return (self.describe_hooks(registries, per_run, ("tool_call",)),
                shipped_hooks.parent_endpoints(registries, per_run, ("tool_call",)))

    def describe_hooks(self, registries: Any, per_run: Any, families: Any) -> shipped_hooks.Description | None:
        """The hooks of *families* in *registries* and *per_run*, as workers of this pool can import them."""
        return shipped_hooks.describe(registries, per_run, families, self._hook_path)

    def _hook_path(self, cls: type[Hook]) -> str:
        try:
            return self.path_of(cls)
        except RactorBoundaryError as exc:
            raise RactorBoundaryError(f"Hook {cls.__module__}.{cls.__qualname__} cannot be registered in a worker: "
                                      f"{exc}. Define it at module level in an importable module, or run the tool "
                                      "in-process") from None

    def submit_job(self, kind: str, target: str, args: tuple, kwargs: dict, timeout: float | None, *,
                   frozen: bool = False, endpoints: dict[str, Endpoint] | None = None,
                   hooks: shipped_hooks.Description | None = None) -> Future:
        """Queue one job: what :meth:`submit`, :meth:`submit_tool` and robot-aware jobs (``robot_job``) build on.

        *kind*: ``"call"``, ``"batch"``, ``"tool"`` or ``"tool_text"`` (see ``_worker._run``);
        *target*: an import path; *frozen*: *args* are frozen already; *endpoints*: the parent
        objects the job may call, by name (see ``parent_calls``); *hooks*: from :meth:`describe_hooks`.
        """
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
        # On subinterpreters (interpreter_queues), bytes are lent rather than copied.
        outbox = shared_buffers.JobOutbox(self._backend.interpreter_queues) if self._shares_memory else None
        try:
            frame = pool_protocol.job_frame(job_id, kind, target, job_args, job_kwargs, endpoint_ids, hooks,
                                            outbox=outbox)
        except BaseException:
            if outbox is not None:
                outbox.release()
            raise
        if outbox is not None and not outbox.holds() and not endpoints:
            outbox = None  # nothing in shared memory, and no calls whose answers could put something there
        future = PoolFuture(self._read)
        future._job = Job(job_id, frame, future, target, timeout, profile=(kind, target),
                          endpoints={id(e): e for e in (endpoints or {}).values()}, outbox=outbox)
        if outbox is not None:
            # However the job ends (a result, an error, a timeout, a cancel, a dead worker), its segments go.
            future.add_done_callback(lambda _: outbox.release())
        try:
            self._supervisor.submit(future._job)
        except BaseException:
            close_endpoints(future)
            if outbox is not None:
                outbox.release()
            raise
        return future


def _refuse_unguarded_main() -> None:
    """Exit quietly, with a code the parent pool explains, if this process is a worker importing the main script.

    A worker process imports the parent's main script before its first job; without an
    ``if __name__ == "__main__":`` guard, that runs the script's pool creation again.
    multiprocessing would raise in each worker (a long traceback apiece, and the pool would
    only learn that workers die at start); exiting here lets the parent say why, once.
    ``_inheriting`` is how multiprocessing itself knows it is in that phase.
    """
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        os._exit(pool_protocol.NO_MAIN_GUARD_EXIT)


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
