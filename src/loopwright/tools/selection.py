"""Per-turn tool selection: which of the registered tools a model is shown this turn.

An agent with hundreds of tools cannot send every schema on every turn (the prompt grows
by tens of thousands of tokens and small models choose worse among many tools). A
:data:`ToolSelection` is called by the loop before each model call with the messages
about to be sent, the specs the caller may see, and the agent's model; it returns the
specs to send. Selection only narrows what the model is *shown*: the dispatcher checks
every call's permission again, so a selected tool never gains rights.

See ``docs/tool-selection.md``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Protocol

from loopwright.core.messages import Message
from loopwright.core.protocols import Model
from loopwright.core.tools import ToolSpec


class ToolSelection(Protocol):
    """``selection(messages, specs, model) -> specs`` (or an awaitable of them).

    Contract: return a subsequence of ``specs`` (never a spec that was not offered);
    must not mutate its inputs; may call ``model`` (two-stage selection does).
    """

    def __call__(
        self, messages: Sequence[Message], specs: Sequence[ToolSpec], model: Model
    ) -> Sequence[ToolSpec] | Awaitable[Sequence[ToolSpec]]: ...
