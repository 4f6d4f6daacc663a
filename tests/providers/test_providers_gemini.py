"""Gemini adapter specifics beyond the shared contract: synthesised call ids and pairing
by order, thought signatures on the part they came with, schema sanitisation at the
boundary, finish reasons, Gemini-shaped errors (RetryInfo, API_KEY_INVALID, in-stream
error chunks) and property tests of the chunk decoder."""

from __future__ import annotations

import base64
import json

import pytest
from contract import USER, collect, done, failed
from fakeserver import FakeServer, Reply
from google.genai.types import FinishReason
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.errors import ProviderError
from loopwright.core.messages import (
    MediaPart,
    Message,
    ReasoningPart,
    StopReason,
    TextPart,
    ToolCallPart,
)
from loopwright.core.messages import ToolResultPart as Result
from loopwright.core.protocols import ModelRequest, ModelSettings, NamedTool
from loopwright.core.tools import ToolSpec
from loopwright.providers._stream import StreamAccumulator
from loopwright.providers.gemini import (
    GeminiModel,
    _Turn,
    decode_sdk_chunk,
    encode_request,
    map_finish_reason,
    synthesize_call_id,
)

WEATHER = ToolSpec(
    "get_weather",
    "Weather.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = ToolSpec("get_time", "Time.", {"type": "object", "properties": {"tz": {"type": "string"}}})
SIG = base64.b64encode(b"\x00\x01signature\xff").decode()


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


def model(server: FakeServer, name: str = "gemini-2.5-flash") -> GeminiModel:
    return GeminiModel(name, base_url=server.url, api_key="k")


def chunk(*parts: dict, finish: str | None = None, usage: dict | None = None) -> dict:
    candidate: dict = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    out: dict = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}
    if usage:
        out["usageMetadata"] = usage
    return out


def request(messages: list[Message], tools=(WEATHER, TIME), **kw: object) -> ModelRequest:
    return ModelRequest(messages, "sys", tools, ModelSettings(**kw))


def call_part(name: str, args: dict, **extra: object) -> dict:
    return {"functionCall": {"name": name, "args": args}, **extra}


# ----------------------------------------------------------------- ids and pairing


def test_synthesised_ids_are_stable_and_distinct():
    assert synthesize_call_id(1, 0, "f") == synthesize_call_id(1, 0, "f")
    ids = {synthesize_call_id(t, i, n) for t in range(3) for i in range(3) for n in "fg"}
    assert len(ids) == 18
    assert all(i.replace("_", "").isalnum() and len(i) <= 64 for i in ids)


async def test_parallel_calls_get_ids_and_results_are_paired_by_order(server):
    server.push(
        Reply.sse(
            [
                chunk(
                    call_part("get_weather", {"city": "Oslo"}),
                    call_part("get_time", {"tz": "CET"}),
                    finish="STOP",
                )
            ]
        ),
        Reply.sse([chunk({"text": "Cold."}, finish="STOP")]),
    )
    m = model(server)
    first = done(await collect(m, request([USER])))
    weather, time = first.message.tool_calls
    assert weather.id != time.id and first.stop_reason is StopReason.TOOL_USE
    # Results arrive in the opposite order: the wire must follow the calls' order.
    results = Message.tool_results(
        [
            Result(time.id, "get_time", "12:00"),
            Result(weather.id, "get_weather", "-3C", is_error=True),
        ]
    )
    done(await collect(m, request([USER, first.message, results])))
    parts = server.requests[1].json["contents"][2]["parts"]
    assert parts == [
        {"functionResponse": {"name": "get_weather", "response": {"error": "-3C"}}},
        {"functionResponse": {"name": "get_time", "response": {"result": "12:00"}}},
    ]


async def test_server_sent_call_ids_are_kept_and_echoed(server):
    server.push(
        Reply.sse(
            [
                chunk(
                    {
                        "functionCall": {
                            "id": "fc-77",
                            "name": "get_weather",
                            "args": {"city": "Rome"},
                        }
                    },
                    finish="STOP",
                )
            ]
        ),
        Reply.sse([chunk({"text": "ok"}, finish="STOP")]),
    )
    m = model(server)
    first = done(await collect(m, request([USER])))
    assert first.message.tool_calls[0].id == "fc-77"
    results = Message.tool_results([Result("fc-77", "get_weather", "warm")])
    done(await collect(m, request([USER, first.message, results])))
    contents = server.requests[1].json["contents"]
    assert contents[1]["parts"][0]["functionCall"]["id"] == "fc-77"
    assert contents[2]["parts"][0]["functionResponse"]["id"] == "fc-77"


# ----------------------------------------------------------------- thought signatures


async def test_signatures_return_on_the_part_they_came_with(server):
    server.push(
        Reply.sse(
            [
                chunk({"text": "Planning", "thought": True}),
                chunk({"text": "Answer"}, {"text": "", "thoughtSignature": SIG}, finish="STOP"),
            ]
        ),
        Reply.sse([chunk({"text": "ok"}, finish="STOP")]),
    )
    m = model(server)
    first = done(await collect(m, request([USER], reasoning="low")))
    thought, text = first.message.parts
    assert isinstance(thought, ReasoningPart) and thought.text == "Planning"
    assert isinstance(text, TextPart) and text.text == "Answer"
    assert first.message.provider_meta["gemini"]["thought_signature"] == SIG
    done(await collect(m, request([USER, first.message, Message.user("and?")])))
    model_turn = server.requests[1].json["contents"][1]
    sent = model_turn["parts"][1].pop("thoughtSignature")
    assert model_turn == {
        "role": "model",
        "parts": [{"text": "Planning", "thought": True}, {"text": "Answer"}],
    }
    # The SDK got bytes, so the wire carries the signature base64'd exactly once (pydantic
    # writes the URL-safe alphabet; the API accepts both).
    assert base64.urlsafe_b64decode(sent) == b"\x00\x01signature\xff"


def test_foreign_reasoning_is_text_and_foreign_signatures_never_cross():
    history = [
        USER,
        Message(
            "assistant",
            (
                ReasoningPart("hmm", {"anthropic": {"signature": "Eq-anthropic"}}),
                ToolCallPart(
                    "toolu_1", "get_weather", {"city": "Oslo"}, "", {"anthropic": {"x": 1}}
                ),
            ),
        ),
        Message.tool_results([Result("toolu_1", "get_weather", "cold")]),
    ]
    payload, _ = encode_request("gemini-2.5-flash", request(history))
    wire = json.dumps(payload)
    assert "Eq-anthropic" not in wire and "thoughtSignature" not in wire
    assert payload["contents"][1]["parts"][0] == {"text": "<reasoning>\nhmm\n</reasoning>"}


@pytest.mark.parametrize(
    ("model_name", "reasoning", "expected"),
    [
        ("gemini-2.5-flash", "high", {"includeThoughts": True, "thinkingBudget": 24576}),
        ("gemini-3-pro-preview", "high", {"includeThoughts": True, "thinkingLevel": "HIGH"}),
        ("gemini-3-pro-preview", 512, {"includeThoughts": True, "thinkingBudget": 512}),
        ("gemini-2.5-flash", "none", {"thinkingBudget": 0}),
    ],
)
def test_thinking_config(model_name, reasoning, expected):
    payload, _ = encode_request(model_name, request([USER], reasoning=reasoning))
    assert payload["config"]["thinkingConfig"] == expected


# ----------------------------------------------------------------- request shape


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", None),
        ("required", {"functionCallingConfig": {"mode": "ANY"}}),
        ("none", {"functionCallingConfig": {"mode": "NONE"}}),
        (
            NamedTool("get_time"),
            {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_time"]}},
        ),
    ],
)
def test_tool_choice_mapping(choice, expected):
    payload, _ = encode_request("g", request([USER], tool_choice=choice))
    assert payload["config"].get("toolConfig") == expected


def test_schema_is_sanitised_for_gemini():
    spec = ToolSpec(
        "pick",
        "Pick.",
        {
            "type": "object",
            "$defs": {"Mode": {"type": "string", "enum": ["fast", "deep"]}},
            "properties": {
                "mode": {"$ref": "#/$defs/Mode"},
                "kind": {"const": "x"},
                "note": {"type": ["string", "null"]},
            },
            "additionalProperties": False,
        },
    )
    payload, _ = encode_request("g", request([USER], tools=(spec,)))
    schema = payload["config"]["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]
    assert schema["properties"]["mode"] == {"type": "string", "enum": ["fast", "deep"]}
    assert schema["properties"]["kind"]["enum"] == ["x"]
    assert schema["properties"]["note"]["type"] == ["string", "null"]
    assert "$defs" not in schema and "additionalProperties" not in schema


async def test_unsupported_schema_fails_naming_the_tool_before_any_request(server):
    spec = ToolSpec(
        "shape",
        "S.",
        {
            "type": "object",
            "properties": {
                "v": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {}}]}
            },
        },
    )
    err = failed(await collect(model(server), request([USER], tools=(spec,))))
    assert err.error.kind == "bad_request" and "'shape'" in str(err.error)
    assert server.requests == []


async def test_generation_settings_reach_the_wire(server):
    server.push(Reply.sse([chunk({"text": "ok"}, finish="STOP")]))
    req = request(
        [Message.system("extra rule"), USER], temperature=0.2, max_tokens=99, stop=("END",), seed=7
    )
    done(await collect(model(server), req))
    body = server.requests[0].json
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 99,
        "stopSequences": ["END"],
        "seed": 7,
    }
    assert body["systemInstruction"]["parts"] == [{"text": "sys\n\nextra rule"}]
    assert server.requests[0].path.endswith(":streamGenerateContent?alt=sse")


# ----------------------------------------------------------------- finish reasons, errors


@pytest.mark.parametrize("raw", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "SPII"])
async def test_safety_finishes_are_refusals(server, raw):
    server.push(Reply.sse([chunk({"text": "I can't"}, finish=raw)]))
    assert done(await collect(model(server), request([USER]))).stop_reason is StopReason.REFUSAL


async def test_blocked_prompt_is_a_refusal(server):
    server.push(
        Reply.sse(
            [
                {
                    "promptFeedback": {"blockReason": "SAFETY"},
                    "usageMetadata": {"promptTokenCount": 4},
                }
            ]
        )
    )
    result = done(await collect(model(server), request([USER])))
    assert result.stop_reason is StopReason.REFUSAL and result.usage.input_tokens == 4


@pytest.mark.parametrize("raw", ["MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "OTHER"])
def test_model_output_failures_are_malformed(raw):
    with pytest.raises(ProviderError) as info:
        map_finish_reason(raw, {"x": 1})
    assert info.value.kind == "malformed_response" and raw in str(info.value)


@pytest.mark.parametrize("raw", [reason.value for reason in FinishReason])
def test_every_finish_reason_of_the_sdk_is_known(raw):
    """Each value of google-genai's ``FinishReason`` is a stop reason or a named error;
    none is reported as unknown (nor silently taken for a normal end)."""
    try:
        stop = map_finish_reason(raw, {})
    except ProviderError as exc:
        assert "unknown" not in str(exc) and raw in str(exc)
    else:
        assert stop is not StopReason.FINAL_ANSWER or raw == "STOP"


@pytest.mark.parametrize(
    ("raw", "kind", "retryable"),
    [
        ("CONTINUATION", "incomplete_turn", False),
        ("MISSING_THOUGHT_SIGNATURE", "bad_request", False),
        ("PUP_LIMITED_DISABLED", "auth", False),
        ("NO_IMAGE", "malformed_response", True),
    ],
)
async def test_failed_finishes_end_typed_with_the_partial(server, raw, kind, retryable):
    server.push(Reply.sse([chunk({"text": "Part of it"}), chunk(finish=raw)]))
    err = failed(await collect(model(server), request([USER])))
    assert (err.error.kind, err.error.retryable) == (kind, retryable) and raw in str(err.error)
    assert err.partial is not None and err.partial.text == "Part of it"


async def test_a_safety_stop_withholds_the_function_calls_it_came_with(server):
    server.push(Reply.sse([chunk(call_part("get_weather", {"city": "Oslo"}), finish="SAFETY")]))
    result = done(await collect(model(server), request([USER])))
    assert result.stop_reason is StopReason.REFUSAL and not result.message.tool_calls
    withheld = result.message.provider_meta["gemini"]["withheld_calls"]
    assert withheld == [{"name": "get_weather", "arguments": '{"city": "Oslo"}'}]


async def test_an_escalation_rule_filter_is_a_refusal(server):
    server.push(Reply.sse([chunk({"text": "I can"}, finish="ESCALATION")]))
    assert done(await collect(model(server), request([USER]))).stop_reason is StopReason.REFUSAL


async def test_retry_info_delay_is_reported_without_a_header(server):
    body = {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": "Quota exceeded",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}],
        }
    }
    server.push(Reply.json(body, 429))
    m = GeminiModel("gemini-2.5-flash", base_url=server.url, api_key="k")
    err = failed(await collect(m, request([USER])))
    assert err.error.kind == "rate_limited" and err.error.retry_after == 7.0
    assert len(server.requests) == 1


async def test_error_chunk_mid_stream_keeps_partial(server):
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    server.push(Reply.sse([chunk({"text": "Half an"}), error]))
    err = failed(await collect(model(server), request([USER])))
    assert err.error.kind == "transient"
    assert err.partial is not None and err.partial.text == "Half an"


async def test_stream_without_finish_reason_is_an_error(server):
    server.push(Reply.sse([chunk({"text": "dangling"})]))
    err = failed(await collect(model(server), request([USER])))
    assert err.error.kind == "transient" and err.partial is not None


# ----------------------------------------------------------------- properties

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=8,
)
PART = st.dictionaries(
    st.sampled_from(["text", "thought", "functionCall", "thoughtSignature"]), ANY_JSON, max_size=3
)
CHUNK = st.fixed_dictionaries(
    {},
    optional={
        "candidates": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "content": st.fixed_dictionaries(
                        {}, optional={"parts": st.lists(PART, max_size=3)}
                    ),
                    "finishReason": st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY", "NEW_THING"])
                    | ANY_JSON,
                },
            ),
            max_size=2,
        )
        | ANY_JSON,
        "usageMetadata": ANY_JSON,
        "error": ANY_JSON,
        "promptFeedback": ANY_JSON,
    },
)


@settings(max_examples=120, deadline=None)
@given(chunks=st.lists(CHUNK, max_size=5))
def test_decoder_raises_only_taxonomy_errors_on_arbitrary_chunks(chunks):
    acc = StreamAccumulator("gemini")
    turn = _Turn(0)
    for c in chunks:
        typed = _typed(c)
        if typed is None:  # the SDK itself rejects it (a malformed response upstream)
            return
        try:
            list(decode_sdk_chunk(typed, acc, turn))
        except ProviderError:
            return
    assert acc.finish().type in ("response_done", "stream_error")


@settings(max_examples=60, deadline=None)
@given(
    args=st.lists(
        st.dictionaries(st.text(min_size=1, max_size=6), JSON_SCALARS, max_size=3),
        min_size=1,
        max_size=4,
    )
)
def test_every_call_gets_a_unique_id_and_its_arguments(args):
    acc = StreamAccumulator("gemini")
    turn = _Turn(3)
    for i, a in enumerate(args):
        list(decode_sdk_chunk(_typed(chunk(call_part(f"f{i % 2}", a))), acc, turn))
    list(decode_sdk_chunk(_typed(chunk(finish="STOP")), acc, turn))
    message = acc.finish().message
    assert [dict(c.arguments) for c in message.tool_calls] == args
    assert len({c.id for c in message.tool_calls}) == len(args)


def _typed(wire: object) -> object:
    """A wire chunk as the SDK hands it over (``None`` when the SDK rejects it)."""
    from google.genai import types

    try:
        return types.GenerateContentResponse.model_validate_json(json.dumps(wire))
    except Exception:  # pydantic errors, and the SDK's enum parsing (AttributeError)
        return None


async def test_html_page_with_status_200_is_malformed_with_the_page(server):
    server.push(Reply.html(200))
    m = GeminiModel("gemini-2.5-flash", base_url=server.url, api_key="k")
    err = failed(await collect(m, request([USER])))
    # google-genai hands over the body line by line: the first line is what we get.
    assert (
        err.error.kind == "malformed_response" and "<!doctype html" in (err.error.raw or "").lower()
    )


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 60).decode()
SHOT_CALL = ToolCallPart("call-1", "get_weather", {"city": "Oslo"})
SHOT = Result(
    "call-1", "get_weather", "[image image/png, 68 bytes]", media=(MediaPart("image/png", PNG),)
)
SHOT_HISTORY = [USER, Message("assistant", (SHOT_CALL,)), Message.tool_results([SHOT])]


async def test_gemini_3_gets_the_image_inside_the_function_response(server):
    # multimodal function responses (Gemini 3 and later): the image rides in the
    # functionResponse's own parts, through the SDK to the wire
    server.push(Reply.sse([chunk({"text": "A black square."}, finish="STOP")]))
    done(await collect(model(server, "gemini-3-pro-preview"), request(SHOT_HISTORY)))
    [part] = server.requests[0].json["contents"][2]["parts"]
    response = part["functionResponse"]
    assert response["response"] == {"result": "[image image/png, 68 bytes]"}
    # the SDK writes these parts with the proto field names (Google's JSON parsers take
    # both spellings); the payload this adapter builds uses the camelCase ones
    assert response["parts"] == [{"inline_data": {"mime_type": "image/png", "data": PNG}}]
    payload, _ = encode_request("gemini-3-pro-preview", request(SHOT_HISTORY))
    [part] = payload["contents"][2]["parts"]
    assert part["functionResponse"]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": PNG}}
    ]


def test_older_gemini_models_get_the_note_instead_of_the_image():
    payload, _ = encode_request("gemini-2.5-flash", request(SHOT_HISTORY))
    [part] = payload["contents"][2]["parts"]
    assert "parts" not in part["functionResponse"]
    assert "takes no images" in part["functionResponse"]["response"]["result"]
    gif = Result(
        "call-1",
        "get_weather",
        "[image image/gif, 4 bytes]",
        media=(MediaPart("image/gif", "AAAA"),),
    )
    history = [*SHOT_HISTORY[:2], Message.tool_results([gif])]
    payload, _ = encode_request("gemini-3-pro-preview", request(history))
    [part] = payload["contents"][2]["parts"]
    assert "parts" not in part["functionResponse"]  # a type Gemini does not list
