"""Context policies: pure ``(messages, budget) -> messages`` functions.

Every policy here matches :class:`loopwright.core.protocols.ContextPolicy` and keeps
these invariants (property-tested over thousands of generated histories):

* a tool call is never separated from its result: the output has no orphaned call and
  no orphaned result (a history that arrives broken is repaired and the repair
  reported, or rejected with :class:`ToolPairingError` when ``on_broken="error"``);
* system messages and pinned messages (:func:`~loopwright.context.structure.pin`, the
  constraint layer) are never dropped, trimmed or summarized;
* the result fits the budget, or the policy raises :class:`ContextBudgetError` saying
  how many tokens the uncuttable part needs and what to change;
* the input sequence is never mutated; the output is a new list.

The budget is for the *messages*. Give a policy a :class:`Budget` (context window,
output reserve, tokens of system prompt/tool definitions sent outside the messages) and
it derives that figure itself, so the output reserve is always left free; a ``budget``
passed at call time (the loop's own figure) is honoured too, and the smaller wins.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from loopwright.context.structure import (
    ContextBudgetError,
    ContextError,
    ToolPairingError,
    Unit,
    _facts,
    find_pairing_problems,
    has_pairing_problems,
    repair_pairing,
    split_units,
)
from loopwright.context.tokens import CachedCounter, TokenCounter, estimate_counter
from loopwright.context.trimming import trim_message_results
from loopwright.core.checks import check_count
from loopwright.core.errors import ConfigError
from loopwright.core.messages import Message

OnBroken = Literal["repair", "error"]


@dataclass(frozen=True, slots=True)
class Budget:
    """How many tokens the messages may use: ``context_window - output_reserve - overhead``.

    ``output_reserve`` is kept free for the reply (a reply cut by the window is truncated
    JSON); ``overhead`` counts what is sent outside the messages (the system prompt when
    passed separately, tool definitions).
    """

    context_window: int
    output_reserve: int = 1024
    overhead: int = 0

    def __post_init__(self) -> None:
        for name in ("context_window", "output_reserve", "overhead"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                # Budget("8000") was a TypeError from "<=", naming no field
                raise ContextError(f"Budget.{name} must be a whole token count, got {value!r}")
        if self.context_window <= 0:
            raise ContextError(
                f"Budget.context_window must be a positive token count, got {self.context_window}"
            )
        if self.output_reserve < 0 or self.overhead < 0:
            raise ContextError("Budget.output_reserve and Budget.overhead must be >= 0")
        if self.for_messages <= 0:
            raise ContextBudgetError(
                f"Budget leaves no room for messages: context_window {self.context_window} - "
                f"output_reserve {self.output_reserve} - overhead {self.overhead} = "
                f"{self.for_messages}; raise context_window or lower output_reserve/overhead"
            )

    @property
    def for_messages(self) -> int:
        return self.context_window - self.output_reserve - self.overhead

    def describe(self) -> str:
        return (
            f"context_window {self.context_window} - output_reserve {self.output_reserve} - "
            f"overhead {self.overhead}"
        )


@dataclass(frozen=True, slots=True)
class ContextReport:
    """What one policy application did (given to ``on_report`` when set)."""

    policy: str
    messages_in: int
    messages_out: int
    tokens_in: int
    tokens_out: int
    budget: int | None
    dropped_messages: int = 0
    trimmed_messages: int = 0
    summarized_messages: int = 0
    repairs: tuple[str, ...] = ()


Reporter = Callable[[ContextReport], None]


def effective_budget(call_budget: int | None, configured: Budget | None) -> int | None:
    """The smaller of the loop's budget and the policy's own :class:`Budget`."""
    own = configured.for_messages if configured is not None else None
    if call_budget is None:
        return own
    if call_budget <= 0:
        raise ContextBudgetError(
            f"context budget must be a positive token count, got {call_budget}"
        )
    return call_budget if own is None else min(call_budget, own)


def sound_history(
    messages: Sequence[Message], on_broken: OnBroken
) -> tuple[Sequence[Message], list[Unit], tuple[str, ...]]:
    """``messages`` split into units, repaired first if its tool pairing is broken."""
    units = split_units(messages)
    if not has_pairing_problems(messages, units):
        return messages, units, ()
    if on_broken == "error":
        problems = find_pairing_problems(messages)
        shown = "; ".join(p.describe() for p in problems[:3])
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ToolPairingError(
            f"history has {len(problems)} broken tool pairing(s): {shown}{more}; append the "
            "missing results, or use on_broken='repair' to insert 'outcome_unknown' results"
        )
    repaired = repair_pairing(messages)
    return repaired.messages, split_units(repaired.messages), repaired.repairs


def _budget_error(
    what: str, need: int, budget: int, configured: Budget | None, hint: str
) -> ContextBudgetError:
    source = f" ({configured.describe()})" if configured is not None else ""
    return ContextBudgetError(
        f"{what} need {need} tokens but the message budget is {budget}{source}; {hint}"
    )


_FIX_HINT: Final = (
    "raise context_window, lower output_reserve, shorten the system prompt or pinned "
    "messages, or lower max_result_tokens so large tool results are trimmed"
)


@dataclass(slots=True)
class _Selection:
    """Units with their token costs, and helpers to build the output list."""

    messages: Sequence[Message]
    units: list[Unit]
    costs: list[int]

    @classmethod
    def of(
        cls, messages: Sequence[Message], units: list[Unit], counter: TokenCounter
    ) -> _Selection:
        count = counter.count_message
        costs = [sum(count(messages[k]) for k in range(u.start, u.end)) for u in units]
        return cls(messages, units, costs)

    def fixed(self) -> list[int]:
        return [i for i, u in enumerate(self.units) if u.kind in ("system", "pinned")]

    def free(self) -> list[int]:
        return [i for i, u in enumerate(self.units) if u.kind not in ("system", "pinned")]

    def task_unit(self) -> int | None:
        """The first user message: the task statement, kept by default."""
        for i, u in enumerate(self.units):
            if u.kind == "user":
                return i
        return None

    def build(self, chosen: set[int]) -> list[Message]:
        out: list[Message] = []
        for i in sorted(chosen):
            u = self.units[i]
            out.extend(self.messages[u.start : u.end])
        return out

    def cost(self, chosen: set[int]) -> int:
        return sum(self.costs[i] for i in chosen)


def _protected(sel: _Selection, keep_task: bool) -> set[int]:
    """Units no window may drop: system/pinned, the latest unit, the task statement."""
    keep = set(sel.fixed())
    free = sel.free()
    if free:
        keep.add(free[-1])
    if keep_task:
        task = sel.task_unit()
        if task is not None:
            keep.add(task)
    return keep


def _drop_oldest_until_fits(sel: _Selection, chosen: set[int], keep: set[int], budget: int) -> int:
    """Drop the oldest droppable units until the total fits; returns the total."""
    total = sel.cost(chosen)
    for i in sorted(chosen - keep):
        if total <= budget:
            break
        chosen.discard(i)
        total -= sel.costs[i]
    return total


def whole_count(owner: str, value: object, minimum: int) -> int:
    """``value`` when it is a whole number >= ``minimum``, else a :class:`ContextError`
    naming ``owner`` (``SlidingWindow("10")`` was a bare TypeError from ``<``, and
    ``ToolResultTrimmer(float("nan"))`` was accepted)."""
    try:
        return check_count(owner, value, minimum)
    except ConfigError as exc:
        raise ContextError(str(exc)) from None


def _counter(counter: TokenCounter | None) -> TokenCounter:
    return counter if counter is not None else estimate_counter()


def _report(reporter: Reporter | None, report: Callable[[], ContextReport]) -> None:
    if reporter is not None:
        reporter(report())


@dataclass(slots=True)
class SlidingWindow:
    """System/pinned messages, the task statement, and the last ``keep_last`` units.

    A unit is a tool exchange (call + results) or one message, so the window never
    separates a call from its result. With a budget, older units inside the window are
    dropped too until the messages fit.
    """

    keep_last: int = 10
    keep_task: bool = True
    budget: Budget | None = None
    counter: TokenCounter | None = None
    on_broken: OnBroken = "repair"
    on_report: Reporter | None = None

    def __post_init__(self) -> None:
        whole_count("SlidingWindow.keep_last", self.keep_last, 1)
        self.counter = _counter(self.counter)

    def __call__(self, messages: Sequence[Message], budget: int | None = None) -> list[Message]:
        assert self.counter is not None
        limit = effective_budget(budget, self.budget)
        msgs, units, repairs = sound_history(messages, self.on_broken)
        sel = _Selection.of(msgs, units, self.counter)
        keep = _protected(sel, self.keep_task)
        chosen = keep | set(sel.free()[-self.keep_last :])
        if limit is not None:
            total = _drop_oldest_until_fits(sel, chosen, keep, limit)
            if total > limit:
                raise _budget_error(
                    "system/pinned messages, the task and the latest exchange",
                    total,
                    limit,
                    self.budget,
                    _FIX_HINT,
                )
        out = sel.build(chosen)
        _report(
            self.on_report,
            lambda: _make_report(
                "sliding_window", messages, msgs, out, self.counter, limit, repairs
            ),
        )
        return out


def default_importance(sel_kind: str, facts_final: bool, errors_only: bool, age: int) -> int:
    """Score of a unit (higher is kept first): selective retention (docs/context.md).

    System/pinned are always kept and never scored. Final answers 90, user messages 80,
    other assistant text 50, tool exchanges 40, tool exchanges whose results are all
    errors 20 once they are more than two units old (a fresh error is still being
    handled, so it scores like any exchange).
    """
    if sel_kind == "user":
        return 80
    if sel_kind == "assistant":
        return 90 if facts_final else 50
    if errors_only and age > 2:
        return 20
    return 40


@dataclass(slots=True)
class SelectiveRetention:
    """Keep units by importance (then recency) until the budget is filled.

    System/pinned messages, the task statement and the latest unit are always kept.
    Needs a budget (the call's ``budget`` or :attr:`budget`).
    """

    budget: Budget | None = None
    counter: TokenCounter | None = None
    keep_task: bool = True
    on_broken: OnBroken = "repair"
    on_report: Reporter | None = None

    def __post_init__(self) -> None:
        self.counter = _counter(self.counter)

    def __call__(self, messages: Sequence[Message], budget: int | None = None) -> list[Message]:
        assert self.counter is not None
        limit = effective_budget(budget, self.budget)
        if limit is None:
            raise ContextError(
                "SelectiveRetention needs a token budget: pass budget= when calling it or "
                "SelectiveRetention(budget=Budget(context_window=...))"
            )
        msgs, units, repairs = sound_history(messages, self.on_broken)
        sel = _Selection.of(msgs, units, self.counter)
        chosen = _protected(sel, self.keep_task)
        total = sel.cost(chosen)
        if total > limit:
            raise _budget_error(
                "system/pinned messages, the task and the latest exchange",
                total,
                limit,
                self.budget,
                _FIX_HINT,
            )
        free = sel.free()
        age = {i: len(free) - 1 - pos for pos, i in enumerate(free)}
        ranked = sorted(
            (i for i in free if i not in chosen),
            key=lambda i: (-self._score(sel, i, age[i]), -i),
        )
        for i in ranked:
            if total + sel.costs[i] <= limit:
                chosen.add(i)
                total += sel.costs[i]
        out = sel.build(chosen)
        _report(
            self.on_report,
            lambda: _make_report(
                "selective_retention", messages, msgs, out, self.counter, limit, repairs
            ),
        )
        return out

    @staticmethod
    def _score(sel: _Selection, i: int, age: int) -> int:
        unit = sel.units[i]
        first = _facts(sel.messages[unit.start])
        errors_only = unit.kind == "exchange" and all(
            _facts(sel.messages[k]).errors_only for k in range(unit.start + 1, unit.end)
        )
        return default_importance(unit.kind, first.final, errors_only, age)


@dataclass(slots=True)
class ToolResultTrimmer:
    """Trim tool results older than the last ``keep_recent`` units to ``max_result_tokens``.

    Trimming is JSON-aware and head/tail for text (see :mod:`~.trimming`); a trimmed
    result records its original size in ``provider_meta["loopwright"]["trimmed"]``.
    Trimmed copies are memoised per original message, so a result is trimmed (and its
    copy counted) once, not every turn.
    """

    max_result_tokens: int = 1000
    keep_recent: int = 2
    counter: TokenCounter | None = None
    on_broken: OnBroken = "repair"
    memo_size: int = 4096
    _memo: OrderedDict[int, tuple[Message, Message]] = field(default_factory=OrderedDict)

    def __post_init__(self) -> None:
        whole_count("ToolResultTrimmer.max_result_tokens", self.max_result_tokens, 16)
        whole_count("ToolResultTrimmer.keep_recent", self.keep_recent, 0)
        whole_count("ToolResultTrimmer.memo_size", self.memo_size, 0)
        self.counter = _counter(self.counter)

    def __call__(self, messages: Sequence[Message], budget: int | None = None) -> list[Message]:
        msgs, units, _ = sound_history(messages, self.on_broken)
        return self.trim(msgs, units, self.keep_recent)

    def trim(self, msgs: Sequence[Message], units: list[Unit], keep_recent: int) -> list[Message]:
        """Trim exchanges except the last ``keep_recent`` non-pinned units."""
        free = [u for u in units if u.kind not in ("system", "pinned")]
        cutoff = free[-keep_recent].start if 0 < keep_recent <= len(free) else len(msgs)
        if keep_recent > len(free):
            cutoff = 0
        out = list(msgs)
        for k in range(cutoff):
            if out[k].role == "tool" and not _facts(out[k]).pinned:
                out[k] = self.trim_one(out[k], self.max_result_tokens)
        return out

    def trim_one(self, message: Message, max_tokens: int) -> Message:
        """Memoised :func:`trim_message_results` for the policy's own limit."""
        if max_tokens != self.max_result_tokens:
            assert self.counter is not None
            return trim_message_results(message, max_tokens, self.counter)
        entry = self._memo.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        assert self.counter is not None
        trimmed = trim_message_results(message, max_tokens, self.counter)
        self._memo[id(message)] = (message, trimmed)
        if len(self._memo) > self.memo_size:
            self._memo.popitem(last=False)
        return trimmed


def _make_report(
    name: str,
    original: Sequence[Message],
    sound: Sequence[Message],
    out: Sequence[Message],
    counter: TokenCounter | None,
    limit: int | None,
    repairs: tuple[str, ...],
    trimmed: int = 0,
    summarized: int = 0,
) -> ContextReport:
    assert counter is not None
    return ContextReport(
        policy=name,
        messages_in=len(original),
        messages_out=len(out),
        tokens_in=counter.count_messages(original),
        tokens_out=counter.count_messages(out),
        budget=limit,
        dropped_messages=max(0, len(sound) - len(out) - summarized + (1 if summarized else 0)),
        trimmed_messages=trimmed,
        summarized_messages=summarized,
        repairs=repairs,
    )


__all__ = [
    "Budget",
    "CachedCounter",
    "ContextReport",
    "SelectiveRetention",
    "SlidingWindow",
    "ToolResultTrimmer",
    "default_importance",
    "effective_budget",
    "sound_history",
]
