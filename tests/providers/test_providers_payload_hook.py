"""Observing a run does not change the code that runs: with an ``on_payload`` hook every
adapter keeps its encode cache and its one decoder; the hook sees a copy (mutating it
changes nothing sent) and may replace the request only by returning a mapping."""

from __future__ import annotations

from typing import Any

import pytest
from contract import PLAIN, USER, Answer, Call, collect, done, load_kits, request
from fakeserver import FakeServer

from loopwright.core.messages import Message, ToolResultPart

KITS = load_kits()
CALL = Answer(calls=(Call("call_1", "get_weather", {"city": "Paris"}),), stop="tool_use")


def _vandal(direction: str, payload: Any) -> None:
    """Mutates everything it is shown, in place, and returns nothing."""
    if direction == "request":
        for value in payload.values():
            if isinstance(value, list | dict):
                value.clear()


async def _two_turns(kit, hook) -> tuple[list[Any], list[Message]]:
    with FakeServer() as server:
        server.push(kit.reply(CALL), kit.reply(PLAIN))
        model = kit.model(server.url, hook)
        first = done(await collect(model, request([USER])))
        results = Message.tool_results(
            [ToolResultPart(c.id, c.name, "18C") for c in first.message.tool_calls]
        )
        second = done(await collect(model, request([USER, first.message, results])))
        return [r.json for r in server.requests], [first.message, second.message]


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.name)
async def test_a_hook_that_mutates_its_view_changes_nothing(kit):
    plain_bodies, plain_messages = await _two_turns(kit, None)
    seen: list[tuple[str, Any]] = []

    def watch(direction: str, payload: Any) -> None:
        seen.append((direction, payload))
        _vandal(direction, payload)

    hooked_bodies, hooked_messages = await _two_turns(kit, watch)
    assert hooked_bodies == plain_bodies, "what is sent must not depend on an observer"
    assert hooked_messages == plain_messages, "what is decoded must not depend on an observer"
    assert [d for d, _ in seen] == ["request", "response"] * 2
    model = kit.model("http://127.0.0.1:9", watch)
    encoder = getattr(model, "encoder", model)  # the OpenAI adapters keep it on their encoder
    cache = getattr(encoder, "cache", None) or getattr(model, "_cache", None)
    assert cache is not None, "the encode cache stays on when a hook is installed"


JSON_BODY_KITS = [k for k in KITS if k.name in ("openai-chat", "openai-responses", "anthropic")]


@pytest.mark.parametrize("kit", JSON_BODY_KITS, ids=lambda k: k.name)
async def test_a_hook_replaces_the_request_by_returning_it(kit):
    marker = "sent-by-the-hook"

    def replace(direction: str, payload: Any) -> Any:
        if direction == "request":
            return {**payload, "metadata_marker": marker}
        return None

    with FakeServer() as server:
        server.push(kit.reply(PLAIN))
        await collect(kit.model(server.url, replace), request([USER]))
        body = server.requests[0].body.decode()
    assert marker in body
