"""Traces for the viewer tests: recorded from real (scripted) runs."""

from __future__ import annotations

from pathlib import Path

from loopwright import Agent, FunctionModel, Hooks, Limits, Reply, ScriptedModel, tool, tool_call
from loopwright.core.errors import RateLimited
from loopwright.core.messages import Usage
from loopwright.prompts.template import PromptText
from loopwright.tracing import JsonlRecorder

FINGERPRINT = "executor@v1.0#5f3a9c1e"


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}, 21°C"


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


async def _no_sleep(_: float) -> None:
    return None


def sample_trace(directory: Path) -> Path:
    """A run with a retried model call, two tools (one failing) and a final answer."""
    model = ScriptedModel(
        [
            RateLimited("429: slow down", status=429),
            Reply(
                [
                    tool_call("get_weather", {"city": "Paris"}),
                    tool_call("explode", {"reason": "disk"}),
                ],
                usage=Usage(input_tokens=120, output_tokens=30, cost=0.0021),
            ),
            Reply("Paris is sunny; the other tool failed.", usage=Usage(200, 12, cost=0.0009)),
        ],
        name="openai:gpt-4o",
    )
    recorder = JsonlRecorder(directory)
    agent = Agent(
        model,
        [get_weather, explode],
        system=PromptText("You are a helpful assistant.", [FINGERPRINT]),
        hooks=Hooks(on_event=recorder),
        sleep=_no_sleep,
    )
    agent.run("What's the weather in Paris? Also explode.")
    recorder.close()
    return recorder.paths[0]


@tool
def step(n: int) -> int:
    """Next number."""
    return n + 1


def large_trace(directory: Path, min_events: int = 10_000) -> Path:
    """One long run with at least ``min_events`` events (many turns, two tools each)."""
    turns = 1 + min_events // 12  # about 13 events per turn

    def reply(messages, request):  # type: ignore[no-untyped-def]
        done = sum(1 for m in messages if m.role == "assistant")
        if done >= turns:
            return "finished"
        return Reply(
            [tool_call("step", {"n": done}), tool_call("step", {"n": -done})],
            usage=Usage(100 + done, 20, cost=0.0001),
        )

    recorder = JsonlRecorder(directory)
    limits = Limits(max_turns=turns + 5, repeat_limit=None, cycle_detection=False)
    Agent(
        FunctionModel(reply, chunk_size=4), [step], limits=limits, hooks=Hooks(on_event=recorder)
    ).run("count")
    recorder.close()
    return recorder.paths[0]


def strategy_trace(directory: Path) -> Path:
    """A strategy run: two concurrent model calls and a vote step."""
    import asyncio

    from loopwright.strategies.runtime import Strategy

    model = FunctionModel(lambda messages, request: Reply("42", delay=0.01), name="openai:gpt-4o")

    class TwoVotes(Strategy):
        name = "self_consistency"

        async def _solve(self, ctx, prompt):  # type: ignore[no-untyped-def]
            a, b = await asyncio.gather(ctx.ask(model, prompt), ctx.ask(model, prompt))
            ctx.step("vote", answers=[a, b], winner=a)
            return a, {}

    recorder = JsonlRecorder(directory)
    TwoVotes().run("6 * 7?", on_event=recorder)
    recorder.close()
    return recorder.paths[0]
