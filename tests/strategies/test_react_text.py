"""ReAct in text and Hermes <tool_call> for models without native tool calls: parsing of
well-formed, partial and malformed replies; errors go back to the model."""

from __future__ import annotations

import pytest

from loopwright import FunctionModel, Limits, RunStop, ScriptedModel, tool
from loopwright.strategies import ReActText, parse_hermes, parse_react
from loopwright.strategies.react_text import transcript_turns, without_echo


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
    # the move and its observation are turns of their own after the question
    turns = [(m.role, m.text) for m in model.requests[1].tail[-3:]]
    assert turns == [
        ("user", "Question: What is 2 + 3?"),
        ("assistant", 'Thought: I should add.\nAction: add\nAction Input: {"a": 2, "b": 3}'),
        ("user", "Observation: 5"),
    ]
    assert model.requests[0].settings.stop == ("\nObservation:", "\nQuestion:")


def test_the_worked_example_comes_as_earlier_turns() -> None:
    model = ScriptedModel(["Final Answer: 5"], record_tail=10)
    ReActText(model, [add]).run("What is 2 + 3?")
    request = model.requests[0]
    roles = [m.role for m in request.tail]
    assert request.message_count == 5 and roles == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    first = request.tail[0].text
    assert 'add: Add two integers. Arguments: {"a": "integer", "b": "integer"}' in first
    assert first.endswith("Question: What is 12 + 30?")
    assert request.tail[2].text == "Observation: 42"
    assert request.tail[3].text.endswith("Final Answer: 42")
    own = ScriptedModel(["Final Answer: 5"])
    ReActText(own, [add], example=None).run("What is 2 + 3?")
    assert own.requests[0].message_count == 1
    assert own.requests[0].tail[0].text.endswith("\n\nQuestion: What is 2 + 3?")


def test_transcript_turns() -> None:
    text = "Try this:\nQuestion: q\nThought: t\nAction: a\nAction Input: {}\nObservation: o\nmore o\nFinal Answer: f"
    assert transcript_turns(text) == [
        ("user", "Try this:\nQuestion: q"),
        ("assistant", "Thought: t\nAction: a\nAction Input: {}"),
        ("user", "Observation: o\nmore o"),
        ("assistant", "Final Answer: f"),
    ]


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
    third = model.requests[2].tail
    assert all("99 (invented)" not in m.text for m in third)
    assert third[-1].text == "Observation: 5"


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
    model = ScriptedModel([f'Action: add\nAction Input: {{"a": 1, "b": {n}}}' for n in range(5)])
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


def test_a_reply_that_repeats_the_prompt_is_parsed_after_the_repetition() -> None:
    # small models often repeat the prompt first; the repeated instructions must not be
    # read as the model's move, and the scratchpad keeps the call, not the repetition
    calls = iter(["echo-then-act", "Thought: done\nFinal Answer: 5"])

    def reply(messages, request):  # type: ignore[no-untyped-def]
        if next(calls) == "echo-then-act":
            prompt = messages[0].text
            return prompt[:300] + ' I add.\nAction: add\nAction Input: {"a": 2, "b": 3}'
        return "Thought: done\nFinal Answer: 5"

    model = FunctionModel(reply, record_tail=10)
    result = ReActText(model, [add], example=None).run("What is 2 + 3?")
    assert result.ok and result.answer == "5"
    second = model.requests[1].tail
    assert "".join(m.text for m in second).count("Answer the question as well as you can") == 1
    assert [m.text for m in second[-2:]] == [
        'Thought: I should use a tool.\nAction: add\nAction Input: {"a": 2, "b": 3}',
        "Observation: 5",
    ]


def test_an_echo_after_a_chat_template_marker_is_skipped() -> None:
    prompt = "Answer the question as well as you can.\nQuestion: q"
    assert without_echo("<|im_start|>user\n" + prompt + "\nThought: go", prompt) == (
        "\nThought: go"
    )


def test_an_invented_next_question_is_not_part_of_the_answer() -> None:
    step = parse_react(
        "Thought: I know the final answer\nFinal Answer: 391\n\nQuestion: What is 1 + 1?"
    )
    assert step.final == "391"


def test_a_repeated_call_is_answered_from_its_result_then_ends_the_run() -> None:
    act = 'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 3}'
    model = ScriptedModel([act, act, act])
    events: list[object] = []
    result = ReActText(model, [add]).run("What is 2 + 3?", on_event=events.append)
    assert result.ok and result.answer == "5" and result.calls == 3
    assert result.data["answered_from"] == "last_observation"
    assert "you already made this call" in model.requests[2].tail[-1].text
    ran = [e for e in events if type(e).__name__ == "ToolCallFinished"]
    assert len(ran) == 1  # the tool ran once


def test_without_echo() -> None:
    prompt = "Answer the question as well as you can.\nQuestion: q\nThought:"
    assert without_echo(prompt + " go", prompt) == " go"
    assert without_echo(prompt[:30], prompt) == ""
    assert without_echo("Thought: short reply", prompt) == "Thought: short reply"
