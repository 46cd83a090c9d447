"""Budget Ledger: thread-safe reserve / reconcile of tokens and cost.

Protocol (what a robot does around each LLM call): ``reserve`` an estimate
before the call — ``BudgetExceeded`` refuses it outright when the budget
cannot cover it — then ``reconcile`` with the actual usage (or ``release``
if the call failed), and raise ``overspend_error()`` (an ``InferenceError``)
if the completed call pushed usage over the budget.

Example:
    >>> ledger = Ledger(token_budget=1000)
    >>> r = ledger.reserve("tokens", 300)
    >>> ledger.reconcile(r, 1200)
    1200
    >>> str(ledger.overspend_error())
    'Token budget exceeded: 1200 tokens used, budget is 1000'
    >>> ledger.reserve("tokens", 1)
    Traceback (most recent call last):
    ...
    robotlab.errors.BudgetExceeded: budget exceeded for tokens: 1201 > 1000

Amounts are added up exactly (as decimals of the numbers you pass), so ten
reservations of ``0.1`` fit a cost budget of ``1.0`` — no float drift.

Standard library only.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass, field
from decimal import Decimal
from numbers import Real
from typing import Any

from robotlab.errors import BudgetExceeded, InferenceError

__all__ = ["DIMENSIONS", "Ledger", "Reservation", "warn_unknown_cost"]

logger = logging.getLogger("robotlab.budget")

#: The budget dimensions a ledger tracks.
DIMENSIONS = ("tokens", "cost")

_ZERO = Decimal(0)


def _check_dimension(dimension: str) -> None:
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown budget dimension {dimension!r}; use 'tokens' or 'cost'")


def _exact(value: Any, what: str = "budget amount") -> Decimal:
    """*value* as an exact ``Decimal`` of its shortest repr (0.1 -> Decimal('0.1'))."""
    if isinstance(value, bool) or not isinstance(value, (Real, Decimal)):
        raise TypeError(f"{what} must be a number, got {type(value).__name__}")
    if isinstance(value, Decimal):
        exact = value
    elif isinstance(value, int):
        exact = Decimal(value)
    else:
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"{what} must be finite, got {value!r}")
        exact = Decimal(repr(value))
    if not exact.is_finite():
        raise ValueError(f"{what} must be finite, got {value!r}")
    if exact < 0:
        raise ValueError(f"{what} cannot be negative, got {value!r}")
    return exact


def _out(dimension: str, value: Decimal) -> int | float:
    """Tokens come back as ``int`` when whole; cost always as ``float``."""
    if dimension == "tokens" and value == value.to_integral_value():
        return int(value)
    return float(value)


@dataclass(eq=False)
class Reservation:
    """A pending hold on a ledger. Settle it once: ``reconcile(actual)`` or ``release()``."""

    dimension: str
    amount: int | float
    settled: bool = False
    ledger: Ledger | None = field(default=None, repr=False)
    _exact: Decimal = field(default=_ZERO, repr=False)

    def reconcile(self, actual: int | float) -> int | float:
        """``ledger.reconcile(self, actual)``."""
        return self._owner().reconcile(self, actual)

    def release(self) -> None:
        """``ledger.release(self)``."""
        self._owner().release(self)

    def _owner(self) -> Ledger:
        if self.ledger is None:
            raise ValueError("this reservation is not attached to a ledger")
        return self.ledger


class Ledger:
    """Committed and pending amounts per dimension against optional limits.

    Args:
        token_budget: the most tokens all reconciled calls may use (``None``: unlimited).
        cost_budget: the most US dollars all reconciled calls may cost (``None``: unlimited).

    Every method is thread-safe; ``reserve`` checks and records under one lock,
    so concurrent reservations can never jointly exceed a limit.
    """

    def __init__(self, token_budget: int | float | None = None, cost_budget: float | None = None) -> None:
        self._limits: dict[str, Decimal | None] = {
            "tokens": None if token_budget is None else _exact(token_budget, "token_budget"),
            "cost": None if cost_budget is None else _exact(cost_budget, "cost_budget"),
        }
        self._raw_limits: dict[str, int | float | None] = {"tokens": token_budget, "cost": cost_budget}
        self._committed = {"tokens": _ZERO, "cost": _ZERO}
        self._pending = {"tokens": _ZERO, "cost": _ZERO}
        self._lock = threading.Lock()

    # -- queries ----------------------------------------------------------------------

    def limit(self, dimension: str) -> int | float | None:
        """The configured limit, as given (``None``: unlimited)."""
        _check_dimension(dimension)
        return self._raw_limits[dimension]

    def committed(self, dimension: str) -> int | float:
        """The sum of reconciled actual amounts."""
        _check_dimension(dimension)
        with self._lock:
            return _out(dimension, self._committed[dimension])

    def pending(self, dimension: str) -> int | float:
        """The sum of open reservations' estimates."""
        _check_dimension(dimension)
        with self._lock:
            return _out(dimension, self._pending[dimension])

    def remaining(self, dimension: str) -> int | float | None:
        """``limit - committed - pending``, never below 0 (``None``: unlimited)."""
        _check_dimension(dimension)
        limit = self._limits[dimension]
        if limit is None:
            return None
        with self._lock:
            left = limit - self._committed[dimension] - self._pending[dimension]
        return _out(dimension, max(_ZERO, left))

    def over_budget(self, dimension: str) -> bool:
        """Whether committed usage is strictly above the limit."""
        _check_dimension(dimension)
        limit = self._limits[dimension]
        with self._lock:
            return limit is not None and self._committed[dimension] > limit

    def overspend_error(self) -> InferenceError | None:
        """The post-call error when committed usage exceeds a budget (tokens checked first), else ``None``."""
        with self._lock:
            for dimension, build in (("tokens", InferenceError.token_budget), ("cost", InferenceError.cost_budget)):
                limit = self._limits[dimension]
                if limit is not None and self._committed[dimension] > limit:
                    used = _out(dimension, self._committed[dimension])
                    return build(used, self._raw_limits[dimension])
        return None

    def to_dict(self) -> dict[str, dict[str, int | float | None]]:
        """``{"tokens": {"limit", "committed", "pending"}, "cost": {...}}``, one consistent snapshot."""
        with self._lock:
            return {
                d: {
                    "limit": self._raw_limits[d],
                    "committed": _out(d, self._committed[d]),
                    "pending": _out(d, self._pending[d]),
                }
                for d in DIMENSIONS
            }

    # -- reserve / reconcile / release ------------------------------------------------------------

    def reserve(self, dimension: str, amount: int | float) -> Reservation:
        """Hold *amount* as pending.

        Raises ``BudgetExceeded`` (``budget exceeded for <dimension>:
        <committed + pending + amount> > <limit>``) and records nothing when
        ``committed + pending + amount > limit``. An unlimited dimension never
        raises. Unknown dimensions and negative amounts raise ``ValueError``.
        """
        _check_dimension(dimension)
        exact = _exact(amount)
        with self._lock:
            limit = self._limits[dimension]
            attempted = self._committed[dimension] + self._pending[dimension] + exact
            if limit is not None and attempted > limit:
                raise BudgetExceeded.for_dimension(dimension, _out(dimension, attempted), self._raw_limits[dimension])
            self._pending[dimension] += exact
        return Reservation(dimension, amount, ledger=self, _exact=exact)

    def _settle(self, reservation: Reservation) -> None:
        """Mark *reservation* settled and drop its pending amount; caller holds the lock."""
        if reservation.ledger is not self:
            raise ValueError("this reservation belongs to another ledger")
        if reservation.settled:
            raise ValueError("this reservation was already reconciled or released")
        reservation.settled = True
        self._pending[reservation.dimension] -= reservation._exact

    def reconcile(self, reservation: Reservation, actual: int | float) -> int | float:
        """Replace the reservation's estimate by *actual* (pending -> committed).

        Returns the new committed total of that dimension. Never raises for
        overspending — check :meth:`overspend_error` afterwards. Reconciling a
        settled reservation, or one from another ledger, raises ``ValueError``.
        """
        exact = _exact(actual, "actual amount")
        with self._lock:
            self._settle(reservation)
            self._committed[reservation.dimension] += exact
            return _out(reservation.dimension, self._committed[reservation.dimension])

    def release(self, reservation: Reservation) -> None:
        """Drop a reservation without spending it (the call failed).

        Releasing an already settled reservation is a no-op, so ``release``
        is safe in a ``finally`` block after ``reconcile``.
        """
        with self._lock:
            if reservation.ledger is self and reservation.settled:
                return
            self._settle(reservation)

    def __repr__(self) -> str:
        return f"Ledger({self.to_dict()!r})"


def warn_unknown_cost(ledgers: list[Any], robot: str, model: str) -> bool:
    """Log a warning when a cost budget is set on *ledgers* but *model* has no price; returns whether it did.

    Such calls count as 0.0 against the budget, so it can never stop the run.
    A robot run calls this once, at its first reply whose ``cost_known`` is False.

    >>> warn_unknown_cost([Ledger(token_budget=10)], "r", "m")   # no cost budget: nothing to say
    False
    """
    limits = [limit for limit in (ledger.limit("cost") for ledger in ledgers) if limit is not None]
    if not limits:
        return False
    logger.warning("robot %r: model %r has no known price, so its calls count as 0.0 against cost_budget=%s "
                   "and the budget cannot stop this run; give prices=(input_per_token, output_per_token) "
                   "in the RunConfig or to the model", robot, model, min(limits))
    return True
