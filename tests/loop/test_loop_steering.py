"""Steering (skips the rest of a tool batch, seen next turn) and follow-ups."""

from __future__ import annotations

import asyncio

from loop_helpers import add, well_formed

from loopwright import (
    Agent,
    DispatchConfig,
    FunctionModel,
    Run,
    RunStop,
    ScriptedModel,
    tool,
    tool_call,
)
from loopwright.core.events import MessageAppended
from loopwright.core.messages import Message


async def test_steering_skips_unstarted_calls_and_is_seen_next_turn() -> None:
    gate = asyncio.Event()
    run_holder: list[object] = []

    @tool
    async def step(n: int) -> int:
        """One step."""
        if n == 0:
            run_holder[0].steer("stop, do something else")  # type: ignore[attr-defined]
        return n

    calls = [tool_call("step", {"n": i}, id=f"s{i}") for i in range(3)]
    model = ScriptedModel([calls, "ok, switching"])
    agent = Agent(model, [step], dispatch=DispatchConfig(max_concurrency=1))
    run = agent.start("go")
    run_holder.append(run)
    gate.set()
    events = [e async for e in run]
    result = await run.result()
    assert result.stop is RunStop.FINAL_ANSWER
    results = result.messages[2].tool_results_parts
    assert [r.error_kind for r in results] == [None, "skipped", "skipped"]
    assert results[0].content == "0"
    # the steering message is appended after the results and the model sees it
    assert result.messages[3] == Message.user("stop, do something else")
    assert model.requests[1].last_message == Message.user("stop, do something else")
    sources = [e.source for e in events if isinstance(e, MessageAppended)]
    assert sources == ["input", "model", "tools", "steering", "model"]
    well_formed(result.messages)


async def test_steering_during_final_answer_continues_the_run() -> None:
    holder: list[object] = []

    def reply(messages, request):  # type: ignore[no-untyped-def]
        if len(messages) == 1:
            holder[0].steer("actually, also say bye")  # type: ignore[attr-defined]
            return "hello"
        return "bye"

    run = Agent(FunctionModel(reply)).start("greet")
    holder.append(run)
    result = await run.result()
    assert [m.text for m in result.messages] == ["greet", "hello", "actually, also say bye", "bye"]
    assert result.answer == "bye"


async def test_follow_ups_continue_after_each_final_answer() -> None:
    model = ScriptedModel(["one", "two", "three"])
    run = Agent(model).start("first")
    run.follow_up("second")
    run.follow_up(Message.user("third"))
    events = [e async for e in run]
    result = await run.result()
    assert [m.text for m in result.messages] == ["first", "one", "second", "two", "third", "three"]
    assert result.stop is RunStop.FINAL_ANSWER and result.turns == 3
    sources = [e.source for e in events if isinstance(e, MessageAppended)]
    assert sources == ["input", "model", "follow_up", "model", "follow_up", "model"]


async def test_follow_up_waits_for_tools_to_finish() -> None:
    model = ScriptedModel([[tool_call("add", {"a": 1, "b": 2})], "3", "and more"])
    run = Agent(model, [add]).start("go")
    run.follow_up("more?")
    result = await run.result()
    roles = [m.role for m in result.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert result.messages[4].text == "more?"


async def test_steer_after_finish_is_a_clear_error() -> None:
    import pytest

    from loopwright import UserError

    run = Agent(ScriptedModel(["x"])).start("go")
    await run.result()
    with pytest.raises(UserError, match=r"history=result\.messages"):
        run.steer("late")


async def test_steer_from_outside_while_a_slow_tool_runs() -> None:
    running = asyncio.Event()

    @tool
    async def slow(n: int) -> int:
        """Slow step."""
        running.set()
        await asyncio.sleep(0.05)
        return n

    calls = [tool_call("slow", {"n": i}, id=f"s{i}") for i in range(3)]
    model = ScriptedModel([calls, "noted"])
    agent = Agent(model, [slow], dispatch=DispatchConfig(max_concurrency=1))
    run = agent.start("go", events=False)
    await running.wait()
    run.steer("change of plan")
    result = await run.result()
    kinds = [r.error_kind for r in result.messages[2].tool_results_parts]
    assert kinds == [None, "skipped", "skipped"]
    assert result.messages[3].text == "change of plan" and result.answer == "noted"
    well_formed(result.messages)


async def test_steering_while_the_model_replies_skips_its_whole_batch() -> None:
    holder: list[Run] = []

    def reply(messages, request):  # type: ignore[no-untyped-def]
        if len(messages) == 1:
            holder[0].steer("never mind")
            return [tool_call("add", {"a": 1, "b": 1}), tool_call("add", {"a": 2, "b": 2})]
        return "ok"

    run = Agent(FunctionModel(reply), [add]).start("go", events=False)
    holder.append(run)
    result = await run.result()
    kinds = [r.error_kind for r in result.messages[2].tool_results_parts]
    assert kinds == ["skipped", "skipped"]
    assert result.messages[3].text == "never mind" and result.answer == "ok"
    assert run.state.consecutive_errors == 0  # skipped calls are not failures


async def test_messages_queued_during_a_cut_or_refused_reply_continue_the_run() -> None:
    """A reply cut at max_tokens or refused ends the run only when nothing is queued: a
    steer or follow-up sent meanwhile ("go on", a rephrased request) is taken in, not left
    stranded in the state after the run returned."""
    from loopwright.core.messages import StopReason
    from loopwright.providers.scripted import Reply

    holder: list[Run] = []

    def reply(messages, request):  # type: ignore[no-untyped-def]
        if len(messages) == 1:
            holder[0].follow_up("go on")
            return Reply("the first half", stop_reason=StopReason.MAX_TOKENS)
        if len(messages) == 3:
            holder[0].steer("ask it politely")
            return Reply("I can't help with that.", stop_reason=StopReason.REFUSAL)
        return "the second half"

    run = Agent(FunctionModel(reply)).start("write it")
    holder.append(run)
    result = await run.result()
    texts = [m.text for m in result.messages]
    assert texts == [
        "write it",
        "the first half",
        "go on",
        "I can't help with that.",
        "ask it politely",
        "the second half",
    ], texts
    assert result.stop is RunStop.FINAL_ANSWER
    assert not result.state.follow_ups and not result.state.steering
