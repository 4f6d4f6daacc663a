"""Every model call has deadlines (connect, first byte, idle gap, total), enforced for
every adapter against real servers on 127.0.0.1 that never answer, stall mid-stream, or
trickle events forever; each breach is a typed ``ModelTimeout`` naming its phase."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from contract import USER, Answer, collect, failed, final, load_kits, request
from fakeserver import FakeServer, Reply

from loopwright import Agent, Limits, RunStop
from loopwright.core.errors import ConfigError, ModelTimeout
from loopwright.core.events import ResponseDone
from loopwright.providers.openai_chat import OpenAIChatModel
from loopwright.providers.registry import resolve_model
from loopwright.providers.transport import DEFAULT_CALL_LIMITS, CallLimits

KITS = load_kits()
FAST = CallLimits(connect=0.5, first_byte=0.4, idle=0.4, total=1.2)


def _timed_out(events: list, phase: str) -> ModelTimeout:
    err = failed(events).error
    assert isinstance(err, ModelTimeout), err
    assert err.kind == "timeout" and err.retryable and err.phase == phase, (err.phase, err)
    return err


async def _warm(kit, server: FakeServer, limits: CallLimits = FAST):
    """The model, after one good call: importing an SDK and building its client (TLS
    context, pools) block the event loop for a second or more on a busy machine the first
    time, and that must not be what the timings below measure (a blocked first call can
    itself time out before its request is sent: try again, then drop unused replies)."""
    model = kit.model(server.url, call_limits=limits)
    tries = 0
    for _ in range(5):
        tries += 1
        server.push(kit.reply(Answer(text="warm")))
        if isinstance(final(await collect(model, request([USER]))), ResponseDone):
            break
    # a try that timed out may reach the server late and take the test's reply: wait
    # (a few seconds at most: a try cut before it was sent never arrives) for every try
    await asyncio.to_thread(_arrived, server, tries, 3.0)
    while server.pending:
        server.next_reply()
    server.requests.clear()
    return model


def _arrived(server: FakeServer, count: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while len(server.requests) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def _stalled(reply: Reply, after: int, seconds: float) -> Reply:
    chunks = list(reply.chunks)
    return Reply(reply.status, reply.headers, [*chunks[:after], seconds, *chunks[after:]])


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
async def test_server_that_never_answers_hits_first_byte(kit):
    with FakeServer() as server:
        model = await _warm(kit, server)
        server.push(Reply(200, {"content-type": "application/json"}, (b"{}",), delay=4.0))
        started = time.monotonic()
        events = await collect(model, request([USER]))
        err = _timed_out(events, "first_byte")
        assert time.monotonic() - started < 2.5
        assert "first_byte" in str(err) and "0.4s" in str(err)


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
async def test_stream_that_stalls_midway_hits_idle_and_keeps_the_partial(kit):
    answer = Answer(text="The weather in Paris is sunny and mild today.", fragment=5)
    with FakeServer() as server:
        model = await _warm(kit, server)
        server.push(_stalled(kit.reply(answer), after=4, seconds=4.0))
        started = time.monotonic()
        events = await collect(model, request([USER]))
        _timed_out(events, "idle")
        assert time.monotonic() - started < 2.5
        partial = failed(events).partial
        assert partial is not None and answer.text.startswith(partial.text) and partial.text


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
async def test_stream_that_trickles_forever_hits_total(kit):
    answer = Answer(text="x" * 400, fragment=1)
    reply = kit.reply(answer)
    trickle: list[bytes | float] = []
    for chunk in reply.chunks:
        trickle += [chunk, 0.02]  # always well inside the idle gap
    with FakeServer() as server:
        model = await _warm(kit, server)
        server.push(Reply(reply.status, reply.headers, trickle))
        started = time.monotonic()
        events = await collect(model, request([USER]))
        _timed_out(events, "total")
        assert 1.1 < time.monotonic() - started < 3.0


async def test_sse_keepalive_comments_do_not_count_as_progress():
    kit = next(k for k in KITS if k.name == "openai-chat")
    first = kit.reply(Answer(text="Hello there")).chunks[:2]
    keepalives: list[bytes | float] = [b": keep-alive\n\n", 0.05] * 100
    with FakeServer() as server:
        model = await _warm(kit, server)
        server.push(Reply(200, {"content-type": "text/event-stream"}, [*first, *keepalives]))
        events = await collect(model, request([USER]))
        _timed_out(events, "idle")


@pytest.fixture
def unreachable_port():
    """A listener whose accept queue is full and never drained: a further TCP handshake
    is not completed, so a connect hangs (until the client's connect timeout)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(s)
    time.sleep(0.1)
    yield port
    for s in fillers:
        s.close()
    listener.close()


async def test_connect_timeout_is_typed(unreachable_port):
    limits = CallLimits(connect=0.3, first_byte=5, idle=5, total=10)
    model = OpenAIChatModel(
        "m", base_url=f"http://127.0.0.1:{unreachable_port}/v1", api_key="k", call_limits=limits
    )
    started = time.monotonic()
    events = await collect(model, request([USER]))
    err = failed(events).error
    assert isinstance(err, ModelTimeout) and err.phase == "connect", err
    assert time.monotonic() - started < 3


async def test_the_loop_retries_a_timeout_and_stops_with_its_kind():
    kit = next(k for k in KITS if k.name == "anthropic")
    with FakeServer() as server:
        model = await _warm(kit, server)
        hang = Reply(200, {"content-type": "application/json"}, (b"{}",), delay=4.0)
        server.push(hang, hang)
        sleeps: list[float] = []

        async def sleep(seconds: float) -> None:
            sleeps.append(seconds)

        result = await Agent(model, limits=Limits(model_retries=1), sleep=sleep).arun("hi")
        assert result.stop is RunStop.MODEL_ERROR
        assert result.detail.startswith("timeout:") and "gave up after 2 attempts" in result.detail
        assert len(server.requests) == 2 and len(sleeps) == 1


def test_defaults_are_finite_and_documented():
    d = DEFAULT_CALL_LIMITS
    assert (d.connect, d.first_byte, d.idle, d.total) == (10.0, 120.0, 120.0, 900.0)
    assert d.max_response_bytes == 32 * 1024 * 1024


@pytest.mark.parametrize(
    "bad",
    [
        {"total": 0},
        {"idle": -1},
        {"first_byte": float("nan")},
        {"connect": float("inf")},
        {"max_response_bytes": 0},
        {"max_response_bytes": 1.5},
    ],
)
def test_limits_reject_nonsense(bad):
    with pytest.raises(ConfigError):
        CallLimits(**bad)


def test_model_string_options_override_the_limits():
    model = resolve_model(
        "openai:gpt-4o?first_byte_timeout=5&total_timeout=60&max_response_bytes=1000",
        api_key="k",
    )
    assert model.call_limits == CallLimits(first_byte=5, total=60, max_response_bytes=1000)
    base = CallLimits(idle=7)
    model = resolve_model("anthropic:claude-x?connect_timeout=2", api_key="k", call_limits=base)
    assert model.call_limits == CallLimits(idle=7, connect=2)


@pytest.mark.parametrize(
    "spec",
    [
        "openai:gpt-4o?timeout=5",
        "openai:gpt-4o?total_timeout=soon",
        "openai:gpt-4o?total_timeout=nan",
        "openai:gpt-4o?=&",
        "local:gemma-3-270m?total_timeout=5",
    ],
)
def test_bad_model_string_options_are_config_errors(spec):
    with pytest.raises(ConfigError):
        resolve_model(spec, api_key="k")
