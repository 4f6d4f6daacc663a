"""Argument repair: each common model fault, and what gets recorded."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from loopwright.tools import repair_arguments


@pytest.mark.parametrize(
    ("raw", "expected", "repairs"),
    [
        ('{"a": 1}', {"a": 1}, ()),
        ("", {}, ("empty arguments read as {}",)),
        ("   ", {}, ("empty arguments read as {}",)),
        ('{"a": 1,}', {"a": 1}, ("removed trailing comma",)),
        ('{"a": [1, 2,],}', {"a": [1, 2]}, ("removed trailing comma",)),
        ('```json\n{"a": 1}\n```', {"a": 1}, ("removed code fence",)),
        ('```\n{"a": 1}\n```', {"a": 1}, ("removed code fence",)),
        ("{'a': 'x'}", {"a": "x"}, ("converted single-quoted strings",)),
        ("{'a': 'say \"hi\"'}", {"a": 'say "hi"'}, ("converted single-quoted strings",)),
        (
            '{"a": True, "b": False, "c": None}',
            {"a": True, "b": False, "c": None},
            ("replaced Python literal with JSON literal",),
        ),
        ('{"s": "True stays"}', {"s": "True stays"}, ()),
        (
            'Sure! Here are the arguments: {"city": "Paris"} Hope that helps.',
            {"city": "Paris"},
            ("extracted JSON object from surrounding text",),
        ),
        ('{city: "Paris"}', {"city": "Paris"}, ("quoted bare key",)),
        (
            '{"a": 1} and then {"b": 2}',
            {"a": 1},
            ("extracted JSON object from surrounding text",),
        ),
        ('{"a": {"b": 1}', {"a": {"b": 1}}, ("closed unbalanced brackets",)),
        ('"{\\"a\\": 1}"', {"a": 1}, ("decoded double-encoded JSON string",)),
        (
            "```python\n{'q': 'x', 'n': None,}\n```",
            {"q": "x", "n": None},
            (
                "removed code fence",
                "converted single-quoted strings",
                "replaced Python literal with JSON literal",
                "removed trailing comma",
            ),
        ),
    ],
)
def test_repairs(raw: str, expected: dict[str, object], repairs: tuple[str, ...]) -> None:
    out = repair_arguments(raw)
    assert out.error is None
    assert out.arguments == expected
    assert out.repairs == repairs
    assert out.ok


def test_mapping_is_used_as_is() -> None:
    d = {"a": 1}
    assert repair_arguments(d).arguments is d
    assert repair_arguments(MappingProxyType({"b": 2})).arguments == {"b": 2}


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("[1, 2]", "got an array"),
        ("42", "got a number"),
        ("not json at all", "invalid JSON"),
        ('"just text"', "got a string"),
        ("null", "got null"),
    ],
)
def test_unrepairable_input_reports_an_error(raw: str, fragment: str) -> None:
    out = repair_arguments(raw)
    assert out.arguments is None and not out.ok
    assert out.error is not None and fragment in out.error


def test_non_string_input_never_raises() -> None:
    out = repair_arguments(12)  # type: ignore[arg-type]
    assert out.arguments is None and out.error is not None and "int" in out.error


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    out = repair_arguments("[" * 100_000)
    assert out.arguments is None and out.error
