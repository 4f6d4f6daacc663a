"""Model-call events record which prompt versions produced a request."""

from __future__ import annotations

from loopwright.core.events import ModelCallFinished, ModelCallStarted
from loopwright.loop import Agent
from loopwright.prompts import PromptTemplate, prompt_message
from loopwright.providers.scripted import ScriptedModel, tool_call
from loopwright.tools import tool


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


async def test_model_call_events_carry_system_and_message_prompt_fingerprints() -> None:
    system = PromptTemplate("sys", "1.2.0", "You help {who}.").render(who="Ann")
    user = prompt_message(PromptTemplate("ask", "0.1.0", "Say {w}").render(w="hi"))
    events = []
    agent = Agent(ScriptedModel([[tool_call("echo", {"text": "hi"})], "hi"]), [echo], system=system)
    async for event in agent.stream(user):
        events.append(event)
    started = [e for e in events if isinstance(e, ModelCallStarted)]
    finished = [e for e in events if isinstance(e, ModelCallFinished)]
    assert len(started) == 2 and len(finished) == 2
    for e in (*started, *finished):
        names = [fp.split("#")[0] for fp in e.prompt_fingerprints]
        assert names == ["sys@1.2.0", "ask@0.1.0"], e.prompt_fingerprints


async def test_plain_prompts_record_no_fingerprints() -> None:
    events = [e async for e in Agent(ScriptedModel(["ok"])).stream("hello")]
    started = [e for e in events if isinstance(e, ModelCallStarted)]
    assert started and started[0].prompt_fingerprints == ()
