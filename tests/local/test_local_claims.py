"""What an answer claims beyond quoting the results (``strategies.embedded.claims``),
checked through ``ungrounded`` and the answer wrapper, on answers the embedded model
wrote."""

from __future__ import annotations

import json

import pytest

from loopwright.core.messages import Message, ToolResultPart
from loopwright.core.protocols import ModelRequest
from loopwright.providers.scripted import FunctionModel
from loopwright.strategies.embedded import GroundedAnswers, ungrounded
from loopwright.strategies.embedded.claims import (
    first_statement,
    mislabeled_number,
    restated_value,
    unstated_action,
    unstated_thing,
)
from loopwright.strategies.embedded.grounded import Turn, current_turn

MANILA = json.dumps(
    {
        "city": "Manila",
        "temperature_c": 23,
        "condition": "foggy",
        "humidity_pct": 63,
        "wind_kph": 38,
        "source": "demo data, not a real forecast",
    }
)
BEIJING = json.dumps(
    {
        "city": "Beijing",
        "temperature_c": 26,
        "condition": "rain",
        "humidity_pct": 62,
        "wind_kph": 30,
        "source": "demo data, not a real forecast",
    }
)
CHAIR = json.dumps({"columns": ["name", "price", "stock"], "rows": [["chair", 85, 12]]})
PRODUCTS = json.dumps(
    {
        "columns": ["name", "price", "stock"],
        "rows": [["lamp", 40, 3], ["chair", 85, 12], ["desk", 240, 5]],
    }
)
PARIS = json.dumps({"columns": ["id", "name", "city"], "rows": [[2, "Bo", "Paris"]]})
ORDER = json.dumps({"columns": ["total"], "rows": [[50.0]]})
TODO = "1. Buy milk\n2. Call the plumber\n3. Renew the passport\n"


def _turn(question: str, *results: str) -> Turn:
    parts = [Message.user(question)] + [
        Message.tool_results([ToolResultPart(f"c{i}", "t", r)]) for i, r in enumerate(results)
    ]
    return current_turn(parts)


@pytest.mark.parametrize(
    ("answer", "question", "result", "wrong"),
    [
        # the number after "cost" is the chair's stock; "cost" names no column
        (
            "The chair cost is $12. The price is $85 and the stock is 12.",
            "How much does the chair cost? Check the products table.",
            CHAIR,
            True,
        ),
        ("The price is $85 and the stock is 12.", "How much is the chair?", CHAIR, False),
        ("The stock of the chair is 85.", "How many chairs are in stock?", PRODUCTS, True),
        ("There are 12 chairs in stock.", "How many chairs are in stock?", PRODUCTS, False),
        ("The product named chair has 12 in stock.", "Chairs in stock?", PRODUCTS, False),
        ("The price of the desk is $240.", "What is the desk's price?", PRODUCTS, False),
        # the question's own number is restated ("order 5"), the total labelled
        ("The total of order 5 is 50.", "What is the total of order 5?", ORDER, False),
        # a percent sign names the pct field: 30 is the wind's
        (
            "The weather in Beijing is 26 degrees Celsius, 30% of the wind speed.",
            "What's the weather in Beijing?",
            BEIJING,
            True,
        ),
        (
            "The weather in Beijing is 26 degrees Celsius, 62% humidity and 30 kph wind.",
            "What's the weather in Beijing?",
            BEIJING,
            False,
        ),
        ("The wind is 38 kph and a source of 38.", "How windy is Manila?", MANILA, True),
        ("The humidity in Manila is 63 pct.", "How humid is Manila?", MANILA, False),
        ("The humidity in Manila is 38 pct.", "How humid is Manila?", MANILA, True),
        ("It is 23 degrees Celsius in Manila.", "How hot is Manila?", MANILA, False),
    ],
)
def test_a_number_must_be_the_value_of_the_field_its_label_names(
    answer: str, question: str, result: str, wrong: bool
) -> None:
    assert (mislabeled_number(answer, question, [result]) is not None) is wrong
    reason = ungrounded(answer, _turn(question, result))
    assert (reason is not None and "labels a number" in reason) is wrong


def test_a_value_stated_again_is_cut_to_its_first_statement() -> None:
    said = "Manila is 63 pct, 63% humidity, 63 pct is 63"
    assert restated_value(said, set()) == "63"
    assert restated_value("3 + 5 = 8, 8 * 8 = 64.", {"8", "3", "5"}) is None
    assert first_statement(said, "63") == "Manila is 63 pct."
    assert first_statement("It is windy in Oslo, 22 kph and 22kph.", "22") == (
        "It is windy in Oslo, 22 kph."
    )
    reason = ungrounded(said, _turn("How humid is Manila right now?", MANILA))
    assert reason is not None and "repeats the value 63" in reason


async def test_the_wrapper_keeps_the_first_statement_of_a_repeated_value() -> None:
    said = "Manila is 63 pct, 63% humidity, 63 pct is 63"
    history = [
        Message.user("How humid is Manila right now?"),
        Message.tool_results([ToolResultPart("c1", "get_weather", MANILA)]),
    ]

    async def reply(_messages: object, _info: object) -> str:
        return said

    model = GroundedAnswers(FunctionModel(reply))
    done = [e async for e in model.stream(ModelRequest(history))][-1]
    assert done.message.text == "Manila is 63 pct."
    assert done.message.provider_meta["grounding_trimmed"]["answer"] == said


@pytest.mark.parametrize(
    ("answer", "act"),
    [
        ("I renewed the passport.", "i"),
        ("The passport was renewed last week.", None),  # a state, not an act claimed
        ("Renewed the passport.", "renewed"),
        ("The last item is: renew the passport.", None),
        ("We called the plumber.", "we"),
    ],
)
def test_an_act_the_result_only_names_is_not_claimed(answer: str, act: str | None) -> None:
    question = "What is the last item in todo.txt?"
    assert unstated_action(answer, question, [TODO]) == act
    reason = ungrounded(answer, _turn(question, TODO))
    assert (reason is not None and "claims an act" in reason) is (act is not None)


def test_a_first_person_question_allows_a_first_person_answer() -> None:
    question = "If I have 120 apples and give away 35, how many do I have left?"
    assert unstated_action("I have 85 apples left.", question, ["85"]) is None


@pytest.mark.parametrize(
    ("answer", "thing"),
    [
        ("Paris is in the 2nd floor of the building.", "floor"),
        ("The customer who lives in Paris is Bo.", None),
        ("Bo lives in the city of Paris.", None),
        ("Bo is the only customer in Paris.", None),
    ],
)
def test_things_no_result_names_are_not_grounded_after_a_table(
    answer: str, thing: str | None
) -> None:
    question = "Which customer lives in Paris? Use the customers table."
    assert unstated_thing(answer, question, [PARIS]) == thing
    reason = ungrounded(answer, _turn(question, PARIS))
    assert (reason is not None and "neither the results" in reason) is (thing is not None)


def test_a_word_the_question_numbers_keeps_its_number() -> None:
    """'What is the total of order 5?' answered 'The total of order 50.0 is 5.'"""
    question = "What is the total of order 5 in the orders table?"
    said = "The total of order 50.0 is 5 in the orders table."
    assert mislabeled_number(said, question, [ORDER]) == (
        "order 50 where the question says order 5"
    )
    assert mislabeled_number("The total of order 5 is 50.", question, [ORDER]) is None


def test_a_thing_is_named_by_its_last_word() -> None:
    question = "Which product costs 85? Use the products table."
    assert unstated_thing("It is a 12-inch chair.", question, [PRODUCTS]) is None
    assert unstated_thing("It is the big glass shop.", question, [PRODUCTS]) == "big"


def test_a_short_name_in_a_table_is_the_value_a_who_question_asks_for() -> None:
    """'Which customer lives in Paris?' over the customers table had to state a number
    (Bo's id 2: the name 'Bo' was too short to be a label) and came out as 'Paris is in
    the 2nd floor of the building.'"""
    from loopwright.core.messages import ToolCallPart
    from loopwright.providers import local_answer as la

    table = json.dumps(
        {"columns": ["id", "name", "city"], "rows": [[1, "Ana", "Berlin"], [2, "Bo", "Paris"]]}
    )
    question = "Which customer lives in Paris? Use the customers table."
    history = [
        Message.user(question),
        Message("assistant", (ToolCallPart("c1", "sql_query", {"query": "SELECT *"}, "{}"),)),
        Message.tool_results([ToolResultPart("c1", "sql_query", table)]),
    ]
    ground = la.grounding(history)
    assert ground.labels == ("Bo",) and ground.by_label and ground.latest == ()
    assert ungrounded("Bo lives in Paris.", _turn(question, table)) is None


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        ("The desk is $12,5.", True),  # 12 is the chair's stock
        ("The desk is $240.", False),
        ("The lamp cost is $40. The lamp is 12", True),
    ],
)
def test_a_sentence_naming_one_row_states_that_rows_numbers(answer: str, wrong: bool) -> None:
    question = "How much is the desk? Check the products table."
    assert (mislabeled_number(answer, question, [PRODUCTS]) is not None) is wrong


def test_words_of_the_search_are_no_field() -> None:
    """'The cheapest product in the products table is Lamp 40, 3.': 'table' names what
    the query searched (the tool's description says "tables"), not a field of 40."""
    question = "What is the cheapest product in the products table?"
    lamp = json.dumps({"columns": ["name", "price", "stock"], "rows": [["lamp", 40, 3]]})
    said = "The cheapest product in the products table is Lamp 40."
    described = ["Query the database tables products(name TEXT, price INTEGER) with SQL."]
    assert mislabeled_number(said, question, [lamp], described) is None
    assert mislabeled_number(said, question, [lamp]) is not None


def test_a_list_named_by_final_is_its_last_item() -> None:
    from loopwright.core.grounding import asked_item

    found = asked_item("What is the final task in todo.txt?", [TODO])
    assert found is not None and found[1] == 2


def test_an_answer_names_the_position_the_question_names() -> None:
    """'What is the second item in todo.txt?' -> 'The third is call the plumber.'"""
    from loopwright.strategies.embedded.claims import other_position

    question = "What is the second item in todo.txt?"
    assert other_position("The third is call the plumber.", question, [TODO]) == "third"
    assert other_position("The second item is call the plumber.", question, [TODO]) is None
    reason = ungrounded("The third is call the plumber.", _turn(question, TODO))
    assert reason is not None and "third" in reason


CUSTOMERS = json.dumps(
    {
        "columns": ["id", "name", "city"],
        "rows": [[1, "Ana", "Berlin"], [2, "Bo", "Paris"], [4, "Dana", "Oslo"]],
    }
)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        # the ordinal states no number and Bo is not said
        ("Paris is in the 1st column of the rows.", "row"),
        ("Bo lives in Paris.", None),
        ("The customer in Paris is Bo.", None),
    ],
)
def test_an_answer_states_a_value_of_the_row_the_question_names(
    answer: str, why: str | None
) -> None:
    reason = ungrounded(answer, _turn("Which customer lives in Paris?", CUSTOMERS))
    assert (reason is None) is (why is None)
    if why:
        assert reason is not None and why in reason


def test_an_ordinal_states_no_number_of_the_results() -> None:
    reason = ungrounded("It is the 2nd one.", _turn("Which one?", '{"a": 2, "b": "x y"}'))
    assert reason is not None and "states no value" in reason


def test_a_one_row_table_named_by_the_question_is_answered_by_its_name() -> None:
    """'Who lives in Paris?' after WHERE city = 'Paris' (one row) was answered 'The
    customer lives in Paris, and they are in the 2nd row': the first sentence had to
    state a number (the id) or any word; a one-row table is named like a longer one."""
    from loopwright.core.messages import ToolCallPart
    from loopwright.providers import local_answer as la

    table = json.dumps({"columns": ["id", "name", "city"], "rows": [[2, "Bo", "Paris"]]})
    history = [
        Message.user("Who lives in Paris? Check the customers table."),
        Message("assistant", (ToolCallPart("c1", "sql_query", {"query": "SELECT *"}, "{}"),)),
        Message.tool_results([ToolResultPart("c1", "sql_query", table)]),
    ]
    ground = la.grounding(history)
    assert ground.labels == ("Bo",) and ground.by_label and ground.latest == ()


@pytest.mark.parametrize(
    ("answer", "question", "text", "wrong"),
    [
        ("There are 0 tests left in the queue.", "How many tests failed?", "0 tests failed.", True),
        ("There are 0 tests failed.", "How many tests failed?", "0 tests failed.", False),
        ("The meeting in room 4 is in the office.", "Which room?", "Meeting in room 4.", True),
        ("The meeting is in room 4.", "Which room is the meeting in?", "Meeting in room 4.", False),
    ],
)
def test_things_no_text_result_names_are_not_grounded(
    answer: str, question: str, text: str, wrong: bool
) -> None:
    reason = ungrounded(answer, _turn(question, text))
    assert (reason is not None and "neither the results" in reason) is wrong


def test_a_word_for_a_kind_of_column_names_it() -> None:
    """'The most expensive product cost $240.' was refused: 'cost' names no column of
    the desk's row (price 240, stock 5); it names the price (tables.named_columns)."""
    question = "How much does the most expensive product cost? Check the products table."
    desk = json.dumps({"columns": ["name", "price", "stock"], "rows": [["desk", 240, 5]]})
    assert mislabeled_number("The most expensive product cost $240.", question, [desk]) is None
    assert mislabeled_number("The most expensive product cost $5.", question, [desk]) is not None


POEM = "Roses are red, violets are blue."
NOTES = "The team meeting is on Tuesday at 10 am in room 4."


@pytest.mark.parametrize(
    ("answer", "question", "text", "wrong"),
    [
        ("The poem is blue.", "What does poem.txt say violets are?", POEM, True),
        ("Roses are blue.", "What does poem.txt say violets are?", POEM, True),
        ("Violets are blue.", "What does poem.txt say violets are?", POEM, False),
        ("According to poem, violet are blue.", "What colour are violets?", POEM, False),
        ("It is blue.", "What does poem.txt say violets are?", POEM, False),
        ("The poem says violets are blue.", "What are violets in poem.txt?", POEM, False),
        ("The team meeting is in room 4.", "Which room? See notes.txt.", NOTES, False),
        ("The notes is on Tuesday.", "When is it? See notes.txt.", NOTES, True),
    ],
)
def test_a_value_a_text_states_of_one_thing_is_not_said_of_another(
    answer: str, question: str, text: str, wrong: bool
) -> None:
    """'What does poem.txt say violets are?' was answered 'The poem is blue.'."""
    reason = ungrounded(answer, _turn(question, text))
    assert (reason is not None and "another thing" in reason) is wrong


CONFIG = "[server]\nport = 8080\nhost = example.internal\n"


@pytest.mark.parametrize(
    ("answer", "text", "wrong"),
    [
        ("config: example.internal, host: example.", CONFIG, True),
        ("The host is example.", CONFIG, True),
        ("The host is example.internal.", CONFIG, False),
        ("The port is 8080.", CONFIG, False),
        ("Pancakes: 200 g flour.", "Pancakes: 200 g flour, 2 eggs, 300 ml milk.", False),
    ],
)
def test_a_value_cut_short_after_its_key_is_not_grounded(
    answer: str, text: str, wrong: bool
) -> None:
    """'What host does config.ini name?' was answered 'config: example.internal, host:
    example.': the second clause names another host."""
    reason = ungrounded(answer, _turn("What does config.ini set?", text))
    assert (reason is not None and "cuts a value short" in reason) is wrong


def test_a_short_key_word_is_read_with_the_word_before_it() -> None:
    """'The customer id is 4.' (the column customer_id) was refused: 'id' alone names
    the column id, whose value is 3."""
    order = json.dumps({"columns": ["id", "customer_id", "total"], "rows": [[3, 4, 30.0]]})
    question = "What is the customer id of order 3 in the orders table?"
    assert mislabeled_number("The customer id is 4 in the orders table.", question, [order]) is None
    assert mislabeled_number("The customer id is 30.0.", question, [order]) is not None
    assert mislabeled_number("The id is 4.", question, [order]) is not None
