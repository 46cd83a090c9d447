"""Hooks that travel to workers: described by import path in the parent, registered again in the worker.

``describe(registries, per_run, families, path_of)`` (parent) turns the hook
levels in effect (global → network → robot, then the per-run classes) into
plain data: ``(levels, per_run)``, where each level is a tuple of
``(import_path, context)`` for the registrations whose classes implement a
hook of *families*. ``rebuild(description)`` (worker) returns the registries
and per-run classes again, built once per distinct description.
``parent_endpoints(...)`` (parent) collects the endpoints such hooks keep in
the parent for their worker half (see ``robotlab.worker_channel``).

Worker-side module: standard library and robotlab's worker-side modules only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from robotlab.parallel.boundary import freeze_deep, resolve
from robotlab.worker_channel import endpoint_name

if TYPE_CHECKING:  # a worker imports robotlab.hooks only once a job brings hooks: its start-up stays short
    from robotlab.hooks import Hook, HookRegistry

__all__ = ["WORKER_FAMILIES", "describe", "parent_endpoints", "rebuild"]

#: The hook families that fire where a robot runs (a network's ``network_run`` and ``task`` stay in the parent).
WORKER_FAMILIES = ("run", "llm_generation", "tool_call", "compaction", "learn")
# The non before/around/after hooks of those families.
_EXTRA_HOOKS = {"run": ("on_error",), "tool_call": ("on_doom_loop",), "compaction": ("on_compaction",),
                "learn": ("on_learn",)}

Description = tuple[tuple[tuple[tuple[str, Any], ...], ...], tuple[str, ...]]


def _hook_names(families: Iterable[str]) -> tuple[str, ...]:
    names: list[str] = []
    for family in families:
        names += [f"{when}_{family}" for when in ("before", "around", "after")]
        names += _EXTRA_HOOKS.get(family, ())
    return tuple(names)


def describe(registries: Sequence[HookRegistry | None], per_run: Sequence[type[Hook]],
             families: Iterable[str], path_of: Callable[[type], str]) -> Description | None:
    """The hooks of *families* in effect, as import paths and frozen contexts; None when there are none.

    *path_of* turns a class into its import path (raising ``RactorBoundaryError``
    for one workers cannot import).
    """
    names = _hook_names(families)

    def wanted(cls: type[Hook]) -> bool:
        return any(cls.implements(name) for name in names)

    levels = tuple(
        tuple((path_of(r.handler_class),
               None if not r.context else freeze_deep(r.context, root=f"{r.handler_class.__qualname__} context"))
              for r in registry.registrations() if wanted(r.handler_class))
        for registry in registries if registry is not None)
    paths = tuple(path_of(cls) for cls in per_run if wanted(cls))
    if not paths and not any(levels):
        return None
    return levels, paths


def parent_endpoints(registries: Sequence[HookRegistry | None], per_run: Sequence[type[Hook]],
                     families: Iterable[str]) -> dict[str, Any]:
    """The job endpoints of the shipped hook classes that define ``parent_endpoint()``, by endpoint name."""
    names = _hook_names(families)
    classes = [r.handler_class for registry in registries if registry is not None for r in registry.registrations()]
    endpoints: dict[str, Any] = {}
    for cls in (*classes, *per_run):
        make = getattr(cls, "parent_endpoint", None)
        name = endpoint_name(str(cls.namespace))
        if make is not None and name not in endpoints and any(cls.implements(n) for n in names):
            made = make()
            if made is not None:
                endpoints[name] = made
    return endpoints


_rebuilt: dict[Description, tuple[list[HookRegistry], tuple[type, ...]]] = {}


def rebuild(description: Description | None) -> tuple[list[HookRegistry], tuple[type, ...]]:
    """The registries (one per level, in order) and per-run classes that *description* names."""
    if description is None:
        return [], ()
    scope = _rebuilt.get(description)
    if scope is None:
        from robotlab.hooks import HookRegistry

        levels, per_run = description
        registries = []
        for level in levels:
            registry = HookRegistry()
            for path, context in level:
                registry.on(resolve(path), None if context is None else dict(context))
            registries.append(registry)
        scope = _rebuilt[description] = (registries, tuple(resolve(path) for path in per_run))
    return scope
