"""Malformed model output becomes an observation the model sees, never a crash."""

from __future__ import annotations

from loop_helpers import add, well_formed

from loopwright import Agent, Limits, RunStop, ScriptedModel, tool_call
from loopwright.core.messages import Message, ReasoningPart, ToolCallPart
from loopwright.loop import EMPTY_REPLY_OBSERVATION


async def test_empty_reply_becomes_an_observation() -> None:
    model = ScriptedModel([Message("assistant", ()), "now I answer"])
    run = Agent(model).start("go", events=False)
    result = await run.result()
    assert result.ok and result.answer == "now I answer"
    assert [m.role for m in result.messages] == ["user", "user", "assistant"]
    assert result.messages[1].text == EMPTY_REPLY_OBSERVATION
    assert model.requests[1].last_message == result.messages[1]
    assert run.state.error_log[0].kind == "empty_reply"


async def test_reasoning_only_reply_counts_as_empty() -> None:
    thinking = Message("assistant", (ReasoningPart("hmm"),))
    model = ScriptedModel([thinking] * 5)
    result = await Agent(model, limits=Limits(max_consecutive_errors=2)).arun("go")
    assert result.stop is RunStop.TOO_MANY_ERRORS and result.turns == 2


async def test_unparseable_arguments_become_invalid_arguments_result() -> None:
    model = ScriptedModel([[tool_call("add", "{'a': 1, 'b':")], "sorry"])
    result = await Agent(model, [add]).arun("go")
    res = result.messages[2].tool_results_parts[0]
    assert res.is_error and res.error_kind == "invalid_arguments"
    assert result.ok


async def test_repaired_arguments_still_run() -> None:
    model = ScriptedModel([[tool_call("add", '```json\n{"a": 1, "b": 2,}\n```')], "3"])
    result = await Agent(model, [add]).arun("go")
    assert result.messages[2].tool_results_parts[0].content == "3"


async def test_unknown_tool_lists_the_available_ones() -> None:
    model = ScriptedModel([[tool_call("ad", {"a": 1, "b": 2})], "oops"])
    result = await Agent(model, [add]).arun("go")
    res = result.messages[2].tool_results_parts[0]
    assert res.error_kind == "not_found" and "add" in res.content


async def test_duplicate_and_empty_call_ids_are_made_unique() -> None:
    calls = (
        ToolCallPart("x", "add", {"a": 1, "b": 1}),
        ToolCallPart("x", "add", {"a": 2, "b": 2}),
        ToolCallPart("", "add", {"a": 3, "b": 3}),
    )
    model = ScriptedModel([Message("assistant", calls), "done"])
    result = await Agent(model, [add]).arun("go")
    ids = [c.id for c in result.messages[1].tool_calls]
    assert len(set(ids)) == 3 and ids[0] == "x"
    assert [r.content for r in result.messages[2].tool_results_parts] == ["2", "4", "6"]
    well_formed(result.messages)
