"""Where a plain ``def`` tool runs: worker threads until it proves short and CPU-bound,
then the event loop; back to workers for good after one slow inline run."""

from __future__ import annotations

import contextvars
import threading
import time

from loopwright.core.messages import ToolCallPart
from loopwright.tools import Dispatcher, ToolRegistry, tool
from loopwright.tools.execution import SyncProfile


async def _threads_used(d: Dispatcher, name: str, n: int) -> list[bool]:
    main = threading.get_ident()
    seen: list[bool] = []
    for i in range(n):
        out = await d.run_one(ToolCallPart(f"c{i}", name, {"x": i}))
        assert not out.result.is_error, out.result.content
        seen.append(int(out.result.content) != main)
    return seen


async def test_a_fast_def_tool_moves_to_the_event_loop() -> None:
    @tool
    def where(x: int) -> int:
        """Report the thread."""
        return threading.get_ident()

    d = Dispatcher(ToolRegistry([where]))
    seen = await _threads_used(d, "where", SyncProfile.PROMOTE_AFTER)
    assert all(seen)  # proved on workers first
    for _ in range(200):  # a run preempted on a busy machine restarts the streak
        if where.profile.inline:
            break
        await _threads_used(d, "where", 1)
    assert where.profile.inline
    assert await _threads_used(d, "where", 3) == [False, False, False]  # on the loop now


async def test_a_blocking_def_tool_stays_on_workers() -> None:
    @tool
    def napper(x: int) -> int:
        """Sleep briefly (waits: never CPU-bound)."""
        time.sleep(0.0002)
        return threading.get_ident()

    d = Dispatcher(ToolRegistry([napper]))
    assert all(await _threads_used(d, "napper", 3 * SyncProfile.PROMOTE_AFTER))
    assert not napper.profile.inline


async def test_slow_inline_runs_in_a_row_demote_for_good() -> None:
    slow = threading.Event()

    @tool
    def sometimes(x: int) -> int:
        """Fast, until it is not."""
        if slow.is_set():
            end = time.perf_counter() + 2 * SyncProfile.DEMOTE_S
            while time.perf_counter() < end:
                pass
        return threading.get_ident()

    d = Dispatcher(ToolRegistry([sometimes]))
    for _ in range(200):
        if sometimes.profile.inline:
            break
        await _threads_used(d, "sometimes", 1)
    assert sometimes.profile.inline
    slow.set()
    await _threads_used(d, "sometimes", 1)
    assert sometimes.profile.inline  # one slow run may be the loop being preempted
    await _threads_used(d, "sometimes", SyncProfile.DEMOTE_AFTER - 1)
    slow.clear()
    assert not sometimes.profile.inline and sometimes.profile.demoted
    assert all(await _threads_used(d, "sometimes", 2 * SyncProfile.PROMOTE_AFTER))


async def test_inline_false_always_uses_a_worker() -> None:
    @tool(inline=False)
    def pinned(x: int) -> int:
        """Always threaded."""
        return threading.get_ident()

    d = Dispatcher(ToolRegistry([pinned]))
    assert all(await _threads_used(d, "pinned", 2 * SyncProfile.PROMOTE_AFTER))


async def test_context_variables_set_by_a_tool_do_not_leak_wherever_it_runs() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    @tool
    def setter(x: int) -> int:
        """Set a context variable."""
        var.set("leaked")
        return x

    d = Dispatcher(ToolRegistry([setter]))
    for i in range(SyncProfile.PROMOTE_AFTER + 50):
        await d.run_one(ToolCallPart(f"c{i}", "setter", {"x": i}))
        if setter.profile.inline:
            break
    await d.run_one(ToolCallPart("last", "setter", {"x": 0}))
    assert setter.profile.inline
    assert var.get() == "unset"


async def test_a_def_tool_that_starts_its_own_event_loop_goes_back_to_workers() -> None:
    # a sync tool that wraps async code with asyncio.run (or calls a synchronous
    # Agent.run) is short and CPU-bound, so it gets promoted; on the loop's thread it
    # would fail, so the call runs on a worker instead and the tool stays there
    import asyncio

    async def double(x: int) -> int:
        return 2 * x

    @tool
    def wraps_async(x: int) -> int:
        """Run a coroutine to completion."""
        return asyncio.run(double(x))

    d = Dispatcher(ToolRegistry([wraps_async]))
    wraps_async.profile.inline = True  # as after a streak of fast worker runs
    out = await d.run_one(ToolCallPart("c0", "wraps_async", {"x": 21}))
    assert not out.result.is_error, out.result.content
    assert out.result.content == "42"
    assert not wraps_async.profile.inline and wraps_async.profile.demoted
    for i in range(2 * SyncProfile.PROMOTE_AFTER):
        out = await d.run_one(ToolCallPart(f"c{i + 1}", "wraps_async", {"x": i}))
        assert out.result.content == str(2 * i)
    assert not wraps_async.profile.inline


async def test_a_def_tool_running_a_synchronous_agent_survives_promotion() -> None:
    from loopwright import Agent, FunctionModel

    inner = Agent(FunctionModel(lambda messages, request: "inner answer"))

    @tool
    def ask_inner(x: int) -> str:
        """Ask another agent synchronously."""
        return inner.run(f"question {x}").output

    d = Dispatcher(ToolRegistry([ask_inner]))
    for i in range(3 * SyncProfile.PROMOTE_AFTER):
        if i == SyncProfile.PROMOTE_AFTER:
            ask_inner.profile.inline = True
        out = await d.run_one(ToolCallPart(f"c{i}", "ask_inner", {"x": i}))
        assert not out.result.is_error, out.result.content
        assert out.result.content == "inner answer"
    assert ask_inner.profile.demoted
