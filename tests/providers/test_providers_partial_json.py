"""Partial parsing of streamed tool-call arguments (jiter and the stdlib completer)."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.providers._stream import (
    ArgumentsError,
    complete_partial,
    parse_final,
    parse_partial,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.text(max_size=12)
    | st.floats(allow_nan=False, allow_infinity=False, width=32),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)


@settings(deadline=None)
@given(objects)
def test_complete_documents_agree_with_json(obj):
    text = json.dumps(obj)
    assert parse_partial(text) == obj
    assert complete_partial(text) == obj
    assert parse_final(text) == obj


@settings(max_examples=60, deadline=None)
@given(objects)
def test_every_prefix_parses_or_is_none_and_never_raises(obj):
    text = json.dumps(obj)
    for end in range(len(text) + 1):
        for parser in (parse_partial, complete_partial):
            value = parser(text[:end])
            assert value is None or isinstance(value, dict | list | str | int | float | bool)


@settings(deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_text_never_raises(text):
    parse_partial(text)
    complete_partial(text)


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        ('{"city": "Par', {"city": "Par"}),
        ('{"city": "Paris", "n', {"city": "Paris"}),
        ('{"city": "Paris", "n":', {"city": "Paris"}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a": {"b": tr', {"a": {}}),
        ('{"esc": "x\\', {"esc": "x"}),
    ],
)
def test_stdlib_completer_cases(fragment, expected):
    assert complete_partial(fragment) == expected


def test_growing_fragments_grow():
    text = json.dumps({"path": "/var/log/x.log", "lines": 20})
    seen = [parse_partial(text[:i]) for i in range(1, len(text) + 1)]
    paths = [s.get("path", "") for s in seen if s]
    assert paths[-1] == "/var/log/x.log"
    assert all(b.startswith(a) for a, b in itertools.pairwise(paths))


def test_parse_final_is_strict():
    assert parse_final("") == {}
    assert parse_final("  ") == {}
    with pytest.raises(ArgumentsError, match="not valid JSON"):
        parse_final('{"a": 1')
    with pytest.raises(ArgumentsError, match="JSON object"):
        parse_final("[1]")
