"""The optional ``semantic_cache`` extension: LLM replies reused instead of calling the model again.

``install()`` registers a :class:`SemanticCache` as the ``semantic_cache``
extension; every ``Memory`` made afterwards (and so every robot built
afterwards) has it as ``memory.cache``, and robot runs consult it before each
LLM call. ``Memory(enable_cache=False)`` opts one memory out; ``uninstall()``
unregisters it. The storage is litellm's cache (in memory, or Redis with
``pip install 'robotlab[cache]'``).

Example:
    >>> import robotlab
    >>> from robotlab.llm import ScriptedModel
    >>> from robotlab import semantic_cache
    >>> cache = semantic_cache.install()
    >>> model = ScriptedModel(["Paris.", "never asked"])
    >>> robot = robotlab.build(name="geo", model=model)
    >>> first = robot.run("Capital of France?")
    >>> robot.clear_messages()
    >>> again = robot.run("Capital of  France?")
    >>> again.last_text_content, again.cache_hits, again.llm_calls, len(model.calls)
    ('Paris.', 1, 0, 1)
    >>> semantic_cache.uninstall()
"""

from __future__ import annotations

from typing import Any

from robotlab.extensions import extension, register_extension, unregister_extension
from robotlab.semantic_cache.cache import BACKENDS, CacheHit, CacheLookup, SemanticCache

__all__ = ["BACKENDS", "EXTENSION", "CacheHit", "CacheLookup", "SemanticCache", "install", "installed", "uninstall"]

EXTENSION = "semantic_cache"


def install(cache: SemanticCache | None = None, **options: Any) -> SemanticCache:
    """Register *cache* (or ``SemanticCache(**options)``) as the ``semantic_cache`` extension; returns it."""
    if cache is None:
        cache = SemanticCache(**options)
    elif options:
        from robotlab.errors import ConfigurationError

        raise ConfigurationError("install() takes a SemanticCache or its options, not both")
    register_extension(EXTENSION, cache)
    return cache


def installed() -> SemanticCache | None:
    """The installed cache, or ``None``.

    >>> installed() is None
    True
    """
    cache = extension(EXTENSION)
    return cache if isinstance(cache, SemanticCache) else None


def uninstall() -> None:
    """Unregister the cache; memories made afterwards have ``memory.cache is None``."""
    unregister_extension(EXTENSION)
