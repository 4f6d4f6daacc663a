"""Every stop reason: the run returns a RunResult naming it, with the best answer so far."""

from __future__ import annotations

import asyncio

import pytest
from loop_helpers import add, echo, well_formed

from loopwright import (
    Agent,
    FunctionModel,
    Hooks,
    Limits,
    RunStop,
    ScriptedModel,
    tool,
    tool_call,
)
from loopwright.core.errors import AuthError
from loopwright.core.events import LimitReached, RunFinished
from loopwright.core.messages import Message, StopReason, TextPart, Usage
from loopwright.core.run import LoopState
from loopwright.providers.scripted import Reply


def _counting_calls(n_text: str = "working") -> FunctionModel:
    """Always calls add with fresh arguments and says something (no repetition)."""
    count = 0

    def reply(messages, request):  # type: ignore[no-untyped-def]
        nonlocal count
        count += 1
        return Message(
            "assistant",
            (TextPart(f"{n_text} {count}"), tool_call("add", {"a": count, "b": 1}, id=f"c{count}")),
        )

    return FunctionModel(reply)


async def test_final_answer_stop() -> None:
    result = await Agent(ScriptedModel(["hi"])).arun("hello")
    assert result.stop is RunStop.FINAL_ANSWER


async def test_max_turns_gives_best_answer_so_far() -> None:
    events: list[object] = []
    agent = Agent(
        _counting_calls(), [add], limits=Limits(max_turns=3), hooks=Hooks(on_event=events.append)
    )
    result = await agent.arun("go")
    assert result.stop is RunStop.MAX_TURNS and result.turns == 3
    assert result.answer == "working 3"
    assert "max_turns=3" in result.detail
    assert any(isinstance(e, LimitReached) and e.stop is RunStop.MAX_TURNS for e in events)
    well_formed(result.messages)


async def test_token_budget() -> None:
    model = ScriptedModel(
        [Reply([tool_call("add", {"a": i, "b": 0})], usage=Usage(60, 10)) for i in range(5)] + ["x"]
    )
    result = await Agent(model, [add], limits=Limits(token_budget=100)).arun("go")
    assert result.stop is RunStop.TOKEN_BUDGET and result.turns == 2
    assert result.usage.total_tokens == 140
    well_formed(result.messages)


async def test_cost_budget() -> None:
    model = ScriptedModel(
        [Reply([tool_call("add", {"a": i, "b": 0})], usage=Usage(1, 1, cost=0.4)) for i in range(5)]
    )
    result = await Agent(model, [add], limits=Limits(cost_budget=1.0)).arun("go")
    assert result.stop is RunStop.COST_BUDGET and result.turns == 3


async def test_too_many_consecutive_tool_errors() -> None:
    model = ScriptedModel([[tool_call("nope", {"i": i})] for i in range(10)])
    result = await Agent(model, [add], limits=Limits(max_consecutive_errors=3)).arun("go")
    assert result.stop is RunStop.TOO_MANY_ERRORS and result.turns == 3
    kinds = [r.error_kind for m in result.messages for r in m.tool_results_parts]
    assert kinds == ["not_found"] * 3
    well_formed(result.messages)


async def test_a_success_resets_the_error_count() -> None:
    script = []
    for i in range(4):
        script += [[tool_call("nope", {"i": i})], [tool_call("add", {"a": i, "b": 0})]]
    model = ScriptedModel([*script, "done"])
    result = await Agent(model, [add], limits=Limits(max_consecutive_errors=2)).arun("go")
    assert result.stop is RunStop.FINAL_ANSWER


async def test_repeated_identical_call_is_detected() -> None:
    model = ScriptedModel([[tool_call("add", {"a": 1, "b": 2})] for _ in range(10)])
    result = await Agent(model, [add], limits=Limits(repeat_limit=3)).arun("go")
    assert result.stop is RunStop.LOOP_DETECTED and result.turns == 3
    assert "'add'" in result.detail and "3 times" in result.detail
    well_formed(result.messages)


async def test_cycle_is_detected() -> None:
    a = [tool_call("add", {"a": 1, "b": 2})]
    b = [tool_call("echo", {"text": "x"})]
    model = ScriptedModel([a, b] * 10)
    result = await Agent(model, [add, echo], limits=Limits(repeat_limit=3)).arun("go")
    assert result.stop is RunStop.LOOP_DETECTED and result.turns == 6
    assert "add -> echo" in result.detail or "echo -> add" in result.detail


async def test_cycle_detection_can_be_disabled() -> None:
    a = [tool_call("add", {"a": 1, "b": 2})]
    b = [tool_call("echo", {"text": "x"})]
    model = ScriptedModel([a, b] * 4 + ["fine"])
    limits = Limits(repeat_limit=3, cycle_detection=False)
    result = await Agent(model, [add, echo], limits=limits).arun("go")
    assert result.stop is RunStop.FINAL_ANSWER


async def test_varying_arguments_are_not_a_loop() -> None:
    model = ScriptedModel([[tool_call("add", {"a": i, "b": 2})] for i in range(8)] + ["ok"])
    result = await Agent(model, [add], limits=Limits(repeat_limit=3)).arun("go")
    assert result.stop is RunStop.FINAL_ANSWER


async def test_timeout_cuts_a_slow_model() -> None:
    model = ScriptedModel([Reply("late", delay=5.0)])
    result = await Agent(model, limits=Limits(timeout=0.05)).arun("go")
    assert result.stop is RunStop.TIMEOUT and "timeout" in result.detail
    assert result.messages[-1] == Message.user("go")


async def test_timeout_during_tools_keeps_history_well_formed() -> None:
    @tool
    async def slow(n: int) -> int:
        """Sleep a long time."""
        await asyncio.sleep(5)
        return n

    model = ScriptedModel(
        [Message("assistant", (TextPart("trying"), tool_call("slow", {"n": 1}, id="s1")))]
    )
    result = await Agent(model, [slow], limits=Limits(timeout=0.05)).arun("go")
    assert result.stop is RunStop.TIMEOUT and result.answer == "trying"
    last = result.messages[-1]
    assert last.role == "tool" and last.tool_results_parts[0].error_kind == "outcome_unknown"
    well_formed(result.messages)


async def test_cancel_from_outside() -> None:
    model = ScriptedModel([Reply("late", delay=5.0)])
    run = Agent(model).start("go")
    await asyncio.sleep(0.01)
    run.cancel()
    result = await run.result()
    assert result.stop is RunStop.CANCELLED
    assert run.state.status is LoopState.ERROR


async def test_cancel_before_the_run_starts() -> None:
    model = ScriptedModel(["never"])
    run = Agent(model).start("go")
    run.cancel()
    result = await run.result()
    assert result.stop is RunStop.CANCELLED and model.calls == 0


async def test_cancel_while_tools_run_marks_started_and_skipped_calls() -> None:
    started = asyncio.Event()

    @tool
    async def wait(n: int) -> int:
        """Wait."""
        started.set()
        await asyncio.sleep(5)
        return n

    calls = [tool_call("wait", {"n": i}, id=f"w{i}") for i in range(3)]
    from loopwright import DispatchConfig

    agent = Agent(ScriptedModel([calls]), [wait], dispatch=DispatchConfig(max_concurrency=1))
    run = agent.start("go")
    await started.wait()
    run.cancel()
    result = await run.result()
    assert result.stop is RunStop.CANCELLED
    kinds = [r.error_kind for r in result.messages[-1].tool_results_parts]
    assert kinds == ["outcome_unknown", "skipped", "skipped"]
    well_formed(result.messages)


async def test_cancelling_the_awaiting_task_propagates_and_keeps_history() -> None:
    model = ScriptedModel([Reply("late", delay=5.0)])
    agent = Agent(model)
    run = agent.start("go", events=False)
    waiter = asyncio.create_task(run.result())
    await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert run.state.messages == [Message.user("go")]


async def test_model_error_non_retryable_keeps_best_answer() -> None:
    model = ScriptedModel([[tool_call("add", {"a": 1, "b": 1})], AuthError("bad key", status=401)])
    result = await Agent(model, [add]).arun("go")
    assert result.stop is RunStop.MODEL_ERROR and "auth" in result.detail
    assert result.answer == ""
    assert len(result.messages) == 3
    assert result.messages[-1].role == "tool"


async def test_script_exhausted_is_a_model_error() -> None:
    result = await Agent(ScriptedModel([])).arun("go")
    assert result.stop is RunStop.MODEL_ERROR and "ran out of replies" in result.detail


async def test_max_tokens_and_refusal() -> None:
    cut = await Agent(
        ScriptedModel([Reply("half an ans", stop_reason=StopReason.MAX_TOKENS)])
    ).arun("go")
    assert cut.stop is RunStop.MAX_TOKENS and cut.answer == "half an ans"
    refused = await Agent(ScriptedModel([Reply("I can't", stop_reason=StopReason.REFUSAL)])).arun(
        "go"
    )
    assert refused.stop is RunStop.REFUSAL


async def test_run_finished_is_last_and_limit_event_precedes_it() -> None:
    events = [
        e async for e in Agent(_counting_calls(), [add], limits=Limits(max_turns=1)).stream("go")
    ]
    assert isinstance(events[-1], RunFinished)
    assert isinstance(events[-3], LimitReached)
    assert events[-1].result.stop is RunStop.MAX_TURNS


@pytest.mark.parametrize(
    ("field", "value", "wanted"),
    [
        ("timeout", "30", "timeout must be a number > 0 or None, got '30'"),
        ("max_turns", True, "max_turns must be a positive int or None, got True"),
        ("repeat_limit", "3", "repeat_limit must be an int >= 2 or None"),
        ("cost_budget", float("nan"), "cost_budget must be a number > 0 or None"),
        ("model_retries", -1, "model_retries must be an int >= 0, got -1"),
        ("retry_max_delay", "1", "retry_max_delay must be a number >= 0"),
    ],
)
def test_limits_of_the_wrong_type_name_the_field(field: str, value: object, wanted: str) -> None:
    with pytest.raises(ValueError) as info:
        Limits(**{field: value})  # type: ignore[arg-type]
    assert str(info.value).startswith(f"Limits.{wanted}")
