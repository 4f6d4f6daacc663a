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
from loopwright.core.events import ResponseDone, StreamError, TextDelta
from loopwright.core.messages import ReasoningPart, ToolResultPart

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


# Text sliced in UTF-16 code units (a JavaScript server): a delta ends between the two
# halves of an emoji, which JSON carries as "\ud83d" then "\ude00 th...".
SPLIT_TEXT = "Hi \ud83d\ude00 there"  # pieces of 4: "Hi \ud83d", "\ude00 th", "ere"
SPLIT_REASONING = "x" * 15 + "\ud83e\udd14 hmm"  # pieces of 16 split the pair too
SPLIT_ARGUMENTS = '{"q": "abcd\ud83d\ude80"}'  # pieces of 4 split the pair at 11


@pytest.mark.parametrize("kit", load_kits(), ids=lambda k: k.name)
async def test_a_character_split_between_surrogate_halves_arrives_whole(kit):
    call = Call("call_1", "lookup", {}, raw=SPLIT_ARGUMENTS)
    if kit.name == "gemini":  # calls arrive whole, as an object: nothing to split
        call = Call("call_1", "lookup", {"q": "abcd\U0001f680"})
    answer = Answer(text=SPLIT_TEXT, reasoning=SPLIT_REASONING, calls=(call,), stop="tool_use")
    with FakeServer() as server:
        server.push(kit.reply(answer))
        events = await collect(kit.model(server.url), request([USER]))
    done = final(events)
    assert isinstance(done, ResponseDone), done
    message = done.message
    assert message.text == "Hi \U0001f600 there"
    assert message.tool_calls[0].arguments == {"q": "abcd\U0001f680"}
    if kit.reasoning:
        thought = "".join(p.text for p in message.parts if isinstance(p, ReasoningPart))
        assert thought == "x" * 15 + "\U0001f914 hmm"
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed == message.text  # what a streaming consumer printed, encodable too
    json.dumps(message.to_dict(), ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("kit", SDK_KITS, ids=lambda k: k.name)
async def test_arguments_split_inside_unicode_escapes_parse_whole(kit):
    arguments = {"q": "caf\u00e9 \U0001f680", "n": [1, {"k": "\u2028"}]}
    call = Call("call_1", "lookup", arguments)  # json.dumps escapes: "caf\\u00e9 \\ud83d..."
    with FakeServer() as server:
        server.push(kit.reply(Answer(calls=(call,), stop="tool_use", fragment=1)))
        events = await collect(kit.model(server.url), request([USER]))
    done = final(events)
    assert isinstance(done, ResponseDone), done
    assert done.message.tool_calls[0].arguments == arguments


@pytest.mark.parametrize("kit", load_kits(), ids=lambda k: k.name)
async def test_a_connection_cut_after_the_stop_signal_keeps_the_response(kit):
    """A proxy that resets the connection instead of ending the body (no final chunk):
    every event arrived, stop signal included, so the answer is whole; it was a
    transient error, retried by the loop, and failed every time behind such a proxy."""
    reply = kit.reply(Answer(text="Hello there"))
    chunks = [c for c in reply.chunks if c != b"data: [DONE]\n\n"]
    with FakeServer() as server:
        server.push(Reply(200, reply.headers, tuple(chunks), cut=True))
        result = final(await collect(kit.model(server.url), request([USER])))
        assert isinstance(result, ResponseDone), result
        assert result.message.text == "Hello there" and result.usage.input_tokens == 20
        server.push(Reply(200, reply.headers, tuple(chunks[:2]), cut=True))  # before it
        cut = final(await collect(kit.model(server.url), request([USER])))
        assert isinstance(cut, StreamError) and cut.error.kind == "transient", cut
