"""History caching in the Anthropic / Gemini / Bedrock encoders (P1's ``EncodeCache``):
a cached encoding is identical to a fresh one, never mutated by later requests, and
tool results (whose Gemini order depends on their calls) are never served stale."""

from __future__ import annotations

import json

import pytest

from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.protocols import ModelRequest
from loopwright.core.tools import ToolSpec
from loopwright.providers import anthropic, bedrock, gemini
from loopwright.providers._common import EncodeCache

SPEC = ToolSpec("files.read", "Read.", {"type": "object", "properties": {}})


def _history() -> list[Message]:
    call = ToolCallPart("call_1", "files.read", {"path": "a"})
    return [
        Message.user("read a"),
        Message("assistant", (call,)),
        Message.tool_results([ToolResultPart("call_1", "files.read", "content")]),
    ]


def _encode(module, history, cache):
    if module is gemini:
        return module.encode_request("m", ModelRequest(history, "s", (SPEC,)), cache)
    return module.encode_request("m", ModelRequest(history, "s", (SPEC,)), cache=cache)


@pytest.mark.parametrize("module", [anthropic, bedrock, gemini], ids=lambda m: m.__name__)
def test_cached_encoding_equals_fresh_and_is_never_mutated(module):
    cache = EncodeCache()
    history = _history()
    first, names = _encode(module, history, cache)
    snapshot = json.dumps(first, sort_keys=True)
    assert json.dumps(_encode(module, history, None)[0], sort_keys=True) == snapshot
    history.append(Message.user("again"))  # merges into the last user turn on the wire
    second, _ = _encode(module, history, cache)
    assert json.dumps(first, sort_keys=True) == snapshot, "an earlier payload was mutated"
    assert second != first
    history.pop()
    third, names3 = _encode(module, history, cache)
    assert json.dumps(third, sort_keys=True) == snapshot
    # A cache hit still registers history tool names, so replies map back.
    assert names3.from_wire(names3.to_wire("files.read")) == "files.read"
    assert names3.renamed == names.renamed


def test_gemini_tool_results_follow_the_calls_they_answer():
    cache = EncodeCache()
    results = Message.tool_results([ToolResultPart("b", "g", "2"), ToolResultPart("a", "f", "1")])
    first_calls = Message("assistant", (ToolCallPart("a", "f", {}), ToolCallPart("b", "g", {})))
    other_calls = Message("assistant", (ToolCallPart("b", "g", {}), ToolCallPart("a", "f", {})))
    tools = (ToolSpec("f", "F."), ToolSpec("g", "G."))
    bodies = [
        gemini.encode_request(
            "m", ModelRequest([Message.user("x"), calls, results], None, tools), cache
        )[0]
        for calls in (first_calls, other_calls)
    ]
    order = [[p["functionResponse"]["name"] for p in b["contents"][2]["parts"]] for b in bodies]
    assert order == [["f", "g"], ["g", "f"]]
