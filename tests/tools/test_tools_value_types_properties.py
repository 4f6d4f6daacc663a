"""Property tests of the value-type conversions: what the validator accepts, the converter
reads (and reads back to the value that was written); the fast check and jsonschema agree."""

from __future__ import annotations

import datetime
import decimal
import math
import pathlib
import uuid
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from loopwright.core.formats import FORMATS, is_duration, parse_duration
from loopwright.core.schemacheck import compile_fast_check
from loopwright.tools import tool
from loopwright.tools.validation import validate_arguments
from loopwright.tools.valuetypes import format_duration, json_value, to_decimal


@tool
def typed(
    ref: uuid.UUID,
    at: datetime.time,
    length: datetime.timedelta,
    price: decimal.Decimal,
    folder: pathlib.Path,
) -> None:
    """Every value type."""


def through_tool(name: str, value: object) -> Any:
    """``value`` validated and converted as the dispatcher does for ``typed``."""
    args = {"ref": str(uuid.UUID(int=0)), "at": "00:00", "length": "PT0S", "price": 0}
    args["folder"] = "."
    args[name] = value
    assert typed.validate(args) == [], (name, value)
    return typed.bind(args, None)[name]


durations = st.timedeltas(
    min_value=datetime.timedelta(days=-99_999), max_value=datetime.timedelta(days=99_999)
)
offsets = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(
    lambda minutes: datetime.timezone(datetime.timedelta(minutes=minutes))
)
times = st.times(timezones=st.none() | offsets)
finite_decimals = st.decimals(allow_nan=False, allow_infinity=False)


@given(durations)
def test_a_duration_round_trips_through_its_iso_form(value: datetime.timedelta) -> None:
    text = format_duration(value)
    assert is_duration(text)
    assert parse_duration(text) == value
    assert through_tool("length", text) == value
    assert TypeAdapter(datetime.timedelta).validate_python(text) == value  # nested: pydantic


_N = r"(\d{1,4}(\.\d{1,3})?"
# the ISO 8601 grammar, written out here: also yields "P", "PT", "P1DT" (not durations)
iso_like = st.from_regex(
    rf"[-+]?P{_N}Y)?{_N}M)?{_N}W)?{_N}D)?(T{_N}H)?{_N}M)?{_N}S)?)?", fullmatch=True
)


@given(iso_like | st.text(alphabet="PTYMWDHS0123456789.-+ ", max_size=14))
def test_what_the_duration_check_accepts_parses_the_same_in_pydantic(text: str) -> None:
    if is_duration(text):
        mine = parse_duration(text)
        theirs = TypeAdapter(datetime.timedelta).validate_python(text)
        assert abs(mine - theirs) <= datetime.timedelta(microseconds=1), text
    else:
        try:
            parse_duration(text)
        except ValueError:
            return
        raise AssertionError(f"refused by the check but parsed: {text!r}")


@given(times)
def test_a_time_round_trips(value: datetime.time) -> None:
    assert through_tool("at", value.isoformat()) == value


@given(st.uuids())
def test_a_uuid_round_trips_in_either_case(value: uuid.UUID) -> None:
    assert through_tool("ref", str(value)) == value
    assert through_tool("ref", str(value).upper()) == value


@given(finite_decimals)
def test_a_decimal_string_keeps_every_digit(value: decimal.Decimal) -> None:
    out = through_tool("price", str(value))
    assert out == value and str(out) == str(value)  # the exponent too: "0.10" stays


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_decimal_number_is_the_floats_shortest_repr(value: float) -> None:
    out = through_tool("price", value)
    assert out == decimal.Decimal(repr(value)) and float(out) == value


@given(st.one_of(st.floats(), st.text(max_size=12), st.integers(), st.booleans(), st.none()))
def test_to_decimal_either_gives_a_finite_decimal_or_names_the_form(value: object) -> None:
    try:
        out = to_decimal(value)
    except ValueError as exc:
        assert "12.50" in str(exc)
    else:
        assert out.is_finite() and not isinstance(value, bool | None)
        if isinstance(value, float):
            assert math.isfinite(value)


@given(st.text(alphabet=st.characters(blacklist_characters="\x00"), min_size=1, max_size=30))
def test_a_path_is_the_string_as_a_path(value: str) -> None:
    assert through_tool("folder", value) == pathlib.Path(value)


@given(st.sampled_from(sorted(FORMATS)), st.text(max_size=40))
def test_the_fast_check_and_jsonschema_agree_on_any_text(fmt: str, value: str) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    fast = compile_fast_check(schema)
    assert fast is not None
    ok = validate_arguments(schema, {"v": value}) == []
    assert fast({"v": value}) is ok
    assert FORMATS[fmt](value) is ok


PARAM_OF = {datetime.timedelta: "length", datetime.time: "at", uuid.UUID: "ref"}


@given(st.one_of(durations, times, st.uuids(), finite_decimals))
def test_a_default_is_advertised_as_a_value_the_tool_reads_back(value: object) -> None:
    shown = json_value(value)
    assert isinstance(shown, str)
    assert through_tool(PARAM_OF.get(type(value), "price"), shown) == value
