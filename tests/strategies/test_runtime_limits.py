"""Limits bound a strategy across all its model calls: tokens, cost, wall clock, retries
of retryable provider errors; events frame the run like an agent run's."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright import FunctionModel, Limits, ModelRequest, Reply, RunStop, ScriptedModel, Usage
from loopwright.core.errors import ProviderError, TransientProviderError
from loopwright.core.events import LimitReached, ModelCallFailed, RunFinished, RunStarted
from loopwright.core.messages import Message
from loopwright.strategies import SelfConsistency


def costly(usage: Usage, delay: float = 0.0) -> FunctionModel:
    def reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
        return Reply("Answer: 1", usage=usage, delay=delay)

    return FunctionModel(reply)


def test_token_budget_counts_every_call() -> None:
    events: list[object] = []
    sc = SelfConsistency(
        costly(Usage(10, 10)), k=10, concurrency=1, adaptive=False, limits=Limits(token_budget=50)
    )
    result = sc.run("q", on_event=events.append)
    assert result.stop is RunStop.TOKEN_BUDGET and result.calls == 3
    assert result.usage.total_tokens == 60 and result.answer == "1"
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert any(isinstance(e, LimitReached) for e in events)


def test_cost_budget_counts_every_call() -> None:
    sc = SelfConsistency(
        costly(Usage(cost=0.5)), k=10, concurrency=1, adaptive=False, limits=Limits(cost_budget=1.0)
    )
    result = sc.run("q")
    assert result.stop is RunStop.COST_BUDGET and result.calls == 2


def test_wall_clock_bounds_the_whole_run() -> None:
    sc = SelfConsistency(
        costly(Usage(), delay=0.05),
        k=10,
        concurrency=1,
        adaptive=False,
        limits=Limits(timeout=0.12),
    )
    result = sc.run("q")
    assert result.stop is RunStop.TIMEOUT and result.answer == "1" and 2 <= result.calls <= 3


def test_retryable_errors_are_retried_then_fatal_ones_end_the_run() -> None:
    events: list[object] = []
    model = ScriptedModel([TransientProviderError("503"), "Answer: 4"])
    result = SelfConsistency(model, k=1, limits=Limits(retry_base_delay=0.0, max_turns=None)).run(
        "q", on_event=events.append
    )
    assert result.ok and result.answer == "4" and result.calls == 1
    failed = [e for e in events if isinstance(e, ModelCallFailed)]
    assert len(failed) == 1 and failed[0].will_retry
    fatal = SelfConsistency(ScriptedModel([ProviderError("bad request")]), k=1).run("q")
    assert fatal.stop is RunStop.MODEL_ERROR and "bad request" in fatal.detail
