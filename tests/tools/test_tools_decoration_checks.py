"""What @tool checks and supports: date/datetime parameters, defaults their annotation
refuses, generator functions."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from loopwright.core.messages import ToolCallPart
from loopwright.core.schemacheck import compile_fast_check
from loopwright.tools import DispatchConfig, Dispatcher, ToolRegistry, function_schema, tool
from loopwright.tools.validation import validate_arguments

seen: list[Any] = []


@tool(inline=True)
def book(day: datetime.date, at: datetime.datetime | None = None) -> str:
    """Book a room."""
    seen.append((day, at))
    return f"booked {day.isoformat()}"


def test_date_and_datetime_are_strings_with_a_format() -> None:
    props = book.spec.parameters["properties"]
    assert props["day"] == {"type": "string", "format": "date"}
    assert props["at"]["anyOf"][0] == {"type": "string", "format": "date-time"}


async def test_the_dispatcher_converts_valid_dates() -> None:
    seen.clear()
    dispatcher = Dispatcher(ToolRegistry([book]), DispatchConfig())
    args = {"day": "2024-05-31", "at": "2024-05-31T14:30:00+02:00"}
    out = await dispatcher.run_one(ToolCallPart("c1", "book", args, ""))
    assert not out.result.is_error, out.result.content
    day, at = seen[0]
    assert day == datetime.date(2024, 5, 31)
    assert at == datetime.datetime(
        2024, 5, 31, 14, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
    )


@pytest.mark.parametrize("bad", ["tomorrow", "2024-02-30", "31/05/2024", "20240531"])
async def test_the_dispatcher_refuses_a_bad_date_at_its_field(bad: str) -> None:
    seen.clear()
    dispatcher = Dispatcher(ToolRegistry([book]), DispatchConfig())
    out = await dispatcher.run_one(ToolCallPart("c1", "book", {"day": bad}, ""))
    assert out.result.is_error and out.result.error_kind == "invalid_arguments"
    assert "/day" in out.result.content and "2024-05-31" in out.result.content
    assert seen == []


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("2024-05-31T14:30", True),
        ("2024-05-31 14:30:00Z", True),
        ("2024-05-31T14:30:00.25-05:00", True),
        ("2024-05-31", False),
        ("2024-05-31T25:00", False),
        ("noon", False),
    ],
)
def test_date_time_values(value: str, ok: bool) -> None:
    schema = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}}
    assert (validate_arguments(schema, {"at": value}) == []) is ok
    fast = compile_fast_check(schema)
    assert fast is not None and fast({"at": value}) is ok  # never "certainly valid" wrongly


def test_a_date_default_is_advertised_in_iso_form() -> None:
    def since(day: datetime.date = datetime.date(2024, 1, 2)) -> str:
        return str(day)

    props = function_schema(since).parameters["properties"]
    assert props["day"]["default"] == "2024-01-02"


def test_a_default_its_annotation_refuses_is_refused_naming_the_parameter() -> None:
    def f(x: int = "a") -> int:  # type: ignore[assignment]
        return x

    with pytest.raises(ValueError) as info:
        tool(f)
    message = str(info.value)
    assert "'x'" in message and "'a'" in message and "int" in message


@pytest.mark.parametrize(
    "fn_src",
    [
        "def f(flag: bool = 0): ...",
        "def f(n: int = None): ...",
        "def f(items: list[int] = ['x']): ...",
        "def f(day: datetime.date = '2024-13-01'): ...",
    ],
)
def test_other_mismatched_defaults(fn_src: str) -> None:
    scope: dict[str, Any] = {"datetime": datetime}
    exec(fn_src, scope)
    with pytest.raises(ValueError, match="has default"):
        function_schema(scope["f"])


def test_matching_defaults_are_accepted() -> None:
    def f(
        x: float = 1,
        name: str | None = None,
        tags: tuple[str, ...] = ("a",),
        day: datetime.date = datetime.date(2024, 1, 1),
    ) -> None:
        return None

    props = function_schema(f).parameters["properties"]
    assert props["x"]["default"] == 1 and props["tags"]["default"] == ["a"]


def test_a_generator_function_is_refused_as_a_tool() -> None:
    def numbers() -> Any:
        yield 1

    async def stream() -> Any:
        yield 1

    for fn in (numbers, stream):
        with pytest.raises(ValueError, match="generator function"):
            tool(fn)


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), "5", 0, True])
def test_a_timeout_that_is_no_finite_number_of_seconds_is_refused(timeout: object) -> None:
    with pytest.raises(ValueError, match="timeout must be a finite number"):  # nan: no timeout
        tool(timeout=timeout)(lambda: 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_result_chars"):
        tool(max_result_chars="10")(lambda: 1)  # type: ignore[arg-type]


def test_a_lambda_needs_a_name_and_a_class_is_named_as_unreadable() -> None:
    """tool(lambda x: x) said "tool name '<lambda>' is invalid" (no way out named), and
    tool(int) surfaced inspect's "no signature found for builtin type"."""
    from loopwright import tool as make_tool

    with pytest.raises(
        ValueError, match=r"tool name '<lambda>' is invalid.*tool\(name='lookup'\)\(fn\)"
    ):
        make_tool(lambda x: x)
    assert make_tool(name="ident")(lambda x: x).spec.name == "ident"
    with pytest.raises(ValueError, match=r"tool 'int': cannot read the parameters .*wrap it"):
        make_tool(int)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"validators": [1]}, r"validators\[0\] must be a function \(arguments\), got int"),
        ({"validators": lambda args: None}, r"validators must be a list of functions"),
        ({"validators": [lambda: None]}, r"validators\[0\] is called with \(arguments\)"),
        ({"idempotency_key": "to"}, r"idempotency_key must be a function \(arguments\)"),
        ({"outcome_check": 1}, r"outcome_check must be a function \(key\)"),
        ({"unknown_outcome": "retry"}, r"unknown_outcome must be one of 'report', 'ask_tool'"),
    ],
)
def test_a_tools_helpers_are_checked_when_it_is_built(
    options: dict[str, Any], message: str
) -> None:
    """validators=[1] and idempotency_key="to" were accepted and failed on every call; a bare
    validator function was "'function' object is not iterable"."""

    def send(to: str) -> str:
        """Send."""
        return to

    with pytest.raises(ValueError, match=rf"tool 'send': {message}"):
        tool(**options)(send)


@pytest.mark.parametrize(
    ("retry", "message"),
    [
        ({"base_delay": float("nan")}, r"base_delay must be a finite number of seconds"),
        ({"retry_on": "timeout"}, r"retry_on must be a set of error kinds"),  # a substring test
        ({"retry_on": frozenset({"transiet"})}, r"unknown error kinds \['transiet'\]"),
    ],
)
def test_a_retry_policy_refuses_what_it_would_misread(retry: dict[str, Any], message: str) -> None:
    from loopwright.tools import RetryPolicy

    with pytest.raises(ValueError, match=message):
        RetryPolicy(**retry)
    assert RetryPolicy(retry_on=["transient", "timeout"]).retry_on == {"transient", "timeout"}
