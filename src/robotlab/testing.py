"""Test helpers for robotlab users: check that a tool can be shipped to worker pools.

Example (in a test module, for a tool defined in an importable module)::

    from robotlab.testing import assert_parallel_safe
    from myapp.tools import WordCount

    def test_word_count_is_parallel_safe():
        results = assert_parallel_safe(WordCount, {"text": "a b c"}, expected=3)
        assert set(results) >= {"process"}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from robotlab.errors import DependencyError, Error, RactorBoundaryError
from robotlab.tools import Tool

__all__ = ["assert_parallel_safe", "available_backends"]

_UNSET: Any = object()


def available_backends() -> list[str]:
    """The WorkerPool backends this interpreter can run: ``"process"``, plus ``"subinterpreter"`` on 3.13+.

    ``"thread"`` is left out: a thread worker shares this interpreter, so a tool passing there
    proves nothing about shipping it to another process or interpreter (pass it in *backends*
    to try it anyway).
    """
    from robotlab.parallel.subinterpreter_backend import load_interpreters

    backends = ["process"]
    try:
        load_interpreters()
    except DependencyError:
        return backends
    return [*backends, "subinterpreter"]


def assert_parallel_safe(
    tool: type[Tool],
    sample_args: Mapping[str, Any],
    *,
    expected: Any = _UNSET,
    backends: Sequence[str] | None = None,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Round-trip ``tool(sample_args)`` through a one-worker pool of each backend; return the results by backend.

    Raises ``AssertionError`` listing every reason the tool is not safe to ship:
    not marked ``parallel_safe = True``, not importable by workers, arguments or
    result that cannot cross, a failure in the worker, a module a
    subinterpreter refuses, or a result other than *expected* (compared after
    :func:`~robotlab.parallel.freeze_deep`, as it comes back from a worker).
    *backends* defaults to :func:`available_backends`.
    """
    from robotlab.parallel import WorkerPool, freeze_deep, import_path

    name = getattr(tool, "__qualname__", repr(tool))
    if not (isinstance(tool, type) and issubclass(tool, Tool)):
        raise AssertionError(f"{name} is not a robotlab Tool class")
    problems: list[str] = []
    if not tool.parallel_safe:
        problems.append(f"{name} is not marked parallel_safe = True: robots run it in-process")
    try:
        path = import_path(tool)
        freeze_deep(dict(sample_args), root="sample_args")
    except RactorBoundaryError as exc:
        raise AssertionError(f"{name} cannot be shipped to a worker: {exc}") from None
    want = _UNSET if expected is _UNSET else freeze_deep(expected, root="expected")
    results: dict[str, Any] = {}
    for backend in backends or available_backends():
        try:
            with WorkerPool(size=1, backend=backend) as pool:
                results[backend] = pool.run_tool(path, dict(sample_args), timeout=timeout, hooks=None)
        except (Error, TimeoutError) as exc:  # ToolError, WireError, DependencyError, JobTimeout, WorkerCrashed
            problems.append(f"backend={backend!r}: {type(exc).__name__}: {exc}")
            continue
        if want is not _UNSET and results[backend] != want:
            problems.append(f"backend={backend!r}: returned {results[backend]!r}, expected {want!r}")
    if problems:
        raise AssertionError(f"{path} is not parallel-safe:\n- " + "\n- ".join(problems))
    return results
