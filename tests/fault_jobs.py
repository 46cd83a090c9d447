"""Module-level jobs for the Executor-conformance and fault tests (tests/test_pool_faults.py).

Standard library only: subinterpreter workers import this module too.
"""

import enum
import functools
import sys
from dataclasses import dataclass
from typing import NamedTuple


class Color(enum.Enum):
    RED = 1


class CustomError(Exception):
    pass


def describe(value):
    """What arrived, in a form the test compares: a class or function comes back as itself."""
    return value


def is_subclass(cls, base):
    return issubclass(cls, base)


def call(fn, *args):
    return fn(*args)


def raise_it(cls, *args):
    raise cls(*args)


def exit_job(code=1):
    sys.exit(code)


def interrupt():
    raise KeyboardInterrupt


def generator_exit():
    raise GeneratorExit


def _exit_now(*args):
    sys.exit(1)


class ExitAtUnpickle:
    """Unpickling it calls sys.exit (CPython's test_deadlock has the same object)."""

    def __reduce__(self):
        return _exit_now, ()


class Interrupted(BaseException):
    """What a signal handler may raise (pytest-timeout's timeout, trio's Cancelled): not the data's doing."""


def interrupted():
    raise Interrupted


class ExitAtPickle:
    def __reduce__(self):
        sys.exit(1)


class ErrorAtPickle:
    def __reduce__(self):
        raise ValueError("cannot pickle this")


def return_exit_at_unpickle():
    return ExitAtUnpickle()


def return_exit_at_pickle():
    return ExitAtPickle()


def raise_exit_at_pickle():
    """The exception itself cannot be pickled: pickling it calls sys.exit."""
    raise _UnpicklableError("odd")


class _UnpicklableError(Exception):
    def __reduce__(self):
        sys.exit(1)


def deep_result(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def big(n):
    return bytearray(n)


class Payload:
    """A result with a weak-referenceable identity (CPython issue 14406's dummy object)."""

    def __init__(self, n):
        self.n = n


def payload(n):
    return Payload(n)


@dataclass(frozen=True)
class Scale:
    factor: int

    def times(self, value):
        return self.factor * value

    @classmethod
    def unit(cls, value):
        return cls(1).times(value)


def power(base, exponent=2):
    return base ** exponent


square_of_three = functools.partial(power, 3)


@dataclass(frozen=True)
class Point:
    x: object
    y: object


class Pair(NamedTuple):
    a: object
    b: object



@dataclass(frozen=True)
class OnlyHere:
    """Shareable, but its unpickling fails anywhere but the thread that pickled it: in every worker."""

    def __reduce__(self):
        import os
        import threading

        return _refuse_elsewhere, (os.getpid(), threading.get_ident())


def _refuse_elsewhere(pid, thread):
    import os
    import threading

    if (os.getpid(), threading.get_ident()) != (pid, thread):
        raise ImportError("OnlyHere cannot be rebuilt in a worker")
    return OnlyHere()
