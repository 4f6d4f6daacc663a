"""The facade's :class:`Agent`: the loop's Agent that also accepts a model string.

``Agent("anthropic:claude-sonnet-4-5", tools=[...])`` resolves the string through
:func:`loopwright.providers.registry.resolve_model` (vendor SDKs are imported only when the
adapter is built); ``"local:..."`` comes wrapped in the embedded model's strategy
(:func:`with_strategy`). Passing a :class:`~loopwright.core.protocols.Model` uses it as it is.

The loop may not import providers (the layers in ``pyproject.toml``), so resolving a
string is the one thing this subclass adds; its signature repeats the loop's keyword for
keyword so editors show every argument (``tests/loop/test_loop_api.py`` keeps the two in
step).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import overload

from loopwright.core.protocols import ContextPolicy, Model, ModelSettings
from loopwright.loop import Agent as _LoopAgent
from loopwright.loop import Hooks, Limits, Sleep, ToolLike
from loopwright.loop.agent import OutputT
from loopwright.loop.config import DEFAULT_OUTPUT_RETRIES
from loopwright.loop.output import OutputMode
from loopwright.providers.registry import resolve_model
from loopwright.tools import DispatchConfig, IdempotencyLedger, ToolRegistry
from loopwright.tools.selection import ToolSelection


def as_model(model: Model | str) -> Model:
    """Return ``model`` itself, or the adapter a model string names. A ``local:`` string
    gives the embedded model inside its strategy (:func:`with_strategy`), the way
    ``loopwright run`` runs it; pass a ``LocalModel`` for the bare adapter."""
    return with_strategy(resolve_model(model)) if isinstance(model, str) else model


def with_strategy(model: Model) -> Model:
    """``model``, or for the embedded model, ``model`` wrapped in
    :func:`loopwright.strategies.embedded.embedded_strategy`: its plans run step by
    step and its final answers are checked against the tool results, so an answer
    that would misstate a result is replaced by a plain statement of what the tools
    returned (docs/providers.md, "The embedded model")."""
    # Only a model the registry built can be the embedded one: its module is loaded
    # then, and importing it for any other model would cost ~0.2 s.
    local = sys.modules.get("loopwright.providers.local")
    if local is None or not isinstance(model, local.LocalModel):
        return model
    from loopwright.strategies.embedded import embedded_strategy

    return embedded_strategy(model)


class Agent(_LoopAgent[OutputT]):
    """An agent whose ``model`` may be a Model or a model string (``"openai:gpt-4o"``,
    ``"local:gemma-3-270m"``, ...). See :class:`loopwright.loop.Agent` for everything else."""

    # Two overloads so a checker infers the output type from ``output_type`` and never
    # from the assignment target: ``a: Agent[Foo] = Agent(model)`` is an error, not an
    # Agent whose text answers are typed ``Foo``.
    @overload
    def __init__(
        self: Agent[str],
        model: Model | str,
        tools: ToolRegistry | Iterable[ToolLike] = (),
        *,
        system: str | None = None,
        limits: Limits | None = None,
        settings: ModelSettings | None = None,
        dispatch: DispatchConfig | None = None,
        hooks: Hooks | None = None,
        context_policy: ContextPolicy | None = None,
        ledger: IdempotencyLedger | None = None,
        sleep: Sleep | None = None,
        tool_selection: ToolSelection | None = None,
        output_type: None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        output_mode: OutputMode = "auto",
    ) -> None: ...

    @overload
    def __init__(
        self,
        model: Model | str,
        tools: ToolRegistry | Iterable[ToolLike] = (),
        *,
        system: str | None = None,
        limits: Limits | None = None,
        settings: ModelSettings | None = None,
        dispatch: DispatchConfig | None = None,
        hooks: Hooks | None = None,
        context_policy: ContextPolicy | None = None,
        ledger: IdempotencyLedger | None = None,
        sleep: Sleep | None = None,
        tool_selection: ToolSelection | None = None,
        output_type: type[OutputT],
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        output_mode: OutputMode = "auto",
    ) -> None: ...

    def __init__(
        self,
        model: Model | str,
        tools: ToolRegistry | Iterable[ToolLike] = (),
        *,
        system: str | None = None,
        limits: Limits | None = None,
        settings: ModelSettings | None = None,
        dispatch: DispatchConfig | None = None,
        hooks: Hooks | None = None,
        context_policy: ContextPolicy | None = None,
        ledger: IdempotencyLedger | None = None,
        sleep: Sleep | None = None,
        tool_selection: ToolSelection | None = None,
        output_type: type[OutputT] | None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        output_mode: OutputMode = "auto",
    ) -> None:
        # The implementation forwards whichever overload the caller matched; the loop's
        # implementation takes both (its overloads exist for callers, not for this call).
        super().__init__(
            as_model(model),
            tools,
            system=system,
            limits=limits,
            settings=settings,
            dispatch=dispatch,
            hooks=hooks,
            context_policy=context_policy,
            ledger=ledger,
            sleep=sleep,
            tool_selection=tool_selection,
            output_type=output_type,  # type: ignore[arg-type]
            output_retries=output_retries,
            output_mode=output_mode,
        )
