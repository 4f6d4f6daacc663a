"""ScriptedModel and FunctionModel: the public test doubles."""

from __future__ import annotations

import asyncio

import pytest

from loopwright import FunctionModel, ScriptedModel, tool_call
from loopwright.core.errors import RateLimited
from loopwright.core.events import ResponseDone, StreamError, TextDelta, ToolCallDelta
from loopwright.core.messages import Message, StopReason, Usage
from loopwright.core.protocols import Model, ModelRequest, complete
from loopwright.providers.scripted import RecordedRequest, Reply, ScriptExhausted


def _req(*texts: str) -> ModelRequest:
    return ModelRequest([Message.user(t) for t in texts] or [Message.user("hi")])


def test_they_satisfy_the_model_protocol() -> None:
    assert isinstance(ScriptedModel([]), Model)
    assert isinstance(FunctionModel(lambda m, r: "x"), Model)


async def test_scripted_streams_text_then_done() -> None:
    model = ScriptedModel([Reply("hello there", usage=Usage(3, 2))], chunk_size=4)
    events = [e async for e in model.stream(_req())]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hell", "o th", "ere"]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.stop_reason is StopReason.FINAL_ANSWER and done.usage == Usage(3, 2)
    assert done.message == Message.assistant("hello there")


async def test_tool_calls_get_ids_and_deltas() -> None:
    model = ScriptedModel([[tool_call("a", {"x": 1}), tool_call("b", '{"y": 2}')]])
    events = [e async for e in model.stream(_req())]
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(d.index, d.name) for d in deltas] == [(0, "a"), (1, "b")]
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.stop_reason is StopReason.TOOL_USE
    calls = done.message.tool_calls
    assert [c.id for c in calls] == ["call_1", "call_2"]
    assert calls[1].arguments == {"y": 2} and calls[1].raw_arguments == '{"y": 2}'


@pytest.mark.parametrize("make", [ScriptedModel, FunctionModel])
async def test_every_reply_form_streams_the_same_events(make: object) -> None:
    """Tool calls with ids (a reply function's usual answer), a tuple, mixed ids, an
    empty list, and a ``Reply`` carrying usage and a stop reason over a list."""
    with_ids = [tool_call("a", {"x": 1}, id="k1"), tool_call("b", {"y": 2}, id="k2")]
    replies: list[object] = [
        with_ids,
        tuple(with_ids),
        [tool_call("a", {"x": 1}, id="k1"), tool_call("b")],
        [],
        Reply(with_ids, usage=Usage(5, 1), stop_reason=StopReason.MAX_TOKENS),
    ]
    if make is ScriptedModel:
        models = [ScriptedModel([r]) for r in replies]  # type: ignore[list-item]
    else:
        models = [FunctionModel(lambda m, q, r=r: r) for r in replies]  # type: ignore[misc]
    seen = []
    for model in models:
        events = [e async for e in model.stream(_req())]
        done = events[-1]
        assert isinstance(done, ResponseDone)
        deltas = [(d.index, d.id, d.name) for d in events if isinstance(d, ToolCallDelta)]
        assert deltas == [(i, c.id, c.name) for i, c in enumerate(done.message.tool_calls)]
        seen.append((deltas, done.stop_reason, done.usage, done.message.role))
    both = [(0, "k1", "a"), (1, "k2", "b")]
    assert seen == [
        (both, StopReason.TOOL_USE, Usage(), "assistant"),
        (both, StopReason.TOOL_USE, Usage(), "assistant"),
        ([(0, "k1", "a"), (1, "call_1", "b")], StopReason.TOOL_USE, Usage(), "assistant"),
        ([], StopReason.FINAL_ANSWER, Usage(), "assistant"),
        (both, StopReason.MAX_TOKENS, Usage(5, 1), "assistant"),
    ]


async def test_a_stream_ends_for_anext_with_a_default() -> None:
    model = FunctionModel(lambda m, r: "hi")
    stream = model.stream(_req())
    assert isinstance(await anext(stream), TextDelta)
    assert isinstance(await anext(stream), ResponseDone)
    assert await anext(stream, None) is None
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_a_reply_delay_can_be_cancelled_or_timed_out() -> None:
    model = FunctionModel(lambda m, r: Reply("slow", delay=5))

    async def consume() -> list[object]:
        return [e async for e in model.stream(_req())]

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.02):
            await consume()

    async def later(messages: object, request: object) -> Reply:
        return Reply("late", delay=0.01)

    events = [e async for e in FunctionModel(later).stream(_req())]  # type: ignore[arg-type]
    assert [type(e) for e in events] == [TextDelta, ResponseDone]


def test_tool_call_keeps_unparseable_raw_arguments() -> None:
    call = tool_call("a", "{not json")
    assert call.arguments == {} and call.raw_arguments == "{not json"


async def test_provider_error_is_yielded_not_raised() -> None:
    model = ScriptedModel([RateLimited("slow", retry_after=2)])
    final = await complete(model, _req())
    assert isinstance(final, StreamError) and isinstance(final.error, RateLimited)
    assert final.error.retry_after == 2


async def test_exhausted_script_is_a_clear_stream_error() -> None:
    model = ScriptedModel(["one"])
    await complete(model, _req())
    final = await complete(model, _req())
    assert isinstance(final, StreamError) and isinstance(final.error, ScriptExhausted)
    assert not final.error.retryable
    assert "holds 1" in str(final.error) and "called 2 times" in str(final.error)


def test_bad_reply_is_rejected_when_scripted() -> None:
    with pytest.raises(TypeError, match=r"replies\[1\]"):
        ScriptedModel(["ok", 42])  # type: ignore[list-item]


@pytest.mark.parametrize("replies", ["hello", 5, Message.user("hi")])
def test_replies_that_are_not_a_list_of_replies_are_refused(replies: object) -> None:
    """A str was replayed one character per call (the answer was "h")."""
    with pytest.raises(TypeError, match=r"takes a list of replies"):
        ScriptedModel(replies)  # type: ignore[arg-type]


def test_a_function_model_needs_a_function() -> None:
    with pytest.raises(TypeError, match=r"FunctionModel\(fn=...\) takes a function"):
        FunctionModel("hello")  # type: ignore[arg-type]


@pytest.mark.parametrize("returned", [None, 42, {"answer": "x"}])
@pytest.mark.parametrize("delay", [False, True])
async def test_a_function_returning_no_reply_is_named_as_such(
    returned: object, delay: bool
) -> None:
    """It said "reply function raised TypeError: 'NoneType' object is not iterable"."""

    def sync_fn(messages, request):  # type: ignore[no-untyped-def]
        return returned

    async def async_fn(messages, request):  # type: ignore[no-untyped-def]
        return Reply(returned, delay=0.001) if delay else returned  # type: ignore[arg-type]

    for fn in (sync_fn, async_fn):
        final = await complete(FunctionModel(fn), _req())
        assert isinstance(final, StreamError)
        assert f"returned {type(returned).__name__}; a reply must be" in str(final.error)
        assert "raised" not in str(final.error)


async def test_requests_keep_only_a_bounded_tail() -> None:
    model = ScriptedModel(["a", "b"], record_tail=2)
    await complete(model, _req("1", "2", "3", "4"))
    rec = model.requests[0]
    assert rec.message_count == 4 and [m.text for m in rec.tail] == ["3", "4"]
    assert model.remaining == 1


async def test_function_model_sync_and_async() -> None:
    def sync_fn(messages, request):  # type: ignore[no-untyped-def]
        return f"saw {len(messages)}"

    async def async_fn(messages, request):  # type: ignore[no-untyped-def]
        return [tool_call("t", {"n": len(messages)})]

    s = await complete(FunctionModel(sync_fn), _req("a", "b"))
    assert isinstance(s, ResponseDone) and s.message.text == "saw 2"
    a = await complete(FunctionModel(async_fn), _req("a"))
    assert isinstance(a, ResponseDone) and a.message.tool_calls[0].arguments == {"n": 1}


async def test_function_model_exception_becomes_stream_error() -> None:
    def broken(messages, request):  # type: ignore[no-untyped-def]
        raise KeyError("oops")

    final = await complete(FunctionModel(broken), _req())
    assert isinstance(final, StreamError) and "KeyError" in str(final.error)
    assert not final.error.retryable


async def test_a_call_records_its_request_without_building_a_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a call keeps a plain tuple of what it saw; the frozen RecordedRequest is built
    # when ``requests`` is read (5.2k of the 7.7k instructions recording cost per call:
    # benchmarks/notes/loop.md, round 10)
    built = 0
    init = RecordedRequest.__init__

    def counting(self: RecordedRequest, *args: object) -> None:
        nonlocal built
        built += 1
        init(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(RecordedRequest, "__init__", counting)
    model = FunctionModel(lambda messages, request: "ok", record_tail=2)
    for i in range(5):
        await complete(model, _req(*(f"m{k}" for k in range(i + 1))))
    assert built == 0 and model.calls == 5
    records = model.requests
    assert built == 5
    assert [r.message_count for r in records] == [1, 2, 3, 4, 5]
    assert [[m.text for m in r.tail] for r in records][-2:] == [["m2", "m3"], ["m3", "m4"]]
    assert model.requests is records and built == 5  # read again: nothing new to build


async def test_requests_read_between_calls_stay_one_bounded_deque_in_call_order() -> None:
    model = ScriptedModel([f"r{i}" for i in range(30)], max_requests=8)
    kept = model.requests
    for i in range(5):
        await complete(model, _req(f"a{i}"))
    assert [r.last_message.text for r in model.requests] == [f"a{i}" for i in range(5)]  # type: ignore[union-attr]
    for i in range(20):  # more calls than max_requests, unread
        await complete(model, _req(f"b{i}"))
    assert model.requests is kept and kept.maxlen == 8  # reading it fills a kept deque
    assert [r.last_message.text for r in kept] == [f"b{i}" for i in range(12, 20)]  # type: ignore[union-attr]
    assert model.calls == 25


def test_a_shared_model_keeps_a_bounded_number_of_requests() -> None:
    from loopwright import Agent, FunctionModel

    model = FunctionModel(lambda messages, request: "ok", max_requests=8)
    agent = Agent(model)
    for i in range(50):
        agent.run(f"q{i}")
    assert model.calls == 50
    assert len(model.requests) == 8
    assert model.requests[-1].last_message is not None
    assert model.requests[-1].last_message.text == "q49"


def test_a_sync_run_is_not_driven_from_inside_an_exception_handler() -> None:
    """Agent.run called asyncio.run inside ``except RuntimeError`` (no running loop), so
    every error of the run carried "no running event loop" as its context: atop every
    logged traceback, and in the provider errors built from the exception chain."""
    import sys

    from loopwright import Agent

    seen: list[object] = []

    def reply(messages, request):  # type: ignore[no-untyped-def]
        seen.append(sys.exc_info()[1])
        return "ok"

    assert Agent(FunctionModel(reply)).run("hi").answer == "ok"
    assert seen == [None]


@pytest.mark.parametrize(("name", "arguments"), [(1, {}), ("add", [("a", 1)]), ("add", 5)])
def test_tool_call_refuses_what_it_would_misread(name: object, arguments: object) -> None:
    """tool_call(1, {}) built a call named 1; a list of pairs became a dict silently."""
    with pytest.raises(TypeError, match=r"tool_call\("):
        tool_call(name, arguments)  # type: ignore[arg-type]
