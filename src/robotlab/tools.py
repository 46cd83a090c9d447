"""Tools: plain typed Python the model can call.

Two forms, one class underneath.

Class form — declare parameters with :func:`param` in the class body::

    class Fetch(Tool):
        description = "Fetch a record"
        param("id", type="string", desc="record id", required=True)

        def execute(self, *, id):
            return {"id": id}

Function form — name, description and JSON schema come from the signature::

    @tool
    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

Example:
    >>> from robotlab.errors import ToolError
    >>> class Fetch(Tool):
    ...     description = "Fetch a record"
    ...     param("id", type="string", desc="record id")
    ...     def execute(self, *, id):
    ...         raise ToolError("upstream unavailable", retryable=True)
    >>> Fetch().call({"id": "1"})
    'Error (fetch): upstream unavailable (retryable)'

This module is worker-side: it imports only the standard library, ``errors``
and ``hooks``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
import sys
import types
import typing
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from robotlab.errors import ConfigurationError, ToolError, ToolNotFoundError, retryable
from robotlab.hooks import ExtensionState, Hooks, ToolCallHookContext, current_hook_scope, global_hooks
from robotlab.sync_bridge import in_thread, run_sync

__all__ = ["Param", "Tool", "ToolManifest", "param", "tool"]

logger = logging.getLogger("robotlab.tools")

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object")
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict, Mapping),
}


def snake_case(name: str) -> str:
    """``FetchRecord`` → ``fetch_record``; ``HTTPFetch`` → ``http_fetch``."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


@dataclass(frozen=True)
class Param:
    """One tool parameter, as declared with :func:`param` or derived from a signature.

    ``json_schema`` and ``adapter`` are set for a parameter annotated with a
    non-plain type (see :func:`params_from_signature`); ``type`` is then only
    the schema's top-level JSON type, and validation is pydantic's.
    """

    name: str
    type: str = "string"
    desc: str = ""
    required: bool = True
    enum: tuple[Any, ...] | None = None
    items: str | None = None  # element type of an "array"
    # Set for a parameter annotated with a non-plain type: pydantic's schema (its "$defs" are
    # hoisted to the parameters schema) and the TypeAdapter that validates and converts it.
    json_schema: Mapping[str, Any] | None = field(default=None, compare=False)
    adapter: Any = field(default=None, compare=False, repr=False)

    def schema(self) -> dict[str, Any]:
        if self.json_schema is not None:
            return {k: v for k, v in self.json_schema.items() if k != "$defs"}
        out: dict[str, Any] = {"type": self.type}
        if self.desc:
            out["description"] = self.desc
        if self.enum is not None:
            out["enum"] = list(self.enum)
        if self.type == "array":
            out["items"] = {"type": self.items} if self.items else {}
        return out


def param(
    name: str,
    *,
    type: str = "string",
    desc: str = "",
    required: bool = True,
    enum: Iterable[Any] | None = None,
    items: str | None = None,
) -> Param:
    """Declare a tool parameter. Called in a ``Tool`` class body, it registers there.

    ``type`` is a JSON-schema type: string, integer, number, boolean, array, object.
    """
    if type not in JSON_TYPES:
        raise ConfigurationError(f"param {name!r}: type must be one of {', '.join(JSON_TYPES)}, got {type!r}")
    spec = Param(name, type, desc, required, tuple(enum) if enum is not None else None, items)
    namespace = sys._getframe(1).f_locals
    if "__module__" in namespace and "__qualname__" in namespace:  # we are in a class body
        namespace.setdefault("__tool_params__", []).append(spec)
    return spec


_PLAIN = (("boolean", bool), ("integer", int), ("number", float), ("string", str),
          ("array", list), ("array", tuple), ("object", dict))


def _plain_json_type(annotation: Any) -> tuple[str, bool, tuple[Any, ...] | None] | None:
    """(JSON type, optional?, enum) for a plain annotation; ``None`` for one that needs pydantic.

    Plain: bare ``str`` / ``int`` / ``float`` / ``bool`` / ``list`` / ``tuple`` / ``dict``,
    a ``Literal`` of one such type, or ``Optional`` of either.
    """
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        plain = _plain_json_type(members[0]) if len(members) == 1 else None
        return None if plain is None else (plain[0], len(members) < len(typing.get_args(annotation)), plain[2])
    if origin is typing.Literal:
        values = typing.get_args(annotation)
        kinds = {type(v) for v in values}
        plain = _plain_json_type(kinds.pop()) if len(kinds) == 1 else None
        return None if plain is None or plain[0] in ("array", "object") else (plain[0], False, values)
    if origin is not None and typing.get_args(annotation):
        return None  # list[int], dict[str, Model], Annotated[...]: pydantic's schema
    base = origin or annotation
    return next(((json_type, False, None) for json_type, py in _PLAIN if base is py), None)


def _json_native(annotation: Any) -> bool:
    """Whether values of *annotation* are JSON data already (``list[str]``, ``dict[str, int | None]``...)."""
    if annotation in (None, type(None), Any, object, Ellipsis) or _plain_json_type(annotation) is not None:
        return True
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is dict:
        return len(args) == 2 and args[0] is str and _json_native(args[1])
    return origin in (list, tuple, typing.Union, types.UnionType) and all(_json_native(a) for a in args)


def _coarse_param(name: str, annotation: Any, required: bool) -> Param | None:
    """The pre-pydantic Param of a JSON-native container (``list[str]`` → "array"), for where pydantic cannot load."""
    members = [a for a in typing.get_args(annotation) if a is not type(None)]
    optional = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    base = members[0] if optional and len(members) == 1 else annotation
    plain = _plain_json_type(typing.get_origin(base) or base)
    if not _json_native(annotation) or plain is None or (optional and len(members) != 1):
        return None
    return Param(name, plain[0], "", required and not optional)


def _type_hints(fn: Callable[..., Any], where: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # an unresolvable forward reference must not degrade to "string"
        raise ConfigurationError(f"{where}: cannot resolve the annotations of {fn.__qualname__}: {exc}") from exc


def params_from_signature(fn: Callable[..., Any], tool_name: str | None = None) -> list[Param]:
    """Derive :class:`Param` declarations from a typed function signature.

    Plain annotations map to JSON types directly; any other annotation gets the
    schema pydantic produces (imported only then). One pydantic cannot handle
    raises ``ConfigurationError`` naming the tool, parameter and annotation.
    """
    where = f"tool {tool_name or fn.__name__!r}"
    hints = _type_hints(fn, where)
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.name in ("self", "cls") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        annotation = hints.get(p.name, str)
        plain = _plain_json_type(annotation)
        if plain is not None:
            json_type, optional, enum = plain
            out.append(Param(p.name, json_type, "", p.default is p.empty and not optional, enum))
            continue
        from robotlab import tool_schemas

        coarse = None if tool_schemas.pydantic_loads() else _coarse_param(p.name, annotation, p.default is p.empty)
        if coarse is not None:  # a subinterpreter: list[str] checked as "array", as before pydantic schemas
            out.append(coarse)
            continue
        spec = tool_schemas.typed_spec(annotation, f"{where}, parameter {p.name!r}")
        required = p.default is p.empty and not tool_schemas.accepts_none(annotation)
        kind = spec.json_schema.get("type")
        out.append(Param(p.name, kind if kind in JSON_TYPES else "object", "", required,
                         json_schema=spec.json_schema, adapter=spec.adapter))
    return out


def returns_from_signature(fn: Callable[..., Any], tool_name: str | None = None) -> Any:
    """The pydantic ``TypeAdapter`` of a return annotation whose values need dumping to JSON, else ``None``.

    ``None`` too for no annotation and for JSON-native ones (``str``, ``list[str]``,
    ``dict[str, int]``): those results pass as they are, without pydantic.
    """
    where = f"tool {tool_name or fn.__name__!r}"
    annotation = _type_hints(fn, where).get("return", inspect.Signature.empty)
    if annotation is inspect.Signature.empty or _json_native(annotation):
        return None
    from robotlab import tool_schemas

    return tool_schemas.typed_spec(annotation, f"{where}, return value").adapter


class Tool:
    """Base class of every tool. Subclass it, declare params, implement ``execute``.

    Class attributes:
        name: defaults to the snake_case class name (``Fetch`` → ``fetch``).
        description: what the model reads to decide when to call it.
        parallel_safe: run on the worker pool (``ractor_safe`` is an alias). Inherited.
        raise_on_error: re-raise instead of returning ``Error (<name>): ...`` text.

    An instance carries ``robot`` (its owner, held weakly; ``None`` without one) and ``memory``.
    """

    name: ClassVar[str] = "tool"
    description: ClassVar[str] = ""
    parallel_safe: ClassVar[bool] = False
    ractor_safe: ClassVar[bool] = False  # robot_lab's name for parallel_safe; kept in sync
    raise_on_error: ClassVar[bool] = False
    params: ClassVar[tuple[Param, ...]] = ()
    # pydantic TypeAdapter of a non-plain return annotation of execute (None: results pass as they are)
    return_adapter: ClassVar[Any] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = snake_case(cls.__name__)
        if "ractor_safe" in cls.__dict__ and "parallel_safe" not in cls.__dict__:
            cls.parallel_safe = bool(cls.__dict__["ractor_safe"])
        cls.ractor_safe = cls.parallel_safe
        declared = cls.__dict__.get("__tool_params__")
        if declared is not None:
            inherited = {p.name: p for p in cls.params}
            inherited.update({p.name: p for p in declared})
            cls.params = tuple(inherited.values())
        elif not cls.params and "execute" in cls.__dict__:
            cls.params = tuple(params_from_signature(cls.__dict__["execute"], cls.name))
        if "execute" in cls.__dict__ and "return_adapter" not in cls.__dict__:
            cls.return_adapter = returns_from_signature(cls.__dict__["execute"], cls.name)
        if any(p.json_schema is not None for p in cls.params):
            cls.parameters_schema()  # a $defs name clash is a definition-time error

    def __init__(self, *, robot: Any = None, memory: Any = None) -> None:
        self.robot = robot
        self.memory = memory

    @property
    def robot(self) -> Any:
        """The robot that owns this tool (``None`` when it has none, or the robot is gone)."""
        ref = self._robot_ref
        return None if ref is None else ref()

    @robot.setter
    def robot(self, robot: Any) -> None:
        # Weakly: the robot holds its tools, so a strong back reference would make every robot
        # with tools a reference cycle that only the cyclic GC frees.
        self._robot_ref = None if robot is None else weakref.ref(robot)

    @classmethod
    def parameters_schema(cls) -> dict[str, Any]:
        """The JSON schema of the arguments (with the ``$defs`` of typed parameters at the top)."""
        out: dict[str, Any] = {
            "type": "object",
            "properties": {p.name: p.schema() for p in cls.params},
            "required": [p.name for p in cls.params if p.required],
        }
        typed = [(p.name, p.json_schema) for p in cls.params if p.json_schema is not None]
        if typed:
            from robotlab.tool_schemas import hoist_defs

            defs = hoist_defs(typed, cls.name)
            if defs:
                out["$defs"] = defs
        return out

    @classmethod
    def returns_schema(cls) -> dict[str, Any] | None:
        """pydantic's JSON schema of ``execute``'s return annotation, or ``None`` when it is plain or absent."""
        return None if cls.return_adapter is None else cls.return_adapter.json_schema()

    @classmethod
    def schema(cls) -> dict[str, Any]:
        """The OpenAI tool schema sent to the model."""
        return {
            "type": "function",
            "function": {"name": cls.name, "description": cls.description, "parameters": cls.parameters_schema()},
        }

    def execute(self, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__qualname__} must implement execute()")

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Check *args* against the schema; raises ``ToolError`` describing every problem.

        Returns the arguments for ``execute``: typed parameters converted by
        pydantic (a dict becomes the model, an ISO string a ``datetime``).
        """
        known = {p.name: p for p in self.params}
        problems = [f"unknown parameter {k!r}" for k in args if k not in known]
        converted = {k: v for k, v in args.items() if v is not None}
        for p in self.params:
            if p.name not in args or args[p.name] is None:
                if p.required:
                    problems.append(f"missing required parameter {p.name!r}")
                continue
            value = args[p.name]
            if p.adapter is not None:
                from robotlab.tool_schemas import validate_value

                converted[p.name], found = validate_value(p.adapter, p.name, value)
                problems += found
                continue
            ok = isinstance(value, _PY_TYPES[p.type]) and not (
                p.type in ("integer", "number") and isinstance(value, bool)
            )
            if not ok:
                problems.append(f"{p.name!r} must be {p.type}, got {type(value).__name__}")
            elif p.enum is not None and value not in p.enum:
                problems.append(f"{p.name!r} must be one of {list(p.enum)}, got {value!r}")
        if problems:
            raise ToolError("invalid arguments: " + "; ".join(problems))
        return converted

    def _result(self, value: Any) -> Any:
        """*value* as the model should see it: JSON-ready data when the return annotation is typed."""
        if self.return_adapter is None:
            return value
        from robotlab.tool_schemas import dump_result

        return dump_result(self.return_adapter, self.name, value)

    def format_error(self, exc: BaseException) -> str:
        text = f"Error ({self.name}): {exc}"
        return f"{text} (retryable)" if retryable(exc) else text

    @property
    def is_async(self) -> bool:
        """Whether ``execute`` is an ``async def`` (awaited in async runs, run on an event loop otherwise)."""
        return inspect.iscoroutinefunction(self.execute)

    def call(self, args: Mapping[str, Any] | None = None, *, raise_on_error: bool | None = None,
             metadata: ExtensionState | None = None) -> Any:
        """Validate, fire the ``tool_call`` hook family around ``execute``, and return the result.

        A failure becomes the text ``Error (<name>): <message>`` for the model
        (`` (retryable)`` appended when :func:`robotlab.retryable` says so);
        ``raise_on_error = True`` (the class attribute, or this argument) re-raises
        instead. Hooks come from the current hook scope, or the global and robot
        registries when there is none. *metadata* becomes the hook context's
        ``ctx.metadata`` (worker pools pass one to send what hooks record back).
        An ``async def execute`` runs to completion on an event loop of its own.
        """
        if self.is_async:
            return run_sync(lambda: self.acall(args, raise_on_error=raise_on_error, metadata=metadata))
        ctx, registries, per_run, raising = self._call_context(args, raise_on_error, metadata)

        def body() -> Any:
            try:
                ctx.tool_result = self._result(self.execute(**self.validate(ctx.tool_args)))
            except Exception as exc:
                self._failed(ctx, exc, raising)
            return ctx.tool_result

        returned = Hooks.run("tool_call", ctx, registries, per_run, body)
        # An around hook may block the call by setting ctx.tool_result without calling the block.
        return ctx.tool_result if ctx.tool_result is not None else returned

    async def acall(self, args: Mapping[str, Any] | None = None, *, raise_on_error: bool | None = None,
                    metadata: ExtensionState | None = None) -> Any:
        """:meth:`call` for async runs: an ``async def execute`` is awaited, a sync one runs on a helper thread.

        A tool that raises, times out (``asyncio.TimeoutError``) or is cancelled by
        its own code fails as a sync tool does; cancelling the caller cancels it.
        """
        ctx, registries, per_run, raising = self._call_context(args, raise_on_error, metadata)
        body = functools.partial(self._acall_body, ctx, raising)  # a partial: fewer live objects than a closure
        returned = await Hooks.arun("tool_call", ctx, registries, per_run, body)
        return ctx.tool_result if ctx.tool_result is not None else returned

    async def _acall_body(self, ctx: ToolCallHookContext, raising: bool) -> Any:
        """The body of :meth:`acall` inside the ``tool_call`` hooks: validate, execute, record the result."""
        import asyncio  # here, not at module level: workers import this module and rarely need asyncio

        try:
            validated = self.validate(ctx.tool_args)
            if self.is_async:
                ctx.tool_result = self._result(await self.execute(**validated))
            else:
                ctx.tool_result = self._result(await in_thread(self.execute, **validated))
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the caller cancelled the run: not the tool's failure
            self._failed(ctx, ToolError(f"cancelled: {exc}" if str(exc) else "cancelled"), raising)
        except Exception as exc:
            self._failed(ctx, exc, raising)
        return ctx.tool_result

    def _call_context(self, args: Mapping[str, Any] | None, raise_on_error: bool | None,
                      metadata: ExtensionState | None) -> tuple[ToolCallHookContext, list[Any], Any, bool]:
        raising = self.raise_on_error if raise_on_error is None else raise_on_error
        ctx = ToolCallHookContext(tool=self, tool_args=dict(args or {}), robot=self.robot, metadata=metadata)
        scope = current_hook_scope()
        if scope is not None:
            return ctx, list(scope.registries), scope.per_run_hooks, raising
        return ctx, [global_hooks(), getattr(self.robot, "hooks", None)], None, raising

    def _failed(self, ctx: ToolCallHookContext, exc: Exception, raising: bool) -> None:
        ctx.tool_error = exc
        if raising:
            raise exc
        if not isinstance(exc, ToolError):
            logger.warning("tool %s raised %s: %s", self.name, type(exc).__name__, exc, exc_info=exc)
        ctx.tool_result = self.format_error(exc)


class FunctionTool(Tool):
    """A tool made by :func:`tool` from a plain function (``cls.fn``)."""

    fn: ClassVar[Callable[..., Any]]

    def execute(self, **kwargs: Any) -> Any:
        return type(self).fn(**kwargs)


class AsyncFunctionTool(Tool):
    """A tool made by :func:`tool` from an ``async def`` function."""

    fn: ClassVar[Callable[..., Any]]

    async def execute(self, **kwargs: Any) -> Any:
        return await type(self).fn(**kwargs)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool = False,
) -> Any:
    """Turn a typed function into a Tool class (``@tool`` or ``@tool(parallel_safe=True)``).

    ``async def`` functions work too: async runs await them, sync calls run them on an event loop.

    The class keeps the function's module and name, so it crosses to workers by
    import path; the function stays reachable as ``.fn``.

    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> add().call({"a": 2, "b": 3}), add.name, add.fn(1, 1)
    (5, 'add', 2)
    """

    def wrap(func: Callable[..., Any]) -> type[Tool]:
        doc = inspect.getdoc(func) or ""
        attrs = {
            "fn": staticmethod(func),
            "name": name or func.__name__,
            "description": description if description is not None else doc.split("\n\n")[0].strip(),
            "parallel_safe": parallel_safe,
            "params": tuple(params_from_signature(func, name or func.__name__)),
            "return_adapter": returns_from_signature(func, name or func.__name__),
            "__module__": func.__module__,
            "__qualname__": func.__qualname__,
            "__doc__": func.__doc__,
        }
        base = AsyncFunctionTool if inspect.iscoroutinefunction(func) else FunctionTool
        return type(func.__name__, (base,), attrs)

    return wrap(fn) if fn is not None else wrap


def as_tool_class(obj: Any) -> type[Tool]:
    """Accept a Tool subclass or instance; anything else is a ``ConfigurationError``."""
    cls = obj if isinstance(obj, type) else type(obj)
    if not (isinstance(cls, type) and issubclass(cls, Tool)):
        raise ConfigurationError(
            f"{obj!r} is not a robotlab Tool; subclass robotlab.Tool or decorate a function with @robotlab.tool"
        )
    return cls


def tool_name(entry: str | type[Tool] | Tool) -> str:
    """The name a ``tools=[...]`` entry selects: a name as it is, a Tool class or instance by its ``name``."""
    return entry if isinstance(entry, str) else as_tool_class(entry).name


def tool_names(entries: Iterable[str | type[Tool] | Tool]) -> list[str]:
    """:func:`tool_name` of each entry (``ConfigurationError`` for one that is neither a name nor a Tool)."""
    return [tool_name(e) for e in entries]


class ToolManifest:
    """Tools by name. ``resolve(name)`` raises ``ToolNotFoundError`` for an unknown one.

    >>> manifest = ToolManifest([])
    >>> manifest.names()
    []
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            if t.name in self._tools:
                raise ConfigurationError(f"two tools are named {t.name!r}; tool names must be unique")
            self._tools[t.name] = t

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self):
        return iter(self._tools.values())

    def resolve(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            available = ", ".join(self._tools) or "none"
            raise ToolNotFoundError(f"Tool {name!r} not found. Available tools: {available}") from None

    def select(self, names: Iterable[str | type[Tool] | Tool]) -> ToolManifest:
        """A manifest of just *names* (each must exist): tool names, or Tool classes standing for theirs.

        A class selects this manifest's tool of the same name, which must be an instance of it.
        """
        chosen = []
        for entry in names:
            found = self.resolve(tool_name(entry))
            if not isinstance(entry, str) and not isinstance(found, as_tool_class(entry)):
                raise ConfigurationError(
                    f"tools=[{as_tool_class(entry).__qualname__}]: the tool named {found.name!r} here is a "
                    f"{type(found).__qualname__}, not that class"
                )
            chosen.append(found)
        return ToolManifest(chosen)

    def schemas(self) -> list[dict[str, Any]]:
        return [type(t).schema() for t in self._tools.values()]
