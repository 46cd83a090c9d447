"""Whether this interpreter runs the subinterpreter backend, for the benchmarks that add it as a contender.

Subinterpreter contenders run only on CPython 3.13+ (with ``robotlab[subinterpreters]`` on 3.13).
A benchmark that includes them publishes under ``NAME-pyXY`` (``fanout-py313.json``,
``docs/img/fanout-py313.svg``), so a run under 3.13 never overwrites the figures of a run
under the default interpreter, which publishes under ``NAME``.
"""

from __future__ import annotations

import sys


def subinterpreters_missing() -> str | None:
    """None if ``WorkerPool(backend="subinterpreter")`` can run here, else the DependencyError text."""
    from robotlab.errors import DependencyError
    from robotlab.parallel.subinterpreter_backend import load_interpreters

    try:
        load_interpreters()
    except DependencyError as exc:
        return str(exc)
    return None


def published_name(name: str, with_subinterpreters: bool) -> str:
    """*name*, suffixed with this interpreter's version when the subinterpreter contenders ran."""
    return f"{name}-py{sys.version_info.major}{sys.version_info.minor}" if with_subinterpreters else name


def announce(missing: str | None) -> None:
    """Say, before the figures, whether the subinterpreter contenders run in this benchmark."""
    if missing is None:
        print(f"subinterpreter backend: included (CPython {sys.version.split()[0]})")
    else:
        print(f"subinterpreter backend: NOT run on this interpreter: DependencyError: {missing}")
