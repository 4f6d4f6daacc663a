"""Limits bound a strategy across all its model calls: tokens, cost, wall clock, retries
of retryable provider errors; events frame the run like an agent run's."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright import (
    FunctionModel,
    Limits,
    ModelRequest,
    Reply,
    RunStop,
    ScriptedModel,
    Usage,
    tool,
)
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


def test_an_agent_called_by_a_plan_step_spends_the_strategys_budget() -> None:
    import json

    from loopwright import Agent, tool_call
    from loopwright.strategies import PlanAndExecute

    @tool
    def nothing() -> str:
        """Do nothing."""
        return "ok"

    chatty = Agent(
        ScriptedModel([Reply([tool_call("nothing", {})], usage=Usage(30, 0))] * 3 + ["done"]),
        [nothing],
    ).as_tool("helper", "Does work.")
    step = {"step_id": 1, "description": "work", "tool_name": "helper",
            "tool_input": {"task": "work"}, "depends_on": []}  # fmt: skip
    planner = ScriptedModel(
        [Reply(json.dumps({"action": "plan", "plan": [step]}), usage=Usage(20, 0))]
    )
    result = PlanAndExecute(planner, [chatty], limits=Limits(token_budget=60)).run("go")
    # 40 tokens were left for the worker: it stopped after two calls (60 tokens), and the
    # strategy counts them: 20 + 60 = 80 tokens in all
    assert result.usage.total_tokens == 80
    assert result.stop is RunStop.TOKEN_BUDGET  # the failed step is not retried past it
