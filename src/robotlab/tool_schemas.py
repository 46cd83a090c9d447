"""pydantic-backed schemas for tool parameters and return values that are not plain JSON types.

:mod:`robotlab.tools` imports this module only when a tool annotates a
parameter or its return value with something richer than ``str`` / ``int`` /
``float`` / ``bool`` / ``list`` / ``dict`` (a model, an enum, ``list[int]``,
``datetime``, ...). pydantic is imported here, inside the functions, because
``tools`` is a worker-side module and isolated subinterpreters cannot load
pydantic: a typed tool defined there fails with a ``ConfigurationError`` that
says so.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from robotlab.errors import ConfigurationError, ToolError

__all__ = ["TypedSpec", "accepts_none", "dump_result", "hoist_defs", "pydantic_loads", "typed_spec", "validate_value"]


class TypedSpec(typing.NamedTuple):
    """The JSON schema pydantic produces for one annotation and the adapter that validates / dumps values."""

    json_schema: dict[str, Any]
    adapter: Any  # pydantic.TypeAdapter


def _pydantic(where: str, annotation: Any) -> Any:
    try:
        import pydantic
    except ImportError as exc:  # isolated subinterpreters refuse pydantic_core
        raise ConfigurationError(
            f"{where}: the annotation {annotation!r} needs pydantic, which cannot be imported here ({exc}); "
            "tools with typed (non-plain) parameters cannot run in a subinterpreter worker: "
            "use the process or thread backend, or plain str/int/float/bool/list/dict parameters"
        ) from exc
    return pydantic


_LOADS: list[bool] = []  # memo of pydantic_loads(): a failed import is slow to repeat


def pydantic_loads() -> bool:
    """Whether pydantic can be imported in this interpreter (not in an isolated subinterpreter)."""
    if not _LOADS:
        try:
            import pydantic  # noqa: F401
        except ImportError:
            _LOADS.append(False)
        else:
            _LOADS.append(True)
    return _LOADS[0]


def typed_spec(annotation: Any, where: str) -> TypedSpec:
    """Schema and adapter for *annotation*; ``ConfigurationError`` naming *where* if pydantic cannot make one."""
    pydantic = _pydantic(where, annotation)
    try:
        adapter = pydantic.TypeAdapter(annotation)
        schema = adapter.json_schema()
    except Exception as exc:  # PydanticSchemaGenerationError, PydanticInvalidForJsonSchema, bad forward refs...
        raise ConfigurationError(
            f"{where}: cannot build a JSON schema for the annotation {annotation!r}: {type(exc).__name__}: {exc}"
        ) from exc
    return TypedSpec(schema, adapter)


def accepts_none(annotation: Any) -> bool:
    """Whether *annotation* is ``Optional[...]`` / ``X | None`` (looking through ``Annotated``)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return accepts_none(typing.get_args(annotation)[0])
    if annotation is None or annotation is type(None) or annotation is Any:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(accepts_none(a) for a in typing.get_args(annotation))
    return False


def hoist_defs(schemas: Iterable[tuple[str, Mapping[str, Any]]], tool_name: str) -> dict[str, Any]:
    """Merge the ``$defs`` of each parameter's schema into one, as ``#/$defs/...`` refs expect at the top.

    Two different definitions under one name (two models called ``Item`` from
    different modules) would make a ref ambiguous: that is a ``ConfigurationError``.
    """
    merged: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for param_name, schema in schemas:
        for def_name, definition in schema.get("$defs", {}).items():
            if def_name in merged and merged[def_name] != definition:
                raise ConfigurationError(
                    f"tool {tool_name!r}: parameters {owner[def_name]!r} and {param_name!r} use two different "
                    f"types named {def_name!r}; rename one so the JSON schema's $defs stay unambiguous"
                )
            merged[def_name] = definition
            owner.setdefault(def_name, param_name)
    return merged


def validate_value(adapter: Any, name: str, value: Any) -> tuple[Any, list[str]]:
    """(converted value, problems): pydantic validation of one argument, problems as ``'path': message``."""
    import pydantic

    try:
        return adapter.validate_python(value), []
    except pydantic.ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            path = ".".join(str(part) for part in (name, *error["loc"]) if part != "") or "value"
            problems.append(f"{path!r}: {error['msg']}")
        return value, problems


def dump_result(adapter: Any, tool_name: str, value: Any) -> Any:
    """*value* as JSON-ready data by its return annotation (a model becomes a dict, a datetime a string)."""
    try:
        return adapter.dump_python(value, mode="json", warnings="error")
    except Exception as exc:
        raise ToolError(f"returned a value that does not match its return annotation: {exc}") from exc
