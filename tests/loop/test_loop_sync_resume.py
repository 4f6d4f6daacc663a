"""A run that pauses for a decision can be continued from what ``run``/``arun`` return:
``result.state`` (the pending calls and the results their batch already holds live in
the state only), with ``resume_sync`` from synchronous code and ``aresume`` from async."""

from __future__ import annotations

import asyncio

import pytest

from loopwright import Agent, Confirmation, DispatchConfig, RunStop, ScriptedModel, tool, tool_call
from loopwright.core.errors import UserError
from loopwright.core.run import RunResult

ran: list[str] = []


@tool(requires_confirmation=True, inline=True)
def transfer(amount: int) -> str:
    """Move money (needs approval)."""
    ran.append(f"transfer {amount}")
    return f"moved {amount}"


@tool(inline=True)
def balance() -> str:
    """The balance."""
    ran.append("balance")
    return "balance 500"


def make_agent() -> Agent:
    model = ScriptedModel(
        [[tool_call("balance", {}), tool_call("transfer", {"amount": 100})], "Done."]
    )
    later = DispatchConfig(confirm=lambda call, spec: Confirmation.later())
    return Agent(model, [balance, transfer], dispatch=later)


def check_paused(result: RunResult) -> str:
    assert result.stop is RunStop.AWAITING_CONFIRMATION
    assert result.state is not None and result.state.paused
    assert [c.name for c in result.state.pending_calls] == ["transfer"]
    assert [r.content for r in result.state.held_results] == ["balance 500"]
    return result.pending_calls[0].id


def check_done(result: RunResult) -> None:
    assert result.stop is RunStop.FINAL_ANSWER and result.answer == "Done."
    contents = [r.content for r in result.messages[2].tool_results_parts]
    assert contents == ["balance 500", "moved 100"]  # the held result kept, in call order
    assert ran == ["balance", "transfer 100"]  # balance ran once, before the pause


def test_run_returns_a_state_that_resume_sync_continues() -> None:
    # was: run() returned no state (only messages and pending_calls) and there was no
    # synchronous resume: a paused synchronous run could not be continued
    ran.clear()
    agent = make_agent()
    paused = agent.run("pay the invoice")
    call_id = check_paused(paused)
    assert paused.state is not None
    done = agent.resume_sync(paused.state, {call_id: Confirmation.approve()})
    check_done(done)
    assert done.state is paused.state  # one state, continued


def test_arun_and_aresume_behave_the_same() -> None:
    ran.clear()
    agent = make_agent()

    async def main() -> RunResult:
        paused = await agent.arun("pay the invoice")
        call_id = check_paused(paused)
        assert paused.state is not None
        return await agent.aresume(paused.state, {call_id: Confirmation.approve()})

    check_done(asyncio.run(main()))


def test_a_denied_call_resumed_synchronously_says_the_reason() -> None:
    ran.clear()
    agent = make_agent()
    paused = agent.run("pay the invoice")
    assert paused.state is not None
    done = agent.resume_sync(paused.state, {check_paused(paused): Confirmation.deny("no")})
    assert done.stop is RunStop.FINAL_ANSWER and ran == ["balance"]
    assert "no" in done.messages[2].tool_results_parts[1].content


def test_resume_sync_inside_an_event_loop_names_aresume() -> None:
    agent = make_agent()
    paused = agent.run("pay the invoice")
    assert paused.state is not None
    state = paused.state

    async def main() -> None:
        with pytest.raises(UserError, match=r"agent\.aresume"):
            agent.resume_sync(state, {})

    asyncio.run(main())
