"""LLM models: the contract, offline models for tests and demos, and litellm for real providers.

Example:
    >>> from robotlab.llm import ScriptedModel, call, resolve_model
    >>> model = ScriptedModel([call("lookup", order_id="42"), "Shipped."])
    >>> resolve_model(model) is model
    True
    >>> resolve_model("openai/gpt-4o-mini")
    LiteLLMModel('openai/gpt-4o-mini')

``import robotlab.llm`` does not import litellm.
"""

from __future__ import annotations

from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.llm.litellm_model import LiteLLMModel
from robotlab.llm.scripted import EchoModel, ScriptedModel, call, count_tokens
from robotlab.llm.types import LlmReply, LlmRequest, Model, ToolCall, Usage, assistant_message, tool_message

__all__ = [
    "EchoModel",
    "LiteLLMModel",
    "LlmReply",
    "LlmRequest",
    "Model",
    "ScriptedModel",
    "ToolCall",
    "Usage",
    "assistant_message",
    "call",
    "count_tokens",
    "resolve_model",
    "tool_message",
]


def resolve_model(model: Any) -> Model:
    """A model object for *model*: a litellm model name, or anything with ``complete()``."""
    if isinstance(model, str):
        return LiteLLMModel(model)
    if callable(getattr(model, "complete", None)):
        return model
    raise ConfigurationError(
        f"model must be a litellm model name or an object with complete(request), got {type(model).__name__}"
    )
