"""Schema validation: every violation with its JSON pointer; the fast path agrees."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright.tools import Violation, validate_arguments, validator_for
from loopwright.tools.validation import compile_fast_check, pointer_from_path

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "stops": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "a/b~": {"type": "number"}},
                "required": ["name"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}


def test_valid_arguments_have_no_violations() -> None:
    assert validate_arguments(SCHEMA, {"city": "Oslo", "days": 3}) == []


def test_every_violation_named_by_pointer() -> None:
    got = validate_arguments(
        SCHEMA,
        {
            "days": 0,
            "unit": "k",
            "extra": 1,
            "stops": [{"name": "a"}, {"a/b~": "x", "zz": 1}],
        },
    )
    assert got == [
        Violation("/city", "required property is missing"),
        Violation("/days", "0 is less than the minimum of 1"),
        Violation("/extra", "unexpected property; allowed: city, days, unit, stops"),
        Violation("/stops/1/a~1b~0", "'x' is not of type 'number'"),
        Violation("/stops/1/name", "required property is missing"),
        Violation("/stops/1/zz", "unexpected property; allowed: name, a/b~"),
        Violation("/unit", "'k' is not one of ['c', 'f']"),
    ]
    assert str(got[0]) == "/city: required property is missing"


def test_root_violation_and_non_mapping() -> None:
    assert validate_arguments(SCHEMA, [1]) == [  # type: ignore[arg-type]
        Violation("", "arguments must be a JSON object, got list")
    ]
    assert str(Violation("", "x")) == "(root): x"


def test_pointer_escaping() -> None:
    assert pointer_from_path(["a/b", "c~d", 0]) == "/a~1b/c~0d/0"


def test_validator_is_cached_per_schema_object() -> None:
    assert validator_for(SCHEMA) is validator_for(SCHEMA)
    assert validator_for(dict(SCHEMA)) is not validator_for(SCHEMA)


def test_long_messages_are_cut() -> None:
    got = validate_arguments(SCHEMA, {"city": "x" * 0 + "", "days": "y" * 5000})
    assert all(len(v.message) <= 300 for v in got)


@pytest.mark.parametrize(
    "value",
    [1, 1.0, 2.5, True, None, "s", [1], {"a": 1}, float("inf"), float("nan"), 10**30],
)
@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer"},
        {"type": "number", "minimum": 0, "maximum": 5},
        {"type": ["integer", "null"]},
        {"enum": [1, True, "s", None]},
        {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
        {"type": "array", "items": {"type": "integer"}, "maxItems": 1},
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"exclusiveMaximum": 3},
    ],
)
def test_fast_path_never_accepts_what_jsonschema_rejects(
    value: object, schema: dict[str, Any]
) -> None:
    fast = compile_fast_check({"type": "object", "properties": {"v": schema}})
    assert fast is not None
    full = validator_for({"type": "object", "properties": {"v": schema}})
    if fast({"v": value}):
        assert list(full.jsonschema_validator().iter_errors({"v": value})) == []


def test_fast_path_declines_unknown_keywords() -> None:
    assert compile_fast_check({"type": "object", "properties": {"a": {"$ref": "#/x"}}}) is None
    assert compile_fast_check({"type": "object", "oneOf": []}) is None
