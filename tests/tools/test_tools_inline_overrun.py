"""A run nothing could interrupt (a plain ``def`` run inline on the event loop, an
``async def`` that never awaits) is still held to its timeout: measured, and past it the
call fails as ``timeout`` (docs/tools.md, "Sync tools")."""

from __future__ import annotations

import time

from loopwright.core.messages import ToolCallPart
from loopwright.tools import Dispatcher, ToolRegistry, tool


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


async def test_an_inline_def_tool_past_its_timeout_fails_as_timeout() -> None:
    ran: list[int] = []

    @tool(inline=True, timeout=0.001)
    def crunch(n: int) -> int:
        """Crunch."""
        _busy(0.01)
        ran.append(n)
        return n

    out = await Dispatcher(ToolRegistry([crunch])).run_one(ToolCallPart("c1", "crunch", {"n": 3}))
    assert ran == [3]  # it could not be cut: it ran to its end
    assert out.result.is_error and out.result.error_kind == "timeout"
    assert "past its timeout of 0.001 s" in out.result.content
    assert "inline=False" in out.result.content


async def test_an_async_tool_that_never_awaits_is_measured_too() -> None:
    @tool(timeout=0.001)
    async def crunch() -> str:
        """Crunch."""
        _busy(0.01)
        return "done"

    out = await Dispatcher(ToolRegistry([crunch])).run_one(ToolCallPart("c1", "crunch", {}))
    assert out.result.error_kind == "timeout"
    assert "without reaching an await" in out.result.content


async def test_an_inline_tool_within_its_timeout_returns_its_result() -> None:
    @tool(inline=True)
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    out = await Dispatcher(ToolRegistry([add])).run_one(ToolCallPart("c1", "add", {"a": 1, "b": 2}))
    assert not out.result.is_error and out.result.content == "3"
