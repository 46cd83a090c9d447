"""LiteLLMModel: real providers through litellm (imported on the first call, never at import)."""

from __future__ import annotations

import json
import os
from typing import Any

from robotlab.errors import InferenceError
from robotlab.llm.types import LlmReply, LlmRequest, ToolCall, Usage

__all__ = ["LiteLLMModel"]


_quieted = False


def _litellm() -> Any:
    """litellm; the first time, with its stdout banners off ("Give Feedback / Get Help", "Provider List").

    A failed call raises an InferenceError that says what happened, so the banners
    only add noise to a program's output. Set ``litellm.suppress_debug_info = False``
    after robotlab's first call to have them back.
    """
    global _quieted
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map
    import litellm

    if not _quieted:
        litellm.suppress_debug_info = True
        _quieted = True
    return litellm


class LiteLLMModel:
    """A model reached through ``litellm.completion``.

    Failures become :class:`~robotlab.errors.InferenceError` saying what really
    happened (see :mod:`robotlab.llm.failures`): retryable only when transient,
    ``status_code`` only when a provider response carried one, and
    ``provider_error`` the litellm class name.
    Cost is litellm's response cost; for models it has no price for it is 0.0,
    unless ``prices=(input_per_token, output_per_token)`` is given.

    >>> model = LiteLLMModel("openai/gpt-4o-mini", mock_response="hi")
    >>> model.complete(LlmRequest(messages=[{"role": "user", "content": "x"}])).text  # doctest: +SKIP
    'hi'
    """

    def __init__(self, model: str, *, prices: tuple[float, float] | None = None, **options: Any) -> None:
        self.name = model
        self.prices = prices
        self.options = options

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.name!r})"

    def context_window(self) -> int | None:
        try:
            info = _litellm().get_model_info(self.name)
        except Exception:
            return None
        return info.get("max_input_tokens") or info.get("max_tokens")

    def supports_response_schema(self) -> bool:
        """Whether litellm knows this model to take a ``json_schema`` response_format (``output_mode="auto"``)."""
        try:
            return bool(_litellm().supports_response_schema(model=self.name))
        except Exception:  # unknown model or provider: the final_result tool works everywhere
            return False

    def complete(self, request: LlmRequest) -> LlmReply:
        litellm = _litellm()
        kwargs, prices = self._kwargs(request)
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:
            raise self._failure(exc, kwargs) from exc
        return self._reply(litellm, response, prices)

    async def acomplete(self, request: LlmRequest, on_delta: Any = None) -> LlmReply:
        """``litellm.acompletion``; with *on_delta*, ``stream=True`` and a delta per chunk.

        The streamed chunks are assembled with ``litellm.stream_chunk_builder``,
        so the reply (tool calls, usage, cost) is the one a non-streamed call gives.
        """
        litellm = _litellm()
        kwargs, prices = self._kwargs(request)
        try:
            if on_delta is None:
                response = await litellm.acompletion(**kwargs)
            else:
                response = await self._stream(litellm, kwargs, on_delta)
        except Exception as exc:
            raise self._failure(exc, kwargs) from exc
        return self._reply(litellm, response, prices)

    async def _stream(self, litellm: Any, kwargs: dict[str, Any], on_delta: Any) -> Any:
        stream = await litellm.acompletion(**kwargs, stream=True, stream_options={"include_usage": True})
        chunks = []
        async for chunk in stream:
            chunks.append(chunk)
            delta = chunk.choices[0].delta if chunk.choices else None
            if delta is None:
                continue
            if delta.content:
                on_delta("text", {"text": delta.content})
            for part in getattr(delta, "tool_calls", None) or ():
                function = part.function
                on_delta("tool_call", {"index": part.index, "id": part.id,
                                       "name": getattr(function, "name", None),
                                       "arguments": getattr(function, "arguments", None) or ""})
        return litellm.stream_chunk_builder(chunks, messages=kwargs["messages"])

    def _kwargs(self, request: LlmRequest) -> tuple[dict[str, Any], tuple[float, float] | None]:
        options = {**self.options, **request.options}
        prices = options.pop("prices", None) or self.prices
        kwargs: dict[str, Any] = {"model": self.name, "messages": request.messages, **options}
        if request.tools:
            kwargs["tools"] = request.tools
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        if request.response_format is not None:
            kwargs["response_format"] = request.response_format
        return kwargs, prices

    def _failure(self, exc: Exception, kwargs: dict[str, Any]) -> InferenceError:
        from robotlab.llm.failures import litellm_failure

        return litellm_failure(_litellm(), self.name, kwargs, exc)

    def _reply(self, litellm: Any, response: Any, prices: tuple[float, float] | None) -> LlmReply:
        message = response.choices[0].message
        calls = []
        for raw in getattr(message, "tool_calls", None) or ():
            arguments = raw.function.arguments or "{}"
            try:
                parsed = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
            except json.JSONDecodeError:
                parsed = {"_unparsed_arguments": arguments}  # the tool's validation reports it to the model
            calls.append(ToolCall(id=raw.id or f"call_{len(calls)}", name=raw.function.name, arguments=parsed))
        usage_obj = getattr(response, "usage", None)
        usage = Usage(
            int(getattr(usage_obj, "prompt_tokens", 0) or 0), int(getattr(usage_obj, "completion_tokens", 0) or 0)
        )
        known = True
        if prices:
            cost = usage.prompt_tokens * prices[0] + usage.completion_tokens * prices[1]
        else:
            try:
                cost = float(litellm.completion_cost(completion_response=response) or 0.0)
            except Exception:  # litellm raises for models it has no price for
                cost, known = 0.0, False
        return LlmReply(message.content, calls, usage, cost, getattr(response, "model", self.name), response, known)
