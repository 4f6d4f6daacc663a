"""A run nobody listens to takes the same path as an observed one (only event building
is skipped): it must end exactly like an observed run and pass through the same states."""

from __future__ import annotations

import asyncio

import pytest
from loop_helpers import add, well_formed

from loopwright import Agent, FunctionModel, Limits, RunStop, ScriptedModel, tool, tool_call
from loopwright.core.errors import ToolError
from loopwright.core.messages import Message
from loopwright.core.run import LoopState, RunResult, RunState


@tool
async def flaky(n: int) -> int:
    """Fails for odd numbers."""
    if n % 2:
        raise ToolError(f"odd {n}")
    return n


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            [tool_call("add", {"a": 1, "b": 2}, id="a1")],
            [tool_call("flaky", {"n": 1}, id="f1")],
            [tool_call("flaky", {"n": 3}, id="f3"), tool_call("add", {"a": 2, "b": 2}, id="a2")],
            [tool_call("nope", {}, id="x1")],
            [tool_call("flaky", {"n": 2}, id="")],  # empty id: the loop gives it one
            "done",
        ]
    )


async def _run(events: bool, **limits: object) -> RunResult:
    agent = Agent(_script(), [add, flaky], limits=Limits(**limits))  # type: ignore[arg-type]
    run = agent.start("go", events=events)
    if events:
        [_ async for _ in run]
    return await run.result()


@pytest.mark.parametrize("limits", [{}, {"max_consecutive_errors": 2}, {"max_turns": 3}])
async def test_observed_and_unobserved_runs_end_alike(limits: dict[str, object]) -> None:
    observed = await _run(True, **limits)
    quiet = await _run(False, **limits)
    assert quiet.to_dict() | {"session_id": None} == observed.to_dict() | {"session_id": None}
    assert quiet.stop is observed.stop
    well_formed(quiet.messages)


async def test_unobserved_run_counts_errors_and_answers() -> None:
    result = await Agent(_script(), [add, flaky]).arun("go")
    assert result.stop is RunStop.FINAL_ANSWER and result.answer == "done"
    kinds = [
        [r.error_kind for r in m.tool_results_parts] for m in result.messages if m.role == "tool"
    ]
    assert kinds == [[None], ["permanent"], ["permanent", None], ["not_found"], [None]]
    assert result.messages[9].tool_calls[0].id  # the empty id was filled in


async def test_states_seen_from_inside_an_unobserved_run() -> None:
    seen: list[tuple[str, LoopState]] = []
    holder: list[RunState] = []

    @tool
    async def look() -> str:
        """Look at the run's state."""
        seen.append(("tool", holder[0].status))
        await asyncio.sleep(0)
        return "ok"

    def reply(messages, request):  # type: ignore[no-untyped-def]
        seen.append(("model", holder[0].status))
        return [tool_call("look", {}, id=f"l{len(messages)}")] if len(messages) < 5 else "end"

    state = RunState()
    holder.append(state)
    result = await Agent(FunctionModel(reply), [look]).aresume(state, prompt="go")
    assert result.stop is RunStop.FINAL_ANSWER
    assert seen == [
        ("model", LoopState.THINK),
        ("tool", LoopState.ACT),
        ("model", LoopState.THINK),
        ("tool", LoopState.ACT),
        ("model", LoopState.THINK),
    ]
    assert state.status is LoopState.DONE


async def test_unobserved_cancel_while_the_only_call_runs_reports_an_unknown_outcome() -> None:
    started = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait."""
        started.set()
        await asyncio.sleep(5)
        return "never"

    run = Agent(ScriptedModel([[tool_call("wait", {}, id="w1")]]), [wait]).start("go", events=False)
    await started.wait()
    run.cancel()
    result = await run.result()
    assert result.stop is RunStop.CANCELLED
    assert [r.error_kind for r in result.messages[-1].tool_results_parts] == ["outcome_unknown"]
    well_formed(result.messages)


async def test_unobserved_steering_before_the_only_call_skips_it() -> None:
    holder: list[object] = []

    def reply(messages, request):  # type: ignore[no-untyped-def]
        if len(messages) == 1:
            holder[0].steer("wait, stop")  # type: ignore[attr-defined]
            return [tool_call("add", {"a": 1, "b": 1}, id="a1")]
        return "stopped"

    run = Agent(FunctionModel(reply), [add]).start("go", events=False)
    holder.append(run)
    result = await run.result()
    assert [r.error_kind for r in result.messages[2].tool_results_parts] == ["skipped"]
    assert result.messages[3] == Message.user("wait, stop") and result.answer == "stopped"


async def test_unobserved_repetition_is_detected_with_its_arguments() -> None:
    calls = [[tool_call("add", {"a": 1, "b": 1}, id=f"r{i}")] for i in range(5)]
    result = await Agent(ScriptedModel([*calls, "x"]), [add]).arun("go")
    assert result.stop is RunStop.LOOP_DETECTED
    assert "'add'" in result.detail and "{'a': 1, 'b': 1}" in result.detail
    assert result.turns == 3
