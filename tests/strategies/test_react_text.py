"""ReAct in text and Hermes <tool_call> for models without native tool calls: parsing of
well-formed, partial and malformed replies; errors go back to the model."""

from __future__ import annotations

import pytest

from loopwright import Limits, RunStop, ScriptedModel, tool
from loopwright.strategies import ReActText, parse_hermes, parse_react


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_react_loop_with_an_observation() -> None:
    model = ScriptedModel(
        [
            'Thought: I should add.\nAction: add\nAction Input: {"a": 2, "b": 3}',
            "Thought: I know it.\nFinal Answer: 5",
        ]
    )
    result = ReActText(model, [add]).run("What is 2 + 3?")
    assert result.ok and result.answer == "5" and result.calls == 2
    second = model.requests[1].tail[-1].text
    assert second.rstrip().endswith("Observation: 5")
    assert model.requests[0].settings.stop == ("\nObservation:",)


def test_a_malformed_reply_is_sent_back_as_the_observation() -> None:
    model = ScriptedModel(
        [
            "Thought: hmm\nAction: add\nAction Input: {a: 2}",
            'Action: add\nAction Input: {"a": 2, "b": 3}\nObservation: 99 (invented)',
            "Final Answer: 5",
        ]
    )
    result = ReActText(model, [add]).run("What is 2 + 3?")
    assert result.answer == "5"
    second = model.requests[1].tail[-1].text
    assert "The Action Input of 'add' is unusable: the JSON is malformed" in second
    third = model.requests[2].tail[-1].text
    assert "99 (invented)" not in third and third.rstrip().endswith("Observation: 5")


def test_unknown_tools_and_bad_arguments_are_observations_too() -> None:
    model = ScriptedModel(
        [
            'Action: mul\nAction Input: {"a": 1}',
            'Action: add\nAction Input: {"a": "x", "b": 1}',
            "Final Answer: ?",
        ]
    )
    ReActText(model, [add]).run("q")
    assert "not_found" in model.requests[1].tail[-1].text
    assert "invalid_arguments" in model.requests[2].tail[-1].text


def test_hermes_format() -> None:
    model = ScriptedModel(
        [
            'Let me call it.\n<tool_call>\n{"name": "add", "arguments": "{\\"a\\": 4, \\"b\\": 5}"}\n</tool_call>',
            "The sum is 9.",
        ]
    )
    result = ReActText(model, [add], format="hermes").run("What is 4 + 5?")
    assert result.answer == "The sum is 9."
    assert "<tool_response>\n9\n</tool_response>" in model.requests[1].tail[-1].text


def test_max_steps_bounds_a_model_that_never_answers() -> None:
    model = ScriptedModel(['Action: add\nAction Input: {"a": 1, "b": 1}'] * 5)
    result = ReActText(model, [add], max_steps=3).run("q")
    assert result.stop is RunStop.MAX_TURNS and result.calls == 3
    limited = ReActText(
        ScriptedModel(['Action: add\nAction Input: {"a": 1, "b": 1}'] * 5),
        [add],
        limits=Limits(max_turns=2),
    ).run("q")
    assert limited.stop is RunStop.MAX_TURNS and limited.calls == 2


@pytest.mark.parametrize(
    ("text", "tool", "arguments", "final"),
    [
        (
            'Thought: x\nAction: add\nAction Input: ```json\n{"a": 1, "b": 2}\n```',
            "add",
            {"a": 1, "b": 2},
            None,
        ),
        ("Thought: done\nFinal Answer: 42", None, None, "42"),
        (
            'Action: `add`\nAction Input: {"a": 1, "b": 2} trailing words',
            "add",
            {"a": 1, "b": 2},
            None,
        ),
    ],
)
def test_parse_react(text: str, tool: str | None, arguments: object, final: str | None) -> None:
    step = parse_react(text)
    assert (step.tool, step.arguments, step.final, step.error) == (tool, arguments, final, None)


def test_parse_react_partial_reply() -> None:
    assert "no 'Action Input:' line" in (parse_react("Thought: t\nAction: add").error or "")
    assert "neither an Action nor a Final Answer" in (parse_react("I think...").error or "")


def test_parse_hermes_unclosed_tag_and_garbage() -> None:
    step = parse_hermes('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}')
    assert step.tool == "add" and step.arguments == {"a": 1, "b": 2}
    assert "unusable" in (parse_hermes("<tool_call>{oops</tool_call>").error or "")
    assert parse_hermes("plain answer").final == "plain answer"
