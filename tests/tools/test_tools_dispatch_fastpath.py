"""The dispatcher's hot path: cached per-tool plans, ``run_results``, deadlines that
only cost something when a tool suspends, the compiled top-level object check and the
result-rendering shortcuts. Each must behave exactly like the general path."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.core.messages import ToolCallPart
from loopwright.core.tools import Permission
from loopwright.tools import DispatchConfig, Dispatcher, Tool, ToolRegistry, tool
from loopwright.tools.execution import watchdog
from loopwright.tools.ledger import MemoryLedger
from loopwright.tools.truncate import render_result, truncate_result
from loopwright.tools.validation import SchemaValidator


def call(name: str, args: Mapping[str, Any] | None = None, cid: str = "c1") -> ToolCallPart:
    return ToolCallPart(cid, name, dict(args or {}), "")


@tool(timeout=5)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# -- run_results ----------------------------------------------------------------------------
async def test_run_results_match_run_batch_for_one_and_many_calls() -> None:
    d = Dispatcher(ToolRegistry([add]))
    for calls in (
        [call("add", {"a": 1, "b": 2})],
        [call("add", {"a": i, "b": 1}, cid=f"c{i}") for i in range(3)]
        + [call("nope", cid="x"), call("add", {"a": "one"}, cid="y")],
    ):
        outcomes = await d.run_batch(calls)
        results = await d.run_results(calls)
        assert results == [o.result for o in outcomes]
    assert [r.content for r in await d.run_results([call("add", {"a": 2, "b": 3})])] == ["5"]
    assert await d.run_results([]) == []


async def test_run_results_skips_when_interrupted_and_survives_a_failing_on_start() -> None:
    d = Dispatcher(ToolRegistry([add]))
    c = call("add", {"a": 1, "b": 2})
    (skipped,) = await d.run_results([c], interrupted=lambda: True)
    assert skipped.is_error and skipped.error_kind == ToolErrorKind.SKIPPED.value

    def boom(_: ToolCallPart) -> None:
        raise RuntimeError("listener broke")

    def broken() -> bool:
        raise RuntimeError("broken check")

    (ok,) = await d.run_results([c], interrupted=broken, on_start=boom)
    assert not ok.is_error and ok.content == "3"


async def test_run_results_apply_the_after_hook() -> None:
    def shout(c: ToolCallPart, r: Any) -> Any:
        from dataclasses import replace

        return replace(r, content=r.content + "!")

    d = Dispatcher(ToolRegistry([add]), DispatchConfig(after_tool_call=shout))
    (r,) = await d.run_results([call("add", {"a": 1, "b": 2})])
    assert r.content == "3!"


# -- plans follow the registry and the config ------------------------------------------------
async def test_plans_follow_registry_changes_and_a_replaced_config() -> None:
    registry = ToolRegistry()
    d = Dispatcher(registry)
    assert (await d.run_one(call("add", {"a": 1, "b": 1}))).result.error_kind == "not_found"
    registry.register(add)
    assert (await d.run_one(call("add", {"a": 1, "b": 1}))).result.content == "2"

    @tool(permission="admin")
    async def wipe() -> str:
        """Wipe."""
        return "wiped"

    registry.register(wipe)
    assert (await d.run_one(call("wipe"))).result.content == "wiped"
    d.config = DispatchConfig(permission=Permission.READ)
    assert (await d.run_one(call("wipe"))).result.error_kind == "permission_denied"
    registry.unregister("add")
    assert (await d.run_one(call("add", {"a": 1, "b": 1}))).result.error_kind == "not_found"


async def test_dispatchers_over_one_registry_share_plans_only_for_the_same_rules() -> None:
    @tool(permission="admin")
    async def wipe() -> str:
        """Wipe."""
        return "wiped"

    registry = ToolRegistry([add, wipe])
    admin_a, admin_b = Dispatcher(registry), Dispatcher(registry)
    reader = Dispatcher(registry, DispatchConfig(permission=Permission.READ))
    blocked: list[str] = []

    def block(c: ToolCallPart, _spec: Any) -> str:
        blocked.append(c.name)
        return "blocked by policy"

    hooked = Dispatcher(registry, DispatchConfig(before_tool_call=block))
    assert (await admin_a.run_one(call("wipe"))).result.content == "wiped"
    assert (await admin_b.run_one(call("wipe"))).result.content == "wiped"
    assert admin_a._plans is admin_b._plans  # one table for the same (permission, hook)
    assert (await reader.run_one(call("wipe"))).result.error_kind == "permission_denied"
    assert (await hooked.run_one(call("wipe"))).result.error_kind == "permission_denied"
    assert blocked == ["wipe"]
    assert reader._plans is not admin_a._plans and hooked._plans is not admin_a._plans
    # a change to the registry gives every dispatcher fresh plans
    registry.unregister("wipe")
    assert (await admin_b.run_one(call("wipe"))).result.error_kind == "not_found"
    assert (await admin_a.run_one(call("wipe"))).result.error_kind == "not_found"
    assert (await admin_a.run_one(call("add", {"a": 2, "b": 2}))).result.content == "4"


async def test_the_default_ledger_is_per_dispatcher_and_made_on_first_use() -> None:
    calls: list[int] = []

    @tool(idempotency_key=lambda args: f"k{args['n']}")
    async def charge(n: int) -> str:
        """Charge once per n."""
        calls.append(n)
        return f"charged {n}"

    registry = ToolRegistry([charge])
    a, b = Dispatcher(registry), Dispatcher(registry)
    assert a._ledger is None  # nothing built until a call needs it
    assert (await a.run_one(call("charge", {"n": 1}))).result.content == "charged 1"
    assert (await a.run_one(call("charge", {"n": 1}))).from_ledger
    assert (await b.run_one(call("charge", {"n": 1}))).result.content == "charged 1"
    assert calls == [1, 1] and a.ledger is not b.ledger and len(a.ledger) == 1  # type: ignore[arg-type]
    mine = MemoryLedger()
    a.ledger = mine
    assert a.ledger is mine and Dispatcher(registry, ledger=mine).ledger is mine


async def test_arguments_dict_is_passed_unchanged_and_not_mutated() -> None:
    seen: list[dict[str, Any]] = []

    async def grab_fn(**kwargs: Any) -> str:
        kwargs["added"] = True
        seen.append(kwargs)
        return "ok"

    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    grab = Tool.from_schema("grab", "Grab.", schema, grab_fn)

    args = {"x": 1}
    c = ToolCallPart("c1", "grab", args, "")
    d = Dispatcher(ToolRegistry([grab]))
    assert (await d.run_one(c)).result.content == "ok"
    assert args == {"x": 1} and seen == [{"x": 1, "added": True}]


# -- deadlines ------------------------------------------------------------------------------
async def test_a_tool_that_never_suspends_leaves_no_deadline_behind() -> None:
    d = Dispatcher(ToolRegistry([add]))
    for i in range(50):
        assert (await d.run_one(call("add", {"a": i, "b": 0}))).result.content == str(i)
    assert not watchdog().entries


async def test_a_tool_that_suspends_gets_its_value_and_cleans_up() -> None:
    @tool(timeout=1)
    async def twice(x: int) -> int:
        await asyncio.sleep(0)  # yields None to the task
        await asyncio.sleep(0.001)  # yields a future
        return 2 * x

    d = Dispatcher(ToolRegistry([twice]))
    assert (await d.run_one(call("twice", {"x": 21}))).result.content == "42"
    assert not watchdog().entries


async def test_the_deadline_counts_time_spent_before_the_first_suspension() -> None:
    @tool(timeout=0.1)
    async def busy_then_wait() -> str:
        time.sleep(0.08)  # noqa: ASYNC251 - busy first step, on purpose (no suspension)
        await asyncio.sleep(0.06)
        return "late"

    out = await Dispatcher(ToolRegistry([busy_then_wait])).run_one(call("busy_then_wait"))
    assert out.result.error_kind == ToolErrorKind.TIMEOUT.value
    assert "did not finish within 0.1 s" in out.result.content
    assert not watchdog().entries


async def test_a_tool_that_swallows_the_deadline_keeps_its_value_and_the_task_is_clean() -> None:
    @tool(timeout=0.02)
    async def stubborn() -> str:
        try:
            await asyncio.sleep(1)
        except asyncio.CancelledError:
            return "swallowed"
        return "slept"

    out = await Dispatcher(ToolRegistry([stubborn])).run_one(call("stubborn"))
    assert out.result.content == "swallowed" and not out.result.is_error
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_errors_before_and_after_the_first_suspension_are_classified() -> None:
    @tool(timeout=1)
    async def fails(when: str) -> str:
        if when == "now":
            raise ToolError("refused at once", kind=ToolErrorKind.PERMISSION_DENIED)
        await asyncio.sleep(0.001)
        raise ConnectionError("line dropped")

    d = Dispatcher(ToolRegistry([fails]))
    now = (await d.run_one(call("fails", {"when": "now"}))).result
    later = (await d.run_one(call("fails", {"when": "later"}))).result
    assert now.error_kind == "permission_denied" and "refused at once" in now.content
    assert later.error_kind == "transient" and "line dropped" in later.content


async def test_an_async_callable_returning_a_future_is_awaited_under_the_deadline() -> None:
    def future_maker() -> asyncio.Future[str]:
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(0.01, fut.set_result, "from a future")
        return fut

    future_maker._is_coroutine = asyncio.coroutines._is_coroutine  # type: ignore[attr-defined]
    t = tool(name="future_maker", timeout=1)(future_maker)
    assert t.is_async
    out = await Dispatcher(ToolRegistry([t])).run_one(call("future_maker"))
    assert out.result.content == "from a future"


async def test_outer_cancellation_of_a_suspended_tool_propagates() -> None:
    started = asyncio.Event()

    @tool(timeout=10)
    async def slow() -> None:
        started.set()
        await asyncio.sleep(30)

    task = asyncio.ensure_future(Dispatcher(ToolRegistry([slow])).run_results([call("slow")]))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not watchdog().entries


# -- the compiled object check ----------------------------------------------------------------
SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "s": {"type": "string"},
        "b": {"type": "boolean"},
        "x": {"type": "number", "minimum": 0},
    },
    "required": ["n"],
    "additionalProperties": False,
}
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        _JSON,
        st.fixed_dictionaries(
            {"n": _JSON}, optional={"s": _JSON, "b": _JSON, "x": _JSON, "extra": _JSON}
        ),
    )
)
def test_the_fast_object_check_never_accepts_what_jsonschema_rejects(value: Any) -> None:
    fast = SchemaValidator(SCHEMA).fast_check
    assert fast is not None
    if fast(value):
        assert not list(Draft202012Validator(SCHEMA).iter_errors(value))


def test_the_fast_object_check_rejects_non_objects_and_wrong_exact_types() -> None:
    fast = SchemaValidator(SCHEMA).fast_check
    assert fast is not None
    assert fast({"n": 1, "s": "a", "b": False, "x": 0.5})
    for bad in ([1], "n", None, {"n": True}, {"n": 1.0}, {"n": 1, "b": 0}, {"n": 1, "s": 1}):
        assert not fast(bad), bad


# -- result rendering shortcuts ---------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [0, -7, 10**14, 10**16, -(10**20), "text", "", True, None, 2.5, {"a": [1, "é"]}, [1, 2]],
)
def test_truncate_shortcuts_render_like_the_general_path(value: object) -> None:
    assert truncate_result(value, 20_000) == render_result(value)
    assert len(truncate_result(value, 3)) <= 3


def test_circular_values_still_render_as_text() -> None:
    loop: list[Any] = []
    loop.append(loop)
    text = render_result(loop)
    assert isinstance(text, str) and text.startswith("[")
