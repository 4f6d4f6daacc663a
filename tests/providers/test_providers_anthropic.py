"""Anthropic adapter specifics beyond the shared contract (contract.py covers the common
scenarios): the recorded SDK stream, thinking/redacted-thinking round trips, in-stream
error events, stop-reason mapping, request encoding choices and property tests of the
stream decoder."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from contract import USER, collect, done, failed
from fakeserver import FakeServer, Reply
from hypothesis import given, settings
from hypothesis import strategies as st
from kit_anthropic import AnthropicKit

from loopwright import Agent, Limits, RunStop
from loopwright.core.errors import ProviderError
from loopwright.core.messages import (
    Message,
    ReasoningPart,
    StopReason,
    ToolCallPart,
    ToolResultPart,
)
from loopwright.core.protocols import ModelRequest, ModelSettings, NamedTool
from loopwright.core.tools import ToolSpec
from loopwright.providers._stream import StreamAccumulator
from loopwright.providers.anthropic import (
    AnthropicModel,
    decode_event,
    encode_request,
    map_stop_reason,
)

SAMPLE = Path("/work/shared/wire-samples/anthropic_tool_use_stream.sse")
SAMPLE_BYTES = SAMPLE.read_bytes() if SAMPLE.exists() else b""
WEATHER = ToolSpec(
    "get_weather", "Weather.", {"type": "object", "properties": {"location": {"type": "string"}}}
)


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


def model(server: FakeServer, **kw: object) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-5", base_url=server.url, api_key="k", **kw)


def sse(events: list[tuple[str, dict]]) -> Reply:
    return Reply.sse(events)


def start(usage: dict | None = None) -> tuple[str, dict]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": [],
        "usage": usage or {"input_tokens": 5, "output_tokens": 1},
    }
    return ("message_start", {"type": "message_start", "message": message})


def block(index: int, content: dict, deltas: list[dict]) -> list[tuple[str, dict]]:
    out = [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": content},
        )
    ]
    out += [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        for d in deltas
    ]
    out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


def stop(reason: str, output: int = 7) -> list[tuple[str, dict]]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason},
                "usage": {"output_tokens": output},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def request(messages: list[Message], **settings: object) -> ModelRequest:
    return ModelRequest(messages, "sys", (WEATHER,), ModelSettings(**settings))


# ----------------------------------------------------------------- wire sample


async def test_recorded_sdk_stream_decodes_to_canonical_message(server):
    server.push(Reply(200, {"content-type": "text/event-stream"}, (SAMPLE_BYTES,)))
    result = done(await collect(model(server), request([USER])))
    assert result.message.text == "I'll check the current weather in Paris for you."
    (call,) = result.message.tool_calls
    assert (call.id, call.name, dict(call.arguments)) == (
        "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        "get_weather",
        {"location": "Paris"},
    )
    assert result.stop_reason is StopReason.TOOL_USE
    assert (result.usage.input_tokens, result.usage.output_tokens) == (377, 65)
    assert result.model == "claude-sonnet-4-20250514"
    assert result.message.provider_meta == {"anthropic": {"id": "msg_019Q1hrJbZG26Fb9BQhrkHEr"}}
    sent = server.requests[0]
    assert sent.path == "/v1/messages" and sent.headers["Authorization"] == "Bearer k"


# ----------------------------------------------------------------- reasoning


async def test_redacted_thinking_round_trips_unchanged(server):
    events = [
        start(),
        *block(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}, []),
        *block(1, {"type": "text", "text": ""}, [{"type": "text_delta", "text": "Hi"}]),
        *stop("end_turn"),
    ]
    server.push(
        sse(events),
        sse([start(), *block(0, {"type": "text", "text": "ok"}, []), *stop("end_turn")]),
    )
    m = model(server)
    first = done(await collect(m, request([USER], reasoning=2048)))
    reasoning = first.message.parts[0]
    assert isinstance(reasoning, ReasoningPart)
    assert reasoning.provider_meta == {"anthropic": {"redacted_data": "EmwKAhgBEgy3va"}}
    done(await collect(m, request([USER, first.message, Message.user("more")], reasoning=2048)))
    assistant = server.requests[1].json["messages"][1]["content"]
    assert assistant[0] == {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}
    assert assistant[1] == {"type": "text", "text": "Hi"}


def test_thinking_settings_and_temperature_rules():
    payload, _ = encode_request(
        "m", request([USER], reasoning="low", temperature=0.3, max_tokens=1000)
    )
    assert payload["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert payload["max_tokens"] > 2048, "max_tokens must exceed the thinking budget"
    assert "temperature" not in payload, "the API rejects temperature with thinking enabled"
    payload, _ = encode_request("m", request([USER], reasoning="none", temperature=0.3))
    assert "thinking" not in payload and payload["temperature"] == 0.3


async def test_unknown_reasoning_value_fails_before_any_request(server):
    err = failed(await collect(model(server), request([USER], reasoning="turbo")))
    assert err.error.kind == "bad_request" and "settings.reasoning" in str(err.error)
    assert server.requests == []


def test_foreign_reasoning_becomes_text_and_foreign_ids_are_normalised():
    history = [
        USER,
        Message(
            "assistant",
            (
                ReasoningPart("I think.", {"openai-responses": {"id": "rs_1"}}),
                ToolCallPart("fc.1/x", "get_weather", {"location": "Oslo"}),
            ),
        ),
        Message.tool_results([ToolResultPart("fc.1/x", "get_weather", "cold", is_error=True)]),
    ]
    payload, _ = encode_request("m", request(history))
    assistant, results = payload["messages"][1]["content"], payload["messages"][2]["content"]
    assert assistant[0] == {"type": "text", "text": "<reasoning>\nI think.\n</reasoning>"}
    call_id = assistant[1]["id"]
    assert call_id != "fc.1/x" and all(c.isalnum() or c in "_-" for c in call_id)
    assert results == [
        {"type": "tool_result", "tool_use_id": call_id, "content": "cold", "is_error": True}
    ]
    assert "rs_1" not in json.dumps(payload)


# ----------------------------------------------------------------- request shape


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        ("auto", None, None),
        ("auto", False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("required", None, {"type": "any"}),
        ("none", None, {"type": "none"}),
        (
            NamedTool("get_weather"),
            False,
            {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
        ),
    ],
)
def test_tool_choice_mapping(choice, parallel, expected):
    payload, _ = encode_request(
        "m", request([USER], tool_choice=choice, parallel_tool_calls=parallel)
    )
    assert payload.get("tool_choice") == expected


def test_history_system_messages_roles_and_extra():
    history = [Message.system("Be kind."), USER, Message.user("Also this."), Message.assistant("")]
    payload, _ = encode_request("m", request(history, stop=("END",), extra={"top_k": 5}))
    assert payload["system"] == "sys\n\nBe kind."
    assert payload["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": USER.text},
                {"type": "text", "text": "Also this."},
            ],
        }
    ]
    assert payload["stop_sequences"] == ["END"] and payload["top_k"] == 5


async def test_extra_fields_reach_the_wire_and_hook_can_replace_the_request(server):
    server.push(sse([start(), *block(0, {"type": "text", "text": "ok"}, []), *stop("end_turn")]))
    seen: list[str] = []

    def hook(direction, payload):
        seen.append(direction)
        if direction == "request":
            return {**payload, "metadata": {"user_id": "u-1"}}
        return None

    m = model(server, on_payload=hook)
    done(await collect(m, request([USER], temperature=0.5, extra={"top_k": 3})))
    body = server.requests[0].json
    assert body["metadata"] == {"user_id": "u-1"}
    assert (body["temperature"], body["top_k"]) == (0.5, 3)
    assert seen == ["request", "response"]


# ----------------------------------------------------------------- errors and stops


async def test_in_stream_overloaded_error_keeps_partial_text(server):
    events = [
        start(),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Partly"},
            },
        ),
        (
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ),
    ]
    server.push(sse(events))
    err = failed(await collect(model(server), request([USER])))
    assert err.error.kind == "transient" and "overloaded_error" in str(err.error)
    assert err.partial is not None and err.partial.text == "Partly"
    assert len(server.requests) == 1


async def test_in_stream_error_before_any_output_is_retryable_for_the_loop(server):
    overloaded = (
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    ok = [start(), *block(0, {"type": "text", "text": "fine"}, []), *stop("end_turn")]
    server.push(sse([start(), overloaded]), sse(ok))
    err = failed(await collect(model(server), request([USER])))
    assert err.error.retryable and err.partial is None and len(server.requests) == 1
    result = done(await collect(model(server), request([USER])))  # the loop's retry
    assert result.message.text == "fine" and len(server.requests) == 2


async def test_context_window_exceeded_stop_is_context_overflow(server):
    server.push(
        sse(
            [
                start(),
                *block(0, {"type": "text", "text": "Long"}, []),
                *stop("model_context_window_exceeded"),
            ]
        )
    )
    err = failed(await collect(model(server), request([USER])))
    assert err.error.kind == "context_overflow"
    assert err.partial is not None and err.partial.text == "Long"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("end_turn", StopReason.FINAL_ANSWER),
        ("stop_sequence", StopReason.FINAL_ANSWER),
        ("tool_use", StopReason.TOOL_USE),
        ("max_tokens", StopReason.MAX_TOKENS),
        ("refusal", StopReason.REFUSAL),
    ],
)
def test_every_documented_stop_reason_maps(raw, expected):
    assert map_stop_reason(raw, {}) is expected


async def test_paused_server_tool_turn_stops_the_run_as_incomplete_not_answered(server):
    # A long web search: the API pauses the turn after the server tool's call and its
    # result, with a sentence of text, and expects the content sent back to continue.
    search = {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search"}
    found = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_01",
        "content": [{"type": "web_search_result", "url": "https://example.com", "title": "x"}],
    }
    query = {"type": "input_json_delta", "partial_json": '{"query": "news"}'}
    paused = [
        start(),
        *block(0, search, [query]),
        *block(1, found, []),
        *block(2, {"type": "text", "text": "Searching further"}, []),
        *stop("pause_turn"),
    ]
    server.push(sse(paused))
    result = await Agent(model(server), limits=Limits(model_retries=2)).arun("news?")
    assert result.stop is RunStop.MODEL_ERROR
    assert "incomplete_turn" in result.detail and "pause_turn" in result.detail
    assert result.answer != "Searching further" and len(server.requests) == 1


async def test_refusal_with_text_is_a_response(server):
    server.push(
        sse([start(), *block(0, {"type": "text", "text": "I can't help."}, []), *stop("refusal")])
    )
    result = done(await collect(model(server), request([USER])))
    assert result.stop_reason is StopReason.REFUSAL


async def test_usage_counts_cache_reads_writes_and_thinking(server):
    usage = {
        "input_tokens": 10,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 50,
        "output_tokens": 1,
    }
    end = [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 30, "output_tokens_details": {"thinking_tokens": 12}},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    server.push(sse([start(usage), *block(0, {"type": "text", "text": "x"}, []), *end]))
    result = done(await collect(model(server), request([USER])))
    u = result.usage
    assert (u.input_tokens, u.cached_tokens, u.output_tokens, u.reasoning_tokens) == (
        160,
        100,
        30,
        12,
    )


@pytest.mark.parametrize(
    "delta_usage",
    [
        # the SDK's MessageDeltaUsage dumped with its unset fields (a proxy re-emitting it)
        {
            "input_tokens": None,
            "cache_creation_input_tokens": None,
            "cache_read_input_tokens": None,
            "output_tokens": 30,
        },
        # cumulative counts, some fields left out
        {"input_tokens": 10, "output_tokens": 30},
        {"cache_read_input_tokens": 100, "output_tokens": 30},
    ],
)
async def test_message_delta_usage_keeps_what_it_does_not_restate(server, delta_usage):
    usage = {
        "input_tokens": 10,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 50,
        "output_tokens": 1,
    }
    end = [
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": delta_usage},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    server.push(sse([start(usage), *block(0, {"type": "text", "text": "x"}, []), *end]))
    u = done(await collect(model(server), request([USER]))).usage
    assert (u.input_tokens, u.cached_tokens, u.output_tokens) == (160, 100, 30)


async def test_empty_answer_is_an_error_not_a_silent_success(server):
    server.push(sse([start(), *stop("end_turn")]))
    err = failed(await collect(model(server), request([USER])))
    assert err.error.kind == "malformed_response"


# ----------------------------------------------------------------- properties

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
ARGS = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.recursive(
        JSON_SCALARS,
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
        max_leaves=6,
    ),
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(args=ARGS, cuts=st.lists(st.integers(min_value=1, max_value=200), max_size=8))
def test_input_json_deltas_reassemble_any_arguments(args, cuts):
    raw = json.dumps(args)
    points = sorted({c % (len(raw) + 1) for c in cuts} | {0, len(raw)})
    acc = StreamAccumulator("anthropic")
    list(
        decode_event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
            },
            acc,
        )
    )
    for a, b in itertools.pairwise(points):
        list(
            decode_event(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": raw[a:b]},
                },
                acc,
            )
        )
    list(
        decode_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 1},
            },
            acc,
        )
    )
    final = acc.finish()
    assert final.type == "response_done"
    assert dict(final.message.tool_calls[0].arguments) == args


EVENT_TYPES = st.sampled_from(
    [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "error",
        "ping",
        "weird",
    ]
)
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=10), c, max_size=4),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(
    events=st.lists(
        st.tuples(
            EVENT_TYPES,
            st.dictionaries(
                st.sampled_from(
                    ["index", "delta", "content_block", "message", "usage", "error", "type"]
                ),
                ANY_JSON,
                max_size=4,
            ),
        ),
        max_size=8,
    )
)
def test_decoder_raises_only_taxonomy_errors_on_arbitrary_events(events):
    acc = StreamAccumulator("anthropic")
    for kind, body in events:
        try:
            list(decode_event({**body, "type": kind}, acc))
        except ProviderError:
            return
        except (TypeError, ValueError, AttributeError) as exc:  # mapped by drive(), but report
            pytest.fail(f"decoder raised {type(exc).__name__} on {kind} {body!r}")
    assert acc.finish().type in ("response_done", "stream_error")


def test_kit_check_request_rejects_unpaired_results():
    body = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "x"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}],
            },
            {"role": "user", "content": [{"type": "text", "text": "no result"}]},
        ]
    }
    with pytest.raises(AssertionError):
        AnthropicKit().check_request(body)


async def test_html_page_with_status_200_is_malformed_with_the_page(server):
    server.push(Reply.html(200))
    m = AnthropicModel("claude-sonnet-5", base_url=server.url, api_key="k")
    err = failed(await collect(m, request([USER])))
    assert err.error.kind == "malformed_response" and "<html" in (err.error.raw or "").lower()
