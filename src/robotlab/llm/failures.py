"""What a failed LLM call really was: one :class:`~robotlab.errors.InferenceError` saying so.

litellm labels failures with HTTP statuses even when no request was sent: a
missing API key arrives as ``InternalServerError`` (500), an unknown provider
as ``BadRequestError`` (400). Here the exception chain decides instead:

- an HTTP status counts only when a provider response carried it (an
  ``httpx.HTTPStatusError`` or an ``openai`` SDK status error in the chain);
  408, 429 and 5xx are transient (retryable), every other 4xx is not;
- without a response: a timeout or a connection failure is transient; a
  missing API key (``litellm.validate_environment``), an unknown provider and
  anything else are not, and the message carries no HTTP status.

Exceptions a model object other than litellm raises are classified by
:func:`model_failure`: timeouts and connection errors are transient.

Example:
    >>> err = model_failure("scripted", ConnectionError("reset by peer"))
    >>> str(err), err.retryable
    ("model 'scripted' failed: reset by peer", True)
    >>> model_failure("scripted", ValueError("bad reply")).retryable
    False
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from robotlab.errors import InferenceError

__all__ = ["litellm_failure", "model_failure", "transient_status"]

# Matched by class name, so httpx and openai never have to be imported here.
_TIMEOUT_CLASSES = frozenset({"TimeoutException", "APITimeoutError", "Timeout"})
_CONNECTION_CLASSES = frozenset({"TransportError", "NetworkError", "ConnectError", "APIConnectionError"})
_TRANSIENT_LITELLM = frozenset({"RateLimitError", "Timeout", "ServiceUnavailableError", "BadGatewayError"})
_UNKNOWN_PROVIDER = "LLM Provider NOT provided"
PROVIDERS_DOC = "https://docs.litellm.ai/docs/providers"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def transient_status(status: int | None) -> bool:
    """Whether an HTTP *status* may not recur on another attempt: 408, 429, 5xx."""
    return status is not None and (status in (408, 429) or status >= 500)


def response_status(exc: BaseException) -> int | None:
    """The HTTP status of a provider response in *exc*'s chain; None when no response came back."""
    for error in _chain(exc):
        names = _names(error)
        if "HTTPStatusError" in names:  # httpx: raised for a response that arrived
            status = getattr(getattr(error, "response", None), "status_code", None)
            if isinstance(status, int):
                return status
        if "APIStatusError" in names and type(error).__module__.split(".")[0] == "openai":
            status = getattr(error, "status_code", None)  # the openai SDK's, not litellm's relabelling
            if isinstance(status, int):
                return status
    return None


def _network_failure(exc: BaseException) -> str | None:
    """``"timed out"`` / ``"could not connect"`` when the chain holds such an error, else None."""
    for error in _chain(exc):
        names = _names(error)
        if isinstance(error, TimeoutError) or names & _TIMEOUT_CLASSES:
            return "timed out"
        if isinstance(error, ConnectionError) or (names & _CONNECTION_CLASSES and error is not exc):
            return "could not connect"
    return None


def _missing_keys(litellm: Any, model: str, options: dict[str, Any]) -> list[str]:
    if options.get("api_key"):
        return []
    try:
        found = litellm.validate_environment(model)
    except Exception:
        return []
    return list(found.get("missing_keys") or ()) if not found.get("keys_in_environment") else []


def _provider(litellm: Any, model: str) -> str:
    try:
        return str(litellm.get_llm_provider(model)[1])
    except Exception:
        return model.split("/", 1)[0]


def _root_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def litellm_failure(litellm: Any, model: str, options: dict[str, Any], exc: Exception) -> InferenceError:
    """The ``InferenceError`` for *exc*, raised by ``litellm.completion(model=model, **options)``."""
    provider_error = type(exc).__name__
    if _UNKNOWN_PROVIDER in str(exc):
        return InferenceError(
            f"unknown provider for model {model!r}: name it as 'provider/model', e.g. 'openai/gpt-4o-mini' "
            f"(see {PROVIDERS_DOC})", retryable=False, provider_error=provider_error)
    status = response_status(exc)
    if status is not None:
        hint = ""
        if status in (401, 403):
            missing = _missing_keys(litellm, model, options)
            hint = f" (is {' / '.join(missing)} set to a valid key?)" if missing else " (check the API key)"
        return InferenceError(f"LLM call to {model!r} failed (HTTP {status}): {_root_text(exc)}{hint}",
                              retryable=transient_status(status), status_code=status, provider_error=provider_error)
    network = _network_failure(exc)
    if network is not None:
        return InferenceError(f"LLM call to {model!r} {network}: {_root_text(exc)}", retryable=True,
                              provider_error=provider_error)
    missing = _missing_keys(litellm, model, options)
    if missing:
        return InferenceError(
            f"no API key for provider {_provider(litellm, model)!r} (model {model!r}): set {' and '.join(missing)}",
            retryable=False, provider_error=provider_error)
    # No response and no network failure: the call failed before (or while) being sent.
    return InferenceError(f"LLM call to {model!r} failed before a response came back: {_root_text(exc)}",
                          retryable=provider_error in _TRANSIENT_LITELLM, provider_error=provider_error)


def model_failure(model_name: str, exc: Exception) -> InferenceError:
    """The ``InferenceError`` for *exc*, raised by the ``complete`` of the model named *model_name*.

    Retryable when *exc* is (or was caused by) a timeout or a connection error.
    """
    return InferenceError(f"model {model_name!r} failed: {exc}", retryable=_network_failure(exc) is not None)
