"""Grounding rules for unseen tools' arguments: spans, lists, flags, named numbers and
optional parameters the request gives (no model)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopwright.core.messages import Message
from loopwright.core.tools import ToolSpec
from loopwright.providers.local_args import ArgumentGuard, argument_guard
from loopwright.providers.local_dates import date_format, dates_in
from loopwright.providers.local_ground import (
    Grounding,
    described_examples,
    grounded_arguments,
    grounded_required,
    longest_number_list,
    longest_word_list,
    named_flag,
    named_number,
    named_values,
    numbers_in,
)
from loopwright.providers.local_params import joined_parameters
from loopwright.providers.local_prompt import render_prefix
from loopwright.providers.local_spans import span_ends


def _tool(name: str, props: dict, required: list[str]) -> ToolSpec:
    return ToolSpec(name, "d", {"type": "object", "properties": props, "required": required})


# ------------------------------------------------------------------ spans


def _ends(text: str, value: str, comma: bool = False) -> tuple[bool, bool] | None:
    return span_ends(text, text.lower(), value.lower(), comma=comma)


ADDRESS = "A Comfort ride from 2020 Addison Street, Berkeley, CA, USA, and I can wait 600 s."
PARIS = "What will the weather be like in Paris, France from April 3rd to April 5th 2023?"
GUITAR = "Find the price of a used Gibson Les Paul guitar in the Chicago area."


@pytest.mark.parametrize(
    ("text", "value", "comma", "ends"),
    [
        # a clause break after a span of several words: it must end there
        (ADDRESS, "2020 Addison Street, Berkeley, CA, USA", True, (True, True)),
        ("Fly to New York City, I would like a window seat", "New York City", False, (True, True)),
        # a single word is not held: formulas reuse the request's words and go on
        ("Subtract 199 from 1024.", "1024", False, (False, True)),
        # more of a place joined by a comma: not yet, when the parameter joins places
        (PARIS, "Paris", True, (False, False)),
        (PARIS, "Paris", False, (False, True)),
        (PARIS, "Paris, France", True, (False, True)),
        # a run of capitalized words is one name
        (GUITAR, "Gibson", False, (False, False)),
        (GUITAR, "Gibson Les Paul", False, (False, True)),
        (GUITAR, "Chicago", False, (False, True)),
        # "I" after a comma is not more of the name
        ("A ticket in New York City, I would like one", "New York", False, (False, False)),
        # not a span of the request
        (PARIS, "London", True, None),
    ],
)
def test_a_copied_span_ends_where_the_request_does(
    text: str, value: str, comma: bool, ends: tuple[bool, bool] | None
) -> None:
    assert _ends(text, value, comma) == ends


def test_the_guard_holds_a_copied_place_to_its_whole_span() -> None:
    tool = _tool(
        "forecast",
        {"location": {"type": "string", "description": "The city and state, e.g. Seattle, WA"}},
        ["location"],
    )
    assert joined_parameters([tool]) == ("location",)
    guard = argument_guard("", [Message.user(PARIS)], [tool])
    head = ' {"tool": "forecast", "arguments": {"location": " Paris'
    assert guard(head, '"')  # may not stop before ", France"
    assert not guard(head, ",")
    assert not guard(head + ", France", '"')
    rider = argument_guard("", [Message.user(ADDRESS)], [tool])
    loc = ' {"tool": "forecast", "arguments": {"location": " 2020 Addison Street, Berkeley, CA, USA'
    assert rider(loc, ",")  # ", and I can wait" is the next clause
    assert not rider(loc, '"}')


@given(st.text(max_size=60), st.text(max_size=20), st.booleans())
def test_span_ends_reads_any_text(text: str, value: str, comma: bool) -> None:
    got = span_ends(text, text.lower(), value.lower(), comma=comma)
    assert got is None or (isinstance(got[0], bool) and isinstance(got[1], bool))


@given(st.text(max_size=80), st.text(max_size=6))
def test_the_guard_reads_any_partial_output(text: str, piece: str) -> None:
    guard = ArgumentGuard((), PARIS.lower(), ("2023",), ("paris",), PARIS, ("location",))
    assert guard(' {"tool": "t", "arguments": {"location": "' + text, piece) in (True, False)
    assert guard(text, piece) in (True, False)


# ------------------------------------------------------------------ lists


@pytest.mark.parametrize(
    ("text", "longest"),
    [
        ("I want to order five burgers and six chicken wings from McDonald's.", 2),
        ("我想在肯德基买10个麦辣鸡腿堡，50杯可口可乐，30个油炸鸡翅，90根薯条", 4),
        ("the distance between two points A(3,4) and B(1,2)", 2),
    ],
)
def test_counted_items_make_one_list_of_numbers(text: str, longest: int) -> None:
    assert longest_number_list(text) == longest


def test_numbers_right_after_a_word_of_a_script_without_spaces() -> None:
    assert numbers_in("买10个，50杯") == (10.0, 50.0)
    assert numbers_in("network222 and B1004") == ()


@pytest.mark.parametrize(
    ("text", "longest"),
    [
        ("Market performance of the S&P 500 and the Dow Jones over 5 days.", 2),
        ("Stats including points per game, assists, and minutes per game.", 3),
        ("Show me the news.", 1),
    ],
)
def test_a_list_of_strings_is_no_longer_than_the_requests_list(text: str, longest: int) -> None:
    assert longest_word_list(text) == longest
    schema = {"type": "array", "items": {"type": "string"}}
    assert grounded_required(schema, Grounding(text))["maxItems"] == longest


# ------------------------------------------------------------------ flags and numbers


@pytest.mark.parametrize(
    ("name", "text", "flag"),
    [
        ("details", "How do I get the detailed case information?", True),
        ("normalize", "I need to apply normalization to them.", True),
        ("closed_status", "verify if it's already closed", True),
        ("details", "the case, without details please", False),
        ("details", "the case information", None),
    ],
)
def test_a_flag_the_request_names_is_on_unless_negated(
    name: str, text: str, flag: bool | None
) -> None:
    assert named_flag(name, text) is flag


def test_a_required_flag_is_held_to_what_the_request_says() -> None:
    ground = Grounding("Who discovered the neutron? Give me detail information.")
    assert grounded_required({"type": "boolean"}, ground, "detail") == {
        "type": "boolean",
        "enum": [True],
    }
    assert grounded_required({"type": "boolean"}, ground, "verbose") == {"type": "boolean"}


ROE = (
    "Return on equity given its net income of $2,000,000, shareholder's equity of "
    "$10,000,000, and dividends paid of $200,000."
)


@pytest.mark.parametrize(
    ("name", "text", "number"),
    [
        ("net_income", ROE, 2000000.0),
        ("shareholder_equity", ROE, 10000000.0),
        ("dividends_paid", ROE, 200000.0),
        ("nights", "A single room for two nights from 10th December 2022.", 2.0),
        ("rating", "closest to Berkeley with at least a 4.5 star rating", 4.5),
        ("days", "A single room for two nights.", None),
    ],
)
def test_the_number_next_to_a_parameters_name(name: str, text: str, number: float | None) -> None:
    assert named_number(name, text) == number


def test_a_required_number_takes_the_one_next_to_its_name() -> None:
    tool = _tool(
        "roe",
        {"net_income": {"type": "integer"}, "shareholder_equity": {"type": "integer"}},
        ["net_income", "shareholder_equity"],
    )
    props = grounded_arguments(tool, Grounding(ROE))["properties"]
    assert props["net_income"]["enum"] == [2000000]
    assert props["shareholder_equity"]["enum"] == [10000000]


# ------------------------------------------------------------------ optional parameters


def test_optional_parameters_the_request_gives_become_required() -> None:
    tool = _tool(
        "hotel.book",
        {
            "location": {"type": "string"},
            "nights": {"type": "integer"},
            "services": {
                "type": "array",
                "items": {"type": "string", "enum": ["breakfast", "parking", "spa"]},
            },
            "pets": {"type": "boolean"},
            "rating": {"type": "number"},
        },
        ["location", "nights"],
    )
    ask = "Book 2 nights in New York with breakfast, hotels of at least a 4.5 rating"
    held = grounded_arguments(tool, Grounding(ask))
    assert held["properties"]["services"]["items"]["enum"] == ["breakfast"]
    assert held["properties"]["services"]["maxItems"] == 1
    assert held["properties"]["rating"] == {"enum": [4.5]}
    assert held["required"] == ["location", "nights", "services", "rating"]
    assert "pets" not in held["properties"]


def test_a_value_of_several_words_is_named_by_one_telling_word() -> None:
    values = ["Backstage Pass", "VIP Seating", "Parking Pass"]
    assert named_values(values, "I would like the one with backstage access") == ["Backstage Pass"]
    assert named_values(values, "I would like a pass") == []  # "pass" is shared


def test_an_optional_string_whose_described_example_the_request_names() -> None:
    case_type = {
        "type": "string",
        "description": "Type of the lawsuit, e.g., 'IPR', 'Patent', 'Commercial', etc. Default 'all'.",
    }
    assert described_examples(case_type) == ["IPR", "Patent", "Commercial"]
    tool = _tool(
        "lawsuit_details.find",
        {"company_name": {"type": "string"}, "case_type": case_type},
        ["company_name"],
    )
    held = grounded_arguments(tool, Grounding("Find patent lawsuits involving 'Apple Inc.'"))
    assert held["required"] == ["company_name", "case_type"]
    none = grounded_arguments(tool, Grounding("Find lawsuits involving 'Apple Inc.'"))
    assert "case_type" not in none["properties"]


def test_words_of_the_tool_and_its_required_parameters_do_not_give_an_optional_one() -> None:
    tool = _tool(
        "light_travel_time",
        {"distance_in_light_years": {"type": "integer"}, "speed_of_light": {"type": "integer"}},
        ["distance_in_light_years"],
    )
    held = grounded_arguments(tool, Grounding("How long from a star 4 light years away?"))
    assert list(held["properties"]) == ["distance_in_light_years"]
    cms = _tool("create", {"Title": {"type": "string"}, "MetaTitle": {"type": "string"}}, ["Title"])
    held = grounded_arguments(cms, Grounding("Add an article with the title 'Julian'."))
    assert list(held["properties"]) == ["Title"]


def test_a_number_inside_a_quoted_name_is_not_spare() -> None:
    tool = _tool(
        "connect",
        {"device_name": {"type": "string"}, "timeout": {"type": "integer"}},
        ["device_name"],
    )
    held = grounded_arguments(tool, Grounding("Connect my speaker called 'JBL Flip 4'."))
    assert list(held["properties"]) == ["device_name"]


# ------------------------------------------------------------------ dates


def test_date_formats_in_lower_case_and_a_day_right_after_the_month() -> None:
    assert date_format({"type": "string", "description": "in the format of 'dd/mm/yyyy'"}) == (
        "%d/%m/%Y"
    )
    assert date_format({"type": "string", "description": "in the format mm-dd-yyyy."}) == (
        "%m-%d-%Y"
    )
    assert dates_in("the UV index for tomorrow, June01 2023") == [(2023, 6, 1)]
    schema = {"type": "string", "description": "in the format of 'dd/mm/yyyy'"}
    held = grounded_required(schema, Grounding("a flight on the 16th of March 2024"))
    assert held["enum"] == ["16/03/2024"]


def test_the_grounded_schema_is_json() -> None:
    tool = _tool("t", {"a": {"type": "array", "items": {"type": "string"}}}, ["a"])
    json.dumps(grounded_arguments(tool, Grounding("x, y and z")))


def test_a_capitalized_word_that_starts_a_clause_is_not_more_of_a_name() -> None:
    text = "Im at Riga, Latvia, Can you tell me the current temperature?"
    assert _ends(text, "Riga, Latvia", comma=True) == (False, True)
    assert _ends(text, "Riga", comma=True) == (False, False)


@pytest.mark.parametrize(
    ("tool", "params", "text", "held"),
    [
        # a unit written onto the number is no word between it and the name
        (
            "generate_sound_wave",
            ["frequency", "duration"],
            "Generate a sound of 440Hz frequency for 5 seconds.",
            {"frequency": [440]},
        ),
        # "value" is both parameters' word: only "initial" / "final" tell them apart
        (
            "calculate_cagr",
            ["initial_value", "final_value"],
            "An initial investment of $2000, final value of $3000 over 4 years.",
            {"initial_value": [2000], "final_value": [3000]},
        ),
        # "temperature" is the tool's own word
        (
            "calculate_final_temperature",
            ["quantity1", "temperature1"],
            "The final temperature when 2 moles at 300 K are mixed with 3 moles at 400 K.",
            {"temperature1": [2, 300, 3, 400]},
        ),
    ],
)
def test_which_words_tie_a_number_to_a_parameter(
    tool: str, params: list[str], text: str, held: dict[str, list[int]]
) -> None:
    spec = _tool(tool, {p: {"type": "integer"} for p in params}, params)
    props = grounded_arguments(spec, Grounding(text))["properties"]
    for key, values in held.items():
        assert props[key]["enum"] == values


def test_an_optional_number_named_by_a_required_parameters_word_is_left_out() -> None:
    spec = _tool(
        "biological.calc_energy",
        {"mols": {"type": "integer"}, "joules_per_mol": {"type": "integer"}},
        ["mols"],
    )
    held = grounded_arguments(spec, Grounding("The energy produced by 5 mol of glucose?"))
    assert list(held["properties"]) == ["mols"]


def test_a_string_value_may_not_begin_with_a_number_the_request_does_not_hold() -> None:
    guard = argument_guard("", [Message.user("A classical concert this weekend")])
    head = ' {"tool": "concert.search", "arguments": {"date": " '
    assert guard(head, "202")  # a made-up year
    assert not guard(head, "this")
    assert not guard(head + "this weekend ", "2")  # later digits are free up to a few
    dated = argument_guard("", [Message.user("The UV index for June01 2023")])
    assert not dated(head, "06")  # the request's date, written with its month's number
    assert dated(head, "07")


def test_a_copied_value_starts_where_a_word_of_the_request_starts() -> None:
    guard = argument_guard("", [Message.user("The active mandates of user ID U123456?")])
    head = ' {"tool": "user.mandates", "arguments": {"user_id": " '
    assert guard(head, "123")
    assert not guard(head, "U")
    assert not guard(head + "U", "123")


def test_a_name_in_any_script_goes_on_after_its_comma() -> None:
    text = "Qual a temperatura atual em Divinópolis, MG? fahrenheit"
    assert _ends(text, "Divinópolis", comma=True) == (False, False)


def test_codes_listed_as_an_enum_are_named_by_their_meaning() -> None:
    schema = {
        "type": "integer",
        "description": "For example, '1' represents cleaning service, and '2' represents "
        "ironing service.",
        "enum": [1, 2],
    }
    held = grounded_required(schema, Grounding("Find a housekeeper who provides ironing."))
    assert held["enum"] == [2]


def test_words_of_a_value_held_to_its_examples_shape_are_free() -> None:
    timezone = {
        "type": "string",
        "description": "IANA name (e.g., 'America/New_York', 'Europe/London')",
    }
    tool = _tool(
        "get_current_time", {"timezone": timezone, "note": {"type": "string"}}, ["timezone"]
    )
    guard = argument_guard("", [Message.user("What time is it in Tokyo?")], [tool])
    assert guard.shaped == ("timezone",)
    head = ' {"tool": "get_current_time", "arguments": {"timezone": " '
    assert not guard(head, "Asia")  # no text spells it; the grammar holds the shape
    assert guard(' {"tool": "get_current_time", "arguments": {"note": " ', "Asia")


# ------------------------------------------------------------------ relative dates


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        # the weekday the request says today is counts (April 25th 2023 was a Tuesday)
        (
            "the forecast for Alameda on the upcoming Wednesday, today is Monday April 25th 2023?",
            [(2023, 4, 27)],
        ),
        (
            "the forecast on the upcoming Saturday? Today is Tuesday April 25th 2023",
            [(2023, 4, 29)],
        ),
        # a date written without separators, and "tomorrow" counted from it
        ("available tomorrow, today is 20230929", [(2023, 9, 30)]),
        ("in 3 days, the current date is 2024-01-30", [(2024, 2, 2)]),
        ("What is the weather today? Today is 2023-05-02", [(2023, 5, 2)]),
        # no "today is": a date next to "tomorrow" is the day meant, nothing is counted
        ("the UV index for tomorrow, June01 2023", [(2023, 6, 1)]),
        ("the forecast for today April 25th 2023?", [(2023, 4, 25)]),
        # today is given but no other day is named: today's date stays
        ("Today is 2023-05-02, what is on my calendar", [(2023, 5, 2)]),
    ],
)
def test_days_named_relative_to_a_given_today_are_counted(
    text: str, dates: list[tuple[int, int, int]]
) -> None:
    assert dates_in(text) == dates


def test_a_relative_day_fills_an_optional_date_parameter() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "date": {"type": "string", "description": "The date, in the format of 'YYYY-MM-DD'."},
        },
        "required": ["city"],
    }
    spec = ToolSpec("get_weather", "d", schema)
    request = "Forecast for Alameda on the upcoming Wednesday, today is Monday April 25th 2023?"
    out = grounded_arguments(spec, Grounding(request))
    assert out["properties"]["date"] == {"type": "string", "enum": ["2023-04-27"]}
    assert "date" in out["required"]


def test_words_for_a_count_are_numbers() -> None:
    assert numbers_in("the population growth over the past decade") == (10.0,)
    assert numbers_in("a dozen eggs") == (12.0,)
    # "century" names which one, not how many: "the 14th century" is not 100
    assert numbers_in("till the 14th century") == (14.0,)
    spec = _tool("assess", {"duration": {"type": "integer"}}, ["duration"])
    out = grounded_arguments(spec, Grounding("deer growth in Washington over the past decade"))
    assert out["properties"]["duration"] == {"type": "integer", "enum": [10]}


# ------------------------------------------------------------------ nested objects

PROFILE = {
    "type": "object",
    "properties": {
        "user_id": {"type": "integer"},
        "profile_data": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "email": {"type": "string"},
                "age": {"type": "integer"},
                "bio": {"type": "string", "default": ""},
            },
        },
        "notify": {"type": "boolean"},
    },
    "required": ["user_id", "profile_data"],
}


def test_a_nested_objects_properties_are_grounded_like_the_top_levels() -> None:
    request = (
        "Update my profile with my new email, a@b.com, and my new age, 30. My user ID is 12345."
    )
    out = grounded_arguments(ToolSpec("update_profile", "d", PROFILE), Grounding(request))
    inner = out["properties"]["profile_data"]
    # what the request gives is kept and required (the object marked nothing required);
    # what it does not give is not offered (the model wrote a "bio" of the request)
    assert set(inner["properties"]) == {"email", "age"}
    assert set(inner["required"]) == {"email", "age"}
    assert inner["properties"]["age"]["enum"][0] == 30  # the request's numbers, not made up


def test_an_optional_nested_object_with_a_definite_value_is_required() -> None:
    params = {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
    }
    schema = {
        "type": "object",
        "properties": {"url": {"type": "string"}, "params": params},
        "required": ["url"],
    }
    spec = ToolSpec("requests.get", "d", schema)
    out = grounded_arguments(
        spec, Grounding("retrieve data from 'https://x.org/v1' with a limit of 50 items")
    )
    assert out["required"] == ["url", "params"]
    assert out["properties"]["params"]["properties"] == {"limit": {"enum": [50]}}
    # nothing of it given: left out, as before
    bare = grounded_arguments(spec, Grounding("retrieve data from 'https://x.org/v1'"))
    assert bare["required"] == ["url"] and "params" not in bare["properties"]


def test_a_named_enum_value_inside_a_required_body_is_required() -> None:
    body = {
        "type": "object",
        "properties": {
            "jobMode": {"type": "string", "enum": ["AIR_CLEAN", "COOL", "AIR_DRY"]},
            "powerSave": {"type": "boolean"},
            "targetTemperature": {"type": "integer"},
        },
    }
    schema = {"type": "object", "properties": {"body": body}, "required": ["body"]}
    out = grounded_arguments(
        ToolSpec("control", "d", schema), Grounding("set cool mode, 24 degrees")
    )
    inner = out["properties"]["body"]
    assert inner["properties"]["jobMode"]["enum"] == ["COOL"]
    assert "powerSave" not in inner["properties"]
    assert "jobMode" in inner["required"]


# ------------------------------------------------------------------ copied spans and lists

LISTS = ToolSpec(
    "find_restaurants",
    "Locate restaurants.",
    {
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "command": {"type": "string"},
            "diet": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Dietary requirements, e.g. vegan, gluten-free, milk-free.",
            },
            "mode": {"type": "array", "items": {"type": "string", "enum": ["fast", "slow"]}},
        },
        "required": ["location"],
    },
)
HEAD_DIET = ' {"tool": "find_restaurants", "arguments": {"location": " Manhattan", "diet": ['


def _list_guard(request: str) -> ArgumentGuard:
    prefix = render_prefix([LISTS], None)  # its worked examples show the signs of formulas
    return argument_guard(prefix, [Message.user(request)], [LISTS])


def test_list_items_of_free_strings_copy_the_request() -> None:
    guard = _list_guard("Find Thai food in Manhattan with a vegan menu.")
    assert guard.listed == ("diet",)  # not the enum list
    assert not guard(HEAD_DIET + '" ', "vegan")
    # the description's other examples are no item the request asks for
    assert guard(HEAD_DIET + '" vegan", " ', "gluten")
    # an earlier item again may not be closed
    assert guard(HEAD_DIET + '" vegan", " vegan', '"')
    assert not guard(HEAD_DIET + '" vegan', '"')
    # an item that holds a list of numbers in one string is not request text
    assert guard(HEAD_DIET + '" ', "5, 10")


def test_a_copied_span_of_words_does_not_go_off_the_request() -> None:
    guard = _list_guard("check whether the docker is installed using docker --version")
    head = ' {"tool": "find_restaurants", "arguments": {"location": " x", "command": " '
    assert guard(head + "docker", "-installed")  # joined by a sign the request lacks
    assert not guard(head + "docker", " --")  # the request's own text
    assert guard(head + "docker --", "evaluate")  # a copy of words goes off the request
    assert not guard(head + "docker --version", '"')  # it may stop
    # a formula copying numbers is not a copy of words
    calc = _list_guard("What is (10 + 6) divided by 4?")
    assert not calc(head + "(10 + 6)", " /")


@given(st.text(max_size=40), st.text(max_size=8))
def test_the_guard_takes_any_partial_output(so_far: str, piece: str) -> None:
    guard = _list_guard("Find Thai food in Manhattan with a vegan menu, and gluten-free.")
    assert guard(HEAD_DIET + so_far, piece) in (True, False)


def test_a_value_does_not_start_with_one_digit_from_inside_a_request_word() -> None:
    guard = _list_guard("Get the list of active mandates for the user with ID U123456?")
    head = ' {"tool": "find_restaurants", "arguments": {"location": " '
    assert guard(head, "1")  # only inside "U123456"
    assert not guard(head, "U")
    assert not _list_guard("Find 10 items")(head, "1")  # "10" starts a word


# ------------------------------------------------------------------ shares, stems, scripts


def test_a_percentage_is_a_fraction_where_the_description_says_so() -> None:
    share = {
        "type": "number",
        "description": "El porcentaje de enganche. Ejemplo: 0.1 para un enganche del 10%.",
    }
    rate = {"type": "number", "description": "The annual interest rate in percent."}
    request = "un crédito de 1,000,000 de pesos a 12 meses, con un enganche del 20%."
    assert grounded_required(share, Grounding(request), "enganche") == {
        "type": "number",
        "enum": [0.2],
    }
    # no such hint: the number as written
    assert grounded_required(rate, Grounding("a rate of 5%"), "annual_rate")["enum"] == [5]
    frac = {"type": "number", "description": "The yield, as a decimal."}
    assert grounded_required(frac, Grounding("a 5% annual yield"), "annual_yield")["enum"] == [0.05]


def test_a_parameter_name_in_another_script_is_one_word() -> None:
    request = "para un vehículo del año 2024, con un enganche del 20%."
    assert named_number("año_vehiculo", request) == 2024


def test_an_optional_flag_is_named_by_another_form_of_its_word() -> None:
    spec = _tool(
        "run_linear_regression",
        {"target": {"type": "string"}, "standardize": {"type": "boolean"}},
        ["target"],
    )
    out = grounded_arguments(spec, Grounding("target 'Price'. Also apply standardization."))
    assert out["properties"]["standardize"] == {"type": "boolean", "enum": [True]}
    assert "standardize" in out["required"]
    # a shared start alone is not the word: "stand" does not name it
    assert (
        "standardize"
        not in grounded_arguments(spec, Grounding("target 'Price', stand by"))["properties"]
    )


def test_quoted_counted_items_make_one_list() -> None:
    text = "I want to order five 'burgers' and six 'chicken wings' from uber pitada"
    assert longest_number_list(text) == 2


def test_a_string_takes_the_described_example_the_request_names() -> None:
    date = {"type": "string", "description": "Date of the concert, e.g. this weekend, today."}
    ground = Grounding("Find me a classical concert this weekend in Los Angeles.")
    assert grounded_required(date, ground, "date") == {"type": "string", "enum": ["this weekend"]}
    # a place joined to its region: the named part would cut the value short
    city = {"type": "string", "description": "The city, e.g. San Francisco, CA."}
    assert "enum" not in grounded_required(city, Grounding("weather in San Francisco"), "city")


def test_a_string_value_is_not_a_name_of_the_schema() -> None:
    spec = ToolSpec(
        "retrieve_analysis",
        "d",
        {
            "type": "object",
            "properties": {
                "project": {"type": "string"},
                "start_location": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["project"],
        },
    )
    request = "the weather in fahrenheit for project SUPERFANCY from the start location"
    guard = argument_guard("", [Message.user(request)], [spec])
    head = ' {"tool": "retrieve_analysis", "arguments": {"project": " '
    assert guard(head + "project", '"')  # its own name
    assert guard(head + "proj", 'ect"')  # closed by the same token
    assert not guard(head + "project", " SUPER")
    assert not guard(head + "SUPERFANCY", '"')
    assert guard(head + "fahrenheit", '"')  # another parameter's value
    assert guard(head + "retrieve_analysis", '"')  # the tool's name
    loc = ' {"tool": "retrieve_analysis", "arguments": {"start_location": " '
    assert guard(loc + "start location", '"')


def test_a_string_value_uses_only_signs_some_text_uses() -> None:
    guard = _list_guard("Find a concert in the upcoming month in Los Angeles.")
    head = ' {"tool": "find_restaurants", "arguments": {"location": " '
    assert guard(head, "<i>")
    assert guard(head + "Los Angeles", "\u00a0")  # a no-break space
    assert guard(head + "201", "\u2010")  # a Unicode hyphen
    assert not guard(head + "Los", " Angeles")
    assert not guard(head + "Los Angeles", '"')


def test_a_character_split_over_tokens_must_be_one_the_request_writes() -> None:
    # the sampler passes the bytes of a split character as surrogate escapes
    def split(ch: str) -> str:
        return ch.encode("utf-8")[:1].decode("utf-8", "surrogateescape")

    guard = _list_guard("Ride from 123 Đường Đại học, Berkeley")
    head = ' {"tool": "find_restaurants", "arguments": {"location": " '
    assert guard(head + "EUR", split("\u00a0"))  # a no-break space: no text has one
    assert not guard(head + "123 ", split("Đ"))  # the request's own letter


def test_a_sign_does_not_run_on_in_a_string() -> None:
    guard = _list_guard("What's the price of a Fender Stratocaster -- in rosewood?")
    head = ' {"tool": "find_restaurants", "arguments": {"location": " '
    assert guard(head + "--", "-")
    assert not guard(head + "-", "-")  # the request writes "--"


def test_a_from_value_is_not_what_the_request_writes_after_to() -> None:
    spec = _tool(
        "translate",
        {
            "text": {"type": "string"},
            "source_language": {"type": "string"},
            "target_language": {"type": "string"},
        },
        ["text", "source_language", "target_language"],
    )
    guard = argument_guard("", [Message.user("Translate Hello from English to French.")], [spec])
    source = ' {"tool": "translate", "arguments": {"source_language": " '
    target = ' {"tool": "translate", "arguments": {"target_language": " '
    assert guard(source + "fr", "ench")
    assert not guard(source + "En", "glish")
    assert guard(target + "en", "glish")
    assert not guard(target + "Fr", "ench")
    # a parameter without a direction, and a value both sides write, are left alone
    both = argument_guard("", [Message.user("from Paris to Paris")], [spec])
    assert not both(source + "pa", "ris")


def test_a_copied_sentence_keeps_its_final_mark_a_name_does_not() -> None:
    spec = _tool("say", {"text": {"type": "string"}, "expression": {"type": "string"}}, ["text"])
    request = (
        "Translate Hello, how are you? from English to French. Fly to New York City? "
        "What is 3 to the power of 5?"
    )
    guard = argument_guard(render_prefix([spec], None), [Message.user(request)], [spec])
    head = ' {"tool": "say", "arguments": {"text": " '
    assert not guard(head + "Hello, how are you", "?")
    assert guard(head + "New York City", "?")
    assert guard(head + "Hello, how are you?", " from")  # and ends there
    # not a prose parameter: a formula ends without the question's mark
    formula = ' {"tool": "say", "arguments": {"expression": " '
    assert guard(formula + "3 to the power of 5", "?")


def test_a_described_example_is_read_whole_through_its_periods() -> None:
    url = {
        "type": "string",
        "description": "The URL of the endpoint, such as 'https://api.example.com/v1/data'.",
    }
    assert described_examples(url) == ["https://api.example.com/v1/data"]
    ground = Grounding("retrieve data from 'https://api.example.com/v1/data' with a limit of 50")
    assert grounded_required(url, ground, "url") == {
        "type": "string",
        "enum": ["https://api.example.com/v1/data"],
    }


def test_a_quotation_mark_closes_only_a_quote_the_value_opened() -> None:
    """A value may not carry the closing mark of a quoted span it copies, nor run on
    past a described example's closing mark; an apostrophe inside one of the request's
    words, and a quote the value opened itself, are kept."""
    request = "I have a query: 'what is the weather like'. Which intent? Lunch at McDonald's"
    guard = argument_guard("", [Message.user(request)])
    head = ' {"tool": "record", "arguments": {"query": " what is the weather like'
    assert guard(head, "'")
    assert guard(head, "'.")
    assert not guard(head, '"')
    head = ' {"tool": "record", "arguments": {"place": " McDonald'
    assert not guard(head, "'s")
    state = {
        "type": "string",
        "description": "The U.S. state abbreviation, such as 'CA' for California.",
    }
    tool = _tool("calculate_tax", {"state": state}, ["state"])
    request = [Message.user("A purchase in San Francisco, California.")]
    taxed = argument_guard("", request, [tool])
    head = ' {"tool": "calculate_tax", "arguments": {"state": " CA'
    assert taxed(head, "'")  # "CA' for California" runs on from the example
    assert not taxed(head, '"')  # an abbreviation in capitals, not "ca" cut from a word
    assert taxed(head.lower(), '"')  # "ca" is "california" cut short
    query = argument_guard("", [Message.user("Users whose job is 'engineer'.")])
    head = ' {"tool": "db", "arguments": {"sql": " SELECT * FROM users WHERE job = '
    assert not query(head, "'")
    assert not query(head + "'engineer", "'")


def test_a_quoted_described_example_is_its_quoted_text() -> None:
    """ "such as 'CA' for California or 'NY' for New York" lists CA and NY: the whole
    part was taken, quotes stripped at its ends only, and the call was held to
    ``"CA' for California"``."""
    from loopwright.providers.local_ground import described_examples, named_example

    state = {
        "type": "string",
        "description": "The state, such as 'CA' for California or 'NY' for New York.",
    }
    assert described_examples(state) == ["CA", "NY"]
    assert named_example(state, "A laptop bought in California.") == {
        "type": "string",
        "enum": ["CA"],
    }
    store = {"type": "string", "description": "A store, e.g. 'Macy's', 'Target' or Costco"}
    assert described_examples(store) == ["Macy's", "Target", "Costco"]


def test_a_copy_of_a_quoted_span_does_not_end_inside_it() -> None:
    """The model ended ``"url": "https"`` for "from the following URL:
    'https://api.insights.com/groups'": a copy starting where a quoted span starts
    runs to its end. Text the request also writes outside the quotes may end there."""
    request = (
        "Get the groups from the URL 'https://api.insights.com/groups'? Sort my todo 'todo list'"
    )
    guard = argument_guard("", [Message.user(request)])
    head = ' {"tool": "requests.get", "arguments": {"url": "https'
    assert guard(head, '"')
    assert guard(head, '",')
    assert not guard(head, "://")
    assert not guard(head + "://api.insights.com/groups", '"')
    head = ' {"tool": "todo", "arguments": {"content": "todo'
    assert not guard(head, '"')  # "my todo" is outside the quote


def test_an_example_written_only_inside_a_url_is_not_named() -> None:
    """'https' is the protocol example of a URL parameter; a request giving the URL
    'https://api.insights.com/groups' does not name it (the call was held to
    ``"https"``), and a request giving a whole example URL still does."""
    from loopwright.providers.local_ground import named_example

    url = {"type": "string", "description": "The URL, including the protocol (e.g., 'https')."}
    assert named_example(url, "Groups from 'https://api.insights.com/groups'?") is None
    assert named_example(url, "Use https, not http.") == {"type": "string", "enum": ["https"]}
    data = {"type": "string", "description": "The URL, such as 'https://api.example.com/v1'."}
    assert named_example(data, "Get 'https://api.example.com/v1' now") == {
        "type": "string",
        "enum": ["https://api.example.com/v1"],
    }


def test_an_address_in_a_long_run_without_spaces_is_found_in_linear_time() -> None:
    """A 1 MB prompt without spaces took minutes in ``named_example``: the URL/email
    pattern was tried from every position of the run to its end. Run in a child process
    (the regex engine holds the GIL) with a bound far above the milliseconds it takes
    now, so only a quadratic scan fails it."""
    import subprocess
    import sys

    code = (
        "from loopwright.providers import local_ground as lgr\n"
        "schema = {'type': 'string', 'description': \"The endpoint, e.g. 'https'\"}\n"
        "print(lgr.named_example(schema, 'x' * 1_000_000))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30)
    assert out.stdout.strip() == b"None", out.stderr
    from loopwright.providers import local_names

    found = [m.group(0) for m in local_names._ADDRESS.finditer("see https://a.io/x or a@b.com")]
    assert found == ["https://a.io/x", "a@b.com"]
