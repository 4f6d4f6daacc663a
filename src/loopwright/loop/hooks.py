"""The loop's hooks: a few typed callables with written contracts.

Every hook except ``on_event`` may be a plain function or an ``async`` function (the
loop awaits whatever awaitable it returns). Hooks run inside the run's task, on the
event loop: a hook that blocks blocks the run, so do slow work asynchronously.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from loopwright.core.events import RunEvent
from loopwright.core.messages import Message
from loopwright.tools import AfterToolCall, BeforeToolCall

TransformContext: TypeAlias = Callable[
    [Sequence[Message]], "Sequence[Message] | Awaitable[Sequence[Message]]"
]
EventCallback: TypeAlias = Callable[[RunEvent], None]


@dataclass(frozen=True, slots=True)
class Hooks:
    """Hooks an :class:`~loopwright.loop.agent.Agent` calls during a run.

    ``before_tool_call(call, spec) -> str | None``
        Called by the dispatcher for each call whose tool exists and that the caller's
        permission allows, after its arguments were parsed and validated and before
        confirmation and execution. Return ``None`` to let the call proceed, or a string
        to **block** it: the call is not executed and its result is an error of kind
        ``permission_denied`` whose content carries that string (the model sees it). If
        the hook raises, the call is not run and gets a ``permanent`` error result. Must
        not mutate ``call``.

    ``after_tool_call(call, result) -> ToolResultPart | None``
        Called with every result the dispatcher produced for a call that reached it
        (successes and errors, after truncation). Return ``None`` to keep the result, or
        a ``ToolResultPart`` to **replace** it (its ``call_id`` is forced to ``call.id``:
        the history pairs them). If the hook raises, the result is withheld and replaced
        by a ``permanent`` error result.

    ``transform_context(messages) -> messages``
        Called before each model call with the messages about to be sent (after the
        agent's ``context_policy``, if any). Returns the messages to send instead. It
        must not mutate its input (it is the run's own history list) and must not split a
        tool call from its result. Its output is sent but never stored: the run's history
        keeps every message.

    ``on_event(event) -> None``
        Synchronous. Receives every run event (see :mod:`loopwright.core.events`) in
        order, as it happens, before the loop goes on (so ``run.state`` is consistent
        with the event: a good moment to checkpoint). For async work iterate the run
        instead (``async for event in run``). An exception propagates and ends the run
        (the history is kept well-formed first): keep subscribers robust. When no
        ``on_event`` is set and nobody iterates the run, events are not even built.
    """

    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    transform_context: TransformContext | None = None
    on_event: EventCallback | None = None
