"""The robotlab error tree, its message formats, and :func:`retryable`.

Every error robotlab raises is a :class:`Error`. The tree and the message
formats follow robot_lab's ``errors.md``::

    Error
    ├── ConfigurationError    (also a ValueError)
    │   └── DependencyError
    ├── InferenceError
    │   └── ToolLoopError
    ├── ToolNotFoundError
    ├── MCPError
    ├── BusError
    ├── RactorBoundaryError   (alias: BoundaryError; also a TypeError)
    ├── ToolError
    │   └── AskUserError
    ├── BudgetExceeded
    ├── AwaitTimeout
    ├── DelegationTimeout
    ├── RouterError
    │   └── RouterLoopError
    ├── HistoryError
    ├── KnowledgeError
    └── parallel layer: WorkerCrashed, JobFailed, JobTimeout (also a TimeoutError), WireError

This module imports nothing but the standard library: it is loaded inside
worker processes and subinterpreters.

Example:
    >>> from robotlab.errors import ToolLoopError, retryable
    >>> err = ToolLoopError.for_limit(10)
    >>> str(err)
    'Circuit breaker triggered: 11 tool rounds exceeded max_tool_rounds (10)'
    >>> retryable(err)
    False
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # typing only: this module imports nothing but the standard library at run time
    from robotlab.result import RobotResult

__all__ = [
    "AskUserError",
    "AwaitTimeout",
    "BoundaryError",
    "BudgetExceeded",
    "BusError",
    "ConfigurationError",
    "DelegationTimeout",
    "DependencyError",
    "Error",
    "HistoryError",
    "InferenceError",
    "JobFailed",
    "JobTimeout",
    "KnowledgeError",
    "MCPError",
    "OutputValidationError",
    "RactorBoundaryError",
    "RouterError",
    "RouterLoopError",
    "ToolError",
    "ToolLoopError",
    "ToolNotFoundError",
    "WireError",
    "WorkerCrashed",
    "retryable",
    "retryable_classes",
]


def _number(value: float) -> str:
    """Format a count of seconds or tokens the way a person writes it (30, 0.5)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class Error(Exception):
    """Base class of every robotlab error.

    ``partial_result``: when the error ended a robot run, the
    :class:`~robotlab.RobotResult` of what the run did before it failed (the
    conversation up to the failure, the tool calls made, the tokens and cost
    spent); else None. It crosses from a worker to the parent with the error.
    """

    partial_result: RobotResult | None = None


class ConfigurationError(Error, ValueError):
    """Configuration is invalid or missing a required value.

    A ``ValueError``, as the standard library raises for a bad argument
    (``ProcessPoolExecutor(max_workers=0)``), so ``except ValueError`` catches it.
    """


class DependencyError(ConfigurationError):
    """An optional dependency needed by the requested feature is not installed.

    The message always names the exact ``pip install`` command that fixes it.
    """

    @classmethod
    def missing(cls, feature: str, requirement: str) -> DependencyError:
        """Build the standard message for *feature* needing *requirement*.

        >>> str(DependencyError.missing("backend='ray'", "robotlab[ray]"))
        "backend='ray' requires robotlab[ray]. Install it with `pip install 'robotlab[ray]'`."
        """
        return cls(f"{feature} requires {requirement}. Install it with `pip install '{requirement}'`.")


class InferenceError(Error):
    """An LLM call failed (provider error, timeout, rate limit) or overspent a budget.

    ``retryable`` says whether another attempt may succeed. robotlab sets it
    from what really happened: True only for transient failures (timeouts,
    connection errors, HTTP 408, 429 and 5xx, rate limits); False for a missing
    API key, an unknown provider, any other HTTP 4xx, or a budget overspend.
    An ``InferenceError`` raised without the flag is retryable.

    ``status_code`` is the HTTP status the provider answered with, or None when
    no response came back (nothing was sent, or the connection failed);
    ``provider_error`` the litellm exception's class name, when there was one.

    >>> InferenceError("upstream 503", status_code=503).retryable
    True
    >>> InferenceError.token_budget(1200, 1000).retryable
    False
    """

    def __init__(self, *args: object, retryable: bool = True, status_code: int | None = None,
                 provider_error: str | None = None) -> None:
        super().__init__(*args)
        self.retryable = bool(retryable)
        self.status_code = status_code
        self.provider_error = provider_error

    @classmethod
    def token_budget(cls, used: int, budget: int) -> InferenceError:
        """A completed call pushed cumulative token usage over ``token_budget`` (not retryable)."""
        return cls(f"Token budget exceeded: {used} tokens used, budget is {budget}", retryable=False)

    @classmethod
    def cost_budget(cls, used: float, budget: float) -> InferenceError:
        """A completed call pushed cumulative cost over ``cost_budget`` (not retryable)."""
        return cls(f"Cost budget exceeded: ${used:.6f} used, budget is ${budget:.6f}", retryable=False)


class ToolLoopError(InferenceError):
    """The tool-call circuit breaker tripped: more tool rounds than ``max_tool_rounds``.

    The robot's conversation is left mid-loop; call ``robot.clear_messages()``
    before running it again.
    """

    def __init__(self, *args: object, **flags: object) -> None:
        super().__init__(*args, **{**flags, "retryable": False})  # type: ignore[arg-type]

    @classmethod
    def for_limit(cls, max_tool_rounds: int) -> ToolLoopError:
        """The breaker trips on round ``max_tool_rounds + 1`` (a model turn asking for tools is one round)."""
        return cls(
            f"Circuit breaker triggered: {max_tool_rounds + 1} tool rounds "
            f"exceeded max_tool_rounds ({max_tool_rounds})"
        )


class OutputValidationError(Error):
    """The model's final answer did not validate into the run's ``output_type``, after ``output_retries`` retries.

    ``problems`` lists pydantic's errors for the last answer; ``text`` is that answer's raw text.
    """

    def __init__(self, message: str, *, problems: list[str] | None = None, text: str | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems or [])
        self.text = text

    def __reduce__(self):  # keep the details (and partial_result) across pickling (worker -> parent)
        return (_rebuild_output_error, (str(self), self.problems, self.text), self.__dict__)


def _rebuild_output_error(message: str, problems: list[str], text: str | None) -> OutputValidationError:
    return OutputValidationError(message, problems=problems, text=text)


class ToolNotFoundError(Error):
    """A tool name was referenced that the ``ToolManifest`` does not know."""


class _FlaggedRetryable(Error):
    """An error that is retryable only when the raise site says so."""

    def __init__(self, *args: object, retryable: bool = False) -> None:
        super().__init__(*args)
        self.retryable = bool(retryable)

    def __reduce__(self):  # keep the flag (and partial_result) across pickling (worker -> parent)
        return (_rebuild_flagged, (type(self), self.args, self.retryable), self.__dict__)


def _rebuild_flagged(cls: type[_FlaggedRetryable], args: tuple, flag: bool) -> _FlaggedRetryable:
    return cls(*args, retryable=flag)


class MCPError(_FlaggedRetryable):
    """MCP server communication failed (connection refused, timeout, protocol error)."""


class ToolError(_FlaggedRetryable):
    """A tool failed. Raise it from ``execute``; ``retryable=True`` tells the model to try again.

    The worker pool raises it for a tool that failed in a worker; then
    ``remote_traceback`` holds the worker-side traceback text.
    """

    remote_traceback: str | None = None


class AskUserError(ToolError):
    """``ask_user`` got no usable answer: the input ended without a default, or answers were not valid choices."""


class BusError(Error):
    """Message-bus communication failed (no bus configured, unknown receiver)."""


class RactorBoundaryError(Error, TypeError):
    """A value cannot be made shareable to cross to a worker (live I/O, a lambda, mutable state).

    A ``TypeError``, as ``pickle`` raises for an object it cannot carry.
    """


BoundaryError = RactorBoundaryError


class BudgetExceeded(Error):
    """A token or cost budget was already exhausted before an LLM call was attempted."""

    @classmethod
    def for_dimension(cls, dimension: str, attempted: float, limit: float) -> BudgetExceeded:
        """``budget exceeded for <dimension>: <committed + amount> > <limit>``."""
        return cls(f"budget exceeded for {dimension}: {_number(attempted)} > {_number(limit)}")


class AwaitTimeout(Error):
    """A blocking ``Memory.get(..., wait=...)`` expired before the key was written."""

    @classmethod
    def for_key(cls, key: str, seconds: float) -> AwaitTimeout:
        return cls(f"Timeout waiting for {key!r} after {_number(seconds)} seconds")


class DelegationTimeout(Error):
    """``DelegationFuture.result(timeout=...)`` expired before the delegate finished."""


class RouterError(Error):
    """A network's router returned something that is not a robot of the network (or None to stop)."""


class RouterLoopError(RouterError):
    """A router network ran ``max_steps`` robots and its router still routed to another one.

    ``network_result`` is the :class:`~robotlab.NetworkResult` of the steps that ran.
    """

    network_result = None

    @classmethod
    def for_limit(cls, network: str, max_steps: int) -> RouterLoopError:
        """The message names the limit and the two ways out.

        >>> str(RouterLoopError.for_limit("support", 3))[:60]
        "Router loop: network 'support' ran max_steps (3) robots and "
        """
        return cls(
            f"Router loop: network {network!r} ran max_steps ({max_steps}) robots and its router routed "
            f"to another; return None from the router to stop, or raise the limit with "
            f"create_network(..., max_steps=N)"
        )


class HistoryError(Error):
    """A conversation history could not be stored or read back (a corrupt file or entry, a bad message)."""


class KnowledgeError(Error):
    """The durable knowledge store could not be read or written (a corrupt file, a bad entry)."""


class WorkerCrashed(Error):
    """The worker running a job died (signal, segfault, ``os._exit``) before answering.

    ``exitcode`` is the process exit code (negative: killed by signal ``-exitcode``).
    """

    exitcode: int | None = None


class JobFailed(Error):
    """A job ended with a ``BaseException`` that is not an ``Exception`` (``sys.exit()``, ``KeyboardInterrupt``).

    Raised in its place so that a job can never end the caller's program.
    ``type_name`` is the original exception's qualified type name.
    """

    def __init__(self, message: str, *, type_name: str = "") -> None:
        super().__init__(message)
        self.type_name = type_name  # in __dict__: pickling keeps it without a __reduce__


class JobTimeout(Error, TimeoutError):
    """A job ran past its timeout; its worker was stopped and replaced."""


class WireError(Error):
    """A frame on the wire was corrupt, truncated or of an unknown kind."""


def retryable(exc: BaseException) -> bool:
    """Whether another attempt at the failed operation is worth making.

    ``InferenceError`` is retryable when its ``retryable`` flag is set: robotlab
    sets it for transient failures only (timeouts, connection errors, HTTP 408,
    429, 5xx), never for a missing API key, an unknown provider, other HTTP 4xx
    or a budget overspend. ``ToolLoopError`` never is (a circuit breaker:
    retrying re-triggers it). ``MCPError`` and ``ToolError`` are retryable only
    when raised with ``retryable=True``. ``WorkerCrashed`` (robotlab's own) always: the worker
    was replaced, and what killed it (memory pressure, a lost node) is often
    transient. Everything else, non-robotlab errors included, never.

    >>> retryable(ToolError("upstream unavailable", retryable=True))
    True
    """
    if isinstance(exc, ToolLoopError):
        return False
    if isinstance(exc, InferenceError):
        return bool(getattr(exc, "retryable", True))
    if isinstance(exc, WorkerCrashed):
        return True
    if isinstance(exc, _FlaggedRetryable):
        return exc.retryable
    return False


def retryable_classes() -> tuple[type[Error], ...]:
    """The classes whose instances can be retryable, per the table above.

    ``InferenceError`` (when flagged, ``ToolLoopError`` never), ``MCPError`` /
    ``ToolError`` (when flagged) and ``WorkerCrashed`` (always). Use
    :func:`retryable` to classify one error.
    """
    return (InferenceError, MCPError, ToolError, WorkerCrashed)
