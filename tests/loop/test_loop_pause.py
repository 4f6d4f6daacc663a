"""awaiting_confirmation pauses a run; resume with decisions continues it."""

from __future__ import annotations

import pytest
from loop_helpers import add, well_formed

from loopwright import (
    Agent,
    Confirmation,
    DispatchConfig,
    RunStop,
    ScriptedModel,
    tool,
    tool_call,
)
from loopwright.core.run import LoopState
from loopwright.store import decode_state, encode_state


@tool(requires_confirmation=True)
def delete(path: str) -> str:
    """Delete a file (needs a person's approval)."""
    return f"deleted {path}"


def _agent(model: ScriptedModel) -> Agent:
    later = DispatchConfig(confirm=lambda call, spec: Confirmation.later())
    return Agent(model, [add, delete], dispatch=later)


def _batch() -> list:  # type: ignore[type-arg]
    return [
        tool_call("add", {"a": 1, "b": 1}, id="a1"),
        tool_call("delete", {"path": "/tmp/x"}, id="d1"),
        tool_call("delete", {"path": "/tmp/y"}, id="d2"),
    ]


async def test_pause_then_approve_and_deny() -> None:
    model = ScriptedModel([_batch(), "cleaned up"])
    agent = _agent(model)
    run = agent.start("clean up", events=False)
    paused = await run.result()
    assert paused.stop is RunStop.AWAITING_CONFIRMATION
    assert [c.id for c in paused.pending_calls] == ["d1", "d2"]
    state = run.state
    assert state.status is LoopState.PAUSED
    assert state.messages[-1].role == "assistant"  # results NOT appended yet
    assert [r.call_id for r in state.held_results] == ["a1"]

    # the state survives a JSON round trip (a checkpoint)
    restored = decode_state(encode_state(state), (), session_id=state.session_id)
    assert restored.pending_calls == state.pending_calls

    decisions = {"d1": Confirmation.approve(), "d2": Confirmation.deny("keep y")}
    done = await agent.resume(restored, decisions).result()
    assert done.stop is RunStop.FINAL_ANSWER and done.answer == "cleaned up"
    results = done.messages[2].tool_results_parts
    assert [r.call_id for r in results] == ["a1", "d1", "d2"]
    assert results[0].content == "2"
    assert results[1].content == "deleted /tmp/x"
    assert results[2].error_kind == "denied_by_user" and "keep y" in results[2].content
    assert restored.pending_calls == () and restored.held_results == ()
    well_formed(done.messages)


async def test_missing_decision_pauses_again() -> None:
    model = ScriptedModel([_batch(), "done"])
    agent = _agent(model)
    run = agent.start("go", events=False)
    await run.result()
    again = await agent.resume(run.state, {"d1": Confirmation.approve()}).result()
    assert again.stop is RunStop.AWAITING_CONFIRMATION
    assert [c.id for c in again.pending_calls] == ["d2"]
    assert sorted(r.call_id for r in run.state.held_results) == ["a1", "d1"]
    final = await agent.resume(run.state, {"d2": Confirmation.approve()}).result()
    assert final.ok
    assert [r.content for r in final.messages[2].tool_results_parts] == [
        "2",
        "deleted /tmp/x",
        "deleted /tmp/y",
    ]


async def test_prompt_given_on_resume_is_seen_after_the_results() -> None:
    model = ScriptedModel([_batch(), "ok"])
    agent = _agent(model)
    run = agent.start("go", events=False)
    await run.result()
    decisions = {"d1": Confirmation.approve(), "d2": Confirmation.approve()}
    done = await agent.resume(run.state, decisions, prompt="also tidy up").result()
    assert [m.role for m in done.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert done.messages[3].text == "also tidy up"


async def test_unknown_decision_ids_are_rejected() -> None:
    import pytest

    model = ScriptedModel([_batch(), "ok"])
    agent = _agent(model)
    run = agent.start("go", events=False)
    await run.result()
    with pytest.raises(ValueError, match="unknown call ids"):
        await agent.resume(run.state, {"zzz": Confirmation.approve()}).result()


async def test_decisions_that_are_not_confirmations_are_refused_before_anything_runs() -> None:
    """{id: True} was taken: the call was answered "confirmation handler returned bool"
    and the run went on to its final answer; a list of ids was an AttributeError."""
    from loopwright import UserError

    model = ScriptedModel([_batch(), "done"])
    agent = _agent(model)
    run = agent.start("go", events=False)
    await run.result()
    with pytest.raises(UserError, match=r"decisions for \['d1'\] are not Confirmation"):
        agent.resume(run.state, {"d1": True, "d2": Confirmation.approve()})  # type: ignore[dict-item]
    with pytest.raises(UserError, match=r"takes a dict \{call_id: Confirmation\}, got list"):
        agent.resume(run.state, ["d1"])  # type: ignore[arg-type]
    assert [c.id for c in run.state.pending_calls] == ["d1", "d2"]  # nothing was decided
    done = {"d1": Confirmation.approve(), "d2": Confirmation.approve()}
    assert (await agent.resume(run.state, done).result()).ok
    with pytest.raises(
        UserError, match=r"not paused on pending calls \(its run ended: final_answer\)"
    ):
        agent.resume(run.state, done)
