"""Incremental planning for :class:`~loopwright.context.default.DefaultPolicy`.

The loop hands the policy its own history list, which only grows by appends. A
:class:`Plan` remembers what the previous call learned about that list (units, trimmed
copies, prefix sums of unit costs) and, when the new list starts with the very same
message objects, re-examines only the tail: the last unit (it may have grown) and the
units whose trimming changes because newer units arrived. Choosing what to drop is then
a binary search over prefix sums, and building the output copies only what is sent.
Per-turn cost no longer grows with the length of the run. Measured with
``benchmarks/context.py`` (200 turns, the history already tokenized): 44-80 us per policy
call at turn 200 against 690-740 us on the general path, which grows with every turn.

Anything unusual (a history that is not an extension of the last one, a broken tool
pairing, a budget that only the last-resort trim can meet) returns ``None`` so the
caller takes the general path, which is property-tested to be equivalent.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loopwright.context.structure import Unit, has_pairing_problems, split_units
from loopwright.context.tokens import TokenCounter
from loopwright.core.messages import Message

Trim = Callable[[Message], Message]


@dataclass(slots=True)
class Plan:
    """What one policy call learned about a history (see module docstring)."""

    seq: list[Message]  # the input this plan describes
    units: list[Unit]
    starts: list[int]  # units[i].start, for bisect
    work: list[Message]  # trimmed messages, same indices as seq
    cum: list[int]  # cum[i] = cost of units[:i] (after trimming)
    free: list[int]  # unit indices of non-pinned units
    drop_cum: list[int]  # drop_cum[p] = cost of free[:p], the task unit counted as 0
    protected: list[int]  # sorted unit indices never dropped: pinned units and the task
    task: int | None


def extends(plan: Plan | None, messages: Sequence[Message]) -> bool:
    """True when ``messages`` begins with exactly the objects ``plan`` described."""
    if plan is None or len(messages) < len(plan.seq):
        return False
    return all(map(operator.is_, plan.seq, messages))


def build_plan(
    previous: Plan | None,
    messages: Sequence[Message],
    *,
    keep_recent: int,
    keep_task: bool,
    counter: TokenCounter,
    trim: Trim,
) -> Plan | None:
    """A plan for ``messages``, reusing ``previous`` (which it extends) when given.

    Returns ``None`` when the history's tool pairing is broken (repair is the general
    path's job).
    """
    r = 0
    if previous is not None and previous.units:
        # the last unit may grow, and units inside the recent window may become old
        last = len(previous.units) - 1
        r = min(last, previous.free[-keep_recent]) if len(previous.free) >= keep_recent else 0
    start = previous.units[r].start if previous is not None and previous.units else 0
    tail = [Unit(u.start + start, u.end + start, u.kind) for u in split_units(messages[start:])]
    if has_pairing_problems(messages, tail):
        return None
    if previous is None or not previous.units:
        plan = Plan([], [], [], [], [0], [], [0], [], None)
    else:
        plan = _truncate(previous, r)
    plan.seq = list(messages)
    plan.units.extend(tail)
    plan.starts.extend(u.start for u in tail)
    plan.work.extend(messages[start:])
    for i in range(r, len(plan.units)):
        u = plan.units[i]
        if u.kind in ("system", "pinned"):
            plan.protected.append(i)
        else:
            if keep_task and plan.task is None and u.kind == "user":
                plan.task = i
                plan.protected.append(i)
            plan.free.append(i)
    _trim_and_cost(plan, r, keep_recent, counter, trim)
    return plan


def _truncate(previous: Plan, r: int) -> Plan:
    """``previous`` cut back to its first ``r`` units (copies of its lists)."""
    start = previous.units[r].start
    n_free = bisect_left(previous.free, r)
    task = previous.task if previous.task is not None and previous.task < r else None
    return Plan(
        seq=[],
        units=previous.units[:r],
        starts=previous.starts[:r],
        work=previous.work[:start],
        cum=previous.cum[: r + 1],
        free=previous.free[:n_free],
        drop_cum=previous.drop_cum[: n_free + 1],
        protected=[i for i in previous.protected if i < r],
        task=task,
    )


def _trim_and_cost(plan: Plan, r: int, keep_recent: int, counter: TokenCounter, trim: Trim) -> None:
    """Trim old exchanges from unit ``r`` on and extend the prefix sums."""
    count = counter.count_message
    old_before = len(plan.free) - keep_recent  # free positions below this are trimmed
    free_pos = bisect_left(plan.free, r)
    for i in range(r, len(plan.units)):
        u = plan.units[i]
        is_free = u.kind not in ("system", "pinned")
        if is_free and free_pos < old_before and u.kind == "exchange":
            for k in range(u.start + 1, u.end):
                plan.work[k] = trim(plan.work[k])
        cost = 0
        for k in range(u.start, u.end):
            cost += count(plan.work[k])
        plan.cum.append(plan.cum[-1] + cost)
        if is_free:
            plan.drop_cum.append(plan.drop_cum[-1] + (0 if i == plan.task else cost))
            free_pos += 1


def fit(
    plan: Plan, limit: int | None, head: list[Message], head_cost: int, j: int
) -> list[Message] | None:
    """``head`` + units ``j..`` of the plan, oldest droppable units removed to fit ``limit``.

    Never drops pinned units, the task or the latest unit. ``None`` when dropping cannot
    make it fit (the caller's last resort trims results).
    """
    n = len(plan.units)
    first = plan.units[j].start if j < n else len(plan.work)
    total = head_cost + plan.cum[n] - plan.cum[j]
    if limit is None or total <= limit:
        return head + plan.work[first:]
    a = bisect_left(plan.free, j)
    b = len(plan.free) - 1  # the latest free unit is never dropped
    if a >= b:
        return None
    m = bisect_left(plan.drop_cum, plan.drop_cum[a] + total - limit, a + 1, b + 1)
    if m > b:
        return None
    cut = plan.free[m]
    out = list(head)
    lo = bisect_left(plan.protected, j)
    hi = bisect_left(plan.protected, cut)
    for i in plan.protected[lo:hi]:
        u = plan.units[i]
        out.extend(plan.work[u.start : u.end])
    out.extend(plan.work[plan.units[cut].start :])
    return out
