"""The decoded response size is capped (``CallLimits.max_response_bytes``, 32 MiB by
default): a huge plain reply and a small gzip body that inflates to hundreds of MB both
fail with a typed ``ResponseTooLarge`` while holding little memory; honest compressed
replies still decode."""

from __future__ import annotations

import tracemalloc
import zlib

import pytest
from contract import PLAIN, USER, Answer, collect, done, failed, load_kits, request
from fakeserver import FakeServer, Reply

from loopwright.core.errors import ResponseTooLarge
from loopwright.providers.transport import CallLimits

KITS = load_kits()
HTTPX_KITS = [k for k in KITS if k.name != "bedrock"]  # botocore reads its own bytes
BOMB_KITS = [k for k in HTTPX_KITS if k.name != "openai-responses"]  # one per SDK
MIB = 1024 * 1024


def _gzip_bomb(inflated: int) -> bytes:
    """A gzip body of ``inflated`` zero bytes (about 1/1000 of that on the wire)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(MIB)
    parts = [z.compress(block) for _ in range(inflated // MIB)]
    parts.append(z.flush())
    return b"".join(parts)


BOMB = _gzip_bomb(300 * MIB)


def _chunked(data: bytes, size: int = 64 * 1024) -> tuple[bytes, ...]:
    return tuple(data[i : i + size] for i in range(0, len(data), size))


def _encoded(reply: Reply, encoding: str, wbits: int) -> Reply:
    z = zlib.compressobj(6, zlib.DEFLATED, wbits)
    body = z.compress(b"".join(c for c in reply.chunks if isinstance(c, bytes))) + z.flush()
    return Reply(reply.status, {**reply.headers, "content-encoding": encoding}, _chunked(body))


def test_the_bomb_is_small_on_the_wire():
    assert len(BOMB) < 400 * 1024


@pytest.mark.parametrize("kit", BOMB_KITS, ids=lambda k: k.name)
async def test_gzip_bomb_is_cut_at_the_default_cap_with_little_memory(kit):
    with FakeServer() as server:
        headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
        server.push(Reply(200, headers, _chunked(BOMB)))
        model = kit.model(server.url)
        tracemalloc.start()
        try:
            events = await collect(model, request([USER]))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        err = failed(events).error
        assert isinstance(err, ResponseTooLarge) and not err.retryable, err
        assert str(32 * MIB) in str(err)
        # Before the cap the body inflated to 300 MiB (and 1.3 GB for a 1 GB bomb). What
        # remains is the SDKs' SSE buffering of the capped 32 MiB line (up to ~5x, anthropic).
        assert peak < 200 * MIB, f"peak {peak / MIB:.0f} MiB while decoding a bomb"
        assert server.requests[0].headers.get("accept-encoding") == "gzip, deflate"


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
async def test_huge_plain_reply_is_cut_at_the_configured_cap(kit):
    huge = Answer(text="y" * (3 * MIB), fragment=3 * MIB)  # one 3 MB event, no line break
    with FakeServer() as server:
        reply = kit.reply(huge)
        body = b"".join(c for c in reply.chunks if isinstance(c, bytes))
        server.push(Reply(200, reply.headers, _chunked(body)))
        model = kit.model(server.url, call_limits=CallLimits(max_response_bytes=MIB))
        err = failed(await collect(model, request([USER]))).error
        assert isinstance(err, ResponseTooLarge), err
        assert str(MIB) in str(err) and "max_response_bytes" in str(err)


async def test_huge_error_body_is_cut_too():
    kit = next(k for k in KITS if k.name == "openai-chat")
    with FakeServer() as server:
        body = b'{"error": {"message": "' + b"z" * (2 * MIB) + b'"}}'
        server.push(Reply(429, {"content-type": "application/json"}, _chunked(body)))
        model = kit.model(server.url, call_limits=CallLimits(max_response_bytes=MIB))
        err = failed(await collect(model, request([USER]))).error
        assert isinstance(err, ResponseTooLarge), err


@pytest.mark.parametrize("kit", HTTPX_KITS, ids=lambda k: k.name)
@pytest.mark.parametrize(
    ("encoding", "wbits"),
    [("gzip", 16 + zlib.MAX_WBITS), ("deflate", zlib.MAX_WBITS), ("deflate", -zlib.MAX_WBITS)],
    ids=["gzip", "deflate-zlib", "deflate-raw"],
)
async def test_honest_compressed_replies_decode(kit, encoding, wbits):
    with FakeServer() as server:
        server.push(_encoded(kit.reply(PLAIN), encoding, wbits))
        result = done(await collect(kit.model(server.url), request([USER])))
        assert result.message.text == PLAIN.text


async def test_an_encoding_that_was_not_asked_for_is_refused():
    kit = next(k for k in KITS if k.name == "anthropic")
    with FakeServer() as server:
        reply = kit.reply(PLAIN)
        server.push(Reply(200, {**reply.headers, "content-encoding": "br"}, reply.chunks))
        err = failed(await collect(kit.model(server.url), request([USER]))).error
        assert err.kind == "malformed_response" and "br" in str(err), err


async def test_corrupt_gzip_is_malformed_not_a_crash():
    kit = next(k for k in KITS if k.name == "openai-chat")
    with FakeServer() as server:
        headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
        server.push(Reply(200, headers, (BOMB[:2000] + b"garbage" * 100,)))
        err = failed(await collect(kit.model(server.url), request([USER]))).error
        assert err.kind == "malformed_response", err
