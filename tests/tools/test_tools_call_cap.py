"""The per-turn cap on tool calls: calls past ``Limits.max_tool_calls_per_turn`` are
answered with a ``skipped`` result and never executed."""

from __future__ import annotations

import pytest

from loopwright import Agent, Limits, ScriptedModel, tool, tool_call
from loopwright.core.errors import ToolErrorKind
from loopwright.core.messages import ToolCallPart
from loopwright.loop.hooks import Hooks
from loopwright.tools import Dispatcher, ToolRegistry


def test_default_cap_is_set() -> None:
    assert Limits().max_tool_calls_per_turn == 32
    with pytest.raises(ValueError, match="max_tool_calls_per_turn"):
        Limits(max_tool_calls_per_turn=0)


def _charger() -> tuple[list[int], object]:
    charged: list[int] = []

    @tool(inline=True)
    def charge(amount: int) -> str:
        """Charge a card (a side effect)."""
        charged.append(amount)
        return "charged"

    return charged, charge


@pytest.mark.parametrize("listen", [False, True])
def test_a_thousand_calls_in_one_reply_run_only_the_cap(listen: bool) -> None:
    charged, charge = _charger()
    calls = [tool_call("charge", {"amount": 5}, id=f"c{i}") for i in range(1000)]
    model = ScriptedModel([calls, "done"])
    events: list[object] = []
    hooks = Hooks(on_event=events.append) if listen else None
    agent = Agent(model, tools=[charge], limits=Limits(repeat_limit=None), hooks=hooks)
    result = agent.run("pay")
    assert bool(events) is listen
    assert len(charged) == 32
    results = result.messages[-2].parts  # the tool message before the final answer
    assert len(results) == 1000
    assert all(not r.is_error for r in results[:32])
    skipped = results[32:]
    assert {r.error_kind for r in skipped} == {ToolErrorKind.SKIPPED.value}
    assert "at most 32 run per turn" in skipped[0].content
    assert [r.call_id for r in results] == [f"c{i}" for i in range(1000)]
    assert result.answer == "done"


async def test_dispatcher_cap_keeps_call_order_and_never_starts_extras() -> None:
    charged, charge = _charger()
    started: list[str] = []
    d = Dispatcher(ToolRegistry([charge]))
    calls = [ToolCallPart(f"c{i}", "charge", {"amount": i}) for i in range(5)]
    out = await d.run_batch(calls, on_start=lambda c: started.append(c.id), max_calls=2)
    assert charged == [0, 1] and started == ["c0", "c1"]
    assert [o.call.id for o in out] == ["c0", "c1", "c2", "c3", "c4"]
    assert [o.attempts for o in out] == [1, 1, 0, 0, 0]
    single = await d.run_results(calls[:1], max_calls=1)
    assert single[0].content == "charged"


async def test_a_single_call_over_a_cap_of_zero_is_skipped_not_run() -> None:
    charged, charge = _charger()
    d = Dispatcher(ToolRegistry([charge]))
    out = await d.run_batch([ToolCallPart("c0", "charge", {"amount": 1})], max_calls=0)
    assert charged == []
    assert [o.attempts for o in out] == [0]
    assert out[0].result.error_kind == ToolErrorKind.SKIPPED.value
