"""The dispatcher pipeline: every failure becomes a result with a kind; nothing escapes."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from loopwright.core.errors import ConfigError, ToolError, ToolErrorKind, TransientToolError
from loopwright.core.messages import ToolCallPart, ToolResultPart
from loopwright.core.tools import Permission, ToolSpec
from loopwright.tools import (
    Confirmation,
    DispatchConfig,
    Dispatcher,
    MemoryLedger,
    RetryPolicy,
    ToolContext,
    ToolRegistry,
    tool,
)


def call(
    name: str, args: Mapping[str, Any] | None = None, raw: str = "", cid: str = "c1"
) -> ToolCallPart:
    return ToolCallPart(cid, name, dict(args or {}), raw)


def make(*tools: Any, **cfg: Any) -> Dispatcher:
    return Dispatcher(ToolRegistry(tools), DispatchConfig(**cfg))


@tool(inline=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


ran: list[str] = []


@tool(permission="admin", inline=True)
def drop_table(name: str) -> str:
    """Drop a table."""
    ran.append(name)
    return "dropped"


async def test_success_result() -> None:
    out = await make(add).run_one(call("add", {"a": 2, "b": 3}))
    assert out.result == ToolResultPart("c1", "add", "5")
    assert (out.attempts, out.repairs, out.from_ledger) == (1, (), False)
    assert out.duration_s >= 0


async def test_unknown_tool_lists_usable_names_and_suggests() -> None:
    d = make(add, drop_table, permission=Permission.READ)
    out = await d.run_one(call("ad"))
    r = out.result
    assert r.is_error and r.error_kind == "not_found"
    assert "Did you mean 'add'?" in r.content and "Available tools: add" in r.content
    assert "drop_table" not in r.content  # not usable by this caller
    assert out.attempts == 0


async def test_permission_is_checked_at_dispatch_even_if_never_listed() -> None:
    ran.clear()
    reg = ToolRegistry([add, drop_table])
    assert [s.name for s in reg.specs(max_permission=Permission.READ)] == ["add"]
    d = Dispatcher(reg, DispatchConfig(permission=Permission.READ))
    out = await d.run_one(call("drop_table", {"name": "users"}))
    assert out.result.error_kind == "permission_denied"
    assert "needs admin permission; this caller has read" in out.result.content
    assert ran == []
    ok = await Dispatcher(reg).run_one(call("drop_table", {"name": "users"}))
    assert ok.result.content == "dropped" and ran == ["users"]


async def test_a_permission_given_as_text_is_enforced() -> None:
    """permission="read" was checked but kept as the str: every call of every tool then
    failed with "dispatch failed: TypeError: '<=' not supported"."""
    ran.clear()
    config = DispatchConfig(permission="read")  # type: ignore[arg-type]
    assert config.permission is Permission.READ
    d = Dispatcher(ToolRegistry([add, drop_table]), config)
    assert (await d.run_one(call("add", {"a": 1, "b": 2}))).result.content == "3"
    out = await d.run_one(call("drop_table", {"name": "users"}))
    assert out.result.error_kind == "permission_denied" and ran == []


@pytest.mark.parametrize(
    ("field", "handler", "message"),
    [
        ("confirm", "yes", r"DispatchConfig.confirm must be a function \(call, spec\), got str"),
        ("confirm", lambda call: True, r"confirm is called with \(call, spec\)"),
        (
            "confirm_tainted",
            lambda call, spec: True,
            r"confirm_tainted is called with \(call, spec, sources\)",
        ),
        ("before_tool_call", lambda: None, r"before_tool_call is called with \(call, spec\)"),
        ("after_tool_call", print, None),  # takes *args: fine
    ],
)
def test_handlers_are_checked_when_configured(
    field: str, handler: object, message: str | None
) -> None:
    """A handler with the wrong signature failed on every call it was asked, as a tool
    error the model could do nothing about."""
    if message is None:
        DispatchConfig(**{field: handler})
        return
    with pytest.raises(ConfigError, match=message):
        DispatchConfig(**{field: handler})


def test_a_dispatcher_needs_a_registry() -> None:
    """A list of tools (what make_tools returns) was accepted; every call then failed
    with "dispatch failed: AttributeError: 'list' object has no attribute 'version'"."""
    with pytest.raises(ConfigError, match=r"got list; wrap the tools: Dispatcher\(ToolRegistry"):
        Dispatcher([add])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"Dispatcher\(config=...\) needs a DispatchConfig"):
        Dispatcher(ToolRegistry([add]), {"permission": "read"})  # type: ignore[arg-type]


async def test_raw_arguments_are_repaired_and_recorded() -> None:
    out = await make(add).run_one(call("add", raw="```json\n{'a': 1, 'b': 2,}\n```"))
    assert out.result.content == "3"
    assert out.repairs == (
        "removed code fence",
        "converted single-quoted strings",
        "removed trailing comma",
    )


async def test_unparseable_arguments() -> None:
    out = await make(add).run_one(call("add", raw="a equals one"))
    assert out.result.error_kind == "invalid_arguments"
    assert "could not read the arguments as a JSON object" in out.result.content


async def test_schema_violations_with_pointers() -> None:
    out = await make(add).run_one(call("add", {"a": "x", "c": 1}))
    r = out.result
    assert r.error_kind == "invalid_arguments" and out.attempts == 0
    assert "/a: 'x' is not of type 'integer'" in r.content
    assert "/b: required property is missing" in r.content
    assert "/c: unexpected property; allowed: a, b" in r.content


async def test_business_validator_blocks_call() -> None:
    @tool(validators=[lambda a: "b must not be zero" if a["b"] == 0 else None], inline=True)
    def div(a: int, b: int) -> float:
        return a / b

    out = await make(div).run_one(call("div", {"a": 1, "b": 0}))
    assert out.result.error_kind == "invalid_arguments"
    assert "(root): b must not be zero" in out.result.content


class Email(BaseModel):
    address: str

    @field_validator("address")
    @classmethod
    def has_at(cls, v: str) -> str:
        if "@" not in v:
            raise ValueError("address needs an @")
        return v


async def test_conversion_failure_is_invalid_arguments() -> None:
    @tool
    async def send(to: Email) -> str:
        return to.address

    d = make(send)
    bad = await d.run_one(call("send", {"to": {"address": "nobody"}}))
    assert bad.result.error_kind == "invalid_arguments"
    assert "address needs an @" in bad.result.content
    good = await d.run_one(call("send", {"to": {"address": "a@b"}}))
    assert good.result.content == "a@b"


@pytest.mark.parametrize(
    ("exc", "kind", "fragment"),
    [
        (ToolError("no such file", kind=ToolErrorKind.NOT_FOUND), "not_found", "no such file"),
        (ToolError("bad"), "permanent", "bad"),
        (TransientToolError("busy"), "transient", "busy"),
        (ConnectionResetError("reset"), "transient", "ConnectionResetError: reset"),
        (TimeoutError("slow upstream"), "transient", "TimeoutError: slow upstream"),
        (ZeroDivisionError("division by zero"), "permanent", "ZeroDivisionError: division by zero"),
        (asyncio.CancelledError(), "permanent", "CancelledError"),
    ],
)
async def test_error_classification(exc: BaseException, kind: str, fragment: str) -> None:
    @tool
    async def boom() -> None:
        raise exc

    out = await make(boom).run_one(call("boom"))
    assert out.result.is_error and out.result.error_kind == kind
    assert out.result.content.startswith(f"{kind}: ") and fragment in out.result.content


async def test_non_json_result_falls_back_to_str_and_budget_applies() -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    @tool(inline=True)
    def thing() -> object:
        return Thing()

    @tool(inline=True, max_result_chars=50)
    def big() -> list[int]:
        return list(range(1000))

    d = make(thing, big)
    assert (await d.run_one(call("thing"))).result.content == "a thing"
    content = (await d.run_one(call("big"))).result.content
    assert len(content) <= 50 and json.loads(content)["truncated"] is True


# -- hooks ---------------------------------------------------------------------------------
async def test_before_hook_blocks_with_reason_and_sees_spec() -> None:
    seen: list[ToolSpec] = []

    async def before(c: ToolCallPart, spec: ToolSpec) -> str | None:
        seen.append(spec)
        return "adds are disabled today" if c.arguments.get("a") == 1 else None

    d = make(add, before_tool_call=before)
    blocked = await d.run_one(call("add", {"a": 1, "b": 1}))
    assert blocked.result.error_kind == "permission_denied"
    assert "blocked: adds are disabled today" in blocked.result.content
    assert (await d.run_one(call("add", {"a": 2, "b": 1}))).result.content == "3"
    assert seen[0] is add.spec


async def test_after_hook_rewrites_and_faults_are_contained() -> None:
    def redact(c: ToolCallPart, r: ToolResultPart) -> ToolResultPart | None:
        return ToolResultPart("wrong-id", r.name, "[redacted]")

    out = await make(add, after_tool_call=redact).run_one(call("add", {"a": 1, "b": 1}))
    assert out.result.content == "[redacted]" and out.result.call_id == "c1"

    def bad(c: ToolCallPart, r: ToolResultPart) -> Any:
        raise RuntimeError("hook bug")

    out = await make(add, after_tool_call=bad).run_one(call("add", {"a": 1, "b": 1}))
    assert out.result.error_kind == "permanent" and "hook bug" in out.result.content

    def weird(c: ToolCallPart, r: ToolResultPart) -> Any:
        return 42

    out = await make(add, after_tool_call=weird).run_one(call("add", {"a": 1, "b": 1}))
    assert out.result.error_kind == "permanent" and "not a ToolResultPart" in out.result.content


async def test_before_hook_fault_is_contained() -> None:
    def before(c: ToolCallPart, spec: ToolSpec) -> str | None:
        raise KeyError("oops")

    out = await make(add, before_tool_call=before).run_one(call("add", {"a": 1, "b": 1}))
    assert out.result.error_kind == "permanent" and "the call was not run" in out.result.content


# -- confirmation -----------------------------------------------------------------------
executed: list[str] = []


@tool(requires_confirmation=True, permission="write", inline=True)
def pay(amount: int) -> str:
    """Pay someone."""
    executed.append(f"pay {amount}")
    return "paid"


@pytest.mark.parametrize(
    ("decision", "kind", "fragment", "runs"),
    [
        (Confirmation.approve(), None, "paid", True),
        (
            Confirmation.deny("too expensive"),
            "denied_by_user",
            "denied this call: too expensive",
            False,
        ),
        (Confirmation.later(), "awaiting_confirmation", "waiting for a person", False),
    ],
)
async def test_confirmation(
    decision: Confirmation, kind: str | None, fragment: str, runs: bool
) -> None:
    executed.clear()
    asked: list[str] = []

    async def confirm(c: ToolCallPart, spec: ToolSpec) -> Confirmation:
        asked.append(spec.name)
        return decision

    out = await make(pay, add, confirm=confirm).run_one(call("pay", {"amount": 5}))
    assert out.result.error_kind == kind and fragment in out.result.content
    assert executed == (["pay 5"] if runs else []) and asked == ["pay"]


async def test_confirmation_only_for_flagged_tools_and_default_approves() -> None:
    executed.clear()
    asked: list[str] = []
    d = make(pay, add, confirm=lambda c, s: asked.append(s.name) or Confirmation.deny())
    assert (await d.run_one(call("add", {"a": 1, "b": 1}))).result.content == "2"
    assert asked == []
    assert (await make(pay).run_one(call("pay", {"amount": 1}))).result.content == "paid"


async def test_confirm_handler_faults_and_bad_answers_do_not_run_the_call() -> None:
    executed.clear()

    def broken(c: ToolCallPart, s: ToolSpec) -> Confirmation:
        raise OSError("terminal gone")

    out = await make(pay, confirm=broken).run_one(call("pay", {"amount": 1}))
    assert out.result.error_kind == "permanent" and "terminal gone" in out.result.content
    out = await make(pay, confirm=lambda c, s: True).run_one(call("pay", {"amount": 1}))
    assert "not a Confirmation" in out.result.content
    assert executed == []


async def test_decisions_given_on_resume_replace_the_handler() -> None:
    executed.clear()
    d = make(pay, confirm=lambda c, s: Confirmation.later())
    outs = await d.run_batch(
        [call("pay", {"amount": 1}, cid="a"), call("pay", {"amount": 2}, cid="b")],
        decisions={"a": Confirmation.approve(), "b": Confirmation.deny("no")},
    )
    assert [o.result.error_kind for o in outs] == [None, "denied_by_user"]
    assert executed == ["pay 1"]


# -- timeouts -----------------------------------------------------------------------------
async def test_timeout_on_hanging_async_tool() -> None:
    @tool(timeout=0.05)
    async def hang() -> None:
        await asyncio.sleep(30)

    t0 = time.perf_counter()
    out = await make(hang).run_one(call("hang"))
    assert time.perf_counter() - t0 < 2
    assert out.result.error_kind == "timeout"
    assert "did not finish within 0.05 s" in out.result.content
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # our cancel was fully undone


async def test_timeout_on_hanging_sync_tool() -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def hang() -> str:
        release.wait(10)
        return "late"

    try:
        t0 = time.perf_counter()
        out = await make(hang).run_one(call("hang"))
        assert time.perf_counter() - t0 < 2
        assert out.result.error_kind == "timeout"
    finally:
        release.set()


async def test_outer_cancellation_propagates() -> None:
    @tool(timeout=10)
    async def slow() -> None:
        await asyncio.sleep(30)

    task = asyncio.ensure_future(make(slow).run_one(call("slow")))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_many_deadlines_share_one_watchdog() -> None:
    @tool(timeout=0.05)
    async def nap(s: float) -> float:
        await asyncio.sleep(s)
        return s

    d = make(nap)
    outs = await d.run_batch(
        [call("nap", {"s": s}, cid=str(i)) for i, s in enumerate([0.0, 0.5, 0.01, 0.5])]
    )
    assert [o.result.error_kind for o in outs] == [None, "timeout", None, "timeout"]


# -- batches -----------------------------------------------------------------------------
async def test_batch_runs_concurrently_and_keeps_call_order() -> None:
    active = 0
    peak = 0

    @tool
    async def work(delay: float, label: str) -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(delay)
        active -= 1
        return label

    calls = [
        call("work", {"delay": d, "label": f"L{i}"}, cid=f"c{i}")
        for i, d in enumerate([0.2, 0.1, 0.0, 0.15])
    ]
    t0 = time.perf_counter()
    outs = await make(work).run_batch(calls)
    elapsed = time.perf_counter() - t0
    assert [o.result.content for o in outs] == ["L0", "L1", "L2", "L3"]
    assert [o.result.call_id for o in outs] == ["c0", "c1", "c2", "c3"]
    assert peak == 4 and elapsed < 0.4  # sequential would take >= 0.45 s

    peak = 0
    outs = await make(work, max_concurrency=1).run_batch(calls[:2])
    assert peak == 1 and [o.result.content for o in outs] == ["L0", "L1"]


async def test_sync_tools_run_in_parallel_threads() -> None:
    barrier = threading.Barrier(3, timeout=5)

    @tool
    def meet(i: int) -> int:
        barrier.wait()  # deadlocks unless all three run at once
        return i

    outs = await make(meet).run_batch([call("meet", {"i": i}, cid=str(i)) for i in range(3)])
    assert [o.result.content for o in outs] == ["0", "1", "2"]


async def test_interrupted_skips_calls_not_yet_started() -> None:
    started: list[str] = []
    flag = {"steer": False}

    def on_start(c: ToolCallPart) -> None:
        started.append(c.id)
        flag["steer"] = True  # a steering message arrives while the first call runs

    d = make(add, max_concurrency=1)
    calls = [call("add", {"a": i, "b": 0}, cid=f"c{i}") for i in range(3)]
    outs = await d.run_batch(calls, interrupted=lambda: flag["steer"], on_start=on_start)
    assert started == ["c0"]
    assert outs[0].result.content == "0"
    assert [o.result.error_kind for o in outs[1:]] == ["skipped", "skipped"]
    assert all(o.attempts == 0 for o in outs[1:])


async def test_callback_faults_in_batch_do_not_escape() -> None:
    def bad_start(c: ToolCallPart) -> None:
        raise RuntimeError("ui bug")

    def bad_interrupt() -> bool:
        raise RuntimeError("flag bug")

    outs = await make(add).run_batch(
        [call("add", {"a": 1, "b": 1}, cid="x"), call("add", {"a": 2, "b": 2}, cid="y")],
        interrupted=bad_interrupt,
        on_start=bad_start,
    )
    assert [o.result.content for o in outs] == ["2", "4"]
    assert await make(add).run_batch([]) == []


# -- retries and idempotency -----------------------------------------------------------------
class Flaky:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: list[int] = []

    def __call__(self, x: int, ctx: ToolContext) -> str:
        self.attempts.append(ctx.attempt)
        if len(self.attempts) <= self.failures:
            raise TransientToolError(f"busy #{len(self.attempts)}")
        return f"ok {x}"


def flaky_tool(failures: int, **flags: Any) -> tuple[Any, Flaky]:
    f = Flaky(failures)

    def flaky(x: int, ctx: ToolContext) -> str:
        return f(x, ctx)

    return tool(inline=True, **flags)(flaky), f


def fake_sleep() -> tuple[Any, list[float]]:
    delays: list[float] = []

    async def sleep(s: float) -> None:
        delays.append(s)

    return sleep, delays


async def test_idempotent_tool_is_retried_with_exponential_backoff() -> None:
    t, f = flaky_tool(2, idempotent=True)
    sleep, delays = fake_sleep()
    d = make(t, sleep=sleep, random=lambda: 0.5, retry=RetryPolicy(max_attempts=3, base_delay=0.2))
    out = await d.run_one(call("flaky", {"x": 1}))
    assert out.result.content == "ok 1" and out.attempts == 3
    assert f.attempts == [1, 2, 3]
    assert delays == [0.1, 0.2]  # 0.2 * 2**n * jitter(0.5)


async def test_exhausted_retries_keep_every_failure_in_the_message() -> None:
    t, _f = flaky_tool(5, idempotent=True)
    sleep, delays = fake_sleep()
    d = make(
        t, sleep=sleep, retry=RetryPolicy(max_attempts=3, jitter=False, base_delay=1, max_delay=1.5)
    )
    out = await d.run_one(call("flaky", {"x": 1}))
    r = out.result
    assert r.error_kind == "transient" and out.attempts == 3
    assert "busy #3 (failed 3 attempts; attempt 1: busy #1; attempt 2: busy #2)" in r.content
    assert delays == [1, 1.5]


async def test_non_idempotent_unkeyed_call_is_not_retried() -> None:
    t, f = flaky_tool(1)
    sleep, delays = fake_sleep()
    out = await make(t, sleep=sleep).run_one(call("flaky", {"x": 1}))
    assert out.result.error_kind == "transient" and out.attempts == 1
    assert "not retried" in out.result.content and delays == [] and f.attempts == [1]


async def test_keyed_call_is_retried_and_permanent_errors_never_are() -> None:
    t, f = flaky_tool(1, idempotency_key=lambda a: f"k{a['x']}")
    sleep, _ = fake_sleep()
    out = await make(t, sleep=sleep).run_one(call("flaky", {"x": 1}))
    assert out.result.content == "ok 1" and f.attempts == [1, 2]

    count = 0

    @tool(idempotent=True, inline=True)
    def broken() -> None:
        nonlocal count
        count += 1
        raise ValueError("bad input")

    out = await make(broken, sleep=sleep).run_one(call("broken"))
    assert out.result.error_kind == "permanent" and count == 1


async def test_ledger_returns_first_result_without_running_again() -> None:
    runs: list[str] = []

    @tool(idempotency_key=lambda a: a["order_id"], inline=True)
    def create_order(order_id: str, item: str) -> dict[str, str]:
        runs.append(order_id)
        return {"order": order_id, "item": item, "n": str(len(runs))}

    ledger = MemoryLedger()
    d = Dispatcher(ToolRegistry([create_order]), ledger=ledger)
    first = await d.run_one(call("create_order", {"order_id": "o1", "item": "phone"}, cid="a"))
    again = await d.run_one(call("create_order", {"order_id": "o1", "item": "phone"}, cid="b"))
    other = await d.run_one(call("create_order", {"order_id": "o2", "item": "phone"}, cid="c"))
    assert runs == ["o1", "o2"]
    assert again.from_ledger and again.attempts == 0
    assert again.result.call_id == "b" and again.result.content == first.result.content
    assert not other.from_ledger and "o1" in ledger and len(ledger) == 2


async def test_transient_failures_are_not_stored_in_the_ledger() -> None:
    t, f = flaky_tool(1, idempotency_key=lambda a: "same")
    d = make(t, retry=RetryPolicy(max_attempts=1))
    first = await d.run_one(call("flaky", {"x": 1}))
    second = await d.run_one(call("flaky", {"x": 1}))
    assert first.result.error_kind == "transient"
    assert second.result.content == "ok 1" and f.attempts == [1, 1]


async def test_failing_ledger_and_key_function_are_contained() -> None:
    class BrokenLedger:
        def get(self, key: str) -> None:
            raise OSError("disk full")

        def put(self, key: str, result: ToolResultPart) -> None:
            raise OSError("disk full")

    runs: list[int] = []

    @tool(idempotency_key=lambda a: "k", inline=True)
    def once(x: int) -> int:
        runs.append(x)
        return x

    d = Dispatcher(ToolRegistry([once]), ledger=BrokenLedger())
    out = await d.run_one(call("once", {"x": 1}))
    assert out.result.error_kind == "transient" and "disk full" in out.result.content and runs == []

    @tool(idempotency_key=lambda a: a["missing"], inline=True)
    def keyless(x: int) -> int:
        return x

    out = await make(keyless).run_one(call("keyless", {"x": 1}))
    assert out.result.error_kind == "permanent" and "idempotency key" in out.result.content


async def test_async_ledger_is_awaited() -> None:
    class AsyncLedger:
        def __init__(self) -> None:
            self.data: dict[str, ToolResultPart] = {}

        async def get(self, key: str) -> ToolResultPart | None:
            return self.data.get(key)

        async def put(self, key: str, result: ToolResultPart) -> None:
            self.data[key] = result

    @tool(idempotency_key=lambda a: str(a["x"]), inline=True)
    def ident(x: int) -> int:
        return x

    ledger = AsyncLedger()
    d = Dispatcher(ToolRegistry([ident]), ledger=ledger)
    await d.run_one(call("ident", {"x": 4}))
    again = await d.run_one(call("ident", {"x": 4}, cid="z"))
    assert again.from_ledger and "4" in ledger.data


def test_retry_policy_delays_and_validation() -> None:
    p = RetryPolicy(base_delay=0.5, max_delay=3.0, jitter=False)
    assert [p.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert RetryPolicy(base_delay=1).delay(2, rand=0.25) == 0.5
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="max_concurrency"):
        DispatchConfig(max_concurrency=0)


async def test_check_outcome_asks_the_tool() -> None:
    @tool(
        idempotency_key=lambda a: a["id"], outcome_check=lambda key: "sent" if key == "m1" else None
    )
    def send(id: str) -> str:
        return "sent"

    assert await send.check_outcome("m1") == "sent"
    assert await send.check_outcome("m2") is None
    assert await add.check_outcome("x") is None


async def test_tool_that_swallows_the_timeout_cancel_leaves_the_task_clean() -> None:
    @tool(timeout=0.02)
    async def stubborn() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "ignored the cancel"
        return "slept"

    out = await make(stubborn).run_one(call("stubborn"))
    assert out.result.content == "ignored the cancel"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # would raise CancelledError if a cancel leaked


async def test_context_carries_session_and_metadata() -> None:
    seen: list[ToolContext] = []

    @tool(inline=True, idempotency_key=lambda a: f"k-{a['x']}")
    def probe(x: int, ctx: ToolContext) -> int:
        seen.append(ctx)
        return x

    d = make(probe, session_id="s-1", metadata={"user": "ada"})
    await d.run_one(call("probe", {"x": 3}, cid="call-7"))
    assert seen == [ToolContext("call-7", "k-3", 1, "s-1", {"user": "ada"})]


async def test_sys_exit_in_a_tool_is_a_permanent_error() -> None:
    import sys

    @tool
    def quitter() -> None:
        sys.exit(3)

    out = await make(quitter).run_one(call("quitter"))
    assert out.result.error_kind == "permanent" and "SystemExit" in out.result.content


async def test_duplicate_call_ids_keep_every_result_in_position() -> None:
    # The seed paired results to calls through a dict keyed by id, losing duplicates.
    calls = [call("add", {"a": i, "b": 0}, cid="same") for i in range(4)]
    outs = await make(add).run_batch(calls)
    assert [o.result.content for o in outs] == ["0", "1", "2", "3"]
    assert [o.call for o in outs] == calls


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"permission": "god"},
            "unknown permission 'god'",
        ),  # was refused only when an agent used it
        ({"max_concurrency": "4"}, "max_concurrency must be an int"),
        ({"max_concurrency": 0}, "max_concurrency must be an int"),
    ],
)
def test_a_bad_dispatch_config_is_refused_where_it_is_written(
    kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        DispatchConfig(**kwargs)
