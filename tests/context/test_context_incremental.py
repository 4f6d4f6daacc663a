"""The incremental fast path gives exactly what the general path gives, turn after turn."""

from __future__ import annotations

import random

from context_histories import histories
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwright.context import Budget, ContextBudgetError, DefaultPolicy, Summary, estimate_counter
from loopwright.core import Message

COUNTER = estimate_counter(cache_size=100_000)


class _FixedSummarizer:
    """Stands in for a Summarizer whose summary is already made (no model in this test)."""

    role = "user"
    trigger_tokens = None

    def __init__(self, summary: Summary | None) -> None:
        self.summary = summary

    def current(self, messages: list[Message]) -> Summary | None:
        s = self.summary
        return s if s is not None and s.is_valid_for(messages) else None


def _outcome(policy: DefaultPolicy, live: list[Message]) -> list[Message] | str:
    try:
        return policy(live)
    except ContextBudgetError as err:
        return f"error: {err}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=histories(max_segments=20),
    window=st.integers(300, 9000),
    keep_recent=st.integers(1, 4),
    summarize_at=st.one_of(st.none(), st.integers(0, 30)),
    seed=st.integers(0, 1000),
)
def test_incremental_matches_general_path(
    history: list[Message], window: int, keep_recent: int, summarize_at: int | None, seed: int
) -> None:
    budget = Budget(window, 100)
    kwargs = {
        "budget": budget,
        "counter": COUNTER,
        "max_result_tokens": 120,
        "keep_recent": keep_recent,
    }
    fast = DefaultPolicy(**kwargs)  # type: ignore[arg-type]
    slow = DefaultPolicy(incremental=False, **kwargs)  # type: ignore[arg-type]
    live: list[Message] = []
    rng = random.Random(seed)
    i = 0
    while i < len(history):
        step = rng.randint(1, 4)
        live.extend(history[i : i + step])  # the loop's own list, growing by appends
        i += step
        if summarize_at is not None and summarize_at < len(live) and fast.summarizer is None:
            upto = summarize_at
            if live[upto].role != "tool":
                s = Summary("earlier work summarized", upto, live[upto - 1], upto, 99, "m")
                fast.summarizer = slow.summarizer = _FixedSummarizer(s)  # type: ignore[assignment]
        a, b = _outcome(fast, live), _outcome(slow, live)
        assert a == b, f"diverged after {len(live)} messages"
