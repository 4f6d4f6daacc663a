"""The happy path, events and their order, the sync/async entry points."""

from __future__ import annotations

import asyncio

import pytest
from loop_helpers import add, well_formed

from loopwright import Agent, Hooks, Limits, RunStop, ScriptedModel, UserError, tool_call
from loopwright.core.events import (
    MessageAppended,
    ModelCallFinished,
    ModelCallStarted,
    ModelStreamed,
    RunFinished,
    RunStarted,
    StateChanged,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from loopwright.core.messages import Message, Usage
from loopwright.core.run import LoopState
from loopwright.providers.scripted import Reply
from loopwright.tools import ToolContext


def _script() -> ScriptedModel:
    return ScriptedModel([[tool_call("add", {"a": 2, "b": 3})], "2 + 3 = 5"])


def test_run_sync_returns_answer_and_full_history() -> None:
    result = Agent(_script(), [add]).run("What is 2 + 3?")
    assert result.ok and result.stop is RunStop.FINAL_ANSWER
    assert result.answer == "2 + 3 = 5"
    assert result.turns == 2
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.messages[2].tool_results_parts[0].content == "5"
    assert result.session_id
    well_formed(result.messages)


async def test_run_inside_event_loop_names_arun() -> None:
    with pytest.raises(UserError, match="arun"):
        Agent(_script(), [add]).run("hi")


def test_start_outside_event_loop_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="running event loop"):
        Agent(_script(), [add]).start("hi")


async def test_steering_passes_through_observe() -> None:
    runs: list[object] = []

    async def add(a: int, b: int) -> int:
        """Add, and steer the run while its batch runs."""
        runs[0].steer("also: be brief")  # type: ignore[attr-defined]
        return a + b

    run = Agent(_script(), [add]).start("hi")
    runs.append(run)
    seen = [(e.previous, e.current) async for e in run if isinstance(e, StateChanged)]
    assert (LoopState.ACT, LoopState.OBSERVE) in seen
    assert (LoopState.OBSERVE, LoopState.THINK) in seen
    assert [m.text for m in (await run.result()).messages][-2] == "also: be brief"


async def test_state_transitions_in_order() -> None:
    events = [e async for e in Agent(_script(), [add]).stream("hi")]
    states = [(e.previous, e.current) for e in events if isinstance(e, StateChanged)]
    assert states == [
        (LoopState.OBSERVE, LoopState.THINK),
        (LoopState.THINK, LoopState.ACT),
        (LoopState.ACT, LoopState.THINK),  # nothing queued: no OBSERVE in between
        (LoopState.THINK, LoopState.DONE),
    ]
    assert isinstance(events[0], RunStarted)
    assert isinstance(events[-1], RunFinished)
    kinds = [type(e) for e in events]
    assert kinds.count(ModelCallStarted) == kinds.count(ModelCallFinished) == 2
    assert kinds.count(ToolCallStarted) == kinds.count(ToolCallFinished) == 1
    sources = [e.source for e in events if isinstance(e, MessageAppended)]
    assert sources == ["input", "model", "tools", "model"]
    assert kinds.index(ToolCallStarted) < kinds.index(ToolCallFinished)


async def test_on_event_callback_sees_the_same_events_as_iteration() -> None:
    seen: list[object] = []
    agent = Agent(_script(), [add], hooks=Hooks(on_event=seen.append))
    streamed = [e async for e in agent.stream("hi")]
    assert [type(e) for e in seen] == [type(e) for e in streamed]
    assert isinstance(seen[-1], RunFinished) and seen[-1].result.ok


async def test_arun_without_subscribers_builds_no_events() -> None:
    agent = Agent(_script(), [add])
    run = agent.start("hi", events=False)
    assert run._engine.emit is None
    result = await run.result()
    assert result.ok
    with pytest.raises(UserError, match="events=False"):
        run.__aiter__()


async def test_text_deltas_are_forwarded() -> None:
    model = ScriptedModel(["hello world"], chunk_size=5)
    events = [e async for e in Agent(model).stream("hi")]
    deltas = [e.event.text for e in events if isinstance(e, ModelStreamed)]
    assert all(isinstance(e.event, TextDelta) for e in events if isinstance(e, ModelStreamed))
    assert "".join(deltas) == "hello world" and len(deltas) == 3


async def test_usage_accumulates_over_turns() -> None:
    model = ScriptedModel(
        [
            Reply([tool_call("add", {"a": 1, "b": 1})], usage=Usage(10, 5, cost=0.01)),
            Reply("2", usage=Usage(20, 3, cost=0.02)),
        ]
    )
    result = await Agent(model, [add]).arun("1+1?")
    assert result.usage.input_tokens == 30 and result.usage.output_tokens == 8
    assert result.usage.cost == pytest.approx(0.03)


async def test_history_and_system_prompt_are_sent() -> None:
    model = ScriptedModel(["ok"])
    prior = [Message.user("earlier"), Message.assistant("noted")]
    result = await Agent(model, system="be brief").arun("now", history=prior)
    request = model.requests[0]
    assert request.system == "be brief"
    assert request.message_count == 3 and request.last_message == Message.user("now")
    assert [m.text for m in result.messages] == ["earlier", "noted", "now", "ok"]


async def test_request_reuses_the_history_list_without_copying() -> None:
    seen: list[int] = []

    def capture(messages, request):  # type: ignore[no-untyped-def]
        seen.append(id(messages))
        return [tool_call("add", {"a": len(seen), "b": 0})] if len(seen) < 3 else "done"

    from loopwright import FunctionModel

    agent = Agent(FunctionModel(capture), [add])
    run = agent.start("go", events=False)
    result = await run.result()
    assert result.ok
    assert len(set(seen)) == 1 and seen[0] == id(run.state.messages)


async def test_continue_from_a_finished_state() -> None:
    model = ScriptedModel(["first", "second"])
    agent = Agent(model)
    run = agent.start("one")
    first = await run.result()
    assert first.answer == "first"
    second = await agent.aresume(run.state, prompt="two")
    assert second.answer == "second" and second.turns == 2
    assert [m.text for m in second.messages] == ["one", "first", "two", "second"]


async def test_plain_functions_become_tools() -> None:
    def mul(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    model = ScriptedModel([[tool_call("mul", {"a": 6, "b": 7})], "42"])
    result = await Agent(model, [mul]).arun("6*7")
    assert result.messages[2].tool_results_parts[0].content == "42"
    assert model.requests[0].tool_names == ("mul",)


def test_agent_rejects_non_model() -> None:
    with pytest.raises(UserError, match="Model"):
        Agent(42)  # type: ignore[arg-type]


def test_agent_resolves_model_strings_and_names_the_missing_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        Agent("openai:gpt-4o")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    agent = Agent("openai:gpt-4o")
    assert "gpt-4o" in agent.model.name


def test_limits_validate_fields() -> None:
    with pytest.raises(ValueError, match="max_turns"):
        Limits(max_turns=0)
    with pytest.raises(ValueError, match="repeat_limit"):
        Limits(repeat_limit=1)
    with pytest.raises(ValueError, match="timeout"):
        Limits(timeout=0)


async def test_concurrent_runs_are_independent() -> None:
    agents = [
        Agent(ScriptedModel([[tool_call("add", {"a": i, "b": 1})], f"{i + 1}"]), [add])
        for i in range(20)
    ]
    results = await asyncio.gather(*(a.arun("go") for a in agents))
    assert [r.answer for r in results] == [str(i + 1) for i in range(20)]
    assert len({r.session_id for r in results}) == 20


async def test_tools_get_the_run_session_id_in_their_context() -> None:
    seen: list[str | None] = []

    def whoami(ctx: ToolContext) -> str:
        """Report the session."""
        seen.append(ctx.session_id)
        return "ok"

    model = ScriptedModel([[tool_call("whoami", {})], "done"])
    result = await Agent(model, [whoami]).arun("go", session_id="sess-42")
    assert result.ok and seen == ["sess-42"]


async def test_state_ending_with_a_user_message_continues_without_prompt() -> None:
    from loopwright import RunState

    state = RunState(session_id="s", messages=[Message.user("pending question")])
    result = await Agent(ScriptedModel(["answer"])).aresume(state)
    assert result.answer == "answer" and len(result.messages) == 2
    with pytest.raises(UserError, match="give the continued run a prompt"):
        await Agent(ScriptedModel(["x"])).aresume(state)


def test_facade_run_helpers() -> None:
    import loopwright

    result = loopwright.run(_script(), "2 + 3?", tools=[add], limits=Limits(max_turns=5))
    assert result.answer == "2 + 3 = 5"

    async def both() -> tuple[str, list[str]]:
        r = await loopwright.arun(_script(), "2 + 3?", tools=[add])
        kinds = [e.type async for e in loopwright.stream(_script(), "2 + 3?", tools=[add])]
        return r.answer, kinds

    answer, kinds = asyncio.run(both())
    assert answer == "2 + 3 = 5" and kinds[0] == "run_started" and kinds[-1] == "run_finished"


def test_facade_import_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, loopwright; "
        "heavy = [m for m in ('openai', 'anthropic', 'google.genai', 'boto3', 'llama_cpp', "
        "'click', 'rich') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_the_one_shot_helpers_name_swapped_arguments() -> None:
    """run("What is 2 + 2?", model) said "model string ... needs a provider prefix"."""
    import loopwright

    model = ScriptedModel(["4"])
    with pytest.raises(UserError, match=r"loopwright.run\(model, prompt, ...\) takes the model"):
        await asyncio.to_thread(loopwright.run, "What is 2 + 2?", model)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"look swapped: arun\(model, 'hi'\)"):
        await loopwright.arun("hi", model)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="stream"):
        async for _ in loopwright.stream("hi", model):  # type: ignore[arg-type]
            pass
    assert (await loopwright.arun(model, "What is 2 + 2?")).answer == "4"


@pytest.mark.parametrize("entry", ["durable", "batch", "plan_resume"])
def test_sync_entry_points_refuse_a_running_loop_by_name(entry: str, tmp_path) -> None:
    # Each synchronous twin names itself and the awaitable to use inside async code,
    # before building its coroutine (asyncio.run's RuntimeError left a never-awaited one).
    import warnings

    from loopwright.batch.driver import run_batch
    from loopwright.durable import Durable
    from loopwright.store.memory import MemoryStore
    from loopwright.strategies.plan_execute import PlanAndExecute

    model = ScriptedModel(["done"])
    calls = {
        "durable": lambda: Durable(Agent(model), MemoryStore()).run("hi"),
        "batch": lambda: run_batch(Agent(model), [], tmp_path / "out.jsonl"),
        "plan_resume": lambda: PlanAndExecute(model, []).resume({}),
    }
    expected = {
        "durable": "Durable.run()",
        "batch": "run_batch()",
        "plan_resume": "PlanAndExecute.resume()",
    }

    async def inside() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(UserError, match="running event loop") as info:
                calls[entry]()
        assert expected[entry] in str(info.value)
        assert "await " in str(info.value)

    asyncio.run(inside())
