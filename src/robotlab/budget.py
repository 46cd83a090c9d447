"""Budget Ledger: thread-safe reserve / reconcile of tokens and cost.

Protocol (what a robot does around each LLM call): ``reserve`` an estimate
before the call — ``BudgetExceeded`` refuses it outright when the budget
cannot cover it — then ``reconcile`` with the actual usage, and raise
``overspend_error()`` (an ``InferenceError``) if the completed call pushed
usage over the budget.

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
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from robotlab.errors import BudgetExceeded, InferenceError

__all__ = ["DIMENSIONS", "Ledger", "Reservation"]

DIMENSIONS = ("tokens", "cost")


@dataclass(eq=False)
class Reservation:
    dimension: str
    amount: float
    settled: bool = False


class Ledger:
    """Committed and pending amounts per dimension against optional limits."""

    def __init__(self, token_budget: int | None = None, cost_budget: float | None = None) -> None:
        self._limits = {"tokens": token_budget, "cost": cost_budget}
        self._committed = {"tokens": 0, "cost": 0.0}
        self._pending = {"tokens": 0, "cost": 0.0}
        self._lock = threading.Lock()

    @staticmethod
    def _check(dimension: str, amount: float) -> None:
        if dimension not in DIMENSIONS:
            raise ValueError(f"unknown budget dimension {dimension!r}; use 'tokens' or 'cost'")
        if amount < 0:
            raise ValueError(f"budget amounts cannot be negative, got {amount!r}")

    def limit(self, dimension: str) -> float | None:
        self._check(dimension, 0)
        return self._limits[dimension]

    def committed(self, dimension: str) -> float:
        self._check(dimension, 0)
        with self._lock:
            return self._committed[dimension]

    def pending(self, dimension: str) -> float:
        self._check(dimension, 0)
        with self._lock:
            return self._pending[dimension]

    def remaining(self, dimension: str) -> float | None:
        limit = self.limit(dimension)
        with self._lock:
            used = self._committed[dimension] + self._pending[dimension]
        return None if limit is None else max(0, limit - used)

    def reserve(self, dimension: str, amount: float) -> Reservation:
        """Hold *amount*; raises ``BudgetExceeded`` when committed + pending + amount > limit."""
        self._check(dimension, amount)
        with self._lock:
            limit = self._limits[dimension]
            attempted = self._committed[dimension] + self._pending[dimension] + amount
            if limit is not None and attempted > limit:
                raise BudgetExceeded.for_dimension(dimension, attempted, limit)
            self._pending[dimension] += amount
        return Reservation(dimension, amount)

    def reconcile(self, reservation: Reservation, actual: float) -> float:
        """Replace the reservation's estimate by *actual*; returns the new committed total."""
        self._check(reservation.dimension, actual)
        with self._lock:
            if reservation.settled:
                raise ValueError("this reservation was already reconciled or released")
            reservation.settled = True
            self._pending[reservation.dimension] -= reservation.amount
            self._committed[reservation.dimension] += actual
            return self._committed[reservation.dimension]

    def release(self, reservation: Reservation) -> None:
        """Drop a reservation without spending it (the call failed). Releasing twice is a no-op."""
        with self._lock:
            if not reservation.settled:
                reservation.settled = True
                self._pending[reservation.dimension] -= reservation.amount

    def over_budget(self, dimension: str) -> bool:
        limit = self.limit(dimension)
        return limit is not None and self.committed(dimension) > limit

    def overspend_error(self) -> InferenceError | None:
        """The post-call error when committed usage exceeds a budget (tokens checked first)."""
        if self.over_budget("tokens"):
            return InferenceError.token_budget(self.committed("tokens"), self._limits["tokens"])
        if self.over_budget("cost"):
            return InferenceError.cost_budget(self.committed("cost"), self._limits["cost"])
        return None
