"""Prompt, grammar schema, parsing and trimming of the embedded provider (no model)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.messages import Message, ToolResultPart
from loopwright.core.tools import ToolSpec
from loopwright.providers import local_ground as lgr
from loopwright.providers import local_output as lo
from loopwright.providers import local_prompt as lp
from loopwright.providers.local_history import (
    _blocks,
    awaits_first_call,
    fit_history,
    repeats_answered_call,
)
from loopwright.providers.scripted import tool_call
from loopwright.tools.builtin import BUILTIN_TOOLS, make_tools

SPECS = [t.spec for t in make_tools(BUILTIN_TOOLS)]
BOUNDS = lp.GrammarBounds()


def test_prefix_lists_every_tool_with_examples_from_its_schema() -> None:
    text = lp.render_prefix(SPECS, "Be brief.")
    for spec in SPECS:
        assert f"{spec.name}: " in text
        # A worked example only for schemas that give example values.
        assert (f'"tool": "{spec.name}"' in text) == lp.has_examples(spec.parameters)
    assert '"city": " Paris"' in text  # schema example, rendered with the leading space
    assert text.rstrip() == text
    assert "Instructions: Be brief." in text


def test_prompt_prefix_is_stable_and_history_extends_it() -> None:
    call = tool_call("calculator", {"expression": "1 + 1"}, id="c1")
    turn1 = [Message.user("What is 1 + 1?")]
    turn2 = [
        *turn1,
        Message("assistant", (call,)),
        Message.tool_results([ToolResultPart("c1", "calculator", "2")]),
    ]
    a = lp.render_prefix(SPECS, None) + "".join(map(lp.render_message, turn1))
    b = lp.render_prefix(SPECS, None) + "".join(map(lp.render_message, turn2))
    assert b.startswith(a)
    assert "\nResult: 2" in b
    assert not (b + lp.cue()).endswith(" ")


def test_output_schema_is_bounded_and_accepts_valid_turns() -> None:
    schema = lp.output_schema(SPECS, "both", BOUNDS)
    text = json.dumps(schema)
    assert '"maxLength"' in text and '"maxItems"' in text
    jsonschema.validate({"tool": "get_weather", "arguments": {"city": "Oslo"}}, schema)
    jsonschema.validate({"answer": "64"}, schema)
    tools_only = lp.output_schema(SPECS, "tools", BOUNDS)
    assert all("tool" in o["properties"] for o in tools_only["oneOf"])
    answer_only = lp.output_schema(SPECS, "answer", BOUNDS)
    assert answer_only["properties"]["answer"]["maxLength"] == BOUNDS.max_answer_chars


def test_bounded_schema_handles_type_lists_and_nesting() -> None:
    bounded = lp._bounded(
        {
            "type": "object",
            "properties": {"x": {"type": ["string", "null"]}, "y": {"type": "array"}},
        },
        BOUNDS,
        0,
    )
    assert bounded["additionalProperties"] is False
    assert bounded["properties"]["x"]["anyOf"][0]["maxLength"] == BOUNDS.max_string_chars
    assert bounded["properties"]["y"]["maxItems"] == BOUNDS.max_array_items


def test_parse_output_strips_the_prompt_space_and_rejects_unknown_tools() -> None:
    got = lo.parse_output(
        '{"tool": "get_weather", "arguments": {"city": " Oslo"}}', ["get_weather"]
    )
    assert got == lo.ParsedCall("get_weather", {"city": "Oslo"})
    assert lo.parse_output('{"tool": "rm", "arguments": {}}', ["get_weather"]) is None
    assert lo.parse_output('{"answer": "hi"}', []) == lo.ParsedAnswer("hi")
    assert lo.parse_output('{"answer": "cut', []) is None


def test_partial_answer_decodes_progressively() -> None:
    full = json.dumps({"answer": 'He said "hi"\n\u00e9'})
    seen = [lo.partial_answer(full[:i]) for i in range(len(full) + 1)]
    assert seen[-1] == 'He said "hi"\n\u00e9'
    assert lo.partial_answer('{"tool": "x"') is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_parsers_never_raise_on_model_output(text: str) -> None:
    lo.parse_output(text, ["calculator"])
    prefix = lo.partial_answer('{"answer": "' + text)
    assert prefix is None or isinstance(prefix, str)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40))
def test_partial_answer_is_a_prefix_of_the_final_answer(answer: str) -> None:
    full = json.dumps({"answer": answer})
    prev = ""
    for i in range(len(full) + 1):
        now = lo.partial_answer(full[:i]) or ""
        assert now.startswith(prev) or not prev
        prev = now
    assert prev == answer


class CharTokens:
    """A stand-in tokenizer: one token per character."""

    def tokenize(self, data: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return list(data.decode())


def test_fit_history_drops_oldest_blocks_but_keeps_calls_with_results() -> None:
    call = tool_call("calculator", {"expression": "1 + 1"}, id="c1")
    history = [
        Message.user("old " * 50),
        Message("assistant", (call,)),
        Message.tool_results([ToolResultPart("c1", "calculator", "2")]),
        Message.user("new question"),
    ]
    assert [len(b) for b in _blocks(history)] == [1, 2, 1]
    text, dropped = fit_history(CharTokens(), history, 150)
    assert dropped == 1
    assert "old" not in text and "Result: 2" in text and "new question" in text
    text, dropped = fit_history(CharTokens(), history, 40)
    assert "new question" in text and "Result" not in text


def test_fit_history_cuts_a_huge_message_in_the_middle() -> None:
    text, _ = fit_history(CharTokens(), [Message.user("a" * 10_000 + "END")], 500)
    assert len(text) <= 500
    assert "characters cut to fit the context" in text and text.rstrip().endswith("END")


def test_turn_policies() -> None:
    call = tool_call("calculator", {"expression": "1 + 1"}, id="c1")
    asked = [Message.user("q")]
    answered = [
        *asked,
        Message("assistant", (call,)),
        Message.tool_results([ToolResultPart("c1", "calculator", "2")]),
    ]
    assert awaits_first_call(asked) and not awaits_first_call(answered)
    same = Message("assistant", (tool_call("calculator", {"expression": "1 + 1"}, id="c2"),))
    other = Message("assistant", (tool_call("calculator", {"expression": "2 + 2"}, id="c3"),))
    assert repeats_answered_call(same, answered)
    assert not repeats_answered_call(other, answered)


@pytest.mark.parametrize(("kind", "repeats"), [("invalid_arguments", True), ("transient", False)])
def test_a_call_that_failed_is_not_made_again_with_the_same_arguments(
    kind: str, repeats: bool
) -> None:
    """The same query against a column that does not exist fails the same way: the
    model made it three times, then gave an empty answer. A transient failure may pass
    on a new try."""
    call = tool_call("sql_query", {"query": "SELECT x FROM t"}, id="c1")
    failed = [
        Message.user("q"),
        Message("assistant", (call,)),
        Message.tool_results([ToolResultPart("c1", "sql_query", "no such column", True, kind)]),
    ]
    again = Message("assistant", (tool_call("sql_query", {"query": "SELECT x FROM t"}, id="c2"),))
    assert repeats_answered_call(again, failed) is repeats


def test_registry_resolves_local_specs_without_loading(tmp_path) -> None:
    from loopwright.providers.local import LocalModel
    from loopwright.providers.registry import resolve_model

    default = resolve_model("local")
    assert isinstance(default, LocalModel) and default.name == "local:gemma-3-270m"
    other = resolve_model(f"local:{tmp_path / 'm.gguf'}")
    assert other.name == f"local:{tmp_path / 'm.gguf'}"
    assert default.context_window == 4096


def test_no_worked_example_is_made_up_from_parameter_names() -> None:
    """A schema without example values gets no generated example: values made up from
    the parameter's name ("start location") were copied into real calls."""
    directions = ToolSpec(
        "get_directions",
        "Get driving directions.",
        {
            "type": "object",
            "properties": {
                "start_location": {"type": "string"},
                "end_location": {"type": "string"},
            },
            "required": ["start_location", "end_location"],
        },
    )
    text = lp.render_prefix([directions], None)
    assert "start location" not in text and '"tool": "get_directions"' not in text
    assert not lp.has_examples(directions.parameters)
    classic = {"calculator", "get_weather", "read_file", "add", "multiply", "divide"}
    assert all(lp.has_examples(s.parameters) for s in SPECS if s.name in classic)


@pytest.mark.parametrize(
    ("schema", "name", "request_text", "expected"),
    [
        (
            {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "unit",
            "Oslo in Fahrenheit",
            {"type": "string", "enum": ["fahrenheit"]},
        ),
        ({"type": "string", "enum": ["celsius", "fahrenheit"]}, "unit", "weather in Oslo", None),
        ({"type": "integer"}, "limit", "show 5 rows", {"enum": [5]}),
        ({"type": "number"}, "abv_min", "a bitter lager", None),
        ({"type": "number"}, "ratio", "use 9.8 and 2", {"enum": [9.8, 2]}),
        (
            {"type": "boolean"},
            "aligned",
            "with the timelines aligned",
            {"type": "boolean", "enum": [True]},
        ),
        (
            {"type": "boolean"},
            "aligned",
            "timelines not aligned",
            {"type": "boolean", "enum": [False]},
        ),
        ({"type": "string"}, "device_id", "play Roar", None),
    ],
)
def test_optional_parameters_are_offered_only_when_the_request_gives_them(
    schema: dict, name: str, request_text: str, expected: dict | None
) -> None:
    assert lgr.grounded_optional(schema, name, request_text) == expected


def test_output_schema_keeps_required_parameters_whatever_the_request() -> None:
    spec = ToolSpec(
        "f",
        "d",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    )
    args = lp.output_schema([spec], "tools", BOUNDS, lgr.Grounding("weather in Oslo"))[
        "properties"
    ]["arguments"]
    assert list(args["properties"]) == ["city"]
    full = lp.output_schema([spec], "tools", BOUNDS)["properties"]["arguments"]
    assert list(full["properties"]) == ["city", "days"]


TIMEZONE = {
    "type": "string",
    "description": "IANA timezone name (e.g., 'America/New_York', 'Europe/London'). Use"
    " 'Etc/UTC' as local timezone if no timezone provided by the user.",
}


@pytest.mark.parametrize(
    ("description", "examples"),
    [
        (TIMEZONE["description"], ["America/New_York", "Europe/London"]),
        ("the currency code, e.g. USD", ["USD"]),
        ("The city, for example San Francisco, CA", ["San Francisco"]),
        ("Time to convert in 24-hour format (HH:MM)", []),
    ],
)
def test_examples_are_read_from_a_parameter_description(
    description: str, examples: list[str]
) -> None:
    from loopwright.providers.local_prompt import schema_examples

    assert schema_examples({"type": "string", "description": description}) == examples
    # Explicit examples win; other types are not read.
    assert schema_examples({"type": "string", "description": description, "examples": ["x"]}) == [
        "x"
    ]
    assert schema_examples({"type": "integer", "description": description}) == []


def test_values_are_held_to_the_shape_their_examples_share() -> None:
    """mcp-server-time's timezone: the model wrote "Tokyo" (then "Tokyo/Japan"); held to
    the examples' word/word shape and shown the description, it writes Asia/Tokyo."""
    import re

    from loopwright.providers.local_prompt import example_pattern, output_schema

    shape = example_pattern(["America/New_York", "Europe/London"])
    assert shape is not None
    assert re.fullmatch(shape, " Asia/Tokyo") and not re.fullmatch(shape, " Tokyo")
    assert example_pattern(["2024-01-31", "1999-12-01"]) is not None
    for unlike in (["notes/todo.txt", "README.md"], ["Paris", "Tokyo"], ["a/b"], ["a b/c", "d/e"]):
        assert example_pattern(unlike) is None
    spec = ToolSpec(
        "get_current_time",
        "Get current time in a specific timezone",
        {"type": "object", "properties": {"timezone": TIMEZONE}, "required": ["timezone"]},
    )
    schema = output_schema([spec], "tools", BOUNDS)
    assert schema["properties"]["arguments"]["properties"]["timezone"]["pattern"] == shape
    line = lp.render_prefix([spec], None).split("Tools available now:\n")[1]
    assert "(IANA timezone name (e.g., 'America/New_York', 'Europe/London'))" in line
    # A parameter with explicit examples shows no description (the built-ins' prompt,
    # and their tool choice, are unchanged).
    assert "(" not in lp.describe_parameters(
        {
            "properties": {
                "city": {"type": "string", "description": "e.g. Paris", "examples": ["Paris"]}
            }
        }
    )


def test_request_overlap_measures_words_shared_with_one_tool() -> None:
    """A request that shares a good part of its words with a tool is a call (BFCL
    questions the answer-or-call score sent to a direct answer); one that shares none
    is left to the score ("What is 45 * 12?", "Who wrote Hamlet?")."""
    tools = [t.spec for t in make_tools(["calculator", "get_weather"])]
    assert lp.request_overlap(tools, "What is the weather in Beijing?") >= 0.5
    assert lp.request_overlap(tools, "What is 45 * 12?") == 0.0
    assert lp.request_overlap(tools, "Who wrote Hamlet?") == 0.0
    directions = ToolSpec(
        "get_directions",
        "Get driving directions between two places.",
        {"properties": {"start_location": {"type": "string"}, "end_location": {"type": "string"}}},
    )
    assert lp.request_overlap([directions], "Get directions from Sydney to Melbourne") >= 0.3
    assert lp.request_overlap([directions], "Tell me a joke about penguins") == 0.0


def test_tool_overlaps_rank_the_tool_the_request_talks_about() -> None:
    """Added to each tool's name score (LocalConfig.overlap_weight): a question about a
    president shares words with the president tool, none with a deck of cards."""
    card = ToolSpec(
        "find_card_in_deck",
        "Locate a particular card in a deck.",
        {"properties": {"rank": {"type": "string"}, "suit": {"type": "string"}}},
    )
    president = ToolSpec(
        "get_president_by_year",
        "Get the name of the US president in a given year.",
        {"properties": {"year": {"type": "integer"}}},
    )
    shares = lp.tool_overlaps([card, president], "Who was the president of the US in 1861?")
    assert shares[0] == 0.0 and shares[1] > 0.5
    assert lp.tool_overlaps([card, president], "What is 45 * 12?") == [0.0, 0.0]


def test_a_nested_object_without_declared_properties_takes_keys_of_its_own() -> None:
    from loopwright.providers.local_prompt import GrammarBounds, _bounded

    schema = {
        "type": "object",
        "properties": {"grades": {"type": "object", "description": "subject -> score"}},
        "required": ["grades"],
    }
    out = _bounded(schema, GrammarBounds(), 0)
    grades = out["properties"]["grades"]
    # closed with no properties it could only be {}
    assert grades.get("additionalProperties") not in (None, False)
    assert "number" in json.dumps(grades["additionalProperties"])
    # the arguments object itself stays closed
    assert out["additionalProperties"] is False


def test_a_stated_format_of_comma_joined_parts_holds_the_value_to_them() -> None:
    import re

    from loopwright.providers.local_prompt import GrammarBounds, _bounded, parts_pattern

    city = {
        "type": "string",
        "description": "The location, in the format of 'City, State (abbr)', such as 'Boston, MA'.",
    }
    pattern = parts_pattern(city)
    assert pattern is not None
    assert re.match(pattern, " Boston, MA") and not re.match(pattern, " Boston")
    address = "in the format of 'Street Address, City, State (abbr), Country'."
    four = parts_pattern({"type": "string", "description": address})
    assert four is not None and re.match(four, " 2020 Addison Street, Berkeley, CA, USA")
    assert not re.match(four, " Berkeley, CA")
    # examples alone ("e.g. Seattle, WA") state no format: the value stays free
    assert parts_pattern({"type": "string", "description": "The city, e.g. Seattle, WA"}) is None
    assert _bounded(city, GrammarBounds(), 1) == {"type": "string", "pattern": pattern}


def test_a_local_model_string_comes_with_the_embedded_strategy() -> None:
    from loopwright import Agent
    from loopwright.providers.local import LocalModel
    from loopwright.strategies.embedded import FollowPlan, GroundedAnswers, HoldToRequest

    wrapped = Agent("local:gemma-3-270m").config.model
    assert isinstance(wrapped, GroundedAnswers) and isinstance(wrapped.model, FollowPlan)
    assert isinstance(wrapped.model.model, HoldToRequest)
    assert isinstance(wrapped.model.model.model, LocalModel)
    assert wrapped.name == "local:gemma-3-270m" and wrapped.context_window == 4096
    bare = LocalModel()
    assert Agent(bare).config.model is bare  # a Model passed in is used as it is
