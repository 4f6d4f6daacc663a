"""The adapters' hot-path shortcuts change cost, never results:

* conversation-prefix resumption in :class:`EncodeCache` (and the per-tool-list memo):
  a cached encoding equals a fresh one and leaves the name map in the same state, for
  every encoder, under arbitrary growth / truncation / edits / tool changes, and never
  mutates a payload handed out earlier;
* the cheap delta-event factories build objects equal to the event classes' own;
* Gemini's typed-chunk decoder (no hook) decodes like the wire-JSON decoder (hook).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.errors import ProviderError
from loopwright.core.messages import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from loopwright.core.protocols import ModelRequest, ModelSettings, NamedTool
from loopwright.core.tools import ToolSpec
from loopwright.providers import anthropic, bedrock, gemini
from loopwright.providers._common import EncodeCache, ToolNameMap
from loopwright.providers._stream import StreamAccumulator
from loopwright.providers.openai_chat import ChatEncoder
from loopwright.providers.openai_responses import ResponsesEncoder
from loopwright.providers.registry import VENDORS

NAMES = ["lookup", "files.read", "web search", "x" * 70, "lookup_2"]
SPECS = [
    ToolSpec(n, f"Tool {n}.", {"type": "object", "properties": {"q": {"type": "string"}}})
    for n in NAMES
]

Encoder = Callable[[ModelRequest, EncodeCache | None], tuple[dict[str, Any], ToolNameMap]]


def _chat(cache: EncodeCache | None) -> Encoder:
    encoder = ChatEncoder("m", VENDORS["openai"], True, cache)
    return lambda request, _: encoder.encode(request)


def _responses(cache: EncodeCache | None) -> Encoder:
    encoder = ResponsesEncoder("m", VENDORS["openai"], True, cache)
    return lambda request, _: encoder.encode(request)


ENCODERS: dict[str, Callable[[EncodeCache | None], Encoder]] = {
    "anthropic": lambda _: lambda r, c: anthropic.encode_request("m", r, cache=c),
    "bedrock": lambda _: lambda r, c: bedrock.encode_request("m", r, cache=c),
    "gemini": lambda _: lambda r, c: gemini.encode_request("m", r, c),
    "openai-chat": _chat,
    "openai-responses": _responses,
}


# ----------------------------------------------------------------- conversation operations

TEXT = st.text(alphabet="ab \n", min_size=0, max_size=6)
OP = st.one_of(
    st.tuples(st.just("user"), TEXT),
    st.tuples(st.just("system"), TEXT),
    st.tuples(
        st.just("assistant"),
        st.lists(st.sampled_from(NAMES), max_size=3),
        TEXT,
        st.booleans(),
    ),
    st.tuples(st.just("results"), st.booleans()),
    st.tuples(st.just("pop"), st.integers(1, 3)),
    st.tuples(st.just("edit"), st.integers(0, 40)),
    st.tuples(st.just("tools"), st.lists(st.integers(0, len(SPECS) - 1), max_size=4)),
    st.tuples(st.just("repeat")),
)


class Conversation:
    def __init__(self) -> None:
        self.messages: list[Message] = [Message.user("start")]
        self.tools: list[ToolSpec] = list(SPECS[:2])
        self.turn = 0

    def apply(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == "user":
            self.messages.append(Message.user(op[1]))
        elif kind == "system":
            self.messages.append(Message.system(op[1] or "sys"))
        elif kind == "assistant":
            self.turn += 1
            parts: list[Any] = []
            if op[3]:  # reasoning from another provider: replayed as text or dropped
                parts.append(ReasoningPart("thinking " + op[2]))
            if op[2]:
                parts.append(TextPart(op[2]))
            for i, name in enumerate(op[1]):
                parts.append(ToolCallPart(f"call.{self.turn}.{i}", name, {"q": str(i)}))
            self.messages.append(Message("assistant", tuple(parts) or (TextPart("ok"),)))
        elif kind == "results":
            last = next((m for m in reversed(self.messages) if m.role == "assistant"), None)
            calls = last.tool_calls if last is not None else ()
            if calls:
                results = [ToolResultPart(c.id, c.name, "r", is_error=op[1]) for c in calls]
                if op[1]:
                    results.reverse()  # out of call order (Gemini re-sorts them)
                self.messages.append(Message.tool_results(results))
        elif kind == "pop":
            del self.messages[max(1, len(self.messages) - op[1]) :]
        elif kind == "edit":
            i = op[1] % len(self.messages)
            old = self.messages[i]  # an equal message, but a different object
            self.messages[i] = Message(old.role, old.parts, old.provider_meta)
        elif kind == "tools":
            self.tools = [SPECS[i] for i in dict.fromkeys(op[1])]

    def request(self) -> ModelRequest:
        choice = NamedTool(self.tools[0].name) if self.tools else "auto"
        return ModelRequest(
            list(self.messages),
            "be brief",
            tuple(self.tools),
            ModelSettings(max_tokens=64, tool_choice=choice),
        )


def _dump(payload: dict[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True, default=str)


@pytest.mark.parametrize("protocol", list(ENCODERS))
@settings(max_examples=40, deadline=None)
@given(ops=st.lists(OP, min_size=1, max_size=25))
def test_resumed_encoding_equals_fresh_encoding(protocol, ops):
    cache = EncodeCache()
    cached = ENCODERS[protocol](cache)
    fresh = ENCODERS[protocol](None)
    conversation = Conversation()
    handed_out: list[tuple[dict[str, Any], str]] = []
    for op in ops:
        conversation.apply(op)
        request = conversation.request()
        payload, names = cached(request, cache)
        expected, expected_names = fresh(request, None)
        assert _dump(payload) == _dump(expected)
        assert names.pairs() == expected_names.pairs()
        handed_out.append((payload, _dump(payload)))
    for payload, snapshot in handed_out:
        assert _dump(payload) == snapshot, "a later request mutated an earlier payload"


def test_steady_state_resumes_instead_of_re_encoding(monkeypatch):
    """An agent-loop step encodes only the messages it added."""
    cache = EncodeCache()
    history = [Message.user("hi"), Message.assistant("hello")]
    anthropic.encode_request("m", ModelRequest(history, None, tuple(SPECS)), cache=cache)
    seen: list[Message] = []
    real = anthropic._user_blocks
    monkeypatch.setattr(anthropic, "_user_blocks", lambda m: seen.append(m) or real(m))
    history.append(Message.user("more"))
    payload, _ = anthropic.encode_request(
        "m", ModelRequest(history, None, tuple(SPECS)), cache=cache
    )
    assert seen == [history[-1]]
    assert [m["role"] for m in payload["messages"]] == ["user", "assistant", "user"]


def test_prefixes_are_bounded_and_tool_lists_memoised():
    cache = EncodeCache()
    for i in range(EncodeCache.PREFIXES + 5):
        anthropic.encode_request("m", ModelRequest([Message.user(str(i))], None, ()), cache=cache)
    assert len(cache._prefixes) == EncodeCache.PREFIXES
    first = cache.tool_defs(SPECS, anthropic._tool_defs)
    again = cache.tool_defs(list(SPECS), anthropic._tool_defs)
    assert first == again and first is not again and first[0] is again[0]
    other = cache.tool_defs(SPECS[:2], anthropic._tool_defs)
    assert [d["name"] for d in other] == [
        ToolNameMap.build(NAMES[:2]).to_wire(n) for n in NAMES[:2]
    ]


def test_argument_fragments_match_the_generic_call_path():
    fast, slow = StreamAccumulator("p"), StreamAccumulator("p")
    events: list[tuple[Any, Any]] = []
    for acc in (fast, slow):
        acc.call(0, id="c", name="f")
    for fragment in ['{"a": ', '"x', 'y"}']:
        events.append((fast.arguments(0, fragment), slow.call(0, arguments=fragment)))
    events.append((fast.arguments(1, '{"b"'), slow.call(1, arguments='{"b"')))  # new call
    assert all(a == b for a, b in events)
    assert events[1][0].partial_arguments == {"a": "x"}


# ----------------------------------------------------------------- gemini typed chunks

SIG = base64.b64encode(b"\x00sig\xff").decode()
GEMINI_CHUNKS = [
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]},
    {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "x", "thoughtSignature": SIG}]}}
        ],
        "modelVersion": "gemini-x",
        "responseId": "r1",
        "usageMetadata": {"promptTokenCount": 3, "thoughtsTokenCount": 2},
    },
    {"candidates": [{"content": {"parts": [{"text": "think", "thought": True}]}}]},
    {"candidates": [{"content": {"parts": [{"text": "plain", "thought": False}]}}]},
    {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": SIG},
                        {"functionCall": {"name": "g", "id": "own", "args": {}}},
                    ]
                },
                "finishReason": "STOP",
            }
        ]
    },
    {"promptFeedback": {"blockReason": "SAFETY"}},
    {"candidates": [{"content": {"parts": []}, "finishReason": "MAX_TOKENS"}]},
    {"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]},
    {"candidates": [{"finishReason": "SOMETHING_NEW"}]},
]


def _outcome(decode: Callable[..., Any], chunks: list[Any]) -> Any:
    acc = StreamAccumulator("gemini")
    turn = gemini._Turn(2)
    events: list[Any] = []
    try:
        for c in chunks:
            events += list(decode(c, acc, turn))
    except ProviderError as exc:
        return events, type(exc), str(exc).split(" (", 1)[0]
    final = acc.finish()
    if final.type == "stream_error":  # exceptions compare by identity: compare their text
        return events, type(final.error), str(final.error), final.partial, final.usage
    return events, final
