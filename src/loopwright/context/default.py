"""The combined default policy: trim big results -> summary -> window -> last-resort trim.

The order (docs/context.md): first shorten the large tool
results of older turns (the biggest single source of growth), then, past a threshold,
replace older turns by a model-written summary (when a :class:`Summarizer` is attached
and has run), then drop the oldest units until the messages fit. If the latest exchange
alone is still too big, its results are trimmed to share what room is left; if even that
cannot fit, :class:`ContextBudgetError` says how much the uncuttable part needs.

Per-turn cost is linear in the number of messages with a small constant: every count,
unit fact and trimmed copy is memoised per message object, so nothing is re-tokenized
(measured in ``benchmarks/context.py``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

from loopwright.context.incremental import Plan, build_plan, extends, fit
from loopwright.context.policies import (
    _FIX_HINT,
    Budget,
    OnBroken,
    Reporter,
    ToolResultTrimmer,
    _budget_error,
    _drop_oldest_until_fits,
    _make_report,
    _protected,
    _Selection,
    effective_budget,
    sound_history,
    whole_count,
)
from loopwright.context.structure import ContextError, Unit, is_pinned, split_units
from loopwright.context.summarize import Summarizer, Summary, apply_summary
from loopwright.context.tokens import TokenCounter, estimate_counter
from loopwright.core.messages import Message


@dataclass(slots=True)
class DefaultPolicy:
    """Trim results older than ``keep_recent`` units to ``max_result_tokens``, apply the
    summarizer's summary, drop the oldest units to fit, trim the rest as a last resort.

    ``summarize_at`` is the fraction of the budget at which :meth:`prepare` asks the
    summarizer for a fresh summary (the sync call never calls a model), provided the new
    history it would cover weighs at least ``min_summary_fraction`` of that threshold.

    When called again with the same list grown by appends (what the loop does), the
    policy re-examines only the new tail (``incremental``; see :mod:`~.incremental`).
    Any other input, a broken history or an over-full one takes the general path.
    A policy object remembers the last history it saw: use one per conversation.
    """

    budget: Budget | None = None
    counter: TokenCounter = field(default_factory=estimate_counter)
    max_result_tokens: int = 1000
    keep_recent: int = 4
    summarize_at: float = 0.75
    min_summary_fraction: float = 0.25
    summarizer: Summarizer | None = None
    keep_task: bool = True
    on_broken: OnBroken = "repair"
    on_report: Reporter | None = None
    _trimmer: ToolResultTrimmer = field(init=False)
    incremental: bool = True
    _last: tuple[Sequence[Message], int | None] | None = field(default=None, init=False)
    _plan: Plan | None = field(default=None, init=False)
    _summary_msg: tuple[Summary, Message] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        for name, low, shown in (
            ("summarize_at", 0, "(0, 1]"),
            ("min_summary_fraction", -1, "[0, 1]"),
        ):
            value = getattr(self, name)  # nan and "0.75" are refused too
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not (low < value <= 1 and value >= 0):
                raise ContextError(f"DefaultPolicy.{name} must be in {shown}, got {value!r}")
        whole_count("DefaultPolicy.keep_recent", self.keep_recent, 1)
        whole_count("DefaultPolicy.max_result_tokens", self.max_result_tokens, 16)
        self._trimmer = ToolResultTrimmer(
            self.max_result_tokens, self.keep_recent, self.counter, self.on_broken
        )

    def __call__(self, messages: Sequence[Message], budget: int | None = None) -> list[Message]:
        limit = effective_budget(budget, self.budget)
        self._last = (messages, budget)
        out = self._incremental(messages, limit) if self.incremental else None
        if out is None:
            return self._general(messages, limit)
        if self.on_report is not None:
            plan = self._plan
            assert plan is not None
            trimmed = sum(1 for a, b in zip(plan.work, plan.seq, strict=True) if a is not b)
            summary = self._summary_for(messages)
            covered = summary.covered_messages if summary is not None else 0
            _report(self, messages, messages, out, limit, (), trimmed, covered)
        return out

    def _incremental(self, messages: Sequence[Message], limit: int | None) -> list[Message] | None:
        """The fast path (see :mod:`~.incremental`); ``None`` means take the general one."""
        previous = self._plan if extends(self._plan, messages) else None
        plan = build_plan(
            previous,
            messages,
            keep_recent=self.keep_recent,
            keep_task=self.keep_task,
            counter=self.counter,
            trim=self._trim_old,
        )
        self._plan = plan
        if plan is None:
            return None
        summary = self._summary_for(messages)
        if summary is None:
            return fit(plan, limit, [], 0, 0)
        j = bisect_left(plan.starts, summary.upto)
        head: list[Message] = []
        for i in plan.protected:
            if i >= j:
                break
            u = plan.units[i]
            head.extend(plan.work[u.start : u.end])
        head.append(self._summary_message(summary))
        return fit(plan, limit, head, self.counter.count_messages(head), j)

    def _summary_for(self, messages: Sequence[Message]) -> Summary | None:
        return self.summarizer.current(messages) if self.summarizer is not None else None

    def _summary_message(self, summary: Summary) -> Message:
        """One message object per summary, so its count is memoised like any other."""
        cached = self._summary_msg
        if cached is None or cached[0] is not summary:
            role = self.summarizer.role if self.summarizer is not None else "user"
            cached = (summary, summary.to_message(role))
            self._summary_msg = cached
        return cached[1]

    def _trim_old(self, message: Message) -> Message:
        return self._trimmer.trim_one(message, self.max_result_tokens)

    def _general(
        self, messages: Sequence[Message], limit: int | None, *, report: bool = True
    ) -> list[Message]:
        """Repair, trim, summarize, fit: O(history) per call; the reference behaviour."""
        msgs, units, repairs = sound_history(messages, self.on_broken)
        work = self._trimmer.trim(msgs, units, self.keep_recent)
        trimmed = sum(1 for a, b in zip(work, msgs, strict=True) if a is not b)
        summarized = 0
        summary = self._summary_for(msgs)
        if summary is not None:
            # validity was checked on the untrimmed history; `work` has the same shape
            work = apply_summary(work, summary, keep_task=self.keep_task, validate=False)
            marker = summary.to_message().provider_meta
            k = next(i for i, m in enumerate(work) if m.provider_meta == marker)
            work[k] = self._summary_message(summary)  # the memoised object (stable counts)
            summarized = summary.covered_messages
            units = split_units(work)
        if limit is not None:
            work = self._fit(work, units, limit)
        if report:
            _report(self, messages, msgs, work, limit, repairs, trimmed, summarized)
        return work

    def _fit(self, work: list[Message], units: list[Unit], limit: int) -> list[Message]:
        sel = _Selection.of(work, units, self.counter)
        keep = _protected(sel, self.keep_task)
        chosen = set(range(len(units)))
        total = _drop_oldest_until_fits(sel, chosen, keep, limit)
        if total <= limit:
            return sel.build(chosen)
        return self._last_resort(sel.build(chosen), limit)

    def _last_resort(self, work: list[Message], limit: int) -> list[Message]:
        """Trim every remaining tool result (recent ones too) to share the room left."""
        count = self.counter.count_message
        tool_idx = [k for k, m in enumerate(work) if m.role == "tool" and not is_pinned(m)]
        tool_set = set(tool_idx)
        fixed = sum(count(m) for k, m in enumerate(work) if k not in tool_set)
        n_results = sum(len(work[k].parts) for k in tool_idx)
        if n_results:
            # per-result framing overhead is part of each share: subtract it up front
            share = (limit - fixed - 12 * n_results) // n_results
            if share >= 16:
                out = list(work)
                for k in tool_idx:
                    out[k] = self._trimmer.trim_one(out[k], share)
                total = sum(count(m) for m in out)
                if total <= limit:
                    return out
                fixed = total
        raise _budget_error(
            "system/pinned messages, the task and the latest exchange (results trimmed)",
            fixed,
            limit,
            self.budget,
            _FIX_HINT,
        )

    async def prepare(self, messages: Sequence[Message], budget: int | None = None) -> None:
        """Refresh the summary when the trimmed history passes ``summarize_at`` of the budget.

        Await this before a model call (e.g. from the loop's async ``transform_context``
        hook); the sync policy then applies the summary. No-op without a summarizer.
        """
        if self.summarizer is None:
            return
        limit = effective_budget(budget, self.budget)
        # what would be sent before any dropping: trimmed results + the current summary.
        # Measuring that (not the raw history) gives hysteresis: after a summary the
        # next one waits until the history has grown past the threshold again.
        total = self.counter.count_messages(self._general(messages, None, report=False))
        threshold = self.summarizer.trigger_tokens
        if threshold is None and limit is not None:
            threshold = int(limit * self.summarize_at)
        if threshold is None or total <= threshold:
            return
        msgs = sound_history(messages, self.on_broken)[0]
        current = self.summarizer.current(msgs)
        start = current.upto if current is not None else 0
        cut = self.summarizer.cut_point(msgs)
        # Summarize only when enough new history would be covered: without this, a
        # recent window that alone passes the threshold would cost a model call per turn.
        fresh = sum(
            self.counter.count_message(self._trim_old(m) if m.role == "tool" else m)
            for m in msgs[start:cut]
        )
        if fresh >= self.min_summary_fraction * threshold:
            await self.summarizer.refresh(msgs)

    async def acall(self, messages: Sequence[Message], budget: int | None = None) -> list[Message]:
        """:meth:`prepare` then the sync policy: the whole pipeline in one await."""
        await self.prepare(messages, budget)
        return self(messages, budget)

    async def transform_context(self, messages: Sequence[Message]) -> Sequence[Message]:
        """The loop's async ``transform_context`` hook, for a policy that is also the
        agent's ``context_policy``.

        The loop calls the policy first, then this hook with the policy's output. The
        hook refreshes the summary from the *full* history the policy last saw when it
        passed the threshold, and if a new summary was made re-applies the policy so the
        summary is in this very request; otherwise it returns ``messages`` unchanged.
        Without a summarizer, or before the policy ran, it is the identity.
        """
        if self.summarizer is None or self._last is None:
            return messages
        history, budget = self._last
        before = self.summarizer.summary
        await self.prepare(history, budget)
        if self.summarizer.summary is before:
            return messages
        return self(history, budget)


def _report(
    policy: DefaultPolicy,
    original: Sequence[Message],
    sound: Sequence[Message],
    out: list[Message],
    limit: int | None,
    repairs: tuple[str, ...],
    trimmed: int,
    summarized: int,
) -> None:
    if policy.on_report is not None:
        policy.on_report(
            _make_report(
                "default", original, sound, out, policy.counter, limit, repairs, trimmed, summarized
            )
        )
