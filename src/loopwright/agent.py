"""The facade's :class:`Agent`: the loop's Agent that also accepts a model string.

``Agent("anthropic:claude-sonnet-4-5", tools=[...])`` resolves the string through
:func:`loopwright.providers.registry.resolve_model` (vendor SDKs are imported only when the
adapter is built). Passing a :class:`~loopwright.core.protocols.Model` works as before.
"""

from __future__ import annotations

from typing import Any

from loopwright.core.protocols import Model
from loopwright.loop import Agent as _LoopAgent
from loopwright.providers.registry import resolve_model


def as_model(model: Model | str) -> Model:
    """Return ``model`` itself, or the adapter a model string names."""
    return resolve_model(model) if isinstance(model, str) else model


class Agent(_LoopAgent):
    """An agent whose ``model`` may be a Model or a model string (``"openai:gpt-4o"``,
    ``"local:gemma-3-270m"``, ...). See :class:`loopwright.loop.Agent` for everything else."""

    def __init__(self, model: Model | str, *args: Any, **kwargs: Any) -> None:
        super().__init__(as_model(model), *args, **kwargs)
