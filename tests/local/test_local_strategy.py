"""The embedded model's strategy (no model): plans run step by step through the Model
protocol, and answers are checked against the tool results."""

from __future__ import annotations

import json

import pytest

from loopwright.core.events import ResponseDone, TextDelta, ToolCallDelta
from loopwright.core.messages import Message, StopReason, ToolCallPart, ToolResultPart
from loopwright.core.protocols import ModelRequest, ModelSettings
from loopwright.providers import local_plan as pl
from loopwright.providers.scripted import FunctionModel
from loopwright.strategies.embedded import FollowPlan, GroundedAnswers, progress, ungrounded
from loopwright.strategies.embedded.grounded import (
    NO_TOOL_FALLBACK,
    Turn,
    current_turn,
    degenerate,
    fallback_text,
    grounded_head,
)
from loopwright.tools.builtin import make_tools

ARITH = [t.spec for t in make_tools(["add", "multiply", "divide"])]
LINE = "Plan: 3 + 5 = add(3, 5), then result * 8 = multiply(result, 8)"


def _call(name: str, args: dict, cid: str) -> ToolCallPart:
    return ToolCallPart(cid, name, args, json.dumps(args))


def _planned_history() -> list[Message]:
    steps = pl.parse_plan(LINE, ARITH)
    assert steps is not None
    return [
        Message.user("What is (3 + 5) * 8?"),
        Message("assistant", (pl.plan_part(LINE, steps), _call("add", {"a": 3, "b": 5}, "c1"))),
        Message.tool_results([ToolResultPart("c1", "add", "8")]),
    ]


def test_progress_reads_the_provider_plan_and_substitutes_results() -> None:
    history = _planned_history()
    state = progress(history)
    assert state is not None and state.done == 1
    assert state.next_step is not None
    assert (state.next_step.tool, state.next_step.arguments) == ("multiply", {"a": 8, "b": 8})
    history += [
        Message("assistant", (_call("multiply", {"a": 8, "b": 8}, "c2"),)),
        Message.tool_results([ToolResultPart("c2", "multiply", "64")]),
    ]
    done = progress(history)
    assert done is not None and done.next_step is None and done.done == 2
    assert progress([*history, Message.user("and 2 + 2?")]) is None


@pytest.mark.parametrize(
    ("result", "value"),
    [("8", 8), (" 2.5 ", 2.5), ("sunny, 21 C", "sunny, 21 C"), ('{"x": 1}', '{"x": 1}')],
)
def test_the_previous_result_enters_the_next_call_as_its_json_value(
    result: str, value: object
) -> None:
    history = [*_planned_history()[:2], Message.tool_results([ToolResultPart("c1", "add", result)])]
    state = progress(history)
    assert state is not None and state.next_step is not None
    assert state.next_step.arguments == {"a": value, "b": 8}


def test_a_failed_step_abandons_the_plan() -> None:
    failed = ToolResultPart("c1", "add", "boom", True, "permanent")
    history = [*_planned_history()[:2], Message.tool_results([failed])]
    assert progress(history) is None


class _Recorder:
    """A stand-in inner model recording what it was asked."""

    def __init__(self, reply: str = "(3 + 5) * 8 = 64.") -> None:
        self.requests: list[ModelRequest] = []
        self.reply = reply

    def __call__(self, messages: object, request: ModelRequest) -> str:
        self.requests.append(request)
        return self.reply


async def _events(model, request):  # type: ignore[no-untyped-def]
    return [e async for e in model.stream(request)]


async def test_follow_plan_emits_the_next_step_without_calling_the_model() -> None:
    inner = _Recorder()
    model = FollowPlan(FunctionModel(inner))
    events = await _events(model, ModelRequest(_planned_history(), tools=ARITH))
    delta, done = events
    assert isinstance(delta, ToolCallDelta) and isinstance(done, ResponseDone)
    (call,) = done.message.tool_calls
    assert (call.name, dict(call.arguments)) == ("multiply", {"a": 8, "b": 8})
    assert inner.requests == []


async def test_follow_plan_asks_for_the_answer_only_once_every_step_ran() -> None:
    inner = _Recorder()
    history = [
        *_planned_history(),
        Message("assistant", (_call("multiply", {"a": 8, "b": 8}, "c2"),)),
        Message.tool_results([ToolResultPart("c2", "multiply", "64")]),
    ]
    await _events(FollowPlan(FunctionModel(inner)), ModelRequest(history, tools=ARITH))
    (asked,) = inner.requests
    assert asked.settings.tool_choice == "none"


async def test_follow_plan_passes_through_when_there_is_no_plan() -> None:
    inner = _Recorder()
    request = ModelRequest([Message.user("hi")], tools=ARITH)
    await _events(FollowPlan(FunctionModel(inner)), request)
    assert inner.requests[0] is request


def _turn(question: str, *results: str) -> Turn:
    parts = [Message.user(question)] + [
        Message.tool_results([ToolResultPart(f"c{i}", "t", r)]) for i, r in enumerate(results)
    ]
    return current_turn(parts)


WEATHER = '{"city": "Cairo", "temperature_c": 19, "humidity_pct": 35, "source": "demo data, not a real forecast"}'

SNOW = '{"city": "Tokyo", "condition": "snow", "source": "demo data, not a real forecast"}'
RAIN = '{"city": "Lima", "condition": "rain", "source": "demo data, not a real forecast"}'
TABLE = '{"columns": ["city"], "rows": [["Oslo"]], "row_count": 1, "truncated": false}'
PRICES = '{"columns": ["price"], "rows": [[40], [85], [240]]}'
EMPTY = '{"columns": ["name", "price", "stock"], "rows": []}'
NAMED = '{"columns": ["name", "price"], "rows": [["lamp", 40], ["desk", 240]]}'
PEOPLE = '{"columns": ["name", "city"], "rows": [["Ana", "Berlin"], ["Dana", "Oslo"]]}'


@pytest.mark.parametrize(
    ("answer", "question", "results", "why"),
    [
        ("45 * 12 = 540.", "What is 45 * 12?", ["540"], None),
        ("It is 19 °C in Cairo (demo data).", "Temperature in Cairo?", [WEATHER], None),
        ("45 * 12", "What is 45 * 12?", ["540"], "states no value"),
        ("It is 72 degrees.", "How hot is Cairo?", [WEATHER], "not in any result"),
        ("It is 19 degrees. The source is a real forecast.", "Cairo?", [WEATHER], "denies"),
        ("It is 19, 19, 19, 19, 19, 19.", "Cairo?", [WEATHER], "repeats"),
        ("", "q", ["1"], "empty"),
        ("The file says hello world", "What does a.txt say?", ["hello world"], None),
        ("What does a.txt say", "What does a.txt say?", ["hi"], "echoes"),
        ("It is 19 degrees and not a real forecast.", "Cairo?", [WEATHER], None),
        ("12.0 is the answer.", "What is 6 + 6?", ["12"], None),
        # A word of the result the question does not use is a stated value (the
        # result's only number is the row count).
        ("Dana lives in Oslo.", "Which city does Dana live in?", [TABLE], None),
        ("Dana lives in a city.", "Which city does Dana live in?", [TABLE], "states no value"),
        ("It is cloudy in Lima.", "Is it raining in Lima?", [WEATHER], "states no value"),
        # A condition stated inflected is stated ("snow" -> "snowing").
        ("The weather in Tokyo is snowing.", "What's the weather in Tokyo?", [SNOW], None),
        ("It is rainy in Lima.", "What's the weather in Lima?", [RAIN], None),
        ("The weather in Tokyo is nice.", "What's the weather in Tokyo?", [SNOW], "no value"),
        ("The host is example.internal.", "What is the host?", ["host = example.internal"], None),
        # Several rows and no name: which row is the desk's the result does not say.
        ("The price of the desk is 40.", "What is the price of the desk?", [PRICES], "desk"),
        ("The price of the desk is 240.", "What is the price of the desk?", [NAMED], None),
        ("The prices are 40, 85 and 240.", "What is the price of the desk?", [PRICES], None),
        ("Dana lives in Oslo.", "Which city does Dana live in?", [TABLE], None),
        # The question names Dana's row; the answer names only Ana's.
        ("Ana is in Berlin.", "Which city does Dana live in?", [PEOPLE], "'ana'"),
        ("Dana lives in Oslo.", "Which city does Dana live in?", [PEOPLE], None),
        ("The lamps cost 40.", "What do the lamps cost?", [NAMED], None),
        ("The lamps cost 40.", "What do the lamps cost?", [PRICES], "'lamps'"),
        # Every row stated: a summary, not a pick.
        ("Ana and Dana live in Berlin and Oslo.", "Who lives where?", [PEOPLE], None),
        # An empty row set admits no number: the model pads the value's place.
        (
            "The desk is priced at $   and the price is $   .",
            "What is the desk's price?",
            [EMPTY],
            "blank",
        ),
        ("The desk costs $240.", "What is the desk's price?", [NAMED], None),
        ("The desk costs $ 240.", "What is the desk's price?", [NAMED], None),
        ("No product is named desk.", "What is the desk's price?", [EMPTY], None),
    ],
)
def test_ungrounded_rules(answer: str, question: str, results: list[str], why: str | None) -> None:
    reason = ungrounded(answer, _turn(question, *results))
    if why is None:
        assert reason is None
    else:
        assert reason is not None and why in reason


async def test_grounded_answers_replace_an_invented_answer_with_the_result() -> None:
    history = [
        Message.user("What is 45 * 12?"),
        Message("assistant", (_call("calculator", {"expression": "45 * 12"}, "c1"),)),
        Message.tool_results([ToolResultPart("c1", "calculator", "540")]),
    ]
    model = GroundedAnswers(FunctionModel(_Recorder("45 * 12")))
    events = await _events(model, ModelRequest(history))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.stop_reason is StopReason.FINAL_ANSWER
    assert done.message.text == text == fallback_text(current_turn(history))
    assert "calculator returned: 540" in text and "reliable" in text
    assert model.replaced == 1


async def test_grounded_answers_keep_a_grounded_answer_and_ignore_first_turns() -> None:
    history = [
        Message.user("What is 45 * 12?"),
        Message("assistant", (_call("calculator", {"expression": "45 * 12"}, "c1"),)),
        Message.tool_results([ToolResultPart("c1", "calculator", "540")]),
    ]
    model = GroundedAnswers(FunctionModel(_Recorder("45 * 12 = 540.")))
    events = await _events(model, ModelRequest(history))
    assert events[-1].message.text == "45 * 12 = 540."
    first = await _events(model, ModelRequest([Message.user("hi")], settings=ModelSettings()))
    assert first[-1].message.text == "45 * 12 = 540."  # no results: nothing to check
    assert model.checked == 1 and model.replaced == 0


def test_an_answer_after_only_failed_calls_is_replaced_by_the_failure() -> None:
    """'12 squared' is not an expression: the calculator failed and the model answered
    '12 squared is 12 squared.' The user sees the failure instead."""
    history = [
        Message.user("What is 12 squared?"),
        Message.tool_results(
            [ToolResultPart("c1", "calculator", "invalid syntax", True, "invalid_arguments")]
        ),
    ]
    turn = current_turn(history)
    assert ungrounded("12 squared is 12 squared.", turn) == "every tool call failed"
    assert "calculator failed: invalid syntax" in fallback_text(turn)


async def test_an_answer_going_wrong_after_a_grounded_sentence_is_cut_to_it() -> None:
    """'The price of the desk is 240. The price of the table is 240.' repeats itself;
    its first sentence states the result and is what the user gets (not the fallback)."""
    rows = '{"columns": ["name", "price"], "rows": [["lamp", 40], ["chair", 85], ["desk", 240]]}'
    query = {"query": "SELECT name, price FROM products"}
    history = [
        Message.user("What is the price of the desk in the products table?"),
        Message("assistant", (_call("sql_query", query, "c1"),)),
        Message.tool_results([ToolResultPart("c1", "sql_query", rows)]),
    ]
    said = "The price of the desk is 240. The price of the table is 240."
    model = GroundedAnswers(FunctionModel(_Recorder(said)))
    events = await _events(model, ModelRequest(history))
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.message.text == "The price of the desk is 240."
    assert done.message.provider_meta["grounding_trimmed"]["answer"] == said
    assert "grounding" not in done.message.provider_meta
    assert model.trimmed == 1 and model.replaced == 0


@pytest.mark.parametrize(
    ("answer", "head"),
    [
        ("There are 3 lamps. There are 7 lamps.", "There are 3 lamps."),  # 7: invented
        ("The lamps are 3. The lamps are 3.", "The lamps are 3."),  # a number ends it
        ("1. Buy milk 2. Call the plumber. It is 9.", None),  # only a list item's number
        ("It is 9 lamps.", None),  # one sentence: nothing to cut
        ("Lamps are 9. There are 3 lamps.", None),  # the first sentence is wrong too
    ],
)
def test_grounded_head_keeps_only_leading_sentences_that_pass(
    answer: str, head: str | None
) -> None:
    assert grounded_head(answer, _turn("How many lamps?", '{"lamps": 3}')) == head


@pytest.mark.parametrize(
    ("answer", "question", "why"),
    [
        ("Yes, it is raining in Lima, it is 12 degrees.", "Is it raining in Lima?", "raining"),
        ("No, it is sunny in Lima, 12 degrees.", "Is it raining in Lima?", None),
        ("Yes, it is sunny in Lima, 12 degrees.", "Is it sunny in Lima?", None),
        ("Yes, it is sunny in Lima. It is raining.", "Is it raining in Lima?", None),
    ],
)
def test_yes_to_a_question_word_no_result_states_is_not_grounded(
    answer: str, question: str, why: str | None
) -> None:
    result = '{"city": "Lima", "temperature_c": 12, "condition": "sunny"}'
    reason = ungrounded(answer, _turn(question, result))
    assert (reason is None) if why is None else (reason is not None and why in reason)


async def test_an_answer_may_repeat_what_the_tool_description_names() -> None:
    """'There are 4 customers in the customers table.' after ``SELECT *`` (several
    rows): "table" is in no row nor the query, but the tool works on database tables."""
    from loopwright.core.tools import ToolSpec

    rows = '{"columns": ["id", "name"], "rows": [[1, "Ana"], [2, "Bo"], [3, "Chen"], [4, "Dana"]], "row_count": 4}'
    history = [
        Message.user("How many customers are in the customers table?"),
        Message("assistant", (_call("sql_query", {"query": "SELECT * FROM customers"}, "c1"),)),
        Message.tool_results([ToolResultPart("c1", "sql_query", rows)]),
    ]
    said = "There are 4 customers in the customers table."
    assert "table" in (ungrounded(said, current_turn(history)) or "")
    spec = ToolSpec("sql_query", "Query the database tables with one SELECT.", {"type": "object"})
    model = GroundedAnswers(FunctionModel(_Recorder(said)))
    events = await _events(model, ModelRequest(history, tools=[spec]))
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.message.text == said


def test_an_answer_naming_another_list_item_first_is_not_grounded() -> None:
    """'What is the second item in todo.txt?' answered 'The second item in todo-txt is
    buy milk' (the first item)."""
    todo = "1. Buy milk\n2. Call the plumber\n3. Renew the passport\n"
    turn = _turn("What is the second item in todo.txt?", todo)
    why = ungrounded("The second item in todo-txt is buy milk.", turn)
    assert why is not None and "'buy'" in why
    assert ungrounded("The second item is: call the plumber.", turn) is None
    assert ungrounded("Call the plumber, then renew the passport.", turn) is None
    first = _turn("Read todo.txt and tell me the first item.", todo)
    assert ungrounded("Buy milk, then call the plumber.", first) is None


def test_numbers_of_a_formula_the_calls_sent_are_grounded() -> None:
    history = [
        Message.user("What is the square root of 144?"),
        Message("assistant", (_call("calculator", {"expression": "144 ** (1 / 2)"}, "c1"),)),
        Message.tool_results([ToolResultPart("c1", "calculator", "12")]),
    ]
    turn = current_turn(history)
    assert ungrounded("144 ** (1 / 2) = 12.", turn) is None
    assert ungrounded("144 ** (1 / 3) = 12.", turn) is not None


@pytest.mark.parametrize(
    ("question", "clause"),
    [
        ("What color are roses in poem.txt?", "Roses are red."),
        ("What color are violets according to poem.txt?", "Violets are blue."),
        ("What does poem.txt say?", None),  # the whole is asked for
    ],
)
async def test_a_whole_text_result_written_out_is_cut_to_the_asked_clause(
    question: str, clause: str | None
) -> None:
    poem = "Roses are red, violets are blue."
    history = [
        Message.user(question),
        Message("assistant", (_call("read_file", {"path": "poem.txt"}, "c1"),)),
        Message.tool_results([ToolResultPart("c1", "read_file", poem)]),
    ]
    model = GroundedAnswers(FunctionModel(_Recorder(poem)))
    done = (await _events(model, ModelRequest(history)))[-1]
    assert isinstance(done, ResponseDone)
    assert done.message.text == (clause or poem)
    if clause is not None:
        assert done.message.provider_meta["grounding_trimmed"]["answer"] == poem


@pytest.mark.parametrize(
    ("question", "said", "kept"),
    [
        (
            "What is the second item in todo.txt?",
            "Buy milk, call the plumber, and renew the passport.",
            "Call the plumber.",
        ),
        (
            "What is the last item on todo.txt?",
            "Buy milk, call the plumber, and renew the passport.",
            "Renew the passport.",
        ),
        # each clause claims an act done that the list only names: the fallback
        (
            "What is the last item on todo.txt?",
            "I bought milk, I called the plumber, and I renewed the passport.",
            None,
        ),
        # a clause mixing two items: nothing to cut to, the fallback shows the list
        (
            "What is the third item in todo.txt?",
            "I bought milk, call the plumber, and the plumber replaced the passport.",
            None,
        ),
    ],
)
async def test_an_answer_going_through_the_list_is_cut_to_the_asked_item(
    question: str, said: str, kept: str | None
) -> None:
    todo = "1. Buy milk\n2. Call the plumber\n3. Renew the passport\n"
    history = [
        Message.user(question),
        Message("assistant", (_call("read_file", {"path": "todo.txt"}, "c1"),)),
        Message.tool_results([ToolResultPart("c1", "read_file", todo)]),
    ]
    model = GroundedAnswers(FunctionModel(_Recorder(said)))
    done = (await _events(model, ModelRequest(history)))[-1]
    assert isinstance(done, ResponseDone)
    if kept is None:
        assert "grounding" in done.message.provider_meta
    else:
        assert done.message.text == kept
        assert done.message.provider_meta["grounding_trimmed"]["answer"] == said


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("There are ': ics, ics, and ics.", "'ics'"),
        ("World War II ended in  ivi ivi iva ivi ivo ivi ivas", "'ivi'"),
        ("", "empty"),
        ("The cat and the dog and the bird.", None),  # 'the' three times, far apart
        ("Paris, France.", None),
        ("I cannot answer that with the tools I have.", None),
    ],
)
def test_degenerate_answers_without_tool_results(answer: str, why: str | None) -> None:
    reason = degenerate(answer)
    if why is None:
        assert reason is None
    else:
        assert reason is not None and why in reason


async def test_a_runaway_answer_without_tool_results_is_replaced_by_a_plain_statement() -> None:
    said = "There are ': ics, ics, and ics."
    model = GroundedAnswers(FunctionModel(_Recorder(said)))
    events = await _events(model, ModelRequest([Message.user("How many customers live here?")]))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.stop_reason is StopReason.FINAL_ANSWER
    assert done.message.text == text == NO_TOOL_FALLBACK
    assert done.message.provider_meta["grounding"]["answer"] == said
    assert model.replaced == 1 and model.checked == 0
