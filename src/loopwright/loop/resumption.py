"""A tool batch that a run stops in the middle of: a pause, and an interruption.

A run pauses when calls await confirmation: the state keeps them as ``pending_calls``
(and the batch's other results as ``held_results``) and :class:`Resume` carries the
decisions that run them. A run interrupted while a batch runs (timeout, cancel, an
error) is repaired. Either way the history stays well-formed: every call of the last
assistant message gets exactly one result, in call order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loopwright.core.errors import ToolErrorKind
from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.run import RunState
from loopwright.loop.notices import INTERRUPTED_RESULT, SKIPPED_RESULT
from loopwright.tools import Confirmation

if TYPE_CHECKING:
    from loopwright.loop.steps import RunEngine


@dataclass(frozen=True, slots=True)
class Resume:
    """How a run continues from a paused state: decisions for its pending calls."""

    decisions: Mapping[str, Confirmation]


def resumed_calls(state: RunState, resume: Resume) -> tuple[ToolCallPart, ...]:
    """The pending calls of a paused state, which ACT runs again with the decisions."""
    pending = tuple(state.pending_calls)
    if not pending or not state.messages or state.messages[-1].role != "assistant":
        raise ValueError(
            "Agent.resume: the state is not paused on tool calls (no pending_calls after "
            "an assistant message); start it with a new prompt instead"
        )
    unknown = set(resume.decisions) - {c.id for c in pending}
    if unknown:
        raise ValueError(
            f"Agent.resume: decisions name unknown call ids {sorted(unknown)}; "
            f"pending calls are {[c.id for c in pending]}"
        )
    return pending


def repair(engine: RunEngine, why: str) -> None:
    """Keep the history well-formed when a batch is cut off: every call of the last
    assistant message gets exactly one result (held, outcome unknown, or skipped)."""
    batch = engine.batch
    if batch is None:
        return
    engine.batch = None
    state = engine.state
    results = batch.results  # set when the batch ended but a subscriber raised
    if results is None:
        unknown = ToolErrorKind.OUTCOME_UNKNOWN.value
        skipped = ToolErrorKind.SKIPPED.value
        results = [
            ToolResultPart(c.id, c.name, INTERRUPTED_RESULT.substitute(why=why), True, unknown)
            if c.id in batch.started
            else ToolResultPart(c.id, c.name, SKIPPED_RESULT.substitute(why=why), True, skipped)
            for c in batch.calls
        ]
    if state.held_results:
        results = in_call_order(state.messages[-1].tool_calls, state.held_results, results)
    state.held_results = ()
    state.pending_calls = ()
    engine.append(Message("tool", tuple(results)), "tools")


def in_call_order(
    calls: Sequence[ToolCallPart],
    held: Sequence[ToolResultPart],
    fresh: Sequence[ToolResultPart],
) -> list[ToolResultPart]:
    """The results held from before a pause and the fresh ones, in the order of
    ``calls`` (a fresh result replaces a held one of the same call)."""
    by_id = {r.call_id: r for r in held}
    by_id.update((r.call_id, r) for r in fresh)
    return [by_id[c.id] for c in calls if c.id in by_id]
