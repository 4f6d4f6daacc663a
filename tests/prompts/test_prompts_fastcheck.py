"""The compiled "certainly valid" check the pattern parsers use before jsonschema.

It may only ever say *valid* when jsonschema agrees; the patterns' own schemas (with
``$defs``/``$ref``, ``allOf`` and ``if``/``then``) must compile, so a valid reply never
enters jsonschema.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from loopwright.core.schemacheck import compile_fast_check
from loopwright.prompts.patterns import PATTERN_NAMES, Pattern, load_pattern

PLAN = {
    "action": "plan",
    "plan": [
        {"step_id": 1, "description": "a", "tool_name": "q", "tool_input": {}, "depends_on": []}
    ],
}
ACCEPT = {
    "evaluation": {k: {"score": 5} for k in ("completeness", "correctness", "format")},
    "overall_pass": True,
    "action": "accept",
}


@pytest.mark.parametrize("name", PATTERN_NAMES)
def test_every_pattern_schema_compiles(name: str) -> None:
    assert compile_fast_check(load_pattern(name).schema) is not None


class _NoJsonschema:
    def iter_errors(self, value: object) -> Any:
        raise AssertionError("jsonschema ran for a valid reply")


@pytest.mark.parametrize(("name", "reply"), [("planner", PLAN), ("reflector", ACCEPT)])
def test_valid_reply_skips_jsonschema(name: str, reply: dict[str, Any]) -> None:
    base = load_pattern(name)
    pattern = Pattern(base.name, base.template, base.schema, base.safe_exit, (), base.checks)
    object.__setattr__(pattern, "_validator", _NoJsonschema())
    assert pattern.parse(json.dumps(reply)).value == reply


def test_doubt_still_reports_jsonschema_errors() -> None:
    retry = dict(ACCEPT, action="retry_step")  # the if/then requires retry_details
    with pytest.raises(Exception, match="retry_details"):
        load_pattern("reflector").parse(json.dumps(retry))


SCHEMAS: list[dict[str, Any]] = [
    {
        "$defs": {"n": {"type": "integer", "minimum": 1}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/n"}, "k": {"enum": ["x", "y", 1]}},
        "allOf": [
            {"if": {"properties": {"k": {"const": "x"}}}, "then": {"required": ["a"]}},
            {"if": {"required": ["a"]}, "then": {"required": ["k"]}, "else": {"type": "object"}},
        ],
    },
    {
        "$defs": {"tree": {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/tree"}}}}},
        "$ref": "#/$defs/tree",
    },
    {"if": {"type": "integer"}, "then": {"minimum": 3}, "else": {"type": "string"}},
    {"if": {"properties": {"k": {"const": 1}}}, "then": {"required": ["a"]}},
]  # fmt: skip

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 5)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["x", "y", "", "a", "k"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "k", "kids", "z"]), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_fast_check_never_accepts_what_jsonschema_rejects(index: int, value: object) -> None:
    schema = SCHEMAS[index]
    fast = compile_fast_check(schema)
    assert fast is not None
    if fast(value):
        assert Draft202012Validator(schema).is_valid(value)


def test_fast_check_agrees_on_pattern_replies() -> None:
    reflector = compile_fast_check(load_pattern("reflector").schema)
    planner = compile_fast_check(load_pattern("planner").schema)
    assert reflector is not None and planner is not None
    assert reflector(ACCEPT) and planner(PLAN)
    assert not reflector(dict(ACCEPT, action="retry_step"))
    assert not planner({"action": "plan"})
    assert not planner({"action": "clarify"})
    assert planner({"action": "clarify", "question": "which?"})


def test_unknown_refs_and_keywords_are_outside_the_subset() -> None:
    assert compile_fast_check({"if": {"maxProperties": 1}, "then": {"required": ["a"]}}) is None
    assert compile_fast_check({"$ref": "#/$defs/missing"}) is None
    assert compile_fast_check({"$defs": {"a": {}}, "$ref": "other.json#/$defs/a"}) is None


def test_bad_date_is_refused_on_the_slow_path_too() -> None:
    """A ``format: date`` field is asserted by the fast check; the full validator that
    words the errors must assert it too, or a bad date that takes the slow path passes."""
    base = load_pattern("planner")
    schema = {
        "type": "object",
        "properties": {"due": {"type": "string", "format": "date"}},
        "required": ["due"],
    }
    pattern = Pattern("dated", base.template, schema, base.safe_exit)
    assert pattern.parse('{"due": "2024-05-31"}').value == {"due": "2024-05-31"}
    with pytest.raises(Exception, match=r"/due: '2024-13-45' is not a 'date' \(write it like"):
        pattern.parse('{"due": "2024-13-45"}')
