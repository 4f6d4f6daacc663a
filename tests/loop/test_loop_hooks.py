"""Hooks: before_tool_call blocks, after_tool_call rewrites, transform_context and
context_policy reshape what is sent (never what is stored)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from loop_helpers import add, well_formed

from loopwright import Agent, DispatchConfig, Hooks, Limits, ScriptedModel, UserError, tool_call
from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.protocols import ModelSettings
from loopwright.core.tools import ToolSpec


def _script() -> ScriptedModel:
    return ScriptedModel([[tool_call("add", {"a": 2, "b": 3})], "done"])


async def test_before_tool_call_blocks_with_reason() -> None:
    seen: list[tuple[str, str]] = []

    def guard(call: ToolCallPart, spec: ToolSpec) -> str | None:
        seen.append((call.name, spec.name))
        return "adding is forbidden today"

    result = await Agent(_script(), [add], hooks=Hooks(before_tool_call=guard)).arun("go")
    res = result.messages[2].tool_results_parts[0]
    assert res.is_error and res.error_kind == "permission_denied"
    assert "adding is forbidden today" in res.content
    assert seen == [("add", "add")]


async def test_async_before_tool_call_allows() -> None:
    async def allow(call: ToolCallPart, spec: ToolSpec) -> None:
        return None

    result = await Agent(_script(), [add], hooks=Hooks(before_tool_call=allow)).arun("go")
    assert result.messages[2].tool_results_parts[0].content == "5"


async def test_after_tool_call_rewrites_result() -> None:
    def redact(call: ToolCallPart, result: ToolResultPart) -> ToolResultPart:
        return ToolResultPart(result.call_id, result.name, "[redacted]")

    result = await Agent(_script(), [add], hooks=Hooks(after_tool_call=redact)).arun("go")
    assert result.messages[2].tool_results_parts[0].content == "[redacted]"
    well_formed(result.messages)


def test_tool_hook_set_twice_is_an_error() -> None:
    def hook(call: ToolCallPart, spec: ToolSpec) -> None:
        return None

    def other(call: ToolCallPart, spec: ToolSpec) -> None:
        return None

    with pytest.raises(UserError, match="before_tool_call"):
        Agent(
            _script(),
            [add],
            hooks=Hooks(before_tool_call=hook),
            dispatch=DispatchConfig(before_tool_call=other),
        )
    # a config copied from an agent (the hook moved into its dispatch) builds again
    agent = Agent(_script(), [add], hooks=Hooks(before_tool_call=hook))
    again = Agent.from_config(agent.config)
    assert again.config.dispatch.before_tool_call is hook


async def test_transform_context_changes_what_is_sent_not_the_history() -> None:
    def only_last(messages: Sequence[Message]) -> Sequence[Message]:
        return [Message.user("[summary of earlier turns]"), *messages[-1:]]

    model = _script()
    result = await Agent(model, [add], hooks=Hooks(transform_context=only_last)).arun("go")
    assert [r.message_count for r in model.requests] == [2, 2]
    assert model.requests[1].tail[0] == Message.user("[summary of earlier turns]")
    assert len(result.messages) == 4  # the history kept everything


async def test_async_transform_context() -> None:
    async def add_note(messages: Sequence[Message]) -> Sequence[Message]:
        return [*messages, Message.user("note")]

    model = ScriptedModel(["ok"])
    await Agent(model, hooks=Hooks(transform_context=add_note)).arun("go")
    assert model.requests[0].last_message == Message.user("note")


async def test_context_policy_gets_budget_from_model_window() -> None:
    budgets: list[int | None] = []

    def policy(messages: Sequence[Message], budget: int | None) -> Sequence[Message]:
        budgets.append(budget)
        return messages[-1:]

    model = _script()
    model.context_window = 8000  # type: ignore[attr-defined]
    agent = Agent(model, [add], context_policy=policy, settings=ModelSettings(max_tokens=1000))
    await agent.arun("go")
    assert budgets == [7000, 7000]
    assert [r.message_count for r in model.requests] == [1, 1]


async def test_context_budget_in_limits_wins() -> None:
    budgets: list[int | None] = []

    def policy(messages: Sequence[Message], budget: int | None) -> Sequence[Message]:
        budgets.append(budget)
        return messages

    await Agent(
        ScriptedModel(["x"]), context_policy=policy, limits=Limits(context_budget=123)
    ).arun("go")
    assert budgets == [123]


async def test_on_event_exception_surfaces_and_history_survives() -> None:
    def boom(event: object) -> None:
        from loopwright.core.events import ToolCallFinished

        if isinstance(event, ToolCallFinished):
            raise RuntimeError("subscriber bug")

    agent = Agent(_script(), [add], hooks=Hooks(on_event=boom))
    run = agent.start("go", events=False)
    with pytest.raises(RuntimeError, match="subscriber bug"):
        await run.result()
    well_formed(run.state.messages)
    assert run.state.messages[-1].role == "tool"


def test_async_on_event_is_rejected_with_the_fix() -> None:
    async def handler(event: object) -> None:
        return None

    with pytest.raises(UserError, match=r"async for event in agent\.start"):
        Agent(_script(), [add], hooks=Hooks(on_event=handler))  # type: ignore[arg-type]
