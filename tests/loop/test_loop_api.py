"""The Agent's public shape: every keyword visible and typed, checked the same way by both
constructors, and starting separate from resuming."""

from __future__ import annotations

import inspect
from dataclasses import replace

import pytest

import loopwright
from loopwright import Agent, Hooks, Limits, ScriptedModel, UserError
from loopwright.core.errors import ConfigError
from loopwright.core.run import RunState
from loopwright.loop import Agent as LoopAgent
from loopwright.loop import AgentConfig
from loopwright.tools import ToolRegistry


def test_facade_signature_matches_the_loop_agent_keyword_for_keyword() -> None:
    facade = inspect.signature(loopwright.Agent.__init__).parameters
    loop = inspect.signature(LoopAgent.__init__).parameters
    assert list(facade) == list(loop)
    for name, param in loop.items():
        assert facade[name].kind == param.kind, name
        assert facade[name].default == param.default, name
        if name != "model":
            assert facade[name].annotation == param.annotation, name
    assert facade["model"].annotation == "Model | str"
    kinds = {p.kind for n, p in loop.items() if n not in ("self", "model", "tools")}
    assert kinds == {inspect.Parameter.KEYWORD_ONLY}
    assert "output_type" in loop and "output_retries" in loop


class Opaque:
    """A class pydantic knows no schema for."""

    def __init__(self, handle: object) -> None:
        self.handle = handle


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"limits": {"max_turns": 3}}, r"Agent\(limits=...\) got dict; give a loopwright.Limits"),
        ({"hooks": object()}, r"Agent\(hooks=...\) got object; give a loopwright.Hooks"),
        ({"system": 3}, r"Agent\(system=...\) got int"),
        ({"sleep": 1.0}, r"Agent\(sleep=...\) must be a function"),
        ({"context_policy": "window"}, r"Agent\(context_policy=...\) must be a function"),
        ({"tools": "add"}, r"Agent\(tools=...\) got str; give a list"),
        ({"tools": [1]}, r"item 0 is int, not a tool"),
        ({"output_retries": -1}, r"output_retries=-1"),
        ({"output_type": Opaque}, r"Agent\(output_type=Opaque\): pydantic cannot"),
        ({"hooks": Hooks(on_event=1)}, r"Hooks.on_event must be a function"),  # type: ignore[arg-type]
        ({"ledger": "memory"}, r"Agent\(ledger=...\) got str; give an IdempotencyLedger"),
    ],
)
def test_bad_values_name_the_field_and_the_fix(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Agent(ScriptedModel(["x"]), **kwargs)  # type: ignore[arg-type]


def test_bad_model_names_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"needs a Model .* got int"):
        Agent(3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"model strings are resolved by loopwright\.Agent"):
        LoopAgent("openai:gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(UserError):  # ConfigError is a UserError: the CLI's one usage error
        Agent(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("prompt", ["", "  \n "])
def test_empty_prompt_is_refused_before_the_model_is_asked(prompt: str) -> None:
    model = ScriptedModel(["x"])
    agent = Agent(model)
    with pytest.raises(UserError, match=r"prompt is empty; pass the question"):
        agent.run(prompt)
    with pytest.raises(UserError, match=r"prompt is empty"):
        agent.arun(prompt)
    assert not model.requests


@pytest.mark.parametrize("history", ["earlier text", ["earlier text"]])
def test_history_of_the_wrong_type_is_named(history: object) -> None:
    with pytest.raises(UserError, match=r"history must be a list of Message"):
        Agent(ScriptedModel(["x"])).run("hi", history=history)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("session_id", "match"),
    [("", "empty"), ("  ", "empty"), (" s-1", "spaces"), ("a\nb", "control"), (5, "str")],
)
def test_a_session_id_that_cannot_name_a_session_is_refused(session_id: object, match: str) -> None:
    agent = Agent(ScriptedModel(["x"]))
    with pytest.raises(UserError, match=match):  # "" silently became a fresh id
        agent.run("hi", session_id=session_id)  # type: ignore[arg-type]
    assert agent.run("hi", session_id="s-mine").session_id == "s-mine"


def test_model_settings_of_the_wrong_value_are_named() -> None:
    from loopwright import ModelSettings

    with pytest.raises(ConfigError, match=r"ModelSettings.temperature must be a number >= 0"):
        ModelSettings(temperature=-1)
    with pytest.raises(ConfigError, match=r"ModelSettings.max_tokens must be a positive int"):
        ModelSettings(max_tokens=0)
    with pytest.raises(ConfigError, match=r"ModelSettings.stop must be a tuple of strings"):
        ModelSettings(stop="END")  # type: ignore[arg-type]  # would stop at "E", "N" or "D"
    with pytest.raises(ConfigError, match=r"ModelSettings.tool_choice must be"):
        ModelSettings(tool_choice="calculator")  # type: ignore[arg-type]


def test_a_tool_the_agent_cannot_register_is_a_config_error() -> None:
    def twice(x: int) -> int:
        return x

    with pytest.raises(ConfigError, match=r"item 1: a tool named 'twice' is already registered"):
        Agent(ScriptedModel(["x"]), tools=[twice, twice])


def test_from_config_is_checked_like_the_constructor() -> None:
    agent = Agent(ScriptedModel(["x"]))
    with pytest.raises(ConfigError, match=r"Agent\(limits=...\) got dict"):
        Agent.from_config(replace(agent.config, limits={"max_turns": 2}))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs an AgentConfig"):
        Agent.from_config({"model": agent.model})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be a plain"):

        async def handler(event: object) -> None:
            return None

        AgentConfig(agent.model, ToolRegistry(), hooks=Hooks(on_event=handler))  # type: ignore[arg-type]
    copy = Agent.from_config(replace(agent.config, limits=Limits(max_turns=2)))
    assert copy.config.limits.max_turns == 2


def test_starting_and_resuming_are_separate_calls() -> None:
    for method in ("start", "arun", "run", "stream"):
        params = inspect.signature(getattr(LoopAgent, method)).parameters
        assert "state" not in params and "decisions" not in params, method
        assert params["prompt"].default is inspect.Parameter.empty, method
    for method in ("resume", "aresume"):
        params = inspect.signature(getattr(LoopAgent, method)).parameters
        assert list(params)[:3] == ["self", "state", "decisions"], method
        assert "history" not in params and "session_id" not in params, method


async def test_resume_needs_a_state_and_decisions_need_a_paused_one() -> None:
    agent = Agent(ScriptedModel(["a", "b"]))
    with pytest.raises(UserError, match="needs a RunState"):
        agent.resume("hello")  # type: ignore[arg-type]
    first = agent.start("one")
    await first.result()
    with pytest.raises(UserError, match="not paused"):
        agent.resume(first.state, {"c1": loopwright.Confirmation.approve()})
    second = await agent.resume(first.state, prompt="two").result()
    assert [m.text for m in second.messages] == ["one", "a", "two", "b"]
    assert second.output == "b"  # no output_type: the output is the answer text


async def test_a_finished_run_points_to_resume() -> None:
    agent = Agent(ScriptedModel(["a"]))
    run = agent.start("one")
    await run.result()
    with pytest.raises(UserError, match=r"agent.resume\(run.state"):
        run.steer("more")


def test_state_type_is_the_core_one() -> None:
    assert loopwright.RunState is RunState
