"""The frozen configuration an :class:`~loopwright.loop.agent.Agent` runs with."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

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
from loopwright.tools import DispatchConfig, IdempotencyLedger, ToolRegistry
from loopwright.tools.selection import ToolSelection

Sleep = Callable[[float], Awaitable[None]]


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

    def __post_init__(self) -> None:
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
