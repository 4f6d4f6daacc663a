"""@tool parameters of value types a model writes as strings: datetime.time/timedelta,
uuid.UUID, decimal.Decimal, pathlib.Path (schemas, conversion, errors, defaults), and
set parameters whose repeated items collapse."""

from __future__ import annotations

import datetime
import decimal
import pathlib
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import TypeAdapter

from loopwright.core.formats import is_duration, is_time, is_uuid, parse_duration
from loopwright.core.messages import ToolCallPart
from loopwright.core.schemacheck import compile_fast_check
from loopwright.tools import Confirmation, DispatchConfig, Dispatcher, Tool, ToolRegistry, tool
from loopwright.tools.validation import validate_arguments
from loopwright.tools.valuetypes import format_duration, to_decimal

UID = "123e4567-e89b-12d3-a456-426614174000"
seen: list[dict[str, Any]] = []


@tool(inline=True)
def book(
    ref: uuid.UUID,
    at: datetime.time,
    length: datetime.timedelta,
    price: decimal.Decimal,
    folder: pathlib.Path,
) -> str:
    """Book a slot."""
    seen.append({"ref": ref, "at": at, "length": length, "price": price, "folder": folder})
    return "booked"


GOOD = {"ref": UID, "at": "14:30", "length": "PT1H30M", "price": "12.50", "folder": "a/b"}


async def call(t: Tool, args: dict[str, Any], config: DispatchConfig | None = None) -> Any:
    seen.clear()
    dispatcher = Dispatcher(ToolRegistry([t]), config or DispatchConfig())
    return (await dispatcher.run_one(ToolCallPart("c1", t.name, args, ""))).result


@pytest.mark.parametrize(
    "tp", [uuid.UUID, pathlib.Path, decimal.Decimal, datetime.time, datetime.timedelta]
)
def test_each_type_has_pydantics_schema(tp: Any) -> None:
    # was: ValueError "has type <class 'uuid.UUID'>, which has no JSON Schema mapping"
    def f(x: Any) -> None:
        """F."""

    f.__annotations__ = {"x": tp, "return": None}
    assert tool(f).spec.parameters["properties"]["x"] == TypeAdapter(tp).json_schema()


async def test_valid_values_reach_the_function_as_python_values() -> None:
    result = await call(book, GOOD)
    assert not result.is_error, result.content
    assert seen == [
        {
            "ref": uuid.UUID(UID),
            "at": datetime.time(14, 30),
            "length": datetime.timedelta(hours=1, minutes=30),
            "price": decimal.Decimal("12.50"),
            "folder": pathlib.Path("a/b"),
        }
    ]


@pytest.mark.parametrize(
    ("number", "expected"), [(0.1, "0.1"), (12, "12"), (1e-7, "1E-7"), (2.50, "2.5")]
)
async def test_a_decimal_given_as_a_number_is_read_through_its_shortest_repr(
    number: float, expected: str
) -> None:
    result = await call(book, {**GOOD, "price": number})
    assert not result.is_error, result.content
    assert seen[0]["price"] == decimal.Decimal(expected)
    assert str(seen[0]["price"]) == expected  # not the float's 55 binary digits


@pytest.mark.parametrize(
    ("field", "bad", "form"),
    [
        ("ref", "order-17", UID),
        ("ref", UID.replace("-", ""), UID),
        ("at", "2pm", "14:30:00"),
        ("at", "25:00", "14:30:00"),
        ("length", "90 minutes", "PT1H30M"),
        ("length", "01:30:00", "PT1H30M"),
        ("length", "PT", "PT1H30M"),
    ],
)
async def test_a_bad_value_is_refused_at_its_field_with_the_expected_form(
    field: str, bad: str, form: str
) -> None:
    result = await call(book, {**GOOD, field: bad})
    assert result.is_error and result.error_kind == "invalid_arguments"
    assert f"/{field}: {bad!r}" in result.content and form in result.content
    assert seen == []


@pytest.mark.parametrize("bad", ["twelve", "NaN", "Infinity", "1.2.3"])
async def test_a_bad_decimal_names_the_parameter_before_anyone_is_asked(bad: str) -> None:
    asked: list[str] = []

    def confirm(call: Any, spec: Any) -> Confirmation:
        asked.append(call.id)
        return Confirmation.approve()

    pay = tool(requires_confirmation=True, inline=True)(book.fn)
    result = await call(pay, {**GOOD, "price": bad}, DispatchConfig(confirm=confirm))
    assert result.is_error and result.error_kind == "invalid_arguments"
    assert "do not convert to the tool's types" in result.content
    assert f"/price: {bad!r} is not a" in result.content and '"12.50"' in result.content
    assert asked == [] and seen == []  # was: approved first, then failed to convert


@dataclass
class Window:
    start: datetime.time
    end: datetime.time

    def __post_init__(self) -> None:
        if self.end <= self.start:
            raise ValueError("end must be after start")


async def test_nested_values_convert_and_a_failure_inside_names_its_place() -> None:
    got: list[Any] = []

    @tool(inline=True)
    def plan(
        refs: list[uuid.UUID],
        budget: dict[str, decimal.Decimal],
        window: Window,
        pause: datetime.timedelta | None = None,
    ) -> str:
        """Plan."""
        got.append((refs, budget, window, pause))
        return "ok"

    args = {
        "refs": [UID],
        "budget": {"food": "10.05", "rent": 800},
        "window": {"start": "09:00", "end": "17:30"},
        "pause": "PT15M",
    }
    result = await call(plan, args)
    assert not result.is_error, result.content
    assert got == [
        (
            [uuid.UUID(UID)],
            {"food": decimal.Decimal("10.05"), "rent": decimal.Decimal(800)},
            Window(datetime.time(9), datetime.time(17, 30)),
            datetime.timedelta(minutes=15),
        )
    ]
    bad = await call(plan, {**args, "window": {"start": "17:30", "end": "09:00"}})
    assert bad.is_error and "/window: " in bad.content and "end must be after start" in bad.content
    nested = await call(plan, {**args, "refs": [UID, "x"]})
    assert nested.is_error and "/refs/1: 'x' is not a 'uuid'" in nested.content


def test_defaults_are_advertised_in_their_json_form() -> None:
    @tool
    def f(
        ref: uuid.UUID = uuid.UUID(UID),
        at: datetime.time = datetime.time(9, 15),
        length: datetime.timedelta = datetime.timedelta(days=1, hours=2, seconds=0.5),
        price: decimal.Decimal = decimal.Decimal("9.90"),
        folder: pathlib.Path = pathlib.Path("out"),
    ) -> None:
        """F."""

    props = f.spec.parameters["properties"]
    assert [props[k]["default"] for k in props] == [UID, "09:15:00", "P1DT2H0.5S", "9.90", "out"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PT1H30M", datetime.timedelta(hours=1, minutes=30)),
        ("P2D", datetime.timedelta(days=2)),
        ("P1W2D", datetime.timedelta(days=9)),
        ("PT0.5S", datetime.timedelta(milliseconds=500)),
        ("P1DT12H", datetime.timedelta(days=1, hours=12)),
        ("-PT1H", datetime.timedelta(hours=-1)),
        ("P1Y2M", datetime.timedelta(days=365 + 60)),
        ("PT0S", datetime.timedelta(0)),
    ],
)
def test_iso_durations(text: str, expected: datetime.timedelta) -> None:
    assert parse_duration(text) == expected
    assert TypeAdapter(datetime.timedelta).validate_python(text) == expected  # as in a model


@pytest.mark.parametrize(
    "text", ["P", "PT", "P1DT", "1H", "pt1h", "P1H", "PT1D", "P1.D", "P 1D", "P1.5DT1H", "P0.0W0D"]
)
def test_not_iso_durations(text: str) -> None:
    with pytest.raises(ValueError, match="PT1H30M"):
        parse_duration(text)


def test_a_duration_too_long_for_python_is_a_value_error() -> None:
    assert not is_duration("P99999999999D")


@pytest.mark.parametrize(
    ("fmt", "check", "good", "bad"),
    [
        ("uuid", is_uuid, [UID, UID.upper()], [UID[:-1], "{" + UID + "}", ""]),
        ("time", is_time, ["14:30", "14:30:00Z", "14:30:00.25-05:00"], ["24:00", "2pm", "1430"]),
        ("duration", is_duration, ["PT1M", "P3W"], ["P", "1 day"]),
    ],
)
def test_the_fast_check_and_jsonschema_agree_on_each_format(
    fmt: str, check: Any, good: list[str], bad: list[str]
) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    fast = compile_fast_check(schema)
    assert fast is not None
    for value in good + bad:
        ok = value in good
        assert check(value) is ok, value
        assert (validate_arguments(schema, {"v": value}) == []) is ok, value
        assert fast({"v": value}) is ok, value


def test_to_decimal_refuses_what_is_no_finite_number() -> None:
    for value in (True, None, [], float("nan"), float("inf"), "-Infinity", "sNaN"):
        with pytest.raises(ValueError, match=r"12\.50"):
            to_decimal(value)


def test_format_duration_examples() -> None:
    assert format_duration(datetime.timedelta(0)) == "PT0S"
    assert format_duration(datetime.timedelta(minutes=-90)) == "-PT1H30M"
    assert format_duration(datetime.timedelta(days=3)) == "P3D"


# -- sets: repeated items collapse ---------------------------------------------------------
@tool(inline=True)
def tag(tags: set[str], ids: frozenset[int] = frozenset()) -> str:
    """Tag."""
    seen.append({"tags": tags, "ids": ids})
    return "ok"


async def test_repeated_set_items_collapse_and_the_schema_still_says_unique() -> None:
    # was: refused ("['a', 'b', 'a'] has non-unique elements"), costing a model turn
    assert tag.spec.parameters["properties"]["tags"]["uniqueItems"] is True
    result = await call(tag, {"tags": ["a", "b", "a"], "ids": [1, 1, 2]})
    assert not result.is_error, result.content
    assert seen == [{"tags": {"a", "b"}, "ids": frozenset({1, 2})}]


@dataclass
class Labels:
    names: set[str]


async def test_a_set_inside_a_dataclass_collapses_too() -> None:
    got: list[Any] = []

    @tool(inline=True)
    def label(labels: Labels) -> str:
        """Label."""
        got.append(labels)
        return "ok"

    result = await call(label, {"labels": {"names": ["x", "x"]}})
    assert not result.is_error, result.content
    assert got == [Labels({"x"})]


async def test_a_hand_written_schema_keeps_refusing_repeated_items() -> None:
    # its function receives the list as sent: uniqueItems is the only guard it has
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "uniqueItems": True}},
        "required": ["tags"],
    }
    raw = Tool.from_schema("raw", "Raw.", schema, lambda tags: "ok")
    result = await call(raw, {"tags": ["a", "a"]})
    assert result.is_error and "non-unique" in result.content


@dataclass
class Odd:
    uniqueItems: bool  # a field a JSON API may well have


def test_a_property_named_unique_items_is_kept() -> None:
    @tool
    def f(odd: Odd, tags: set[str]) -> None:
        """F."""

    assert f.validate({"odd": {"uniqueItems": True}, "tags": ["a", "a"]}) == []
    assert [v.pointer for v in f.validate({"odd": {}, "tags": []})] == ["/odd/uniqueItems"]
