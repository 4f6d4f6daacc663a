"""The frozen configuration an :class:`~loopwright.loop.agent.Agent` runs with."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from loopwright.core.checks import check_function
from loopwright.core.errors import ConfigError
from loopwright.core.protocols import (
    ContextPolicy,
    HasContextWindow,
    Model,
    ModelSettings,
    ReportsCost,
)
from loopwright.loop.hooks import Hooks
from loopwright.loop.limits import Limits
from loopwright.loop.output import FINAL_RESULT, OutputSchema
from loopwright.tools import DispatchConfig, IdempotencyLedger, ToolRegistry
from loopwright.tools.selection import ToolSelection, check_always

Sleep = Callable[[float], Awaitable[None]]
DEFAULT_OUTPUT_RETRIES = 2
"""How many invalid structured answers are re-asked by default (``output_retries``)."""


def check_model(model: object) -> None:
    """Raise :class:`ConfigError` unless ``model`` is a Model (has ``.stream(request)``)."""
    if isinstance(model, str):
        raise ConfigError(
            f"model={model!r}: this Agent takes a Model object; model strings are resolved "
            "by loopwright.Agent (from loopwright import Agent), or build one with "
            "loopwright.providers.registry.resolve_model"
        )
    if not callable(getattr(model, "stream", None)):
        raise ConfigError(
            f"Agent(model=...) needs a Model (an object with .stream(request)), got "
            f"{type(model).__name__}; build one from loopwright.providers, or pass a model "
            'string such as "openai:gpt-4o" to loopwright.Agent'
        )


# (field, the type it must have, how to write a good value): checked for every config
_TYPED_FIELDS: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
    ("registry", ToolRegistry, "a ToolRegistry, or pass tools=[...] to Agent"),
    ("system", (str, type(None)), 'a str (e.g. system="You are terse.") or a PromptText'),
    ("limits", Limits, "a loopwright.Limits, e.g. limits=Limits(max_turns=10)"),
    ("settings", ModelSettings, "a ModelSettings, e.g. settings=ModelSettings(max_tokens=512)"),
    ("dispatch", DispatchConfig, "a DispatchConfig, e.g. dispatch=DispatchConfig(...)"),
    ("hooks", Hooks, "a loopwright.Hooks, e.g. hooks=Hooks(on_event=print)"),
    (
        "ledger",
        (IdempotencyLedger, type(None)),
        "an IdempotencyLedger (get(key) and put(key, result), e.g. MemoryLedger()) or None",
    ),
)
_CALLABLE_FIELDS = ("context_policy", "sleep", "tool_selection")


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Everything that defines an agent, shared by all of its runs.

    ``sleep`` is awaited for model-retry backoff (inject a fake one in tests).
    ``ledger`` is the idempotency ledger shared by the agent's dispatchers (``None``: the
    dispatcher's default). ``tool_selection`` picks the tools shown to the model each
    turn (``None``: all of them; see ``docs/tool-selection.md``).
    """

    model: Model
    registry: ToolRegistry
    system: str | None = None
    limits: Limits = field(default_factory=Limits)
    settings: ModelSettings = field(default_factory=ModelSettings)
    dispatch: DispatchConfig = field(default_factory=DispatchConfig)
    hooks: Hooks = field(default_factory=Hooks)
    context_policy: ContextPolicy | None = None
    ledger: IdempotencyLedger | None = None
    sleep: Sleep = asyncio.sleep
    tool_selection: ToolSelection | None = None
    output: OutputSchema[object] | None = None

    def __post_init__(self) -> None:
        """Check every field (however the config was built) and name the fix."""
        check_model(self.model)
        for name, expected, fix in _TYPED_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, expected):
                raise ConfigError(f"Agent({name}=...) got {type(value).__name__}; give {fix}")
        for name in _CALLABLE_FIELDS:
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise ConfigError(
                    f"Agent({name}=...) must be a function, got {type(value).__name__}"
                )
        _check_hooks(self.hooks)
        if self.output is not None and self.registry.get(FINAL_RESULT) is not None:
            raise ConfigError(
                f"a tool is named {FINAL_RESULT!r}, the name of the final-answer tool an "
                "output_type adds; rename the tool"
            )
        check_always(self.tool_selection, self.registry.names())
        model = self.model
        if self.limits.cost_budget is not None and not (
            isinstance(model, ReportsCost) and model.reports_cost
        ):
            raise ConfigError(
                f"Limits.cost_budget needs a model that reports cost, and {model.name!r} has"
                " no prices (every call would count as 0): add its rates to a price file"
                " named by $LOOPWRIGHT_PRICES (see docs/providers.md), or use token_budget"
            )

    def context_budget(self) -> int | None:
        """Token budget handed to ``context_policy``: ``limits.context_budget``, else the
        model's ``context_window`` attribute minus ``settings.max_tokens``."""
        if self.limits.context_budget is not None:
            return self.limits.context_budget
        if not isinstance(self.model, HasContextWindow):
            return None
        window = self.model.context_window
        if window > 0:
            return max(1, window - (self.settings.max_tokens or 0))
        return None


# each hook and the arguments the loop calls it with (a wrong signature fails here)
_HOOK_PARAMS = (
    ("before_tool_call", ("call", "spec")),
    ("after_tool_call", ("call", "result")),
    ("transform_context", ("messages",)),
    ("on_event", ("event",)),
)


def _check_hooks(hooks: Hooks) -> None:
    for name, params in _HOOK_PARAMS:
        value = getattr(hooks, name)
        if value is not None:
            check_function(f"Hooks.{name}", value, params)
    if hooks.on_event is not None and inspect.iscoroutinefunction(hooks.on_event):
        raise ConfigError(
            "Hooks.on_event must be a plain (synchronous) function; for async handling "
            "iterate the run instead: `async for event in agent.start(...)`"
        )
