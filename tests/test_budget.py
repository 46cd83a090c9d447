"""Budget Ledger: reserve / reconcile / release semantics, messages, and concurrency guarantees."""

from __future__ import annotations

import threading
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robotlab.budget import DIMENSIONS, Ledger, Reservation
from robotlab.errors import BudgetExceeded, InferenceError
from tests.doc_blocks import python_blocks, run_block

# -- reserve ----------------------------------------------------------------------------------


def test_reserve_records_pending_and_reconcile_commits_actual():
    ledger = Ledger(token_budget=1000)
    r = ledger.reserve("tokens", 300)
    assert isinstance(r, Reservation)
    assert (r.dimension, r.amount, r.settled) == ("tokens", 300, False)
    assert ledger.pending("tokens") == 300
    assert ledger.committed("tokens") == 0
    assert ledger.remaining("tokens") == 700
    assert ledger.reconcile(r, 250) == 250
    assert r.settled
    assert ledger.pending("tokens") == 0
    assert ledger.committed("tokens") == 250
    assert ledger.remaining("tokens") == 750


def test_reserve_refuses_when_committed_plus_pending_plus_amount_exceeds_limit():
    ledger = Ledger(token_budget=1000)
    ledger.reconcile(ledger.reserve("tokens", 500), 700)
    ledger.reserve("tokens", 200)  # pending 200
    with pytest.raises(BudgetExceeded) as info:
        ledger.reserve("tokens", 300)
    assert str(info.value) == "budget exceeded for tokens: 1200 > 1000"
    # a refused reservation records nothing
    assert ledger.pending("tokens") == 200
    assert ledger.committed("tokens") == 700


def test_reserve_exactly_up_to_the_limit_is_allowed():
    ledger = Ledger(token_budget=100)
    ledger.reserve("tokens", 60)
    ledger.reserve("tokens", 40)
    assert ledger.remaining("tokens") == 0
    with pytest.raises(BudgetExceeded, match=r"^budget exceeded for tokens: 101 > 100$"):
        ledger.reserve("tokens", 1)
    ledger.reserve("tokens", 0)  # zero still fits (not strictly greater)


def test_cost_budget_message():
    ledger = Ledger(cost_budget=0.5)
    ledger.reconcile(ledger.reserve("cost", 0.1), 0.45)
    with pytest.raises(BudgetExceeded) as info:
        ledger.reserve("cost", 0.1)
    assert str(info.value) == "budget exceeded for cost: 0.55 > 0.5"


def test_unlimited_dimensions_never_raise_but_still_track():
    ledger = Ledger()
    r = ledger.reserve("tokens", 10**12)
    ledger.reserve("cost", 1e9)
    assert ledger.limit("tokens") is None and ledger.limit("cost") is None
    assert ledger.remaining("tokens") is None
    assert ledger.pending("tokens") == 10**12
    ledger.reconcile(r, 5)
    assert ledger.committed("tokens") == 5
    assert not ledger.over_budget("tokens")
    assert ledger.overspend_error() is None


def test_dimensions_are_independent():
    ledger = Ledger(token_budget=10, cost_budget=1.0)
    ledger.reconcile(ledger.reserve("tokens", 10), 10)
    ledger.reserve("cost", 1.0)  # tokens being exhausted does not block cost
    with pytest.raises(BudgetExceeded, match="for tokens"):
        ledger.reserve("tokens", 1)
    assert DIMENSIONS == ("tokens", "cost")


# -- reconcile / release -----------------------------------------------------------------------


def test_reconcile_may_overspend_and_overspend_error_reports_it():
    ledger = Ledger(token_budget=1000)
    r = ledger.reserve("tokens", 300)
    assert ledger.reconcile(r, 1200) == 1200  # reconcile itself never raises for overspend
    assert ledger.over_budget("tokens")
    err = ledger.overspend_error()
    assert isinstance(err, InferenceError)
    assert str(err) == "Token budget exceeded: 1200 tokens used, budget is 1000"
    with pytest.raises(BudgetExceeded, match=r"^budget exceeded for tokens: 1201 > 1000$"):
        ledger.reserve("tokens", 1)


def test_cost_overspend_message_uses_six_decimals():
    ledger = Ledger(cost_budget=0.5)
    ledger.reconcile(ledger.reserve("cost", 0.1), 0.5231)
    assert str(ledger.overspend_error()) == "Cost budget exceeded: $0.523100 used, budget is $0.500000"


def test_overspend_error_checks_tokens_first():
    ledger = Ledger(token_budget=10, cost_budget=0.01)
    ledger.reconcile(ledger.reserve("cost", 0), 0.02)
    assert str(ledger.overspend_error()).startswith("Cost budget exceeded")
    ledger.reconcile(ledger.reserve("tokens", 0), 11)
    assert str(ledger.overspend_error()) == "Token budget exceeded: 11 tokens used, budget is 10"


def test_exactly_at_limit_is_not_overspent():
    ledger = Ledger(token_budget=10)
    ledger.reconcile(ledger.reserve("tokens", 5), 10)
    assert not ledger.over_budget("tokens")
    assert ledger.overspend_error() is None


def test_release_drops_the_reservation_without_committing():
    ledger = Ledger(token_budget=100)
    r = ledger.reserve("tokens", 80)
    with pytest.raises(BudgetExceeded):
        ledger.reserve("tokens", 30)
    ledger.release(r)
    assert ledger.pending("tokens") == 0
    assert ledger.committed("tokens") == 0
    ledger.reserve("tokens", 30)


def test_reconciling_twice_is_an_error_and_release_after_settle_is_a_noop():
    ledger = Ledger(token_budget=100)
    r = ledger.reserve("tokens", 10)
    ledger.reconcile(r, 8)
    with pytest.raises(ValueError, match="already reconciled or released"):
        ledger.reconcile(r, 8)
    ledger.release(r)  # no-op: safe in a finally block
    assert ledger.committed("tokens") == 8
    r2 = ledger.reserve("tokens", 10)
    ledger.release(r2)
    with pytest.raises(ValueError, match="already reconciled or released"):
        ledger.reconcile(r2, 1)
    assert ledger.committed("tokens") == 8
    assert ledger.pending("tokens") == 0


def test_reservation_convenience_methods():
    ledger = Ledger(token_budget=100)
    r = ledger.reserve("tokens", 10)
    assert r.reconcile(12) == 12
    r2 = ledger.reserve("tokens", 5)
    r2.release()
    assert ledger.to_dict() == {
        "tokens": {"limit": 100, "committed": 12, "pending": 0},
        "cost": {"limit": None, "committed": 0.0, "pending": 0.0},
    }
    with pytest.raises(ValueError, match="not attached"):
        Reservation("tokens", 1).reconcile(1)


def test_reservation_from_another_ledger_is_refused():
    a, b = Ledger(), Ledger()
    r = a.reserve("tokens", 5)
    with pytest.raises(ValueError, match="another ledger"):
        b.reconcile(r, 5)
    with pytest.raises(ValueError, match="another ledger"):
        b.release(r)
    assert a.pending("tokens") == 5


# -- validation -----------------------------------------------------------------------------------


def test_unknown_dimension_is_a_value_error():
    ledger = Ledger()
    for call in (
        lambda: ledger.reserve("dollars", 1),
        lambda: ledger.committed("dollars"),
        lambda: ledger.pending("dollars"),
        lambda: ledger.remaining("dollars"),
        lambda: ledger.limit("dollars"),
        lambda: ledger.over_budget("dollars"),
    ):
        with pytest.raises(ValueError, match="unknown budget dimension 'dollars'"):
            call()


@pytest.mark.parametrize("bad", [-1, -0.01, float("nan"), float("inf")])
def test_negative_or_non_finite_amounts_are_value_errors(bad):
    ledger = Ledger(token_budget=10)
    with pytest.raises(ValueError):
        ledger.reserve("tokens", bad)
    r = ledger.reserve("tokens", 1)
    with pytest.raises(ValueError):
        ledger.reconcile(r, bad)
    assert not r.settled  # a refused reconcile leaves the reservation open
    ledger.reconcile(r, 1)


@pytest.mark.parametrize("bad", ["10", None, True])
def test_non_numeric_amounts_are_type_errors(bad):
    with pytest.raises(TypeError):
        Ledger().reserve("tokens", bad)


def test_invalid_limits_are_refused():
    with pytest.raises(ValueError):
        Ledger(token_budget=-1)
    with pytest.raises(TypeError):
        Ledger(cost_budget="0.5")


def test_other_numeric_types_are_accepted():
    ledger = Ledger(cost_budget=Decimal("1"))
    ledger.reserve("cost", Fraction(1, 2))
    ledger.reserve("cost", Decimal("0.5"))
    with pytest.raises(BudgetExceeded):
        ledger.reserve("cost", 0.01)


def test_tokens_stay_integers_and_cost_floats():
    ledger = Ledger(token_budget=100, cost_budget=1.0)
    ledger.reconcile(ledger.reserve("tokens", 3), 7)
    ledger.reconcile(ledger.reserve("cost", 0), 1)
    assert type(ledger.committed("tokens")) is int
    assert type(ledger.committed("cost")) is float
    ledger.reconcile(ledger.reserve("tokens", 0), 0.5)
    assert ledger.committed("tokens") == 7.5


# -- exact arithmetic -------------------------------------------------------------------------------


def test_cost_amounts_add_up_without_float_drift():
    # 0.1 + 0.1 + 0.1 > 0.3 in binary floats; the ledger adds the decimals you wrote.
    ledger = Ledger(cost_budget=0.3)
    for _ in range(3):
        ledger.reserve("cost", 0.1)
    with pytest.raises(BudgetExceeded, match=r"^budget exceeded for cost: 0.4 > 0.3$"):
        ledger.reserve("cost", 0.1)
    ledger = Ledger(cost_budget=1.0)
    for _ in range(10):
        ledger.reconcile(ledger.reserve("cost", 0.1), 0.1)
    assert ledger.committed("cost") == 1.0
    assert ledger.overspend_error() is None


# -- concurrency ------------------------------------------------------------------------------------


def _race(ledger: Ledger, dimension: str, estimate, threads_n: int) -> tuple[int, int]:
    barrier = threading.Barrier(threads_n)
    ok, refused = [], []
    lock = threading.Lock()

    def worker():
        barrier.wait()
        try:
            ledger.reserve(dimension, estimate)
        except BudgetExceeded:
            with lock:
                refused.append(1)
        else:
            with lock:
                ok.append(1)

    threads = [threading.Thread(target=worker) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(ok), len(refused)


@pytest.mark.parametrize(("k", "threads_n"), [(1, 16), (5, 32), (13, 50), (32, 32), (0, 8)])
def test_exactly_k_concurrent_reservations_succeed_for_tokens(k, threads_n):
    estimate = 250
    ledger = Ledger(token_budget=k * estimate)
    assert _race(ledger, "tokens", estimate, threads_n) == (k, threads_n - k)
    assert ledger.pending("tokens") == k * estimate
    assert ledger.remaining("tokens") == 0


@pytest.mark.parametrize("k", [3, 7, 10])
def test_exactly_k_concurrent_reservations_succeed_for_cost(k):
    estimate = 0.1  # a float that does not add up exactly in binary
    ledger = Ledger(cost_budget=round(k * estimate, 10))
    assert _race(ledger, "cost", estimate, 40) == (k, 40 - k)


def test_concurrent_reserve_reconcile_cycles_never_exceed_the_limit():
    """Threads loop reserve → reconcile(actual <= estimate); committed + pending never passes the limit."""
    limit, estimate = 10_000, 7
    ledger = Ledger(token_budget=limit)
    violations = []

    def worker(actual):
        while True:
            try:
                r = ledger.reserve("tokens", estimate)
            except BudgetExceeded:
                return
            snapshot = ledger.to_dict()["tokens"]
            if snapshot["committed"] + snapshot["pending"] > limit:
                violations.append(snapshot)
            ledger.reconcile(r, actual)

    threads = [threading.Thread(target=worker, args=(a,)) for a in (7, 5, 3, 1) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert violations == []
    assert ledger.pending("tokens") == 0
    assert ledger.committed("tokens") <= limit
    assert ledger.committed("tokens") > limit - estimate  # ran until no room for one more estimate
    assert ledger.overspend_error() is None


# -- properties ---------------------------------------------------------------------------------------

amounts = st.integers(min_value=0, max_value=500)
ops = st.lists(
    st.tuples(st.sampled_from(["reserve", "reconcile", "release"]), amounts, amounts),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(limit=st.integers(min_value=0, max_value=2000), steps=ops)
def test_reserve_never_lets_committed_plus_pending_exceed_the_limit(limit, steps):
    """Reconciling with actual <= estimate keeps committed + pending <= limit at every step."""
    ledger = Ledger(token_budget=limit)
    open_reservations: list[Reservation] = []
    for op, amount, actual in steps:
        if op == "reserve":
            before = ledger.to_dict()["tokens"]
            try:
                open_reservations.append(ledger.reserve("tokens", amount))
            except BudgetExceeded as exc:
                assert before["committed"] + before["pending"] + amount > limit
                assert str(exc) == (
                    f"budget exceeded for tokens: {before['committed'] + before['pending'] + amount} > {limit}"
                )
                assert ledger.to_dict()["tokens"] == before  # nothing recorded
        elif open_reservations:
            r = open_reservations.pop(0)
            if op == "reconcile":
                ledger.reconcile(r, min(actual, r.amount))
            else:
                ledger.release(r)
        state = ledger.to_dict()["tokens"]
        assert state["committed"] + state["pending"] <= limit
        assert state["pending"] == sum(r.amount for r in open_reservations)
        assert ledger.overspend_error() is None


@settings(max_examples=200, deadline=None)
@given(
    limit=st.integers(min_value=0, max_value=1000),
    spent=st.lists(st.integers(min_value=0, max_value=400), min_size=1, max_size=10),
    extra=st.integers(min_value=1, max_value=1000),
)
def test_reserve_after_exhaustion_always_raises(limit, spent, extra):
    """Once committed >= limit (actuals may overspend), any positive reservation is refused."""
    ledger = Ledger(token_budget=limit)
    for actual in spent:
        try:
            r = ledger.reserve("tokens", 0)
        except BudgetExceeded:
            break
        ledger.reconcile(r, actual)
    if ledger.committed("tokens") < limit:
        ledger.reconcile(ledger.reserve("tokens", 0), limit - ledger.committed("tokens"))
    with pytest.raises(BudgetExceeded):
        ledger.reserve("tokens", extra)
    assert (ledger.overspend_error() is not None) == (ledger.committed("tokens") > limit)


@settings(max_examples=200, deadline=None)
@given(
    estimates=st.lists(st.decimals(min_value=0, max_value=5, places=4), min_size=1, max_size=30),
    limit=st.decimals(min_value=0, max_value=20, places=4),
)
def test_cost_reservations_accept_exactly_what_fits(estimates, limit):
    """With decimal amounts, reserve succeeds iff the exact running sum stays <= limit."""
    ledger = Ledger(cost_budget=float(limit))
    total = Decimal(0)
    for e in estimates:
        fits = total + Decimal(repr(float(e))) <= Decimal(repr(float(limit)))
        try:
            ledger.reserve("cost", float(e))
        except BudgetExceeded:
            assert not fits
        else:
            assert fits
            total += Decimal(repr(float(e)))


@pytest.mark.parametrize("index", range(len(python_blocks("docs/budgets.md"))))
def test_docs_budgets_examples_run(index):
    run_block("docs/budgets.md", index)
