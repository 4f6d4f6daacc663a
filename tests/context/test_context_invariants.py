"""Property tests: the policy invariants over thousands of generated histories."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from context_histories import broken_histories, histories
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwright.context import (
    Budget,
    ContextBudgetError,
    DefaultPolicy,
    SelectiveRetention,
    SlidingWindow,
    ToolPairingError,
    ToolResultTrimmer,
    estimate_counter,
    find_pairing_problems,
    is_pinned,
    repair_pairing,
    split_units,
)
from loopwright.context.policies import _protected, _Selection
from loopwright.core import Message

COUNTER = estimate_counter(cache_size=100_000)
PROPS = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Policy = Callable[[Sequence[Message], int | None], Sequence[Message]]


def _policies(budget: Budget) -> dict[str, Policy]:
    return {
        "window": SlidingWindow(keep_last=4, budget=budget, counter=COUNTER),
        "selective": SelectiveRetention(budget=budget, counter=COUNTER),
        "default": DefaultPolicy(budget=budget, counter=COUNTER, max_result_tokens=200),
    }


def _check_output(name: str, sound: Sequence[Message], out: Sequence[Message], limit: int) -> None:
    assert find_pairing_problems(out) == [], name
    pinned_in = [m for m in sound if is_pinned(m)]
    pinned_out = [m for m in out if is_pinned(m)]
    assert pinned_out == pinned_in, f"{name}: system/pinned messages changed"
    assert all(a is b for a, b in zip(pinned_in, pinned_out, strict=True))
    assert COUNTER.count_messages(out) <= limit, name
    # output is the input in order, except trimmed copies of tool messages
    roles_in = [m.role for m in sound]
    it = iter(roles_in)
    assert all(r in it for r in (m.role for m in out)), f"{name}: order changed"


def _justified(name: str, sound: Sequence[Message], limit: int) -> bool:
    """Recompute, independently, that the uncuttable part cannot fit."""
    sel = _Selection.of(sound, split_units(sound), COUNTER)
    keep = _protected(sel, keep_task=True)
    if name != "default":
        return sel.cost(keep) > limit
    msgs = sel.build(keep)
    fixed = sum(COUNTER.count_message(m) for m in msgs if m.role != "tool" or is_pinned(m))
    n_results = sum(len(m.parts) for m in msgs if m.role == "tool" and not is_pinned(m))
    return fixed + 28 * n_results > limit


@PROPS
@given(history=histories(), window=st.integers(200, 12_000), reserve=st.integers(0, 150))
def test_policies_keep_invariants_or_explain(
    history: list[Message], window: int, reserve: int
) -> None:
    budget = Budget(context_window=window, output_reserve=reserve)
    before = list(history)
    for name, policy in _policies(budget).items():
        try:
            out = policy(history, None)
        except ContextBudgetError as err:
            assert "need" in str(err) and "budget" in str(err)
            assert _justified(name, history, budget.for_messages), f"{name}: {err}"
            continue
        _check_output(name, history, out, budget.for_messages)
        assert COUNTER.count_messages(out) + reserve <= window  # output reserve kept
    assert history == before and all(a is b for a, b in zip(history, before, strict=True))


@PROPS
@given(history=broken_histories(), window=st.integers(300, 12_000))
def test_broken_histories_are_repaired_and_reported(history: list[Message], window: int) -> None:
    assert find_pairing_problems(history)
    repaired = repair_pairing(history)
    assert repaired.repairs, "a repair must be reported"
    assert find_pairing_problems(repaired.messages) == []
    reports = []
    policy = DefaultPolicy(budget=Budget(window, 64), counter=COUNTER, on_report=reports.append)
    try:
        out = policy(history)
    except ContextBudgetError:
        return
    assert find_pairing_problems(out) == []
    assert reports and reports[0].repairs == repaired.repairs


@settings(max_examples=200, deadline=None)
@given(history=broken_histories())
def test_broken_history_rejected_precisely_when_asked(history: list[Message]) -> None:
    with pytest.raises(ToolPairingError) as info:
        SlidingWindow(on_broken="error", counter=COUNTER)(history)
    problem = find_pairing_problems(history)[0]
    assert f"message {problem.index}" in str(info.value)
    assert repr(problem.call_id) in str(info.value)


@settings(max_examples=300, deadline=None)
@given(history=histories(), keep=st.integers(1, 5))
def test_trimmer_only_shortens_old_results(history: list[Message], keep: int) -> None:
    trimmer = ToolResultTrimmer(max_result_tokens=50, keep_recent=keep, counter=COUNTER)
    out = trimmer(history)
    assert len(out) == len(history)
    assert find_pairing_problems(out) == []
    for a, b in zip(history, out, strict=True):
        if a is not b:
            assert a.role == "tool" and b.role == "tool"
            for pa, pb in zip(a.tool_results_parts, b.tool_results_parts, strict=True):
                assert pa.call_id == pb.call_id and pa.is_error == pb.is_error
                assert COUNTER.count_text(pb.content) <= 50
    # memoised: a second call returns the very same trimmed objects
    again = trimmer(history)
    assert all(x is y for x, y in zip(out, again, strict=True))
