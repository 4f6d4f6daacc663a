"""The dispatcher under hostile input: arguments that only parse after repair, tools
that raise what a worker thread cannot hand back, and hook policies that must see what
really runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from loopwright.core.messages import ToolCallPart
from loopwright.core.tools import ToolSpec
from loopwright.tools import Confirmation, DispatchConfig, Dispatcher, ToolRegistry, tool

sent: list[str] = []


@tool(inline=True, requires_confirmation=True)
def send(to: str) -> str:
    """Send a message to an address."""
    sent.append(to)
    return f"sent to {to}"


def _dispatcher(**cfg: Any) -> Dispatcher:
    return Dispatcher(ToolRegistry([send]), DispatchConfig(**cfg))


# A reply whose arguments are not strict JSON: the provider leaves ``arguments`` empty
# and keeps the text; the dispatcher repairs it and runs the tool with the result.
_SINGLE_QUOTED = ToolCallPart("c1", "send", {}, "{'to': 'evil@example.com'}")


async def test_before_hook_sees_the_repaired_arguments_and_blocks_them() -> None:
    sent.clear()

    def policy(call: ToolCallPart, spec: ToolSpec) -> str | None:
        if str(call.arguments.get("to", "")).endswith("@example.com"):
            return "external addresses are not allowed"
        return None

    out = await _dispatcher(before_tool_call=policy).run_one(_SINGLE_QUOTED)
    assert out.result.error_kind == "permission_denied", out.result.content
    assert sent == []


async def test_confirmation_is_asked_about_the_arguments_that_run() -> None:
    sent.clear()
    seen: list[dict[str, Any]] = []

    def ask(call: ToolCallPart, spec: ToolSpec) -> Confirmation:
        seen.append(dict(call.arguments))
        return Confirmation.approve()

    out = await _dispatcher(confirm=ask).run_one(_SINGLE_QUOTED)
    assert not out.result.is_error, out.result.content
    assert seen == [{"to": "evil@example.com"}]
    assert sent == ["evil@example.com"]


class _Abort(BaseException):
    """Not an ``Exception``: what a library's own control-flow signal may be."""


@tool(inline=False, timeout=3.0)
def stops() -> str:
    """Raise StopIteration on a worker thread."""
    raise StopIteration("no more items")


@tool(inline=False, timeout=3.0)
def aborts() -> str:
    """Raise a BaseException subclass on a worker thread."""
    raise _Abort("stop everything")


async def test_stop_iteration_on_a_worker_is_a_permanent_failure_not_a_timeout() -> None:
    # asyncio refuses StopIteration in a future: the call was never settled and ended
    # as a timeout, with "Exception in callback" logged
    out = await Dispatcher(ToolRegistry([stops])).run_one(ToolCallPart("c1", "stops", {}))
    assert out.result.error_kind == "permanent", out.result.content
    assert "StopIteration" in out.result.content
    assert "no more items" in out.result.content


@tool(inline=True)
def aborts_inline() -> str:
    """Raise a BaseException subclass on the event loop's thread."""
    raise _Abort("stop everything")


@pytest.mark.parametrize("name", ["aborts", "aborts_inline"])
async def test_a_base_exception_raised_by_a_sync_tool_becomes_its_result(name: str) -> None:
    dispatcher = Dispatcher(ToolRegistry([aborts, aborts_inline]))
    out = await dispatcher.run_one(ToolCallPart("c1", name, {}))
    assert out.result.error_kind == "permanent", out.result.content
    assert "_Abort: stop everything" in out.result.content


@pytest.mark.parametrize("value", [0, -1, True, 2.5])
def test_max_violations_must_be_a_whole_number_above_zero(value: object) -> None:
    # -1 showed all violations but the last, then "... and 1 more"; 0 showed none
    with pytest.raises(ValueError, match=r"DispatchConfig\.max_violations"):
        DispatchConfig(max_violations=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("cap", [-1, True, 1.5])
async def test_a_batch_cap_that_is_no_count_is_refused(cap: object) -> None:
    # max_calls=-1 ran every call but the last and reported the last as over a cap of -1
    calls = [ToolCallPart(f"c{i}", "stops", {}) for i in range(3)]
    with pytest.raises(ValueError, match="max_calls"):
        await Dispatcher(ToolRegistry([stops])).run_batch(calls, max_calls=cap)  # type: ignore[arg-type]


effects: list[str] = []


async def _write() -> str:
    effects.append("written")
    return "written"


@tool
async def forgets_await() -> object:
    """Return the coroutine of the work instead of its result."""
    return _write()


async def test_an_async_tool_returning_an_unawaited_coroutine_fails_saying_so() -> None:
    # the result was "<coroutine object _write at 0x...>", reported as a success, and
    # the work never ran (Python warned "coroutine was never awaited" at exit)
    effects.clear()
    out = await Dispatcher(ToolRegistry([forgets_await])).run_one(
        ToolCallPart("c1", "forgets_await", {})
    )
    assert out.result.error_kind == "permanent", out.result.content
    assert "await" in out.result.content
    assert effects == []


@tool(timeout=0.5)
async def stubborn() -> str:
    """Swallow every cancellation and keep working for 30 s."""
    for _ in range(60):
        try:
            await asyncio.sleep(0.5)
        except asyncio.CancelledError:
            effects.append("swallowed")
    return "finished anyway"


async def test_a_tool_that_swallows_its_deadline_is_abandoned_after_a_grace() -> None:
    # the deadline cancelled it once; it caught that and ran on for 30 s, and its
    # late value came back as a success: the timeout did not hold
    effects.clear()
    out = await Dispatcher(ToolRegistry([stubborn])).run_one(ToolCallPart("c1", "stubborn", {}))
    assert out.result.error_kind == "timeout", out.result.content
    assert effects == ["swallowed"]
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
