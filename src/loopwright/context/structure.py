"""The shape of a history: atomic units, tool-call pairing, pins, and repair.

A context policy may drop or shorten messages, but never split a *unit*:

* an assistant message that calls tools plus the ``tool`` messages right after it that
  carry those calls' results (providers reject a call without its result, or a result
  whose call is missing);
* any other single message.

System messages and *pinned* messages (the constraint layer, a task statement a caller
marked with :func:`pin`) are never cut or rewritten by any policy.

A history that arrives already broken (a call whose result is missing, a result whose
call is missing, a result far from its call) is either repaired by
:func:`repair_pairing`, which says what it did, or rejected with
:class:`ToolPairingError` naming the message index and the call id.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from loopwright.core.errors import ToolErrorKind, UserError
from loopwright.core.messages import JSONValue, Message, ToolResultPart

META_NS: Final = "loopwright"
"""provider_meta namespace loopwright itself uses (pins, summaries, repairs, trims)."""

UnitKind = Literal["system", "pinned", "user", "assistant", "exchange", "stray_results"]


class ContextError(UserError):
    """A context policy cannot produce a valid request; the message says why and the fix."""


class ContextBudgetError(ContextError):
    """The messages that may not be cut (plus the output reserve) exceed the budget."""


class ToolPairingError(ContextError):
    """The history has a tool call without its result or a result without its call."""


@dataclass(frozen=True, slots=True)
class Unit:
    """Messages ``[start, end)`` of a history that are kept or dropped together."""

    start: int
    end: int
    kind: UnitKind


@dataclass(frozen=True, slots=True)
class _Facts:
    role: str
    call_ids: tuple[str, ...]
    result_ids: tuple[str, ...]
    pinned: bool
    final: bool  # assistant text without calls: an answer the user saw
    errors_only: bool  # tool message whose every result is an error


_FACTS_LOCK = threading.Lock()
_FACTS: OrderedDict[int, tuple[Message, _Facts]] = OrderedDict()
_FACTS_SIZE: Final = 16384


def _facts(message: Message) -> _Facts:
    """Per-message facts, memoised by identity (messages are frozen)."""
    entry = _FACTS.get(id(message))
    if entry is not None and entry[0] is message:
        return entry[1]
    calls = tuple(p.id for p in message.tool_calls)
    results = message.tool_results_parts
    meta = message.provider_meta.get(META_NS)
    pinned = message.role == "system" or (isinstance(meta, dict) and bool(meta.get("pin")))
    facts = _Facts(
        message.role,
        calls,
        tuple(r.call_id for r in results),
        pinned,
        message.role == "assistant" and not calls,
        bool(results) and all(r.is_error for r in results),
    )
    with _FACTS_LOCK:
        _FACTS[id(message)] = (message, facts)
        if len(_FACTS) > _FACTS_SIZE:
            _FACTS.popitem(last=False)
    return facts


def is_pinned(message: Message) -> bool:
    """System messages and messages marked with :func:`pin` are never cut."""
    return _facts(message).pinned


def pin(message: Message, layer: str = "constraint") -> Message:
    """Return ``message`` marked so that no policy drops, trims or summarizes it."""
    meta: dict[str, JSONValue] = dict(message.provider_meta)
    own = dict(meta.get(META_NS) or {})
    own.update({"pin": True, "layer": layer})
    meta[META_NS] = own
    return replace(message, provider_meta=meta)


def split_units(messages: Sequence[Message]) -> list[Unit]:
    """Split a history into atomic units (see module docstring). O(n), memoised facts."""
    units: list[Unit] = []
    i, n = 0, len(messages)
    while i < n:
        f = _facts(messages[i])
        if f.pinned:
            units.append(Unit(i, i + 1, "system" if f.role == "system" else "pinned"))
            i += 1
            continue
        if f.role == "assistant" and f.call_ids:
            j = i + 1
            while j < n and messages[j].role == "tool" and not _facts(messages[j]).pinned:
                j += 1
            units.append(Unit(i, j, "exchange"))
            i = j
            continue
        if f.role == "tool":
            j = i + 1
            while j < n and messages[j].role == "tool" and not _facts(messages[j]).pinned:
                j += 1
            units.append(Unit(i, j, "stray_results"))
            i = j
            continue
        units.append(Unit(i, i + 1, "user" if f.role == "user" else "assistant"))
        i += 1
    return units


@dataclass(frozen=True, slots=True)
class PairingProblem:
    """One broken pairing: ``kind`` is ``orphan_call``, ``orphan_result`` or ``duplicate_result``."""

    kind: Literal["orphan_call", "orphan_result", "duplicate_result"]
    index: int
    call_id: str
    name: str

    def describe(self) -> str:
        if self.kind == "orphan_call":
            return (
                f"message {self.index} (assistant) calls tool {self.name!r} with id "
                f"{self.call_id!r} but no tool result for that id follows it"
            )
        if self.kind == "duplicate_result":
            return (
                f"message {self.index} (tool) repeats the result of call {self.call_id!r} "
                f"({self.name!r})"
            )
        return (
            f"message {self.index} (tool) holds a result for call {self.call_id!r} "
            f"({self.name!r}) that no directly preceding assistant message made"
        )


def find_pairing_problems(messages: Sequence[Message]) -> list[PairingProblem]:
    """Every orphaned call, orphaned or duplicated result, in history order. O(n)."""
    problems: list[PairingProblem] = []
    for unit in split_units(messages):
        if unit.kind == "stray_results":
            for k in range(unit.start, unit.end):
                problems.extend(
                    PairingProblem("orphan_result", k, r.call_id, r.name)
                    for r in messages[k].tool_results_parts
                )
            continue
        if unit.kind != "exchange":
            continue
        call = messages[unit.start]
        wanted = {c.id: c.name for c in call.tool_calls}
        seen: set[str] = set()
        for k in range(unit.start + 1, unit.end):
            for r in messages[k].tool_results_parts:
                if r.call_id not in wanted:
                    problems.append(PairingProblem("orphan_result", k, r.call_id, r.name))
                elif r.call_id in seen:
                    problems.append(PairingProblem("duplicate_result", k, r.call_id, r.name))
                else:
                    seen.add(r.call_id)
        problems.extend(
            PairingProblem("orphan_call", unit.start, cid, name)
            for cid, name in wanted.items()
            if cid not in seen
        )
    return problems


def has_pairing_problems(messages: Sequence[Message], units: Sequence[Unit] | None = None) -> bool:
    """Fast check used by policies on every call; pass ``units`` if already split."""
    for unit in split_units(messages) if units is None else units:
        if unit.kind == "stray_results":
            return True
        if unit.kind != "exchange":
            continue
        wanted = _facts(messages[unit.start]).call_ids
        got: list[str] = []
        for k in range(unit.start + 1, unit.end):
            got.extend(_facts(messages[k]).result_ids)
        if len(got) != len(wanted) or set(got) != set(wanted):
            return True
    return False


@dataclass(frozen=True, slots=True)
class Repaired:
    """The repaired history and one line per change made (empty when it was sound)."""

    messages: tuple[Message, ...]
    repairs: tuple[str, ...]


MISSING_RESULT_TEXT: Final = (
    "[loopwright: no result was recorded for this call (the run was interrupted or the "
    "result was lost); its outcome is unknown. Check before repeating it.]"
)


def repair_pairing(messages: Sequence[Message]) -> Repaired:
    """Make every call have exactly one result right after it, and drop stray results.

    * a result that sits elsewhere in the history is moved to its call;
    * a call with no result anywhere gets an error result of kind ``outcome_unknown``;
    * a result whose call appears nowhere, or a second result for the same call, is
      dropped.

    Repaired messages carry ``provider_meta["loopwright"]["repair"]`` describing the
    change, and every change is listed in :attr:`Repaired.repairs`.
    """
    problems = find_pairing_problems(messages)
    if not problems:
        return Repaired(tuple(messages), ())
    called = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}
    pool: dict[str, ToolResultPart] = {}
    for m in messages:
        if m.role == "tool":
            for r in m.tool_results_parts:
                if r.call_id in called:
                    pool.setdefault(r.call_id, r)
    repairs = [f"{p.describe()}: " + _fix_word(p, pool) for p in problems]
    out: list[Message] = []
    for unit in split_units(messages):
        if unit.kind == "stray_results":
            continue
        if unit.kind != "exchange":
            out.extend(messages[unit.start : unit.end])
            continue
        call_msg = messages[unit.start]
        out.append(call_msg)
        out.append(_rebuild_results(call_msg, messages[unit.start + 1 : unit.end], pool))
    return Repaired(tuple(out), tuple(repairs))


def _fix_word(problem: PairingProblem, pool: dict[str, ToolResultPart]) -> str:
    if problem.kind == "orphan_call":
        if problem.call_id in pool:
            return "moved its result next to it"
        return "inserted an error result of kind 'outcome_unknown'"
    return "dropped it"


def _rebuild_results(
    call_msg: Message, existing: Sequence[Message], pool: dict[str, ToolResultPart]
) -> Message:
    """One tool message answering every call of ``call_msg`` exactly once, in call order."""
    results: list[ToolResultPart] = []
    changed: list[str] = []
    present = [r.call_id for m in existing for r in m.tool_results_parts]
    for call in call_msg.tool_calls:
        found = pool.pop(call.id, None)
        if found is None:
            found = ToolResultPart(
                call.id,
                call.name,
                MISSING_RESULT_TEXT,
                True,
                ToolErrorKind.OUTCOME_UNKNOWN.value,
                {META_NS: {"repair": "missing_result"}},
            )
            changed.append(f"inserted result for {call.id}")
        elif call.id not in present:
            changed.append(f"moved result for {call.id}")
        results.append(found)
    if not changed and len(existing) == 1 and len(present) == len(results):
        return existing[0]
    meta: dict[str, JSONValue] = dict(existing[0].provider_meta) if existing else {}
    if changed:
        meta[META_NS] = {**dict(meta.get(META_NS) or {}), "repair": changed}
    return Message("tool", tuple(results), meta)
