"""Turning a question into a vector for the semantic mode, and comparing two vectors.

An embedding is either a litellm embedding model name (``"text-embedding-3-small"``,
``"ollama/nomic-embed-text"``, ...; called through ``litellm.embedding``, with any
``embedding_options`` such as ``api_base``), or a callable ``text -> list[float]``,
sync or async (a local sentence-transformers model, say).

Example:
    >>> import asyncio
    >>> asyncio.run(embed(lambda text: [1.0, float(len(text))], "hi"))
    [1.0, 2.0]
    >>> round(cosine([1.0, 0.0], [1.0, 1.0]), 3)
    0.707
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.sync_bridge import in_thread

__all__ = ["Embedding", "cosine", "embed"]

Embedding = str | Callable[[str], Sequence[float] | Awaitable[Sequence[float]]]


async def embed(embedding: Embedding, text: str, options: Mapping[str, Any] | None = None) -> list[float]:
    """The vector of *text*; ``ConfigurationError`` when the embedding returns something else."""
    if isinstance(embedding, str):
        vector: Any = await in_thread(_litellm_embedding, embedding, text, dict(options or {}))
    else:
        vector = await in_thread(embedding, text) if not inspect.iscoroutinefunction(embedding) \
            else await embedding(text)
        if inspect.isawaitable(vector):
            vector = await vector
    if isinstance(vector, str | bytes) or not isinstance(vector, Sequence) or not vector or not all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in vector
    ):
        raise ConfigurationError(
            f"the semantic cache's embedding must return a non-empty list of numbers, got {vector!r:.80}"
        )
    return [float(x) for x in vector]


def _litellm_embedding(model: str, text: str, options: dict[str, Any]) -> Any:
    import litellm

    response = litellm.embedding(model=model, input=[text], **options)
    item = response.data[0]
    return item["embedding"] if isinstance(item, Mapping) else item.embedding


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0.0 when their lengths differ or one is all zeros)."""
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0
