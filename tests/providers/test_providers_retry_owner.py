"""One retry owner: the loop. A persistent 429 costs exactly ``model_retries + 1`` HTTP
requests whatever the protocol (no adapter or SDK retries underneath), the stop message
tells that true count, and an unusable ``Retry-After`` (``nan``) is no hint at all."""

from __future__ import annotations

import pytest
from contract import USER, Answer, collect, failed, load_kits, request
from fakeserver import FakeServer, Reply

from loopwright import Agent, Limits, RunStop

KITS = load_kits()


def _with_header(reply: Reply, name: str, value: str) -> Reply:
    headers = {k: v for k, v in reply.headers.items() if k.lower() != name}
    return Reply(reply.status, {**headers, name: value}, reply.chunks, reply.cut, reply.delay)


class _Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
async def test_persistent_429_sends_retries_plus_one_requests(kit):
    sleeps = _Sleeps()
    with FakeServer() as server:
        server.push(*[kit.error("rate_limited") for _ in range(12)])
        model = kit.model(server.url)
        agent = Agent(model, limits=Limits(model_retries=3), sleep=sleeps)
        result = await agent.arun("What is the weather in Paris?")
        assert result.stop is RunStop.MODEL_ERROR
        assert len(server.requests) == 4, "model_retries=3 means 4 requests, no hidden layer"
        assert "gave up after 4 attempts" in result.detail, result.detail
        assert sleeps.delays == [2.0, 2.0, 2.0], "the kit's Retry-After: 2, honoured once each"


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
async def test_retry_after_nan_falls_back_to_backoff(kit):
    sleeps = _Sleeps()
    with FakeServer() as server:
        nan = _with_header(kit.error("rate_limited"), "retry-after", "nan")
        server.push(nan, kit.reply(Answer(text="Sunny.")))
        model = kit.model(server.url)
        agent = Agent(model, limits=Limits(retry_base_delay=1.0), sleep=sleeps)
        result = await agent.arun("What is the weather in Paris?")
        assert result.ok and result.answer == "Sunny."
        assert len(server.requests) == 2
        assert len(sleeps.delays) == 1, sleeps.delays
        if kit.name == "gemini":  # its body also carries RetryInfo.retryDelay "2s"
            assert sleeps.delays == [2.0]
        else:  # the loop's backoff for retry 1: equal jitter over [0.5, 1.0]
            assert 0.5 <= sleeps.delays[0] <= 1.0, sleeps.delays


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
async def test_one_stream_is_one_request_for_every_retryable_kind(kit):
    with FakeServer() as server:
        for kind in ("rate_limited", "server_error"):
            server.requests.clear()
            server.push(kit.error(kind), kit.error(kind), kit.error(kind))
            err = failed(await collect(kit.model(server.url), request([USER])))
            assert err.error.retryable
            assert len(server.requests) == 1, f"{kind}: the SDK or adapter retried"
            server.push()  # drain what is left for the next kind
            while server.pending:
                server.next_reply()
