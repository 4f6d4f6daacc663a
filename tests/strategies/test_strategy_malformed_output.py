"""Strategies fed malformed model output (generated with hypothesis): the parsers of
Self-Refine, CoT-SC and ToT never raise on a reply, and what they read stays faithful
(a score stays in 0-1, distinct numeric answers stay distinct votes)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright import FunctionModel, ModelRequest
from loopwright.core.messages import Message
from loopwright.prompts import OutputParseError
from loopwright.strategies import SelfRefine
from loopwright.strategies.react_text import parse_hermes, parse_react
from loopwright.strategies.self_consistency import extract_answer, normalise
from loopwright.strategies.self_refine import parse_feedback
from loopwright.strategies.tot import parse_vote

digits = st.text("0123456789", min_size=1, max_size=6000)


@settings(max_examples=200, deadline=None)
@given(value=digits, scale=digits, noise=st.text(max_size=40))
def test_a_score_of_any_numbers_is_read_in_range_or_not_at_all(
    value: str, scale: str, noise: str
) -> None:
    feedback = parse_feedback(f"{noise}\nScore: {value}/{scale}\n")
    assert feedback.score is None or 0.0 <= feedback.score <= 1.0
    if set(scale) == {"0"}:
        assert feedback.score is None  # "/0" is no scale


def test_self_refine_survives_a_critic_scoring_out_of_zero() -> None:
    def reply(messages: Sequence[Message], request: ModelRequest) -> str:
        if "Give specific, actionable feedback" in messages[-1].text:
            return "Fine.\nScore: 7/0"
        return "Hello"

    result = SelfRefine(FunctionModel(reply), max_rounds=1).run("Greet the user")
    assert result.ok and result.answer == "Hello"


@settings(max_examples=200, deadline=None)
@given(a=st.integers(min_value=-(10**60), max_value=10**60), b=st.integers())
def test_distinct_whole_numbers_stay_distinct_answers(a: int, b: int) -> None:
    assert normalise(str(a)) == str(a) == normalise(f"{a}.0") == normalise(f" {a}. ")
    if a != b:
        assert extract_answer(f"Answer: {a}") != extract_answer(f"Answer: {b}")


def test_a_number_too_long_for_int_conversion_is_kept_as_written() -> None:
    long = "7" * 5000
    assert normalise(long) == long and normalise(long + ".0") == long


@settings(max_examples=200, deadline=None)
@given(number=digits, choices=st.integers(min_value=1, max_value=10))
def test_a_vote_for_any_number_is_a_choice_or_none(number: str, choices: int) -> None:
    index = parse_vote(f"The best choice is {number}", choices)
    assert index is None or 0 <= index < choices


json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=5), json_values, max_size=4))
def test_text_tool_calls_carry_only_strict_json(arguments: dict) -> None:
    # NaN / Infinity are Python's JSON extensions: a call carrying them could not be
    # stored in a checkpoint (PostgreSQL's JSON refuses them) nor sent to a provider
    written = json.dumps(arguments)  # allow_nan: the model may write NaN
    for step in (
        parse_react(f"Thought: go\nAction: tool\nAction Input: {written}"),
        parse_hermes(f'<tool_call>{{"name": "tool", "arguments": {written}}}</tool_call>'),
    ):
        if step.error is None:
            assert step.arguments == arguments
            json.dumps(step.arguments, allow_nan=False)
        else:
            assert "NaN" in step.error or "Infinity" in step.error


def test_a_parser_that_returns_no_string_is_named() -> None:
    # was: the int became the run's "answer" (StrategyResult.answer is a str)
    from loopwright.core.errors import UserError
    from loopwright.strategies import SelfConsistency

    model = FunctionModel(lambda messages, request: "Answer: 42")
    voting = SelfConsistency(model, k=3, parser=lambda text: 42)  # type: ignore[arg-type, return-value]
    with pytest.raises(UserError, match=r"SelfConsistency\(parser=...\) returned 42"):
        voting.run("q")


def test_json_nested_too_deep_for_python_is_a_malformed_reply() -> None:
    # was: RecursionError out of the parser, ending the run with a traceback
    from loopwright.prompts import load_pattern
    from loopwright.strategies.plan_execute import PlanAndExecute, PlanRun, PlanStep

    deep = "[" * 200_000
    assert parse_react(f'Action: tool\nAction Input: {{"a": {deep}').error is not None
    assert parse_hermes(f'<tool_call>{{"name": "tool", "arguments": {{"a": {deep}').error
    with pytest.raises(OutputParseError):
        load_pattern("planner").parse(f'{{"action": "plan", "plan": {deep}')
    run = PlanRun("q", [PlanStep(1, "a step", "tool", {"x": 1})])
    PlanAndExecute._modify(run, 1, f'{{"x": {deep}')  # not JSON it can read: no change
    assert run.steps[0].tool_input == {"x": 1}


def test_a_plan_holding_nan_is_a_malformed_reply() -> None:
    # NaN / Infinity are Python's JSON extensions: a plan step's input holding one was
    # accepted, and no checkpoint in PostgreSQL nor provider payload can carry it
    from loopwright.prompts import load_pattern

    reply = (
        '{"action": "plan", "plan": [{"step_id": 1, "description": "d", "tool_name": "t",'
        ' "tool_input": {"x": NaN}, "depends_on": []}]}'
    )
    with pytest.raises(OutputParseError, match="NaN"):
        load_pattern("planner").parse(reply, allowed_tools=["t"])
