"""Argument grounding and guards of the embedded model's tool calls (no model)."""

from __future__ import annotations

import pytest

from loopwright.core.messages import Message, ToolResultPart
from loopwright.core.tools import ToolSpec
from loopwright.providers import local_prompt as lp
from loopwright.providers.local_args import (
    argument_guard,
)
from loopwright.providers.local_dates import date_format, dates_in
from loopwright.providers.local_ground import (
    Grounding,
    coded_value,
    gives_required,
    grounded_arguments,
    grounded_optional,
    grounded_required,
    longest_number_list,
    named_values,
    numbers_in,
)
from loopwright.tools.builtin import make_tools

PREFIX = lp.render_prefix([t.spec for t in make_tools(["read_file", "sql_query"])], None)
HEAD = ' {"tool": "read_file", "arguments": {"path": " '


def _guard(question: str, *results: str):
    history = [Message.user(question)] + [
        Message.tool_results([ToolResultPart(f"c{i}", "t", r)]) for i, r in enumerate(results)
    ]
    return argument_guard(PREFIX, history)


@pytest.mark.parametrize(
    ("question", "so_far", "piece", "refused"),
    [
        # The request says notes.txt; the example shows notes/todo.txt.
        ("What does notes.txt say?", "notes", "/", True),
        ("What does notes.txt say?", "notes", ".", False),
        ("What does notes.txt say?", "", "notes", False),
        # The request itself names the example's file: copying it is right.
        ("Open notes/todo.txt please", "notes", "/", False),
        # An example used as a form (its start is not the request's text) is not refused.
        ("How many orders are there?", "", "SELECT", False),
        ("How many orders are there?", "SELECT COUNT(*) FROM", " orders", False),
    ],
)
def test_a_value_copying_the_request_does_not_turn_into_an_example(
    question: str, so_far: str, piece: str, refused: bool
) -> None:
    assert "notes/todo.txt" in PREFIX  # read_file's schema example
    assert _guard(question)(HEAD + so_far, piece) is refused


@pytest.mark.parametrize(
    ("so_far", "piece", "refused"),
    [
        ("SELECT * FROM t LIMIT 100", "0", True),  # a 4th digit no context number starts
        ("SELECT * FROM t LIMIT 10", "0", False),
        ("SELECT * FROM t WHERE id = 102", "4", False),  # 1024 is in the request
        ("SELECT * FROM t WHERE id = 540", "0", True),
        ("SELECT * FROM t WHERE id = 987", "6", False),  # 9876 came from a result
    ],
)
def test_long_numbers_must_come_from_the_request_or_a_result(
    so_far: str, piece: str, refused: bool
) -> None:
    guard = _guard("Which row has id 1024?", '{"rows": [[9876]]}')
    head = ' {"tool": "sql_query", "arguments": {"query": " '
    assert guard(head + so_far, piece) is refused


@pytest.mark.parametrize(
    ("question", "so_far", "piece", "refused"),
    [
        # "f" of "fahrenheit" may not be the whole value ...
        ("The weather in fahrenheit? San Francisco", "f", '"', True),
        ("The weather in fahrenheit? San Francisco", "San Francisco", '"', False),
        # only occurrences at a word's start count: the "f" ending "if" does not free it
        ("Weather in fahrenheit, so I decide if I need a coat", "f", '"', True),
        # ... nor turn into other text: "net" of "netsh" goes on with "sh"
        ("using the command netsh wlan disconnect", "net", "wlan", True),
        ("using the command netsh wlan disconnect", "net", "sh", False),
        ("using the command netsh wlan disconnect", "netsh", " wlan", False),
        # a value that is not the request's text is free (a formula, a query)
        ("Subtract 199 from 1024.", "1024", " -", False),
        ("What is 15% of 80?", "15", " /", False),
        # "10" is also a whole number of the request: it may end there
        ("limit 10, then 100 more", "10", '"', False),
    ],
)
def test_a_value_copying_the_request_does_not_cut_its_words(
    question: str, so_far: str, piece: str, refused: bool
) -> None:
    assert _guard(question)(HEAD + so_far, piece) is refused


def _shop_guard(question: str, *results: str):
    """A guard whose prompt describes a database with ``products(id, name, price)``."""
    spec = ToolSpec(
        "sql_query",
        "Query the database tables products(id, name, price) with one SELECT.",
        {"type": "object", "properties": {"query": {"type": "string"}}},
    )
    history = [Message.user(question)] + [
        Message.tool_results([ToolResultPart(f"c{i}", "t", r)]) for i, r in enumerate(results)
    ]
    return argument_guard(lp.render_prefix([spec], None), history)


SQL_HEAD = ' {"tool": "sql_query", "arguments": {"query": " '


@pytest.mark.parametrize(
    ("question", "so_far", "piece", "refused"),
    [
        # a column the description lists, the request's word, the examples' keywords
        ("What does the desk cost?", "SELECT price FROM products WHERE", " name", False),
        ("What does the desk cost?", "SELECT price FROM products WHERE name = '", "desk", False),
        ("What does the desk cost?", "SELECT", " price", False),
        # an invented column: ``product_id`` is no word of the prompt or the request ...
        ("What does the desk cost?", "SELECT price FROM products WHERE product", "_id", True),
        # ... nor, while written, the start of one; an invented value neither (a word
        # of the worked examples is known: "lamp")
        ("What does the desk cost?", "SELECT price FROM products WHERE name = '", "lamp", False),
        ("What does the desk cost?", "SELECT price FROM products WHERE name = '", "sofa", True),
        ("What does the desk cost?", "SELECT price FROM products WHERE name = 'desk", "s'", True),
        # a word ending with the value must be whole: "pri" of "price" may not end it
        ("What does the desk cost?", "SELECT pri", '"', True),
        # a word in capitals is the notation's keyword (no text shows ``WHERE``)
        ("What does the desk cost?", "SELECT price FROM products", " WHERE", False),
        ("What does the desk cost?", "SELECT price FROM products", " wherever", True),
        # ... but a name in capitals is a name: no text shows ``PRODUCT_ID``
        ("What does the desk cost?", "SELECT price FROM products WHERE", " PRODUCT_ID", True),
        # the request's word is known; numbers are left to the number rule
        ("And the sofa?", "SELECT price FROM products WHERE name = '", "sofa", False),
        ("And the sofa?", "SELECT * FROM products WHERE id = ", "12", False),
    ],
)
def test_string_arguments_use_known_words_only(
    question: str, so_far: str, piece: str, refused: bool
) -> None:
    assert _shop_guard(question)(SQL_HEAD + so_far, piece) is refused


def test_words_of_the_whole_description_and_the_parameters_are_known() -> None:
    spec = ToolSpec(
        "get_weather",
        "Weather of a city. The city is written as 'Berkeley, CA'.",
        {
            "type": "object",
            "properties": {"unit": {"type": "string", "description": "celsius or kelvin"}},
        },
    )
    prefix = lp.render_prefix([spec], None)
    assert "kelvin" not in prefix and "Berkeley" not in prefix  # the prompt shows less
    guard = argument_guard(prefix, [Message.user("Weather in Oslo?")], [spec])
    head = ' {"tool": "get_weather", "arguments": {"unit": " '
    assert not guard(head, "kelvin")
    assert guard(head, "rankine")
    assert argument_guard(prefix, [Message.user("Weather in Oslo?")])(head, "kelvin")


def test_a_result_word_may_be_written() -> None:
    guard = _shop_guard("And its price?", '{"rows": [["sofa"]]}')
    assert not guard(SQL_HEAD + "SELECT price FROM products WHERE name = '", "sofa")


# ------------------------------------------------------------------ grounding


@pytest.mark.parametrize(
    ("values", "request_text", "named"),
    [
        (["plus", "comfort", "black"], "I need a Comfort Uber ride", ["comfort"]),
        (["ASC", "DESC"], "sort in ascending order", ["ASC"]),
        # a short value only as a whole word: "could" does not name "CO"
        (["EQ", "CO"], "Could you list them?", []),
        (["2D", "3D"], "in 3D please", ["3D"]),
        (["celsius", "fahrenheit"], "weather in Oslo", []),
    ],
)
def test_named_values_match_words_not_parts_of_words(
    values: list[str], request_text: str, named: list[str]
) -> None:
    assert named_values(values, request_text) == named


def test_numbers_are_read_as_written() -> None:
    assert numbers_in("I made $85,000 in 2023-04-25, wait 600 s, ratio -2.5") == (
        85000.0,
        2023.0,
        4.0,
        25.0,
        600.0,
        -2.5,
    )
    assert numbers_in("coordinates 46.603354,1.888334") == (46.603354, 1.888334)


def test_required_parameters_are_held_to_what_the_request_gives() -> None:
    ground = Grounding.of([Message.user("A Comfort ride from 2020 Addison St, wait 600 s")])
    enum = {"type": "string", "enum": ["plus", "comfort", "black"]}
    assert grounded_required(enum, ground)["enum"] == ["comfort"]
    assert grounded_required({"type": "integer"}, ground) == {
        "type": "integer",
        "enum": [2020, 600],
    }
    # nothing given: unchanged
    empty = Grounding.of([Message.user("a ride please")])
    assert grounded_required(enum, empty) == enum
    assert grounded_required({"type": "integer"}, empty) == {"type": "integer"}


def test_a_list_of_numbers_is_no_longer_than_the_requests() -> None:
    ground = Grounding.of([Message.user("coordinates 46.603354,1.888334 please")])
    schema = {"type": "array", "items": {"type": "number"}}
    held = grounded_required(schema, ground)
    assert held["items"] == {"enum": [46.603354, 1.888334]} and held["maxItems"] == 2


def test_numbers_of_tool_results_ground_a_later_call() -> None:
    history = [
        Message.user("What is (3 + 5) * 8?"),
        Message.tool_results([ToolResultPart("c1", "add", "8")]),
        Message.tool_results([ToolResultPart("c2", "add", "64")]),
    ]
    assert Grounding.of(history).numbers == (3.0, 5.0, 8.0, 8.0, 64.0)


def test_an_optional_parameter_named_like_its_tool_is_not_given_by_that_word() -> None:
    schema = {"type": "string"}
    assert (
        grounded_optional(schema, "movie_date", "list movies in Mumbai", ["get", "movies"]) is None
    )
    assert (
        grounded_optional(schema, "movie_date", "movies on this date", ["get", "movies"]) == schema
    )
    spec = ToolSpec(
        "get_movies",
        "d",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "movie_date": {"type": "string"}},
            "required": ["city"],
        },
    )
    held = grounded_arguments(spec, Grounding("list movies in Mumbai?"))
    assert list(held["properties"]) == ["city"]


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("the forecast for today April 25th 2023?", [(2023, 4, 25)]),
        ("a picnic on the 4th march 2023", [(2023, 3, 4)]),
        ("from April 3rd to April 5th 2023", [(2023, 4, 3), (2023, 4, 5)]),
        ("to November 1, 2023 at 6pm", [(2023, 11, 1)]),
        ("on 2023-04-25", [(2023, 4, 25)]),
        # no year anywhere: not guessed
        ("the 27th of march this year", []),
        ("I may go", []),
    ],
)
def test_dates_are_read_from_the_request(text: str, dates: list[tuple[int, int, int]]) -> None:
    assert dates_in(text) == dates


def test_a_date_parameter_takes_the_requests_date_in_its_format() -> None:
    iso = {"type": "string", "description": "The date, in the format of 'YYYY-MM-DD'."}
    us = {"type": "string", "description": "The day as MM/DD/YYYY."}
    timed = {"type": "string", "description": "ISO-8601 (e.g., 'YYYY-MM-DDTHH:MM:SSZ')."}
    assert date_format(iso) == "%Y-%m-%d" and date_format(us) == "%m/%d/%Y"
    assert date_format(timed) is None
    ground = Grounding("What's the forecast for Palo Alto for April 25th 2023?")
    assert grounded_required(iso, ground) == {"type": "string", "enum": ["2023-04-25"]}
    assert grounded_optional(us, "date", ground.request) == {
        "type": "string",
        "enum": ["04/25/2023"],
    }
    # an optional date the request does not give is left out
    assert grounded_optional(iso, "date", "What's the forecast for Palo Alto?") is None


def test_gives_required_checks_numbers_and_named_values() -> None:
    pay = ToolSpec(
        "make_payment",
        "Send money to a receiver.",
        {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "receiver": {"type": "string"},
                "method": {"type": "string", "enum": ["card", "bank"]},
            },
            "required": ["amount", "receiver", "method"],
        },
    )
    assert not gives_required(pay, "I have to make a payment")
    assert not gives_required(pay, "Pay Bob 20 euros")  # no method named
    assert gives_required(pay, "Pay Bob 20 euros by card")
    free = ToolSpec("echo", "Echo text.", {"type": "object", "properties": {"text": {}}})
    assert gives_required(free, "anything")


SERVICE = {
    "type": "integer",
    "description": "The service. For example, 1 for cleaning service, 2 for ironing service, "
    "3 for big cleaning service.",
}
PROVINCE = {
    "type": "integer",
    "description": "The province, e.g. '1' for Bangkok, '2' for Chiang Mai, '3' for Chonburi.",
}


@pytest.mark.parametrize(
    ("request_text", "service", "province"),
    [
        ("Help find a housekeeper who provides ironing services.", [2], []),
        ("professional cleaning in Bangkok with a rating above 4", [1], [1]),
        ("a big cleaning in Chiang Mai", [3], [2]),
        ("What time is it?", [], []),
    ],
)
def test_a_code_is_read_from_what_the_description_says_it_stands_for(
    request_text: str, service: list[int], province: list[int]
) -> None:
    assert coded_value(SERVICE, request_text) == service
    assert coded_value(PROVINCE, request_text) == province


def test_a_coded_parameter_takes_its_code_and_counts_as_given() -> None:
    ground = Grounding("cleaning in Bangkok with a rating above 4")
    assert grounded_required(PROVINCE, ground) == {"type": "integer", "enum": [1]}
    spec = ToolSpec(
        "find_pro",
        "Find a professional.",
        {"type": "object", "properties": {"service_id": SERVICE}, "required": ["service_id"]},
    )
    assert gives_required(spec, "Find someone for ironing")
    assert not gives_required(spec, "Find someone")


def test_number_words_count_as_numbers() -> None:
    assert numbers_in("a room for two nights from 10th December 2022") == (2.0, 10.0, 2022.0)
    assert numbers_in("the one with a view") == ()


def test_an_optional_number_does_not_take_the_required_ones_number() -> None:
    spec = ToolSpec(
        "get_defense_ranking",
        "d",
        {
            "type": "object",
            "properties": {"season": {"type": "integer"}, "top": {"type": "integer"}},
            "required": ["season"],
        },
    )
    held = grounded_arguments(spec, Grounding("The best defence in the 2021 season."))
    assert held["properties"] == {"season": {"type": "integer", "enum": [2021]}}
    named = grounded_arguments(spec, Grounding("The top 3 defences in the 2021 season."))
    # the number written next to the parameter's name, and given, so required
    assert named["properties"]["top"] == {"enum": [3]}
    assert named["required"] == ["season", "top"]


@pytest.mark.parametrize(
    ("text", "longest"),
    [
        ("the distance between two points A(3,4) and B(1,2)", 2),
        ("coordinates [43.653225, -79.383186] with 80000 sq ft of panels", 2),
        ("values 12, 24, 36 and 45, then the others", 4),
        ("wait 600 seconds", 1),
        ("no numbers", 0),
    ],
)
def test_the_longest_list_of_numbers_in_a_request(text: str, longest: int) -> None:
    assert longest_number_list(text) == longest


def test_a_list_argument_is_no_longer_than_the_requests_longest_list() -> None:
    ground = Grounding("Compute the Euclidean distance between A(3,4) and B(1,2).")
    held = grounded_required({"type": "array", "items": {"type": "integer"}}, ground)
    assert held["maxItems"] == 2 and held["items"] == {"enum": [3, 4, 1, 2]}


def test_an_optional_option_the_request_names_is_on_unless_negated() -> None:
    flag = {"type": "boolean"}
    tool = ["forest", "growth", "forecast"]
    on = grounded_optional(
        flag, "include_human_impact", "the next 5 years including human impact", tool
    )
    off = grounded_optional(
        flag, "include_human_impact", "the next 5 years without human impact", tool
    )
    assert on == {"type": "boolean", "enum": [True]}
    assert off == {"type": "boolean", "enum": [False]}
    assert grounded_optional(flag, "include_human_impact", "the next 5 years", tool) is None
