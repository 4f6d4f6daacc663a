"""JSON-aware truncation: always within budget, structure kept where it can be."""

from __future__ import annotations

import dataclasses
import enum
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.tools import render_result, truncate_result


def test_within_budget_is_unchanged() -> None:
    assert truncate_result("hello", 10) == "hello"
    assert truncate_result({"a": [1, 2]}, 100) == '{"a":[1,2]}'
    assert truncate_result(None, 10) == "null"


def test_long_text_keeps_head_and_tail() -> None:
    text = "A" * 500 + "B" * 500
    out = truncate_result(text, 100)
    assert len(out) <= 100
    assert out.startswith("AAAA") and out.endswith("BBBB")
    assert "chars truncated]" in out


def test_long_list_keeps_first_items_total_and_flag() -> None:
    out = truncate_result(list(range(1000)), 200)
    assert len(out) <= 200
    data = json.loads(out)
    assert data["total"] == 1000 and data["truncated"] is True
    assert data["items"] == list(range(len(data["items"])))
    assert len(data["items"]) >= 1


def test_nested_list_in_object() -> None:
    value = {"query": "x", "rows": [{"id": i, "name": f"row {i}"} for i in range(500)]}
    out = truncate_result(value, 400)
    assert len(out) <= 400
    data = json.loads(out)
    assert data["query"] == "x"
    assert data["rows"]["total"] == 500 and data["rows"]["truncated"] is True
    assert data["rows"]["items"][0] == {"id": 0, "name": "row 0"}


def test_long_strings_inside_json_are_cut_head_tail() -> None:
    out = truncate_result({"body": "x" * 5000, "id": 7}, 300)
    data = json.loads(out)
    assert data["id"] == 7 and "chars truncated]" in data["body"]


def test_wide_object_records_dropped_keys() -> None:
    out = truncate_result({f"k{i}": i for i in range(300)}, 120)
    data = json.loads(out)
    assert data["__truncated_keys__"] >= 1 and len(out) <= 120


def test_tiny_budgets() -> None:
    assert truncate_result("abcdef", 3) == "abc"
    assert truncate_result([1, 2, 3, 4], 2) == "[1"
    assert truncate_result("abc", 0) == ""


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class P:
    x: int
    c: Color


def test_render_non_json_values() -> None:
    assert render_result(P(1, Color.RED)) == '{"x":1,"c":"red"}'
    assert render_result({1, 2}) in ("[1,2]", "[2,1]")
    assert render_result(object()).startswith("<object object")
    assert render_result(float("nan")) == "nan"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=60,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.integers(min_value=0, max_value=400))
def test_property_always_within_budget(value: object, budget: int) -> None:
    out = truncate_result(value, budget)
    assert isinstance(out, str) and len(out) <= budget
    full = render_result(value)
    if len(full) <= budget:
        assert out == full


# -- any value renders (huge integers, objects whose str/repr raise) ----------------------
def test_huge_integers_render_exactly_or_summarised() -> None:
    big = 10**5000 + 7
    assert truncate_result(big, 100_000) == "1" + "0" * 4999 + "7"
    nested = truncate_result({"n": big, "ok": 1}, 100_000)
    assert json.loads(nested) == {"n": "1" + "0" * 4999 + "7", "ok": 1}
    cut = truncate_result({"rows": [big] * 3}, 500)
    assert len(cut) <= 500 and json.loads(cut)["rows"]["total"] == 3
    huge = -(3**200_000)  # ~95,000 digits: summarised, never converted whole
    out = truncate_result(huge, 2_000)
    assert out.startswith("-") and "an integer of 95425 digits" in out
    assert out.endswith(f"{3**200_000 % 10**15:015d} (an integer of 95425 digits)")


class _Hostile:
    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _Labelled:
    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        return "Labelled(7)"


def test_values_whose_conversions_raise_still_render() -> None:
    out = truncate_result({"a": _Hostile()}, 500)
    assert "_Hostile object at 0x" in out
    assert truncate_result(_Labelled(), 100) == "Labelled(7)"
    assert "<unprintable" not in truncate_result({"x": _Labelled(), 10**4400: 1}, 100_000)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES.filter(lambda v: not isinstance(v, str)))
def test_render_matches_the_public_json_encoder(value: object) -> None:
    # the reusable C encoder is a speed measure only: its output is json.dumps's
    public = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert render_result(value) == public
