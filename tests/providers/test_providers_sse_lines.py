"""Event-stream lines the format allows and an SDK's decoder cannot take (keep-alive
comments, event/id/retry fields, ``data:`` without its space), sent by a fake server on
127.0.0.1 through the real SDKs: the answer arrives as if they were not there."""

from __future__ import annotations

import pytest
from contract import USER, Answer, collect, final, load_kits, request
from fakeserver import FakeServer, Reply

from loopwright.core.events import ResponseDone
from loopwright.providers.transport import SSELines

KITS = {k.name: k for k in load_kits()}
SSE_KITS = [KITS["gemini"], KITS["openai-chat"], KITS["openai-responses"]]
LINES = {
    "keep-alive comment": b": keep-alive\n\n",
    "event field": b"event: message\n",  # labels the data line that follows
    "id and retry only": b"id: 7\nretry: 3000\n\n",
}


def _with(reply: Reply, extra: bytes, no_space: bool) -> Reply:
    chunks = []
    for chunk in reply.chunks:
        assert isinstance(chunk, bytes)
        if no_space:
            chunk = chunk.replace(b"data: ", b"data:")
        chunks += [extra, chunk] if extra else [chunk]  # (an empty chunk ends the body)
    return Reply(reply.status, reply.headers, tuple(chunks))


@pytest.mark.parametrize("kit", SSE_KITS, ids=lambda k: k.name)
@pytest.mark.parametrize("name", [*LINES, "data without space"])
async def test_lines_the_format_allows_do_not_break_the_stream(kit, name):
    reply = kit.reply(Answer(text="Hello there"))
    hostile = _with(reply, LINES.get(name, b""), name == "data without space")
    with FakeServer() as server:
        server.push(hostile)
        result = final(await collect(kit.model(server.url), request([USER])))
    assert isinstance(result, ResponseDone), result
    assert result.message.text == "Hello there"


def test_rewriter_holds_a_line_split_across_chunks_and_keeps_crlf():
    body = b'data:{"a": 1}\r\n\r\n: ping\r\nevent: x\r\ndata: {"b": 2}\r\n\r\ntrailing'
    for keep_events, kept in [(True, b"event: x\r\n"), (False, b"")]:
        for size in (1, 3, 7, len(body)):
            lines = SSELines(keep_events)
            out = b"".join(lines.feed(body[i : i + size]) for i in range(0, len(body), size))
            out += lines.finish()
            expected = b'data: {"a": 1}\r\n\r\n' + kept + b'data: {"b": 2}\r\n\r\ntrailing'
            assert out == expected, (keep_events, size)
