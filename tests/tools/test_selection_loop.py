"""The loop's tool-selection hook and registry refresh between turns."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright import Agent, ScriptedModel, tool, tool_call
from loopwright.core.messages import Message
from loopwright.core.protocols import Model
from loopwright.core.tools import ToolSpec
from loopwright.tools import DispatchConfig, Permission, ToolRegistry


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool(permission="admin")
def wipe_disk() -> str:
    """Erase everything."""
    return "wiped"


def test_selection_narrows_the_tools_each_turn() -> None:
    seen: list[list[str]] = []

    def only_named(messages: Sequence[Message], specs: Sequence[ToolSpec], model: Model):
        seen.append([s.name for s in specs])
        wanted = "multiply" if "times" in messages[-1].text else "add"
        return [s for s in specs if s.name == wanted]

    model = ScriptedModel([[tool_call("multiply", {"a": 2, "b": 3})], "6"])
    agent = Agent(model, [add, multiply], tool_selection=only_named)
    result = agent.run("2 times 3?")
    assert result.answer == "6"
    assert model.requests[0].tool_names == ("multiply",)
    assert seen[0] == ["add", "multiply"]  # the selection is offered every visible tool


async def test_async_selection_is_awaited() -> None:
    async def none_shown(messages, specs, model):
        return []

    model = ScriptedModel(["no tools"])
    result = await Agent(model, [add], tool_selection=none_shown).arun("hi")
    assert result.answer == "no tools"
    assert model.requests[0].tool_names == ()


def test_a_tool_hidden_by_selection_still_meets_the_permission_check() -> None:
    # The selection shows everything, but the caller runs at READ: the admin tool the
    # model calls anyway is refused at dispatch, not merely hidden.
    model = ScriptedModel([[tool_call("wipe_disk", {})], "done"])
    agent = Agent(
        model,
        [add, wipe_disk],
        dispatch=DispatchConfig(permission=Permission.READ),
        tool_selection=lambda messages, specs, model: list(specs),
    )
    result = agent.run("wipe")
    tool_message = result.messages[2]
    [outcome] = tool_message.tool_results_parts
    assert outcome.is_error and outcome.error_kind == "permission_denied"
    assert "wipe_disk" not in model.requests[0].tool_names


def test_tools_registered_between_turns_are_shown_on_the_next_turn() -> None:
    registry = ToolRegistry([add])

    @tool
    def register_multiply() -> str:
        """Make multiply available."""
        registry.register(multiply)
        return "ok"

    registry.register(register_multiply)
    model = ScriptedModel(
        [[tool_call("register_multiply", {})], [tool_call("multiply", {"a": 4, "b": 5})], "20"]
    )
    result = Agent(model, registry).run("4*5")
    assert result.answer == "20"
    assert "multiply" not in model.requests[0].tool_names
    assert "multiply" in model.requests[1].tool_names
