"""Crash recovery: decide, call by call, what to do with tool calls left without a result.

After a crash the latest checkpoint may end with an assistant message whose tool calls
have no results (the process died while tools ran), or a paused state whose approved
calls were being executed. For each such call, in this order:

1. a result recorded in its intent record, or in the idempotency ledger under its key:
   use it (the tool is NOT run again);
2. no intent record, or one marked ``deferred``: the tool never started -- run it;
3. the tool is idempotent: run it again;
4. an intent ``started`` without result (outcome unknown), per the tool's
   ``unknown_outcome`` policy:

   * ``ask_tool`` with an idempotency key and an ``outcome_check``: ask the tool.
     A returned value is the call's result; ``False`` (or :data:`NOT_RUN`) means it
     certainly did not run, so it runs now; ``None`` means it cannot tell -> report;
   * ``report``: the model receives an ``outcome_unknown`` error result saying the call
     may or may not have taken effect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from loopwright.core.errors import ToolErrorKind
from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.tools import NOT_RUN, UnknownOutcomePolicy
from loopwright.store.aio import AsyncStore
from loopwright.store.state import IntentRecord, IntentStatus
from loopwright.tools import Confirmation, ToolRegistry, truncate_result

UNKNOWN_OUTCOME_TEXT = (
    "outcome unknown: the process stopped while this call was running, so it may or may "
    "not have taken effect. Check before repeating it."
)


@dataclass(frozen=True, slots=True)
class Recovery:
    """What to do with the unanswered calls of a state.

    ``known`` results go to the history as they are; ``rerun`` calls go back to the
    dispatcher with ``decisions`` (approvals for calls that had been approved before the
    crash). ``notes`` says, per call id, why (for logs and the CLI).
    """

    known: tuple[ToolResultPart, ...]
    rerun: tuple[ToolCallPart, ...]
    decisions: Mapping[str, Confirmation]
    notes: Mapping[str, str]


def unanswered_calls(messages: Sequence[Message]) -> tuple[ToolCallPart, ...]:
    """Tool calls of the last message when it is an assistant message (no results yet)."""
    if not messages or messages[-1].role != "assistant":
        return ()
    return messages[-1].tool_calls


async def plan_recovery(
    calls: Sequence[ToolCallPart],
    store: AsyncStore,
    session_id: str,
    registry: ToolRegistry,
) -> Recovery:
    intents = {i.call_id: i for i in await store.intents(session_id)}
    known: list[ToolResultPart] = []
    rerun: list[ToolCallPart] = []
    decisions: dict[str, Confirmation] = {}
    notes: dict[str, str] = {}
    for call in calls:
        intent = intents.get(call.id)
        if intent is not None and not _same_call(intent, call):
            # a model reused a call id from an earlier turn: that record is another call's,
            # and this one would have overwritten it had it started
            intent = None
        result, note = await _resolve(call, intent, store, registry)
        notes[call.id] = note
        if result is not None:
            known.append(result)
            continue
        rerun.append(call)
        if intent is not None and intent.status is IntentStatus.STARTED:
            decisions[call.id] = Confirmation.approve("approved before the crash")
    return Recovery(tuple(known), tuple(rerun), decisions, notes)


async def _resolve(
    call: ToolCallPart,
    intent: IntentRecord | None,
    store: AsyncStore,
    registry: ToolRegistry,
) -> tuple[ToolResultPart | None, str]:
    if intent is not None and intent.status is IntentStatus.DONE and intent.result is not None:
        return _readdress(intent.result, call), "result recorded before the crash"
    tool = registry.get(call.name)
    key = intent.idempotency_key if intent is not None else None
    if key is not None:
        stored = await store.get(key)
        if stored is not None:
            return _readdress(stored, call), "result found in the idempotency ledger"
    if intent is None or intent.status is IntentStatus.DEFERRED:
        return None, "never started: run it"
    if tool is None:
        return _unknown(call), "tool no longer registered: outcome unknown"
    if tool.spec.idempotent:
        return None, "idempotent: run it again"
    if tool.spec.unknown_outcome is UnknownOutcomePolicy.ASK_TOOL and key is not None:
        answer = await tool.check_outcome(key)
        if answer is False or answer is NOT_RUN:
            return None, "the tool says it never ran: run it"
        if answer is not None:
            content = truncate_result(answer, tool.spec.max_result_chars)
            return ToolResultPart(call.id, call.name, content), "the tool reported its result"
        return _unknown(call), "the tool cannot tell: outcome unknown"
    return _unknown(call), "outcome unknown (policy: report)"


def _same_call(intent: IntentRecord, call: ToolCallPart) -> bool:
    return intent.tool == call.name and dict(intent.arguments) == dict(call.arguments)


def _readdress(result: ToolResultPart, call: ToolCallPart) -> ToolResultPart:
    return replace(result, call_id=call.id, name=call.name)


def _unknown(call: ToolCallPart) -> ToolResultPart:
    return ToolResultPart(
        call.id, call.name, UNKNOWN_OUTCOME_TEXT, True, ToolErrorKind.OUTCOME_UNKNOWN.value
    )


def in_call_order(
    calls: Sequence[ToolCallPart], results: Sequence[ToolResultPart]
) -> tuple[ToolResultPart, ...]:
    by_id = {r.call_id: r for r in results}
    return tuple(by_id[c.id] for c in calls if c.id in by_id)
