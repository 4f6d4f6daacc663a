"""Property: steering, follow-ups and cancellation arriving at random moments never
break a run: it returns a RunResult and the history stays well-formed."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st
from loop_helpers import FakeSleep, add, well_formed

from loopwright import Agent, DispatchConfig, FunctionModel, Limits, Run, RunStop, tool, tool_call
from loopwright.core.errors import TransientProviderError

ops = st.sampled_from(["none", "steer", "follow_up", "cancel", "cancel_outside"])


@tool
async def nap(n: int) -> int:
    """Yield to the event loop, then answer."""
    await asyncio.sleep(0)
    return n


@settings(max_examples=60, deadline=None)
@given(
    plan=st.lists(st.tuples(ops, st.integers(0, 3)), min_size=1, max_size=8),
    tool_ops=st.lists(ops, max_size=6),
)
def test_random_interference_keeps_history_well_formed(
    plan: list[tuple[str, int]], tool_ops: list[str]
) -> None:
    holder: list[Run] = []
    calls = 0
    tool_calls = 0

    def act(op: str) -> None:
        run = holder[0]
        if run.done():
            return
        if op == "steer":
            run.steer("steer")
        elif op == "follow_up":
            run.follow_up("more")
        elif op == "cancel":
            run.cancel()
        elif op == "cancel_outside":
            asyncio.get_running_loop().call_soon(run.cancel)

    def reply(messages, request):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls > len(plan):
            return "final"
        op, shape = plan[calls - 1]
        act(op)
        if shape == 0:
            return f"answer {calls}"
        if shape == 1:
            return TransientProviderError("blip")
        if shape == 2:
            return [tool_call("nap", {"n": calls * 10 + i}) for i in range(2)]
        return [
            tool_call(name, {"n": calls * 10 + i}) for i, name in enumerate(["poke", "nap", "poke"])
        ]

    @tool
    async def poke(n: int) -> int:
        """A tool that interferes."""
        nonlocal tool_calls
        tool_calls += 1
        if tool_calls <= len(tool_ops):
            act(tool_ops[tool_calls - 1])
        await asyncio.sleep(0)
        return n

    async def main() -> None:
        agent = Agent(
            FunctionModel(reply),
            [nap, poke, add],
            limits=Limits(max_turns=12),
            dispatch=DispatchConfig(max_concurrency=1),
            sleep=FakeSleep(),
        )
        run = agent.start("go", events=True)
        holder.append(run)
        events = [e async for e in run]
        result = await run.result()
        assert events[-1].result is result  # type: ignore[union-attr]
        well_formed(result.messages)
        assert result.turns <= 12 and result.messages[0].text == "go"
        cancelled = any(op.startswith("cancel") for op, _ in plan) or any(
            op.startswith("cancel") for op in tool_ops
        )
        if result.stop is RunStop.CANCELLED:
            assert cancelled

    asyncio.run(main())
