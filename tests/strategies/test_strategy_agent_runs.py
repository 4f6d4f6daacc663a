"""Strategies over an agent: self-consistency samples whole agent runs (with the agent's
tools) and votes over their final answers; Self-Refine drafts with agent runs; every
agent run's calls count against the strategy's limits as they start."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from loopwright import Agent, FunctionModel, Limits, ModelRequest, Reply, RunStop, tool, tool_call
from loopwright.core.errors import ConfigError, ProviderError
from loopwright.core.events import RunEvent, RunStarted, ToolCallFinished
from loopwright.core.messages import Message, Usage
from loopwright.strategies import SelfConsistency, SelfRefine, catalog
from loopwright.strategies.self_consistency import answer_key
from loopwright.tools.confirm import Confirmation
from loopwright.tools.dispatcher import DispatchConfig


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def calculating(*answers: str, delay: float = 0.0) -> FunctionModel:
    """Each run calls ``multiply`` then answers the next of ``answers`` ({r}: the result)."""
    left = iter(answers)

    def reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
        last = messages[-1]
        if last.role == "tool":
            result = last.tool_results_parts[0].content
            return Reply(next(left).format(r=result), delay=delay)
        return Reply([tool_call("multiply", {"a": 17, "b": 23})], delay=delay)

    return FunctionModel(reply)


def test_answer_key_reads_the_answer_line_else_the_last_number_else_the_text() -> None:
    assert answer_key("So it is 391.\nAnswer: 391.0") == "391"
    assert answer_key("17 * 23 = 391.") == answer_key("It comes to 391") == "391"
    assert answer_key("That is 1,000 units") == "1000"
    assert answer_key("  Paris!  ") == "paris"
    assert answer_key("   ") is None


def test_samples_are_agent_runs_that_call_the_agents_tools() -> None:
    agent = Agent(calculating("17 * 23 = {r}.", "It is {r}", "{r}"), [multiply])
    events: list[RunEvent] = []
    result = SelfConsistency(agent, k=3, adaptive=False).run(
        "What is 17 * 23?", on_event=events.append
    )
    assert result.ok and result.data["votes"] == {"391": 3}
    # the winner's answer as the first run voting for it gave it, not the bare vote
    assert result.answer == "17 * 23 = 391."
    assert sum(isinstance(e, ToolCallFinished) for e in events) == 3
    assert result.calls == 6 and result.data["failed"] == {}
    # the agent runs' events are in the strategy's stream, under its one RunStarted
    assert sum(isinstance(e, RunStarted) for e in events) == 1


def test_a_tie_between_agent_answers_goes_to_the_one_seen_first() -> None:
    agent = Agent(calculating("{r}", "392", "392", "It is {r}"), [multiply])
    result = SelfConsistency(agent, k=4, concurrency=1).run("What is 17 * 23?")
    assert result.data["tie"] == ["391", "392"] and result.answer == "391"


def test_an_agent_run_without_a_final_answer_gives_no_vote() -> None:
    # the second run's model fails: that run ends model_error, the others still vote
    count = {"n": 0}

    def reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
        count["n"] += 1
        if count["n"] == 2:
            return Reply(ProviderError("bad request"))
        return Reply("Answer: 7")

    agent = Agent(FunctionModel(reply))
    result = SelfConsistency(agent, k=3, concurrency=1, adaptive=False).run("q")
    assert result.ok and result.answer == "Answer: 7"
    assert result.data["votes"] == {"7": 2} and result.data["failed"] == {"model_error": 1}


def test_when_every_agent_run_fails_alike_that_is_the_outcome() -> None:
    looping = FunctionModel(lambda messages, request: [tool_call("multiply", {"a": 1, "b": 2})])
    agent = Agent(looping, [multiply], limits=Limits(max_turns=2, repeat_limit=None))
    result = SelfConsistency(agent, k=2).run("q")
    assert result.stop is RunStop.MAX_TURNS and result.answer == ""
    assert "each of the 2 agent runs stopped with max_turns" in result.detail
    assert result.data["failed"] == {"max_turns": 2}


def test_the_strategys_turn_limit_holds_across_concurrent_agent_runs() -> None:
    # three concurrent runs of two calls each, under a strategy cap of 5 calls: the
    # sixth call is refused when it starts, not counted after the runs end
    model = calculating("{r}", "{r}", "{r}", delay=0.01)
    agent = Agent(model, [multiply])
    result = SelfConsistency(agent, k=3, adaptive=False, limits=Limits(max_turns=5)).run("q")
    assert result.stop is RunStop.MAX_TURNS and result.calls == 5
    assert model.calls == 5  # the refused call never reached the model
    assert result.data["votes"] == {"391": 2}  # the votes counted before the limit


def test_the_token_budget_sums_every_agent_runs_usage() -> None:
    def reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
        return Reply("Answer: 1", usage=Usage(input_tokens=60, output_tokens=0))

    agent = Agent(FunctionModel(reply))
    result = SelfConsistency(
        agent, k=5, concurrency=1, adaptive=False, limits=Limits(token_budget=100)
    ).run("q")
    assert result.stop is RunStop.TOKEN_BUDGET and result.calls == 2
    assert result.usage.input_tokens == 120


def test_self_refine_drafts_with_the_agent_and_rewrites_in_its_conversation() -> None:
    seen: list[list[Message]] = []
    critiques: list[str] = []

    def reply(messages: Sequence[Message], request: ModelRequest) -> Reply | str:
        last = messages[-1].text
        if "Give specific, actionable feedback" in last:
            critiques.append(last)
            score = 9 if "391!" in last else 5
            return f"Be emphatic.\nScore: {score}/10"
        if "Rewrite the draft" in last:
            seen.append(list(messages))
            return "17 * 23 = 391!"
        if messages[-1].role == "tool":
            return f"17 * 23 = {messages[-1].tool_results_parts[0].content}."
        return Reply([tool_call("multiply", {"a": 17, "b": 23})])

    agent = Agent(FunctionModel(reply), [multiply])
    result = SelfRefine(agent, max_rounds=1).run("What is 17 * 23?")
    assert result.ok and result.answer == "17 * 23 = 391!"
    assert [d["draft"] for d in result.data["drafts"]] == ["17 * 23 = 391.", "17 * 23 = 391!"]  # type: ignore[index,union-attr]
    # the rewrite continued the draft's conversation: the tool's result was in it
    assert any(m.role == "tool" for m in seen[0])
    assert result.calls == 2 + 1 + 1 + 1  # draft run, critique, rewrite run, critique
    # the critic judges each draft against the tool results it was made from
    assert all(
        "the tools returned these results" in c and "- multiply: 391" in c for c in critiques
    )


def test_an_unscored_rewrite_does_not_replace_the_draft() -> None:
    def reply(messages: Sequence[Message], request: ModelRequest) -> str:
        last = messages[-1].text
        if "Give specific, actionable feedback" in last:
            return "Looks odd."  # no score: the critic cannot tell which is better
        return "17 * 23 = 23." if "Rewrite the draft" in last else "17 * 23 = 391."

    result = SelfRefine(Agent(FunctionModel(reply)), max_rounds=1).run("What is 17 * 23?")
    assert result.ok and result.answer == "17 * 23 = 391."


def test_a_failed_draft_run_is_the_strategys_outcome() -> None:
    agent = Agent(FunctionModel(lambda messages, request: Reply(ProviderError("down"))))
    result = SelfRefine(agent).run("q")
    assert result.stop is RunStop.MODEL_ERROR and "draft's agent run" in result.detail


def test_the_catalog_builds_the_agent_strategies_over_the_agent() -> None:
    agent = Agent(calculating("{r}", "{r}", "{r}"), [multiply])
    strategy = catalog.for_agent("self_consistency", agent, {"k": 3})
    assert isinstance(strategy, SelfConsistency) and strategy.agent is agent
    assert strategy.run("What is 17 * 23?").answer == "391"
    # one sample at a time: two agreeing runs decide a vote of three
    agent = Agent(calculating("{r}", "{r}", "{r}"), [multiply])
    one_by_one = catalog.for_agent("self_consistency", agent, {"k": 3, "concurrency": 1})
    assert one_by_one.run("What is 17 * 23?").calls == 4


class _NoFormats(FunctionModel):
    follows_text_formats = False


@pytest.mark.parametrize("name", sorted(catalog.TEXT_FORMATS))
def test_a_model_without_text_formats_is_refused_for_the_strategies_needing_them(
    name: str,
) -> None:
    agent = Agent(_NoFormats(lambda messages, request: "x"))
    with pytest.raises(ConfigError, match=rf"--strategy {name}: .*--model"):
        catalog.for_agent(name, agent)
    # self-consistency, which needs no format of the model, remains
    assert isinstance(catalog.for_agent("self_consistency", agent), SelfConsistency)


@tool(requires_confirmation=True)
def send(text: str) -> str:
    """Send a message (a person approves it first)."""
    return "sent"


def test_an_agent_run_paused_for_approval_ends_the_strategy_output_invalid() -> None:
    # a strategy run cannot pause (nothing would resume it): the detail says what to do
    model = FunctionModel(lambda messages, request: [tool_call("send", {"text": "hi"})])
    later = DispatchConfig(confirm=lambda call, spec: Confirmation.later())  # nobody to ask
    agent = Agent(model, [send], dispatch=later)
    for strategy in (SelfConsistency(agent, k=2), SelfRefine(agent)):
        result = strategy.run("Send hi")
        assert result.stop is RunStop.OUTPUT_INVALID and result.state is None
        assert "stopped with awaiting_confirmation" in result.detail
        assert "--yes or --no" in result.detail


def test_usage_of_agents_an_agent_run_calls_as_tools_counts_too() -> None:
    worker = Agent(FunctionModel(lambda m, r: Reply("Paris", usage=Usage(input_tokens=50))))
    helper = worker.as_tool("researcher", "Answers research questions.")

    def reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
        if messages[-1].role == "tool":
            return Reply("Answer: Paris", usage=Usage(input_tokens=10))
        return Reply([tool_call("researcher", {"task": "Capital?"})], usage=Usage(input_tokens=10))

    agent = Agent(FunctionModel(reply), [helper])
    result = SelfConsistency(agent, k=1).run("Capital of France?")
    assert result.ok and result.usage.input_tokens == 10 + 50 + 10


def test_the_embedded_model_declares_it_does_not_follow_text_formats() -> None:
    from loopwright.core.protocols import FollowsTextFormats
    from loopwright.providers.local import LocalModel

    embedded = LocalModel()  # not loaded: the declaration needs no file
    assert isinstance(embedded, FollowsTextFormats) and embedded.follows_text_formats is False
    assert LocalModel("/models/qwen2.5-7b-instruct.gguf").follows_text_formats is True
