import pickle

import pytest

import robotlab
from robotlab import errors


def test_tree_matches_the_seed():
    e = errors
    assert issubclass(e.ConfigurationError, e.Error)
    assert issubclass(e.DependencyError, e.ConfigurationError)
    assert issubclass(e.ToolLoopError, e.InferenceError)
    for cls in (e.InferenceError, e.ToolNotFoundError, e.MCPError, e.BusError, e.RactorBoundaryError,
                e.ToolError, e.BudgetExceeded, e.AwaitTimeout, e.DelegationTimeout, e.HistoryError,
                e.KnowledgeError):
        assert issubclass(cls, e.Error)
    assert issubclass(e.Error, Exception)
    assert e.BoundaryError is e.RactorBoundaryError
    assert robotlab.ToolLoopError is e.ToolLoopError


def test_message_formats():
    assert str(errors.ToolLoopError.for_limit(10)) == (
        "Circuit breaker triggered: 11 tool rounds exceeded max_tool_rounds (10)"
    )
    assert str(errors.BudgetExceeded.for_dimension("tokens", 1200, 1000)) == "budget exceeded for tokens: 1200 > 1000"
    assert str(errors.InferenceError.token_budget(1200, 1000)) == (
        "Token budget exceeded: 1200 tokens used, budget is 1000"
    )
    assert str(errors.InferenceError.cost_budget(0.5231, 0.5)) == (
        "Cost budget exceeded: $0.523100 used, budget is $0.500000"
    )
    assert str(errors.AwaitTimeout.for_key("sentiment", 30)) == "Timeout waiting for 'sentiment' after 30 seconds"
    assert "pip install 'robotlab[ray]'" in str(errors.DependencyError.missing("backend='ray'", "robotlab[ray]"))


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (errors.InferenceError("x"), True),
        (errors.InferenceError("x", retryable=False), False),
        (errors.InferenceError("x", status_code=503), True),
        (errors.InferenceError.token_budget(1200, 1000), False),
        (errors.InferenceError.cost_budget(0.6, 0.5), False),
        (errors.ToolLoopError("x"), False),
        (errors.MCPError("x"), False),
        (errors.MCPError("x", retryable=True), True),
        (errors.ToolError("x"), False),
        (errors.ToolError("x", retryable=True), True),
        (errors.ConfigurationError("x"), False),
        (errors.DependencyError("x"), False),
        (errors.ToolNotFoundError("x"), False),
        (errors.RactorBoundaryError("x"), False),
        (errors.BusError("x"), False),
        (errors.BudgetExceeded("x"), False),
        (errors.AwaitTimeout("x"), False),
        (errors.DelegationTimeout("x"), False),
        (errors.WorkerCrashed("x"), True),
        (errors.JobTimeout("x"), False),
        (errors.WireError("x"), False),
        (ValueError("x"), False),
        (KeyboardInterrupt(), False),
    ],
)
def test_retryable_table(exc, expected):
    assert errors.retryable(exc) is expected


def test_retryable_classes_and_flag_survives_pickling():
    assert errors.InferenceError in errors.retryable_classes()
    back = pickle.loads(pickle.dumps(errors.ToolError("upstream", retryable=True)))
    assert back.retryable is True and str(back) == "upstream"
