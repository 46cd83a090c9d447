"""Run settings: :class:`RunConfig` (mergeable, per level) and the global :class:`Config`.

A ``RunConfig`` holds the LLM, tool and infrastructure settings one run uses.
Settings are merged along ``global → network → robot → per-run``: a later
level overrides only the fields it sets.

Example:
    >>> from robotlab import RunConfig
    >>> network = RunConfig(model="openai/gpt-4o-mini", temperature=0.2)
    >>> robot = RunConfig(temperature=0.7, max_tool_rounds=5)
    >>> merged = network.merge(robot)
    >>> merged.model, merged.temperature, merged.max_tool_rounds
    ('openai/gpt-4o-mini', 0.7, 5)

The global configuration reads defaults, ``ROBOTLAB_*`` environment variables
and an optional TOML file (``ROBOTLAB_CONFIG_FILE``, else ``./robotlab.toml``).
pydantic-settings is imported only when it is first read. ``RunConfig`` itself
is plain Python, so it crosses into workers and subinterpreters.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigurationError

__all__ = ["POOL_BACKENDS", "Config", "RunConfig", "config", "configure", "reload_config"]

POOL_BACKENDS = ("process", "subinterpreter", "thread", "ray")


def _check_number(name: str, value: Any, *, low: float | None, high: float | None, integer: bool) -> None:
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise ConfigurationError(f"{name} must be {kind}, got {value!r}")
    if low is not None and value < low:
        raise ConfigurationError(f"{name} must be >= {low}, got {value!r}")
    if high is not None and value > high:
        raise ConfigurationError(f"{name} must be <= {high}, got {value!r}")


@dataclass(frozen=True)
class RunConfig:
    """Settings for one run. ``None`` means "not set at this level" (inherit).

    Fields:
        model: litellm model name (``"openai/gpt-4o-mini"``) or a ``robotlab.llm`` model object.
        temperature, max_tokens: sampling settings passed to the model.
        max_tool_rounds: circuit breaker; more model turns with tool calls than this raise ``ToolLoopError``
            (default 10; one reply asking for several tools at once is one round).
        doom_loop_threshold: warn the model when one tool, or a pattern of up to 10 calls, repeats this
            many times in a row (default 3; 0 turns the detector off; see ``robotlab.doom_loop``).
        token_budget, cost_budget: limits enforced by the budget ledger (cost in US dollars).
        context_window: token size of the model's context, for ``auto_compact="context_window"``.
        prices: ``(input_per_token, output_per_token)`` in dollars for models litellm has no price for.
        pool_size, pool_backend: the default worker pool for ``parallel_safe`` tools.
        parallel_tools: route ``parallel_safe`` tools to the worker pool (default True).
        llm_options: extra keyword arguments for the LLM client (``api_base``, ``mock_response``, ...).
        output_type: validate the final answer into this type; ``result.output`` holds it
            (see ``robotlab.structured_output``).
        output_retries: how many times an answer that fails validation goes back to the model (default 1).
        output_mode: ``"auto"`` (default), ``"response_format"`` or ``"tool"``: how the schema reaches the model.
    """

    model: Any = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_tool_rounds: int | None = None
    token_budget: int | None = None
    cost_budget: float | None = None
    context_window: int | None = None
    prices: tuple[float, float] | None = None
    pool_size: int | str | None = None
    pool_backend: str | None = None
    parallel_tools: bool | None = None
    llm_options: dict[str, Any] | None = None
    doom_loop_threshold: int | None = None
    output_type: Any = None
    output_retries: int | None = None
    output_mode: str | None = None

    DEFAULTS = {"max_tool_rounds": 10, "parallel_tools": True, "doom_loop_threshold": 3, "output_retries": 1,
                "output_mode": "auto"}

    def __post_init__(self) -> None:
        if self.temperature is not None:
            _check_number("temperature", self.temperature, low=0, high=2, integer=False)
        for name in ("max_tokens", "context_window"):
            if getattr(self, name) is not None:
                _check_number(name, getattr(self, name), low=1, high=None, integer=True)
        if self.max_tool_rounds is not None:
            _check_number("max_tool_rounds", self.max_tool_rounds, low=0, high=None, integer=True)
        if self.token_budget is not None:
            _check_number("token_budget", self.token_budget, low=0, high=None, integer=True)
        if self.cost_budget is not None:
            _check_number("cost_budget", self.cost_budget, low=0, high=None, integer=False)
        if self.pool_size is not None and self.pool_size != "auto":
            _check_number("pool_size", self.pool_size, low=1, high=None, integer=True)
        if self.pool_backend is not None and self.pool_backend not in POOL_BACKENDS:
            raise ConfigurationError(
                f"pool_backend must be one of {', '.join(POOL_BACKENDS)}, got {self.pool_backend!r}"
            )
        if self.parallel_tools is not None and not isinstance(self.parallel_tools, bool):
            raise ConfigurationError(f"parallel_tools must be True or False, got {self.parallel_tools!r}")
        if self.prices is not None:
            if len(tuple(self.prices)) != 2:
                raise ConfigurationError(f"prices must be (input_per_token, output_per_token), got {self.prices!r}")
            for price in self.prices:
                _check_number("prices", price, low=0, high=None, integer=False)
            object.__setattr__(self, "prices", tuple(float(p) for p in self.prices))
        if self.llm_options is not None and not isinstance(self.llm_options, dict):
            raise ConfigurationError(f"llm_options must be a dict, got {type(self.llm_options).__name__}")
        for name in ("doom_loop_threshold", "output_retries"):
            if getattr(self, name) is not None:
                _check_number(name, getattr(self, name), low=0, high=None, integer=True)
        self._check_output()

    def _check_output(self) -> None:
        if self.output_mode is None and self.output_type is None:
            return
        from robotlab.structured_output import OUTPUT_MODES, output_schema

        if self.output_mode is not None and self.output_mode not in OUTPUT_MODES:
            raise ConfigurationError(
                f"output_mode must be 'auto', 'response_format' or 'tool', got {self.output_mode!r}"
            )
        if self.output_type is not None:  # a type pydantic cannot handle fails here, where it is given
            output_schema(self.output_type)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_options(cls, options: dict[str, Any], *, where: str) -> RunConfig:
        """Build from keyword options, naming the offending key when one is unknown."""
        unknown = sorted(set(options).difference(_FIELD_NAMES if cls is RunConfig else cls.field_names()))
        if unknown:
            raise ConfigurationError(
                f"unknown option{'s' if len(unknown) > 1 else ''} for {where}: {', '.join(unknown)}. "
                f"Valid options: {', '.join(cls.field_names())}"
            )
        return cls(**options)

    def explicit(self) -> dict[str, Any]:
        """The fields set at this level."""
        names = _FIELD_NAMES if type(self) is RunConfig else self.field_names()
        return {name: value for name in names if (value := getattr(self, name)) is not None}

    def merge(self, other: RunConfig | None) -> RunConfig:
        """This config overridden by what *other* sets (a new one, or this one when *other* sets nothing).

        ``llm_options`` merge key-wise.
        """
        if other is None:
            return self
        updates = other.explicit()
        if not updates:  # a level that sets nothing (most do): the result would equal this one
            return self
        if type(self) is type(other) and not self.explicit():  # this level sets nothing: it equals *other*
            return other
        if self.llm_options and other.llm_options:
            updates["llm_options"] = {**self.llm_options, **other.llm_options}
        return dataclasses.replace(self, **updates)

    def get(self, name: str) -> Any:
        """The field's value, or its built-in default when no level set it."""
        value = getattr(self, name)
        return self.DEFAULTS.get(name) if value is None else value


_FIELD_NAMES = RunConfig.field_names()

# ---------------------------------------------------------------------------
# Global configuration
# ---------------------------------------------------------------------------

_ENV_PREFIX = "ROBOTLAB_"


class Config:
    """The global configuration: defaults < config file < ``ROBOTLAB_*`` env < :func:`configure`.

    ``config().run_config`` is the global level of the RunConfig merge chain.
    Other attributes: ``template_path`` (where ``template=`` names are looked up),
    ``skills_dir``, ``log_level`` and ``tracing`` (OpenTelemetry spans on or off: see
    :mod:`robotlab.tracing`; applied whenever the configuration is loaded).
    """

    def __init__(self, values: dict[str, Any]) -> None:
        run_values = {k: v for k, v in values.items() if k in RunConfig.field_names()}
        self.run_config = RunConfig(**run_values)
        self.template_path: Path | None = values.get("template_path")
        self.skills_dir: Path | None = values.get("skills_dir")
        self.log_level: str = values.get("log_level") or "WARNING"
        self.tracing: bool = bool(values.get("tracing"))
        self.source_file: Path | None = values.get("source_file")

    def __repr__(self) -> str:
        return f"Config(run_config={self.run_config!r}, template_path={self.template_path!r})"


def _settings_model() -> type:
    """The pydantic-settings model that parses and validates env and file values."""
    from pydantic import ValidationError  # noqa: F401  (re-raised by the caller)
    from pydantic_settings import BaseSettings, SettingsConfigDict

    class RobotlabSettings(BaseSettings):
        model_config = SettingsConfigDict(env_prefix=_ENV_PREFIX, extra="ignore")

        model: str | None = None
        temperature: float | None = None
        max_tokens: int | None = None
        max_tool_rounds: int | None = None
        token_budget: int | None = None
        cost_budget: float | None = None
        context_window: int | None = None
        pool_size: int | str | None = None
        pool_backend: str | None = None
        parallel_tools: bool | None = None
        doom_loop_threshold: int | None = None
        output_retries: int | None = None
        output_mode: str | None = None
        template_path: Path | None = None
        skills_dir: Path | None = None
        log_level: str | None = None
        tracing: bool | None = None

    return RobotlabSettings


def _config_file() -> Path | None:
    explicit = os.environ.get(f"{_ENV_PREFIX}CONFIG_FILE")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigurationError(f"{_ENV_PREFIX}CONFIG_FILE points to {path}, which is not a file")
        return path
    local = Path("robotlab.toml")
    return local if local.is_file() else None


def _load(overrides: dict[str, Any]) -> Config:
    from pydantic import ValidationError

    path = _config_file()
    file_values: dict[str, Any] = {}
    if path is not None:
        try:
            file_values = tomllib.loads(path.read_text()).get("robotlab", {})
        except tomllib.TOMLDecodeError as exc:
            raise ConfigurationError(f"config file {path} is not valid TOML: {exc}") from exc
    settings_cls = _settings_model()
    try:
        env_values = settings_cls().model_dump(exclude_none=True)
        checked_file = settings_cls.model_validate(file_values).model_dump(exclude_none=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        raise ConfigurationError(f"invalid configuration value for {field}: {error['msg']}") from exc
    values = {**checked_file, **env_values, **overrides, "source_file": path}
    if isinstance(values.get("pool_size"), str) and values["pool_size"] != "auto":
        try:
            values["pool_size"] = int(values["pool_size"])
        except ValueError:
            raise ConfigurationError(f"pool_size must be 'auto' or an integer, got {values['pool_size']!r}") from None
    return Config(values)


_lock = threading.Lock()
_current: Config | None = None
_overrides: dict[str, Any] = {}


def config() -> Config:
    """The global :class:`Config`, loaded on first use.

    >>> import robotlab
    >>> robotlab.config().run_config.get("max_tool_rounds")
    10
    """
    global _current
    with _lock:
        if _current is None:
            _current = _applied(_load(_overrides))
        return _current


def configure(**values: Any) -> Config:
    """Override global settings in code (highest precedence); returns the new Config.

    Invalid values raise ``ConfigurationError`` naming the field, and leave the
    previous configuration in place.

    >>> import robotlab
    >>> robotlab.configure(max_tool_rounds=4).run_config.max_tool_rounds
    4
    """
    global _current
    allowed = {*RunConfig.field_names(), "template_path", "skills_dir", "log_level", "tracing"}
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ConfigurationError(f"unknown setting(s): {', '.join(unknown)}. Valid: {', '.join(sorted(allowed))}")
    with _lock:
        candidate = _applied(_load({**_overrides, **values}))  # validates before anything changes
        _overrides.update(values)
        _current = candidate
        return _current


def reload_config(*, keep_overrides: bool = False) -> Config:
    """Re-read env and file. ``configure()`` overrides are dropped unless *keep_overrides*."""
    global _current
    with _lock:
        if not keep_overrides:
            _overrides.clear()
        _current = _applied(_load(_overrides))
        return _current


def _applied(loaded: Config) -> Config:
    """*loaded*, with its ``tracing`` setting in effect (robotlab.tracing is not even imported while it stays off)."""
    if loaded.tracing or "robotlab.tracing.switch" in sys.modules:
        from robotlab.tracing.switch import apply

        apply(loaded.tracing)
    return loaded
