"""What makes two LLM requests "the same": normalised messages, hashed into cache keys.

Two keys per request:

- the **exact key** hashes everything that shapes the answer: the model, the
  messages (each text with its whitespace collapsed; tool-call ids dropped, since
  providers mint new ones every call), the tool schemas, temperature, max_tokens,
  the response format and the provider options (secrets and timeouts aside);
- the **context key** hashes the same minus the last message, when that message
  is the user's text: semantically similar questions only share an answer when
  everything before them (system prompt, earlier turns, tools) is the same.

Example:
    >>> from robotlab.llm import LlmRequest
    >>> a = LlmRequest(messages=[{"role": "user", "content": "What is  Ruby?"}])
    >>> b = LlmRequest(messages=[{"role": "user", "content": " What is Ruby? "}])
    >>> exact_key("m", a) == exact_key("m", b), exact_key("m", a) == exact_key("other", a)
    (True, False)
    >>> question("m", a)[1]
    'What is Ruby?'

Standard library only.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from robotlab.llm.types import LlmRequest

__all__ = ["exact_key", "normalize_text", "question"]

# Options that change how a call is made, not what it answers.
_IGNORED_OPTIONS = frozenset({"api_key", "prices", "timeout", "num_retries", "metadata", "extra_headers"})


def normalize_text(text: str) -> str:
    """*text* with runs of whitespace collapsed to one space and the ends stripped."""
    return " ".join(text.split())


def _message(message: dict[str, Any]) -> dict[str, Any]:
    normal: dict[str, Any] = {"role": message.get("role")}
    content = message.get("content")
    normal["content"] = normalize_text(content) if isinstance(content, str) else content
    if message.get("name"):
        normal["name"] = message["name"]
    calls = message.get("tool_calls") or ()
    if calls:
        normal["tool_calls"] = [
            {"name": c.get("function", {}).get("name"), "arguments": c.get("function", {}).get("arguments")}
            for c in calls
        ]
    return normal


def _digest(model: str, request: LlmRequest, messages: list[dict[str, Any]], kind: str) -> str:
    document = {
        "kind": kind,
        "model": model,
        "messages": [_message(m) for m in messages],
        "tools": request.tools,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "response_format": request.response_format,
        "options": {k: v for k, v in sorted(request.options.items()) if k not in _IGNORED_OPTIONS},
    }
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(canonical.encode()).hexdigest()


def exact_key(model: str, request: LlmRequest) -> str:
    """The key of *request* to *model*: equal for requests that differ only in whitespace or tool-call ids."""
    return _digest(model, request, request.messages, "exact")


def question(model: str, request: LlmRequest) -> tuple[str, str] | None:
    """``(context key, question text)`` when the last message is the user's text, else ``None``."""
    if not request.messages:
        return None
    last = request.messages[-1]
    content = last.get("content")
    if last.get("role") != "user" or not isinstance(content, str) or not content.strip():
        return None
    return _digest(model, request, request.messages[:-1], "context"), normalize_text(content)
