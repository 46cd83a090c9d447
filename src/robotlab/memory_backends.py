"""The memory backend registry: what ``create_memory(backend=name)`` opens.

A backend is a factory, called as ``factory(data, enable_cache=..., session_id=..., **options)``,
that returns a :class:`~robotlab.memory.Memory` (usually a subclass), registered
under a name with the ``create_memory`` options it takes. As with
:func:`~robotlab.extensions.register_extension`, core asks the registry
instead of importing backends: a factory registered as an import path
(``"package.module:attribute"``) is imported only when a memory of that kind
is first asked for. The built-ins, registered that way below:

* ``"memory"`` (also ``backend=None``): :class:`~robotlab.memory.Memory`, in this process.
* ``"redis"``: :class:`~robotlab.redis_memory.RedisMemory` (the ``robotlab[redis]``
  extra), with the options ``url``, ``namespace`` and ``serializer``.

Example:
    >>> import robotlab
    >>> from robotlab.memory_backends import register_memory_backend, unregister_memory_backend
    >>> def labelled(data, *, enable_cache, session_id, label="none"):
    ...     memory = robotlab.Memory(data, enable_cache=enable_cache, session_id=session_id)
    ...     memory.set("label", label)
    ...     return memory
    >>> register_memory_backend("labelled", labelled, options=("label",))
    >>> robotlab.create_memory(backend="labelled", label="blue").get("label")
    'blue'
    >>> unregister_memory_backend("labelled")

Standard library only.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from robotlab.errors import ConfigurationError

__all__ = ["memory_backends", "open_memory", "register_memory_backend", "unregister_memory_backend"]

#: ``create_memory`` arguments that no backend may claim as its own option.
_COMMON = ("data", "enable_cache", "backend", "session_id")


@dataclass(frozen=True)
class _Backend:
    name: str
    factory: Callable[..., Any] | str
    options: tuple[str, ...]

    def resolve(self) -> Callable[..., Any]:
        if not isinstance(self.factory, str):
            return self.factory
        module, _, attribute = self.factory.partition(":")
        value: Any = importlib.import_module(module)
        for part in attribute.split("."):
            try:
                value = getattr(value, part)
            except AttributeError:
                raise ConfigurationError(
                    f"memory backend {self.name!r} is registered as {self.factory!r}, but {module} has no {attribute}"
                ) from None
        return value


_backends: dict[str, _Backend] = {}
_lock = threading.Lock()


def register_memory_backend(
    name: object, factory: Callable[..., Any] | str, *, options: Iterable[str] = ()
) -> None:
    """Make ``create_memory(backend=name, ...)`` return ``factory(data, enable_cache=..., session_id=..., **opts)``.

    *factory* is a callable or its import path ``"package.module:attribute"``
    (imported on first use). *options* are the extra ``create_memory``
    keyword arguments the backend takes; only those given are passed on.
    Names are normalised with ``str()``; registering a name again replaces it.
    """
    name = str(name)
    if not name:
        raise ConfigurationError("a memory backend needs a non-empty name")
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        if not module or not attribute:
            raise ConfigurationError(
                f"memory backend {name!r}: an import path must look like 'package.module:attribute', got {factory!r}"
            )
    elif not callable(factory):
        raise TypeError(f"memory backend {name!r}: factory must be callable or an import path, got {factory!r}")
    names = tuple(str(option) for option in options)
    taken = [option for option in names if option in _COMMON]
    if taken:
        raise ConfigurationError(f"memory backend {name!r}: option(s) {', '.join(taken)} belong to create_memory")
    with _lock:
        _backends[name] = _Backend(name, factory, names)


def unregister_memory_backend(name: object) -> None:
    """Forget backend *name*; unknown names are ignored. The built-in ``"memory"`` stays."""
    name = str(name)
    if name == "memory":
        raise ConfigurationError("the built-in 'memory' backend cannot be unregistered")
    with _lock:
        _backends.pop(name, None)


def memory_backends() -> list[str]:
    """Names of every registered backend, in registration order."""
    with _lock:
        return list(_backends)


def open_memory(
    backend: object, data: Mapping[str, Any] | None, *, enable_cache: bool, session_id: str | None,
    options: Mapping[str, Any],
) -> Any:
    """A new memory from backend *backend* (``None`` is ``"memory"``): ``create_memory``'s work.

    Raises ``ConfigurationError`` for an option no backend takes, an unknown
    backend (naming the registered ones), or an option of another backend.
    """
    with _lock:
        backends = dict(_backends)
    known = list(dict.fromkeys(option for entry in backends.values() for option in entry.options))
    unknown = [option for option in options if option not in known]
    if unknown:
        raise ConfigurationError(
            f"unknown create_memory option(s): {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(['backend', 'session_id', *known])}"
        )
    entry = backends.get("memory" if backend is None else str(backend))
    if entry is None:
        raise ConfigurationError(
            f"unknown memory backend {backend!r}; valid backends: {', '.join(repr(b) for b in backends)}"
        )
    foreign = [option for option in known if option in options and option not in entry.options]
    if foreign:
        owners = [other.name for other in backends.values() if set(foreign) & set(other.options)]
        raise ConfigurationError(
            f"create_memory option(s) {', '.join(foreign)} apply to "
            f"{' or '.join(f'backend={owner!r}' for owner in owners)} only"
        )
    chosen = {option: options[option] for option in entry.options if option in options}
    return entry.resolve()(data, enable_cache=enable_cache, session_id=session_id, **chosen)


register_memory_backend("memory", "robotlab.memory:Memory")
register_memory_backend("redis", "robotlab.redis_memory.backend:create_redis_memory",
                        options=("url", "namespace", "serializer"))
