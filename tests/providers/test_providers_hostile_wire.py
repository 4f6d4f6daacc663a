"""Hypothesis over hostile wire bytes, for every protocol through its real SDK: tool
arguments and whole wire events that nest deeply, carry lone surrogates, NaN / Infinity,
out-of-range numbers, huge strings or plain garbage. Every stream ends with exactly one
typed final event (``ResponseDone`` or a ``StreamError`` with a ``ProviderError``), and
what it carries stays valid JSON."""

from __future__ import annotations

import asyncio
import json
import math

import eventstream as es
import pytest
from contract import USER, Answer, Call, collect, final, load_kits, request
from fakeserver import FakeServer, Reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwright.core.errors import ProviderError
from loopwright.core.events import ResponseDone, StreamError

KITS = load_kits()

DEPTH = st.integers(1, 3000)
HOSTILE_TEXT = st.one_of(
    DEPTH.map(lambda n: "[" * n + "]" * n),
    DEPTH.map(lambda n: '{"a": ' * n + "1" + "}" * n),
    DEPTH.map(lambda n: "[" * n),  # never closes
    st.sampled_from(
        [
            '{"x": "\\ud800"}',
            '{"x": "\\udfff\\ud800"}',
            '{"x": NaN}',
            '{"x": Infinity, "y": -Infinity}',
            '{"x": 1e999}',
            '{"x": -1e999}',
            '{"x": ' + "9" * 5000 + "}",
            '{"x": "' + "y" * 20_000 + '"}',  # (beyond the size cap: see the size tests)
            "{'x': 1,}",
            "null",
            "[]",
            '"just a string"',
            "",
        ]
    ),
    st.text(max_size=60),
)


def _valid_json(final_event) -> None:
    """The final event's message round-trips through strict JSON (what --json prints)."""
    message = final_event.message if isinstance(final_event, ResponseDone) else final_event.partial
    if message is None:
        return
    text = json.dumps(message.to_dict(), allow_nan=False)
    assert json.loads(text)


def _check(events) -> None:
    last = final(events)
    assert isinstance(last, ResponseDone | StreamError)
    if isinstance(last, StreamError):
        assert isinstance(last.error, ProviderError)
        assert last.error.kind in {
            "malformed_response",
            "transient",
            "timeout",
            "response_too_large",
            "bad_request",
        }, last.error
    for value in (last.usage.input_tokens, last.usage.output_tokens, last.usage.cost):
        assert math.isfinite(value) and value >= 0
    _valid_json(last)


def _hostile_event(kit, text: str) -> bytes:
    if kit.name == "bedrock":
        headers = {
            ":message-type": "event",
            ":event-type": "contentBlockDelta",
            ":content-type": "application/json",
        }
        return es.frame(headers, text.encode("utf-8", "surrogatepass"))
    return b"data: " + text.encode("utf-8", "surrogatepass") + b"\n\n"


async def _stream(kit, server: FakeServer, reply: Reply) -> None:
    server.push(reply)
    _check(await collect(kit.model(server.url), request([USER])))


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
def test_hostile_tool_arguments_end_typed(kit):
    with FakeServer() as server:

        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
        @given(raw=HOSTILE_TEXT)
        def run(raw: str) -> None:
            call = Call("call_h", "calculate", {}, raw=raw)
            try:
                reply = kit.reply(Answer(calls=(call,), stop="tool_use", fragment=4096))
            except (ValueError, RecursionError, UnicodeEncodeError):
                return  # the kit itself cannot render this (e.g. Gemini's JSON args)
            asyncio.run(_stream(kit, server, reply))

        run()


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
def test_hostile_wire_events_end_typed(kit):
    with FakeServer() as server:

        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
        @given(text=HOSTILE_TEXT, where=st.integers(0, 3))
        def run(text: str, where: int) -> None:
            reply = kit.reply(Answer(text="Hello there, friend."))
            chunks = list(reply.chunks)
            at = min(where, len(chunks))
            chunks.insert(at, _hostile_event(kit, text))
            asyncio.run(_stream(kit, server, Reply(reply.status, reply.headers, chunks)))

        run()


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
def test_random_bytes_instead_of_a_stream_end_typed(kit):
    with FakeServer() as server:

        @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
        @given(body=st.binary(max_size=300))
        def run(body: bytes) -> None:
            reply = kit.reply(Answer(text="x"))
            asyncio.run(_stream(kit, server, Reply(200, reply.headers, (body,))))

        run()
