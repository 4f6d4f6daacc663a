"""Hostile model output through the real SDKs ends as data, never as an exception.

Arguments nested 1,000 deep, sloppy (non-JSON) arguments and a wire event nested deeper
than Python's recursion limit, sent by fake OpenAI and Anthropic servers on 127.0.0.1 to
``Agent.run`` through the official SDKs: each run ends with a typed stop, and the model
sees a typed tool result it can act on."""

from __future__ import annotations

import json

import pytest
from contract import USER, Answer, Call, collect, final, load_kits, request
from fakeserver import FakeServer, Reply

from loopwright import Agent, Limits, RunStop, tool
from loopwright.core.events import ResponseDone, StreamError
from loopwright.core.messages import ToolResultPart

KITS = {k.name: k for k in load_kits()}
SDK_KITS = [KITS["openai-chat"], KITS["anthropic"]]
DEEP = '{"expression": ' + "[" * 1000 + "]" * 1000 + "}"


@tool
def calculate(expression: str) -> str:
    """Evaluate a sum of two integers written as 'a+b'."""
    left, right = expression.split("+")
    return str(int(left) + int(right))


def _results(result) -> list[ToolResultPart]:
    return [p for m in result.messages for p in m.parts if isinstance(p, ToolResultPart)]


async def _run(kit, server: FakeServer, raw: str):
    call = Call("call_1", "calculate", {}, raw=raw)
    server.push(
        kit.reply(Answer(calls=(call,), stop="tool_use")),
        kit.reply(Answer(text="Done.")),
    )
    agent = Agent(kit.model(server.url), tools=[calculate], limits=Limits(max_turns=4))
    return await agent.arun("What is 1+1?")


@pytest.mark.parametrize("kit", SDK_KITS, ids=lambda k: k.name)
async def test_arguments_nested_1000_deep_become_invalid_arguments(kit):
    with FakeServer() as server:
        result = await _run(kit, server, DEEP)
    assert result.stop is RunStop.FINAL_ANSWER and result.answer == "Done.", result.detail
    (tool_result,) = _results(result)
    assert tool_result.is_error and tool_result.error_kind == "invalid_arguments"
    json.dumps([m.to_dict() for m in result.messages])  # the history stays serialisable


@pytest.mark.parametrize("kit", SDK_KITS, ids=lambda k: k.name)
async def test_sloppy_arguments_from_the_wire_are_repaired_at_dispatch(kit):
    with FakeServer() as server:
        result = await _run(kit, server, "{'expression': '1+1',}")
    assert result.stop is RunStop.FINAL_ANSWER, result.detail
    (tool_result,) = _results(result)
    assert not tool_result.is_error and tool_result.content == "2", tool_result


@pytest.mark.parametrize("kit", SDK_KITS, ids=lambda k: k.name)
async def test_a_wire_event_nested_past_the_recursion_limit_is_a_typed_stop(kit):
    bomb = "data: " + '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}\n\n"
    with FakeServer() as server:
        reply = kit.reply(Answer(text="Hi"))
        hostile = Reply(200, reply.headers, (reply.chunks[0], bomb.encode(), *reply.chunks[1:]))
        server.push(hostile)
        events = await collect(kit.model(server.url), request([USER]))
        last = final(events)
        assert isinstance(last, StreamError | ResponseDone)
        if isinstance(last, StreamError):
            assert last.error.kind == "malformed_response", last.error
        server.push(*[hostile] * 4)
        result = await Agent(kit.model(server.url), limits=Limits(model_retries=1)).arun("hi")
        assert isinstance(result.stop, RunStop)
