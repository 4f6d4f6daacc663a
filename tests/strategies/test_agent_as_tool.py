"""Agent.as_tool: an orchestrator calls a worker agent; the worker's usage rolls up into
the orchestrator's, its budgets are capped by what the orchestrator has left, and its
events appear in the orchestrator's stream."""

from __future__ import annotations

import asyncio

from loopwright import Agent, Limits, Reply, ScriptedModel, Usage, tool_call
from loopwright.core.events import ModelCallFinished, RunFinished, RunStarted, ToolCallFinished


def worker(*replies: str | Reply) -> Agent:
    return Agent(ScriptedModel(list(replies), name="worker"))


def orchestrator(*replies: object, limits: Limits | None = None, tools: list[object]) -> Agent:
    return Agent(ScriptedModel(list(replies), name="boss"), tools, limits=limits)  # type: ignore[arg-type]


def test_worker_usage_and_events_roll_up_into_the_parent_run() -> None:
    researcher = worker(Reply("Paris", usage=Usage(100, 20))).as_tool(
        "researcher", "Answers research questions."
    )
    boss = orchestrator(
        Reply([tool_call("researcher", {"task": "Capital of France?"})], usage=Usage(10, 5)),
        Reply("It is Paris.", usage=Usage(10, 5)),
        tools=[researcher],
    )

    async def go() -> list[object]:
        return [event async for event in boss.stream("Find the capital of France")]

    events = asyncio.run(go())
    result = events[-1]
    assert isinstance(result, RunFinished) and result.result.answer == "It is Paris."
    assert result.result.usage == Usage(120, 30)  # 2 boss calls + 1 worker call
    models = [e.message.text for e in events if isinstance(e, ModelCallFinished)]
    assert "Paris" in models  # the worker's model call is in the parent's stream
    assert sum(isinstance(e, RunStarted) for e in events) == 1
    assert sum(isinstance(e, RunFinished) for e in events) == 1
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].result.content == "Paris" and not finished[0].result.is_error


def test_the_parents_token_budget_caps_the_worker() -> None:
    chatty = worker(
        Reply([tool_call("nothing", {})], usage=Usage(30, 0)),
        Reply([tool_call("nothing", {})], usage=Usage(30, 0)),
        "done",
    )
    boss = orchestrator(
        Reply([tool_call("helper", {"task": "work"})], usage=Usage(40, 0)),
        "gave up",
        tools=[chatty.as_tool("helper", "Does work.")],
        limits=Limits(token_budget=60),
    )
    result = boss.run("go")
    calls = [m for m in result.messages if m.role == "tool"]
    content = calls[0].parts[0].content  # type: ignore[union-attr]
    assert "token_budget" in content  # 20 tokens were left: the worker stopped after one call
    assert result.usage.total_tokens == 40 + 30
    assert result.stop.value == "token_budget"


def test_outside_a_run_the_tool_runs_the_agent_plainly() -> None:
    researcher = worker("Rome").as_tool("researcher", "Answers questions.")

    async def call() -> object:
        return await researcher.fn(task="Capital of Italy?")

    assert asyncio.run(call()) == "Rome"
