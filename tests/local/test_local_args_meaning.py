"""Values a request gives by meaning rather than by the schema's own spelling (codes,
other words for an action, abbreviations), and copies that must not stop inside a
token or repeat themselves (no model)."""

from __future__ import annotations

import pytest

from loopwright.core.messages import Message
from loopwright.core.tools import ToolSpec
from loopwright.providers import local_decide as ld
from loopwright.providers.local_args import argument_guard
from loopwright.providers.local_dates import grounded_date
from loopwright.providers.local_ground import (
    Grounding,
    gives_required,
    grounded_arguments,
    named_values,
)


def _tool(name: str, props: dict, required: list[str], description: str = "d") -> ToolSpec:
    return ToolSpec(
        name, description, {"type": "object", "properties": props, "required": required}
    )


SERVICE = _tool(
    "get_service_id",
    {
        "service_id": {
            "type": "integer",
            "description": "The unique identifier of the service. For example, '1' "
            "represents cleaning service, and '2' represents ironing service.",
            "enum": [1, 2],
        }
    },
    ["service_id"],
    "Retrieve the unique identifier for a type of service.",
)


def test_a_code_of_an_enum_named_by_its_meaning_is_given() -> None:
    # the grammar already narrowed such a code to the one asked for; the call-or-answer
    # rule took the request for one that gives no value and answered instead
    request = "Help find a housekeeper who provides ironing services."
    assert gives_required(SERVICE, request)
    assert ld.first_turn_kind([SERVICE], request, 0.1) == "tools"
    assert not gives_required(SERVICE, "Help find a housekeeper.")


TODO = _tool(
    "todo",
    {
        "type": {"type": "string", "enum": ["add", "delete", "update"]},
        "content": {"type": "string", "description": "The todo item."},
    },
    ["type", "content"],
    "Manages a todo list.",
)


def test_an_action_is_named_by_another_word_for_it() -> None:
    assert named_values(["add", "delete", "update"], "can you create todo for 'shopping'") == [
        "add"
    ]
    assert named_values(["add", "delete", "update"], "Remove the 'todo random' item") == ["delete"]
    # a word for two of the actions names neither
    assert named_values(["add", "create"], "make a new list") == []
    assert ld.first_turn_kind([TODO], "can you create todo for 'go shopping at 9 pm'", 0.1) == (
        "tools"
    )


def test_a_two_letter_code_is_named_by_a_name_it_abbreviates() -> None:
    codes = ["en", "hi", "es", "fr", "de"]
    assert named_values(codes, "convert this sentence from English to French") == ["en", "fr"]
    # a capitalized word that starts a sentence is no name
    assert named_values(["co", "ny"], "Could you help? Could it be") == []
    assert named_values(codes, "translate it to german") == []


def _guard(request: str, spec: ToolSpec, key: str) -> tuple[object, str]:
    head = f' {{"tool": "{spec.name}", "arguments": {{"{key}": " '
    return argument_guard("", [Message.user(request)], [spec]), head


CMD = _tool("execute", {"command": {"type": "string"}}, ["command"], "Run a system command.")


def test_a_copy_does_not_stop_after_a_sign_inside_a_token() -> None:
    guard, head = _guard("check whether docker is installed using docker --version", CMD, "command")
    assert guard(head + "docker -", '"')  # "--version" goes on
    assert guard(head + "docker --", '"')
    assert not guard(head + "docker --version", '"')
    guard, head = _guard(
        "open camera, using the start microsoft.windows.camera: command", CMD, "command"
    )
    assert guard(head + "start microsoft.windows.", '"')
    assert not guard(head + "start microsoft.windows.", "camera")
    # after a sign followed by a space the value may end ("Paris," is not the case)
    guard, head = _guard("add 2 + 3", CMD, "command")
    assert not guard(head + "2 +", " 3")


def test_a_piece_of_text_is_not_repeated_a_third_time() -> None:
    guard, head = _guard("show me today's date using the echo %date% command", CMD, "command")
    assert guard(head + "echo %date% %date%", " %date%")
    assert not guard(head + "echo %date%", '"')
    spec = _tool("find", {"district": {"type": "string"}}, ["district"])
    guard, head = _guard("in Sankampang District", spec, "district")
    assert guard(head + "K-100-100", "-100")
    # the request's own repetition may be copied
    guard, head = _guard("the code is ab-ab-ab", spec, "district")
    assert not guard(head + "ab-ab", "-ab")


WEATHER = _tool(
    "get_current_weather",
    {
        "location": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    ["location"],
)


def test_another_parameters_value_with_a_sign_after_it_is_no_value() -> None:
    request = "Can you tell me the weather in fahrenheit today? San Francisco"
    guard, head = _guard(request, WEATHER, "location")
    assert guard(head + "fahrenheit, ", '"')
    assert guard(head + "fahrenheit,", '"')
    assert not guard(head + "San Francisco", '"')


def test_a_quoted_phrase_is_no_place() -> None:
    assert not ld.shows_kind("place", "Translate 'thank you'")
    assert ld.shows_kind("place", "What's the weather in 'Paris'?")
    assert ld.shows_kind("id", "Remove 'todo random'")  # other kinds still take quotes


@pytest.mark.parametrize(
    ("description", "text", "written"),
    [
        (
            "The new date and time, in ISO-8601 format (e.g., 'YYYY-MM-DDTHH:MM:SS').",
            "Reschedule event 'Alice' to November 1, 2023 at 10pm CEST",
            ["2023-11-01T22:00:00"],
        ),
        (
            "The new date and time in ISO-8601 format, such as '2023-04-15T13:45:00Z'.",
            "move it to the 15th of April 2021 at 1:45 pm, UTC?",
            ["2021-04-15T13:45:00Z"],
        ),
        (
            "The departure time in the format of 'dd/mm/yyyy HH:MM'.",
            "departing on the 12th of March 2023 at 3 in the afternoon?",
            ["12/03/2023 15:00"],
        ),
        (
            "The start of the period in the format of 'YYYY-MM-DD HH:mm:ss'.",
            "available on March 12th 2024 from 16:00",
            ["2024-03-12 16:00:00"],
        ),
        ("The departure time in 24-hour format, such as '18:45'.", "leaves around 2 pm", ["14:00"]),
        # a date format alone is unchanged; no time given: nothing to hold a date-time to
        (
            "The date in the format of 'dd/mm/yyyy'.",
            "on the 16th of March 2024 at 14:00",
            ["16/03/2024"],
        ),
        ("The date and time in the format of 'YYYY-MM-DD HH:mm:ss'.", "on March 12th 2024", None),
    ],
)
def test_a_date_and_time_is_written_in_the_parameters_format(
    description: str, text: str, written: list[str] | None
) -> None:
    held = grounded_date({"type": "string", "description": description}, text)
    assert (held["enum"] if held is not None else None) == written


def test_an_optional_date_is_left_out_when_the_request_does_not_say_which_it_is() -> None:
    form = "in the format of 'dd/mm/yyyy HH:MM'"
    spec = _tool(
        "book_flight",
        {
            "departure_location": {"type": "string"},
            "departure_time": {"type": "string", "description": f"The departure time {form}."},
            "return_time": {"type": "string", "description": f"The return time {form}."},
        },
        ["departure_location", "departure_time"],
    )
    request = "A flight from New York, NY with a departure on the 20th of June 2022 at 5 pm?"
    props = grounded_arguments(spec, Grounding(request))["properties"]
    assert props["departure_time"]["enum"] == ["20/06/2022 17:00"]
    assert "return_time" not in props
    # a time the request writes is a number a value may begin with ("22" of "10pm")
    guard, head = _guard("to November 1, 2023 at 10pm", spec, "departure_time")
    assert not guard(head, "22")


def test_a_string_holds_few_numbers_no_text_gives() -> None:
    spec = _tool("find", {"district": {"type": "string"}}, ["district"])
    guard, head = _guard("in Ton Pao Subdistrict, with a review of 4.5 stars", spec, "district")
    assert guard(head + "K-100-101-102-", "103")
    assert not guard(head + "K-100-101-", "102")
    assert not guard(head + "K-100-101-102-", "4")  # the request's own number
    guard, head = _guard("What is 20% of 150?", CMD, "command")
    assert not guard(head + "20 / 100 * ", "150")


def test_a_south_or_west_coordinate_of_a_pair_is_negative() -> None:
    from loopwright.providers.local_ground import numbers_in

    assert numbers_in("at the coordinates 37.8651 N, 119.5383 W, please") == (37.8651, -119.5383)
    assert numbers_in("33.9° S, 18.4° E") == (-33.9, 18.4)
    # letters after numbers that are no coordinate pair
    assert numbers_in("size 5 S shirts, 3 W") == (5.0, 3.0)
    spec = _tool(
        "fetch_weather_data",
        {"latitude": {"type": "number"}, "longitude": {"type": "number"}},
        ["latitude", "longitude"],
    )
    # each parameter takes its own coordinate, not the other or another number
    request = "10-day forecast at the coordinates 37.8651 N, 119.5383 W"
    held = grounded_arguments(spec, Grounding(request))
    assert held["properties"]["longitude"]["enum"] == [-119.5383]
    assert held["properties"]["latitude"]["enum"] == [37.8651]


def test_an_identifier_takes_a_code_the_request_gives() -> None:
    """ "project.name" for "project with UUID SUPERFANCY" and "reschedule event" for
    "Reschedule event 'Bob-123'": an identifier parameter (by its name or by a
    description that opens with "The unique identifier") takes one of the request's
    codes or quoted values, whole, and the one written after its own name first."""
    described = {"type": "string", "description": "The unique identifier (UUID) of the project."}
    analysis = ToolSpec(
        "retrieve_analysis",
        "Retrieves the analysis of a project and a component by UUID.",
        {
            "type": "object",
            "properties": {"project": described, "component": {"type": "string"}},
            "required": ["project", "component"],
        },
    )
    request = "Retrieve the analysis for project with UUID SUPERFANCY, component AB1010CD."
    guard = argument_guard("", [Message.user(request)], [analysis])
    head = ' {"tool": "retrieve_analysis", "arguments": {"project": " '
    assert guard(head, "project")
    assert guard(head, "AB")  # the code after "component", not after "project"
    assert not guard(head, "SUPER")
    assert guard(head + "SUPER", '"')  # whole
    assert not guard(head + "SUPERFANCY", '"')
    later = head + 'SUPERFANCY", "component": " '
    assert not guard(later, "component")  # not an identifier: free
    event = ToolSpec(
        "reschedule",
        "Moves an event to a new time.",
        {
            "type": "object",
            "properties": {"identifier": {"type": "string"}, "when": {"type": "string"}},
            "required": ["identifier", "when"],
        },
    )
    moved = argument_guard("", [Message.user("Reschedule event 'Bob-123' to 6pm")], [event])
    start = ' {"tool": "reschedule", "arguments": {"identifier": " '
    assert moved(start, "res")
    assert not moved(start, "Bob")
    assert not moved(start + "Bob-123", '"')
    free = argument_guard("", [Message.user("reschedule my dentist visit")], [event])
    assert not free(start, "dent")  # no code given: the value is free


def test_an_iso_date_the_model_writes_is_a_request_date_zero_padded() -> None:
    """ "2021-01-1" for "filed after January 1, 2021" (a start date with no stated
    format): a date started in ISO form is held to the request's dates, padded."""
    lawsuits = _tool(
        "lawsuit_search",
        {"company": {"type": "string"}, "start_date": {"type": "string"}},
        ["company", "start_date"],
    )
    request = "Lawsuits against 'Google' filed after January 1, 2021 in California."
    guard = argument_guard("", [Message.user(request)], [lawsuits])
    head = ' {"tool": "lawsuit_search", "arguments": {"company": " Google", "start_date": " '
    assert guard(head + "2021-01-", "1")
    assert not guard(head + "2021-01-", "0")
    assert guard(head + "2021-01", '"')  # not cut short
    assert not guard(head + "2021-01-01", '"')
    assert not guard(head + "January 1, 2021", '"')  # another form is left alone
    assert not guard(head + "2019-", "0")  # a year the request does not name
    undated = argument_guard("", [Message.user("Lawsuits against Google")], [lawsuits])
    assert not undated(head + "2021-01-", "1")


def test_a_copy_ends_where_the_request_names_its_parameter() -> None:
    """ "Johnny Depp in the cast" for ``cast`` and "Rosewood Finish" for ``finish``: a
    copied value stops before the words that name its own parameter."""
    movies = _tool(
        "find_movies",
        {"cast": {"type": "string"}, "genre": {"type": "string"}},
        [],
    )
    request = "Offbeat genre movies by Tim Burton with Johnny Depp in the cast?"
    guard = argument_guard("", [Message.user(request)], [movies])
    cast = ' {"tool": "find_movies", "arguments": {"cast": " '
    assert guard(cast + "Johnny Depp", " in")
    assert not guard(cast + "Johnny Depp", '"')
    assert not guard(cast + "Johnny", " Depp")
    league = _tool("sports_ranking", {"league": {"type": "string"}}, ["league"])
    premier = argument_guard("", [Message.user("Ranking of Leeds in Premier League?")], [league])
    head = ' {"tool": "sports_ranking", "arguments": {"league": " '
    assert not premier(head + "Premier", " League")  # a name holding the word
    answer = _tool("answer_string", {"answer": {"type": "string"}}, ["answer"])
    text = "Logistic regression is not in the text, therefore I cannot answer this question."
    verb = argument_guard("", [Message.user(text)], [answer])
    said = ' {"tool": "answer_string", "arguments": {"answer": " Logistic regression is'
    assert not verb(said + " not in the text, therefore I cannot", " answer")  # a verb


TRAFFIC = _tool(
    "traffic_estimate",
    {
        "start": {"type": "string"},
        "time_period": {
            "type": "string",
            "description": "A time frame: 'now' for current, 'weekend' for the coming"
            " weekend. Default 'now'",
        },
    },
    ["start"],
)


def test_a_value_the_description_states_with_its_meaning_is_an_example() -> None:
    """ "'weekend' for the coming weekend" names a value as an "e.g." would: an optional
    parameter the request gives it for is required and held to it."""
    grounded = grounded_arguments(TRAFFIC, Grounding("Traffic from Vegas this weekend?"))
    assert grounded["properties"]["time_period"]["enum"] == ["weekend"]
    assert "time_period" in grounded["required"]
    # "Default 'now'" is no value stated for something: a request saying nothing of a
    # time frame leaves the parameter out
    assert (
        "time_period"
        not in grounded_arguments(TRAFFIC, Grounding("Traffic from Vegas?"))["properties"]
    )
