"""Property tests: model garbage never crashes repair, validation or the dispatcher."""

from __future__ import annotations

import asyncio
import enum
import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import annotated_types as at
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwright.core.messages import ToolCallPart, ToolResultPart
from loopwright.tools import (
    ERROR_KINDS,
    Confirmation,
    DispatchConfig,
    Dispatcher,
    ToolRegistry,
    Violation,
    repair_arguments,
    tool,
    validate_arguments,
)
from loopwright.tools.validation import validator_for


class Mode(enum.Enum):
    FAST = "fast"
    SAFE = "safe"


@tool(inline=True)
def search(
    query: Annotated[str, at.MinLen(1)],
    limit: Annotated[int, at.Ge(1), at.Le(50)] = 10,
    mode: Mode = Mode.SAFE,
    tags: list[str] | None = None,
    sort: Literal["asc", "desc"] = "asc",
) -> dict[str, Any]:
    """Search."""
    return {"q": query, "limit": limit, "mode": mode.value, "tags": tags, "sort": sort}


@tool
async def echo(payload: dict[str, Any]) -> dict[str, Any]:
    """Echo."""
    return payload


SCHEMA = search.spec.parameters
json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=5) | st.dictionaries(st.text(max_size=10), c, max_size=5),
    max_leaves=12,
)
json_objects = st.dictionaries(
    st.sampled_from(["query", "limit", "mode", "tags", "sort", "x", ""]) | st.text(max_size=8),
    json_values,
    max_size=6,
)
# Strings that look like broken model output, not just noise.
fragments = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "'",
        '"',
        "True",
        "None",
        "```json\n",
        "```",
        "\\",
        "\n",
        "query",
        "limit",
        " 3",
        "'x'",
        '"y"',
        "NaN",
        "-",
        "1e999",
        "\x00",
        "é",
    ]
)
model_garbage = st.one_of(
    st.text(max_size=80),
    st.lists(fragments, max_size=30).map("".join),
    json_values.map(json.dumps),
    json_objects.map(lambda o: json.dumps(o)[:-1] + ",}" if o else "{,}"),
)
FAST = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@FAST
@given(model_garbage)
def test_repair_never_raises_and_result_is_consistent(raw: str) -> None:
    out = repair_arguments(raw)
    assert (out.arguments is None) == (out.error is not None)
    if out.arguments is not None:
        assert isinstance(out.arguments, dict)
    assert all(isinstance(r, str) for r in out.repairs)


@FAST
@given(json_objects)
def test_repair_of_valid_json_object_is_identity(obj: dict[str, Any]) -> None:
    out = repair_arguments(json.dumps(obj, allow_nan=True))
    assert out.repairs == () and out.error is None
    assert json.dumps(out.arguments, sort_keys=True) == json.dumps(obj, sort_keys=True)


@FAST
@given(st.one_of(json_objects, json_values))
def test_validation_never_raises_and_agrees_with_fast_path(args: Any) -> None:
    got = validate_arguments(SCHEMA, args)
    assert all(isinstance(v, Violation) and isinstance(v.pointer, str) for v in got)
    assert all(v.pointer == "" or v.pointer.startswith("/") for v in got)
    if isinstance(args, dict):
        full = list(validator_for(SCHEMA).jsonschema_validator().iter_errors(args))
        assert (got == []) == (full == [])


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as r:
        yield r


def _check(result: ToolResultPart, cid: str) -> None:
    assert isinstance(result, ToolResultPart) and result.call_id == cid
    assert isinstance(result.content, str)
    if result.is_error:
        assert result.error_kind in ERROR_KINDS
    else:
        assert result.error_kind is None


@FAST
@given(
    st.sampled_from(["search", "echo", "nope", ""]) | st.text(max_size=10),
    model_garbage,
    json_objects,
    st.booleans(),
)
def test_dispatcher_always_returns_a_result(
    runner: asyncio.Runner, name: str, raw: str, args: dict[str, Any], use_dict: bool
) -> None:
    d = Dispatcher(ToolRegistry([search, echo]), DispatchConfig())
    c = ToolCallPart("id-1", name, args if use_dict else {}, raw)
    out = runner.run(d.run_one(c))
    _check(out.result, "id-1")


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(["search", "echo", "zzz"]), json_objects), max_size=6))
def test_batch_results_in_call_order(
    runner: asyncio.Runner, specs: list[tuple[str, dict[str, Any]]]
) -> None:
    d = Dispatcher(ToolRegistry([search, echo]), DispatchConfig(max_concurrency=3))
    calls = [ToolCallPart(f"c{i}", n, a, "") for i, (n, a) in enumerate(specs)]
    outs = runner.run(d.run_batch(calls))
    assert [o.result.call_id for o in outs] == [c.id for c in calls]
    for o, c in zip(outs, calls, strict=True):
        _check(o.result, c.id)


def _behaviour(kind: str, value: Any) -> Any:
    def fn(*_: Any) -> Any:
        if kind == "raise":
            raise RuntimeError("callback fault")
        if kind == "async":

            async def later() -> Any:
                return value

            return later()
        return value

    return fn


callback_kinds = st.sampled_from(["raise", "async", "plain"])
callback_values = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.integers(),
    st.sampled_from(
        [
            Confirmation.approve(),
            Confirmation.deny("no"),
            Confirmation.later(),
            ToolResultPart("x", "y", "replaced", True, "made-up-kind"),
        ]
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    callback_kinds,
    callback_values,
    callback_kinds,
    callback_values,
    callback_kinds,
    callback_values,
    json_objects,
)
def test_faulty_hooks_and_handlers_never_escape(
    runner: asyncio.Runner,
    bk: str,
    bv: Any,
    ck: str,
    cv: Any,
    ak: str,
    av: Any,
    args: dict[str, Any],
) -> None:
    @tool(requires_confirmation=True, inline=True)
    def guarded(query: str = "q") -> str:
        return query

    config = DispatchConfig(
        before_tool_call=_behaviour(bk, bv),
        confirm=_behaviour(ck, cv),
        after_tool_call=_behaviour(ak, av),
    )
    d = Dispatcher(ToolRegistry([guarded]), config)
    out = runner.run(d.run_one(ToolCallPart("id-2", "guarded", args, "")))
    _check(out.result, "id-2")
