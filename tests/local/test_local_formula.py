"""Calls held to what the request states (no model): ``strategies.embedded.formula``
and ``strategies.embedded.requested``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from loopwright.core.events import ModelEvent, ResponseDone, ToolCallDelta
from loopwright.core.messages import Message, StopReason, ToolCallPart, ToolResultPart, Usage
from loopwright.core.protocols import ModelRequest
from loopwright.providers import local_plan as pl
from loopwright.strategies.embedded import HoldToRequest, embedded_strategy
from loopwright.strategies.embedded.formula import (
    formula_plan,
    notations,
    plan_value,
    repaired_arguments,
    request_formula,
)
from loopwright.strategies.embedded.requested import file_names, held_to_file_name
from loopwright.tools.builtin import make_tools
from loopwright.tools.builtin.calculator import calculator

ARITH = [t.spec for t in make_tools(["add", "multiply", "divide"])]
CALC = [t.spec for t in make_tools(["calculator", "get_weather"])]


@pytest.mark.parametrize(
    ("request_text", "value"),
    [
        ("Subtract 199 from 1024.", 825),
        ("Take 45 away from 200.", 155),
        ("What is 17% of 250?", 42.5),
        ("What is the square root of 81?", 9),
        ("What is (9 * 3) + 6?", 33),
        ("What's 125 plus 378?", 503),
        ("Divide 144 by 12.", 12),
        ("How much is half of 50?", 25),
        ("What is 6 × 7?", 42),
        ("What's 13 x 7?", 91),
        ("How many seconds are in 15 minutes?", 900),
        ("What must be added to 37 to make 100?", 63),
        ("What's a quarter of 184?", 46),
        ("Add 19, 23 and 58.", 100),
        ("I have 250 euros and spend 85. How much is left?", 165),
        ("If I have 120 apples and give away 35, how many are left?", 85),
    ],
)
def test_the_request_states_a_formula(request_text: str, value: float) -> None:
    formula = request_formula(request_text)
    assert formula is not None
    assert calculator(formula.text) == value


@pytest.mark.parametrize(
    "request_text",
    [
        "What is the temperature in Paris?",
        "How many tests failed according to status.txt?",
        "Book a table for 4 at 7:30 pm",
        "What is 2 + 2 in room 4?",  # a number outside the span: ambiguous
        "Add 3 and 4, and 5 + 6.",  # two formulas
        "What's the weather in Paris on 2024-11-24?",  # a date
        "Call 555-1234 about order 11/24.",
    ],
)
def test_no_formula_when_the_request_does_not_state_exactly_one(request_text: str) -> None:
    assert request_formula(request_text) is None


@pytest.mark.parametrize(
    ("request_text", "wrote", "fixed"),
    [
        ("Subtract 199 from 1024.", "199 - 1024", "1024 - 199"),
        ("Take 45 away from 200.", "45 / 200", "200 - 45"),
        ("What is 17% of 250?", "17 / 250", "17 / 100 * 250"),
        ("What is the square root of 81?", "81 / 81", "81 ** (1 / 2)"),
        ("What is (7 - 2) * 9?", "7 - 2 * 9", "(7 - 2) * 9"),
    ],
)
def test_a_formula_argument_of_another_value_is_replaced(
    request_text: str, wrote: str, fixed: str
) -> None:
    formula = request_formula(request_text)
    assert formula is not None
    assert repaired_arguments({"expression": wrote}, formula) == ({"expression": fixed}, wrote)


def test_the_request_phrase_copied_as_the_expression_is_replaced() -> None:
    # "15 minutes" is the request's quantity without the conversion it asks for
    formula = request_formula("How many seconds are in 15 minutes?")
    assert formula is not None
    wrote = {"expression": "15 minutes"}
    assert repaired_arguments(wrote, formula) == ({"expression": "15 * 60"}, "15 minutes")
    # words the request does not hold are something else (a query, a name)
    assert repaired_arguments({"query": "SELECT 15 FROM minutes"}, formula) is None


def test_an_argument_of_the_same_value_or_not_arithmetic_is_kept() -> None:
    formula = request_formula("Take 45 away from 200.")
    assert formula is not None
    assert repaired_arguments({"expression": "200 - 45"}, formula) is None
    assert repaired_arguments({"expression": "take 45 away from 200"}, formula) is None
    assert repaired_arguments({"query": "SELECT 45 FROM t"}, formula) is None
    assert repaired_arguments({"city": "Paris"}, formula) is None


def test_a_plan_is_run_on_paper_with_the_tools_notation() -> None:
    known = notations(ARITH)
    assert {n.sign for n in known.values()} == {"+", "*", "/"}
    ref = {"$ref": "previous_result"}
    wrong = [
        {"tool": "multiply", "arguments": {"a": 9, "b": 6}},
        {"tool": "add", "arguments": {"a": ref, "b": 6}},
    ]
    assert plan_value(wrong, known) == 60
    formula = request_formula("What is 15 + (9 / 3)?")
    assert formula is not None
    rebuilt = formula_plan(formula, known)
    assert rebuilt is not None
    steps, text = rebuilt
    assert steps == [
        {"tool": "divide", "arguments": {"a": 9, "b": 3}},
        {"tool": "add", "arguments": {"a": 15, "b": ref}},
    ]
    assert text == "Plan: 9 / 3 = divide(9, 3), then 15 + result = add(15, result)"
    # two partial results, or a sign no tool writes: no plan
    for request_text in ("What is (3 + 5) * (2 + 1)?", "What is 8 - 2?"):
        formula = request_formula(request_text)
        assert formula is not None and formula_plan(formula, known) is None


class _Replies:
    """A stand-in model that replies with the given assistant message."""

    name = "stub"

    def __init__(self, message: Message) -> None:
        self.message = message

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        for i, call in enumerate(self.message.tool_calls):
            yield ToolCallDelta(i, call.id, call.name, call.raw_arguments, dict(call.arguments))
        yield ResponseDone(self.message, StopReason.TOOL_USE, Usage(), "stub")


def _call(name: str, args: dict[str, object], cid: str = "c1") -> ToolCallPart:
    return ToolCallPart(cid, name, args, json.dumps(args))


async def _events(model: HoldToRequest, request: ModelRequest) -> list[ModelEvent]:
    return [e async for e in model.stream(request)]


async def test_the_wrapper_replaces_the_call_and_its_streamed_delta() -> None:
    reply = Message("assistant", (_call("calculator", {"expression": "199 - 1024"}),))
    model = HoldToRequest(_Replies(reply))
    request = ModelRequest([Message.user("Subtract 199 from 1024.")], tools=CALC)
    delta, done = await _events(model, request)
    assert isinstance(delta, ToolCallDelta) and isinstance(done, ResponseDone)
    assert delta.partial_arguments == {"expression": "1024 - 199"}
    (call,) = done.message.tool_calls
    assert dict(call.arguments) == {"expression": "1024 - 199"}
    assert done.message.provider_meta["formula"] == [
        {"wrote": "199 - 1024", "formula": "1024 - 199"}
    ]
    # once a result came back, later calls are the model's own
    answered = [
        Message.user("Subtract 199 from 1024."),
        Message("assistant", (_call("calculator", {"expression": "1024 - 199"}),)),
        Message.tool_results([ToolResultPart("c1", "calculator", "825")]),
    ]
    events = await _events(model, ModelRequest(answered, tools=CALC))
    assert events[-1].message is reply  # type: ignore[union-attr]


async def test_a_plan_of_another_value_is_rebuilt_from_the_request() -> None:
    line = "Plan: 9 * 3 = multiply(9, 6), then result + 6 = add(result, 6)"
    steps = pl.parse_plan(line, ARITH)
    assert steps is not None
    reply = Message("assistant", (pl.plan_part(line, steps), _call("multiply", {"a": 9, "b": 6})))
    model = embedded_strategy(_Replies(reply))
    request = ModelRequest([Message.user("What is (9 * 3) + 6?")], tools=ARITH)
    done = [e async for e in model.stream(request)][-1]
    assert isinstance(done, ResponseDone)
    (call,) = done.message.tool_calls
    assert (call.name, dict(call.arguments)) == ("multiply", {"a": 9, "b": 3})
    assert pl.plan_text(done.message) == (
        "Plan: 9 * 3 = multiply(9, 3), then result + 6 = add(result, 6)"
    )
    # the plan runner reads the rebuilt steps
    history = [
        *request.messages,
        done.message,
        Message.tool_results([ToolResultPart(call.id, "multiply", "27")]),
    ]
    step = [e async for e in model.stream(ModelRequest(history, tools=ARITH))][-1]
    assert isinstance(step, ResponseDone)
    (second,) = step.message.tool_calls
    assert (second.name, dict(second.arguments)) == ("add", {"a": 27, "b": 6})


@pytest.mark.parametrize(
    ("request_text", "names"),
    [
        ("What does status.txt say about the build?", ["status.txt"]),
        ("Open notes/todo.txt and config.ini, please.", ["notes/todo.txt", "config.ini"]),
        ("What is 2.5 * 4? See example.internal", ["example.internal"]),
        ("What is 2.5 * 4?", []),
    ],
)
def test_file_names_of_a_request(request_text: str, names: list[str]) -> None:
    assert file_names(request_text) == names


def test_a_file_name_the_request_does_not_give_is_replaced_by_the_one_it_gives() -> None:
    reply = Message("assistant", (_call("read_file", {"path": "tests.txt"}),))
    fixed = held_to_file_name(reply, "How many tests failed according to status.txt?")
    (call,) = fixed.tool_calls
    assert dict(call.arguments) == {"path": "status.txt"}
    assert fixed.provider_meta["file_name"] == [{"wrote": "tests.txt", "file_name": "status.txt"}]
    # a name the request contains, another extension, or two candidates: kept
    for path, request_text in [
        ("status.txt", "What does status.txt say?"),
        ("build.log", "What does status.txt say about the build?"),
        ("build.txt", "Compare status.txt and notes.txt."),
        ("build.txt", "What does the build file say?"),
    ]:
        kept = Message("assistant", (_call("read_file", {"path": path}),))
        assert held_to_file_name(kept, request_text) is kept


async def test_the_strategy_holds_a_call_to_the_request_file_name() -> None:
    reply = Message("assistant", (_call("read_file", {"path": "build.txt"}),))
    model = embedded_strategy(_Replies(reply))
    request = ModelRequest([Message.user("What does status.txt say about the build?")])
    done = [e async for e in model.stream(request)][-1]
    assert isinstance(done, ResponseDone)
    assert dict(done.message.tool_calls[0].arguments) == {"path": "status.txt"}


def test_reading_a_megabyte_request_stays_linear() -> None:
    """A one-megabyte prompt (``tests/embedded``: "What is 2 + 2? xxx...") timed the
    CLI out: the first file-name pattern backtracked over the run of letters."""
    import time

    request = "What is 2 + 2? " + "x" * 1_000_000 + " a.txt"
    start = time.process_time()
    assert file_names(request) == ["a.txt"] and request_formula(request) is None
    reply = Message("assistant", (_call("read_file", {"path": "b.txt"}),))
    assert dict(held_to_file_name(reply, request).tool_calls[0].arguments) == {"path": "a.txt"}
    assert time.process_time() - start < 2.0


async def test_a_worded_chain_is_planned_and_its_formula_quoted_by_the_answer() -> None:
    """'Add 12 and 8, then divide by 4.' planned ``multiply(result, 4)`` for the second
    step, and the answer (no formula argument to quote) was '(250 + 375) / 2 ...'."""
    from loopwright.providers import local_answer as la

    formula = request_formula("Add 12 and 8, then divide by 4.")
    assert formula is not None and formula.worded and formula.text == "(12 + 8) / 4"
    symbolic = request_formula("What is (12 + 8) / 4?")
    assert symbolic is not None and not symbolic.worded
    line = "Plan: 12 + 8 = add(12, 8), then result / 4 = multiply(result, 4)"
    steps = pl.parse_plan(line, ARITH)
    assert steps is not None
    reply = Message("assistant", (pl.plan_part(line, steps), _call("add", {"a": 12, "b": 8})))
    model = embedded_strategy(_Replies(reply))
    question = Message.user("Add 12 and 8, then divide by 4.")
    done = [e async for e in model.stream(ModelRequest([question], tools=ARITH))][-1]
    assert isinstance(done, ResponseDone)
    assert done.message.provider_meta["request_formula"] == "(12 + 8) / 4"
    assert pl.plan_text(done.message) == (
        "Plan: 12 + 8 = add(12, 8), then result / 4 = divide(result, 4)"
    )
    history = [
        question,
        done.message,
        Message.tool_results([ToolResultPart("c1", "add", "20")]),
        Message("assistant", (_call("divide", {"a": 20, "b": 4}, "c2"),)),
        Message.tool_results([ToolResultPart("c2", "divide", "5")]),
    ]
    assert la.grounding(history).formulas == ("(12 + 8) / 4",)


@pytest.mark.parametrize(
    ("request_text", "formula"),
    [
        ("What is seven plus five?", "7 + 5"),
        ("Add twenty-five and 17.", "25 + 17"),
        ("What is twelve times three?", "12 * 3"),
        # number words without an operation state no formula
        ("What is the weather for two days in Paris?", None),
    ],
)
def test_number_words_state_a_formula(request_text: str, formula: str | None) -> None:
    found = request_formula(request_text)
    assert (found.text if found is not None else None) == formula


def test_a_call_on_number_words_is_held_to_them() -> None:
    found = request_formula("What is seven plus five?")
    assert found is not None
    assert repaired_arguments({"expression": "(7 + 5) * 7"}, found) == (
        {"expression": "7 + 5"},
        "(7 + 5) * 7",
    )
