"""Bedrock adapter specifics beyond the shared contract: the event-stream test encoder
itself, in-stream exception frames, stop reasons, the missing ``none`` tool choice,
redacted reasoning blobs, id normalisation and property tests of the frame reader."""

from __future__ import annotations

import base64
import json

import eventstream as es
import pytest
from botocore.eventstream import EventStreamBuffer
from contract import USER, collect, done, failed
from fakeserver import FakeServer, Reply
from hypothesis import given, settings
from hypothesis import strategies as st
from kit_bedrock import MODEL_ID, OPTIONS

from loopwright.core.errors import ProviderError
from loopwright.core.messages import MediaPart, Message, ReasoningPart, StopReason, ToolCallPart
from loopwright.core.messages import ToolResultPart as Result
from loopwright.core.protocols import ModelRequest, ModelSettings, NamedTool
from loopwright.core.tools import ToolSpec
from loopwright.providers._stream import StreamAccumulator
from loopwright.providers.bedrock import (
    BedrockModel,
    BedrockOptions,
    _Blocks,
    decode_event,
    encode_request,
)
from loopwright.providers.bedrock_wire import _frames

SONG = ToolSpec(
    "top_song",
    "Most popular song on a radio station.",
    {"type": "object", "properties": {"sign": {"type": "string"}}, "required": ["sign"]},
)


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


def model(server: FakeServer) -> BedrockModel:
    return BedrockModel(MODEL_ID, base_url=server.url, options=OPTIONS)


def reply(*events: tuple[str, dict] | bytes) -> Reply:
    return Reply(200, {"content-type": es.CONTENT_TYPE}, es.stream(events))


def request(messages: list[Message], **kw: object) -> ModelRequest:
    return ModelRequest(messages, "sys", (SONG,), ModelSettings(**kw))


START = ("messageStart", {"role": "assistant"})


def text(index: int, value: str) -> list[tuple[str, dict]]:
    return [
        ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": value}}),
        ("contentBlockStop", {"contentBlockIndex": index}),
    ]


def stop(reason: str) -> list[tuple[str, dict]]:
    return [
        ("messageStop", {"stopReason": reason}),
        ("metadata", {"usage": {"inputTokens": 9, "outputTokens": 3, "totalTokens": 12}}),
    ]


# ----------------------------------------------------------------- the test encoder


def test_encoder_frames_decode_with_botocore():
    data = es.event("contentBlockDelta", {"delta": {"text": "hé"}}) + es.exception(
        "throttlingException", "slow"
    )
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    first, second = list(buffer)
    assert first.headers[":event-type"] == "contentBlockDelta"
    assert json.loads(first.payload) == {"delta": {"text": "hé"}}
    assert second.headers[":message-type"] == "exception"
    assert second.headers[":exception-type"] == "throttlingException"


# ----------------------------------------------------------------- AWS documentation example


async def test_documented_tool_use_example_round_trip(server):
    # docs.aws.amazon.com/bedrock/latest/userguide/tool-use-inference-call.html
    server.push(
        reply(
            START,
            (
                "contentBlockStart",
                {
                    "contentBlockIndex": 0,
                    "start": {
                        "toolUse": {
                            "toolUseId": "tooluse_20Z9zl0BQWSXjFuLKdTJcA",
                            "name": "top_song",
                        }
                    },
                },
            ),
            (
                "contentBlockDelta",
                {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"sign": "WZPZ"}'}}},
            ),
            ("contentBlockStop", {"contentBlockIndex": 0}),
            *stop("tool_use"),
        ),
        reply(START, *text(0, "Elemental Hotel."), *stop("end_turn")),
    )
    m = model(server)
    first = done(await collect(m, request([USER])))
    (call,) = first.message.tool_calls
    assert (call.id, call.name, dict(call.arguments)) == (
        "tooluse_20Z9zl0BQWSXjFuLKdTJcA",
        "top_song",
        {"sign": "WZPZ"},
    )
    results = Message.tool_results([Result(call.id, "top_song", '{"song": "Elemental Hotel"}')])
    second = done(await collect(m, request([USER, first.message, results])))
    assert second.message.text == "Elemental Hotel." and second.usage.input_tokens == 9
    body = server.requests[1].json
    assert server.requests[1].path == f"/model/{MODEL_ID.replace(':', '%3A')}/converse-stream"
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "tooluse_20Z9zl0BQWSXjFuLKdTJcA",
                    "content": [{"text": '{"song": "Elemental Hotel"}'}],
                    "status": "success",
                }
            }
        ],
    }
    assert "modelId" not in body, "modelId travels in the URL, not the body"


# ----------------------------------------------------------------- errors in the stream


async def test_exception_frame_mid_stream_keeps_partial(server):
    server.push(
        reply(
            START,
            ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Part"}}),
            es.exception("modelStreamErrorException", "model stream failed"),
        )
    )
    err = failed(await collect(model(server), request([USER])))
    assert err.error.kind == "transient" and "modelStreamErrorException" in str(err.error)
    assert err.partial is not None and err.partial.text == "Part"
    assert len(server.requests) == 1


async def test_exception_frame_before_output_is_retryable_for_the_loop(server):
    server.push(
        reply(START, es.exception("throttlingException", "Too many tokens")),
        reply(START, *text(0, "ok"), *stop("end_turn")),
    )
    err = failed(await collect(model(server), request([USER])))
    assert err.error.kind == "rate_limited" and len(server.requests) == 1
    result = done(await collect(model(server), request([USER])))  # the loop's retry
    assert result.message.text == "ok" and len(server.requests) == 2


async def test_in_stream_validation_overflow_is_context_overflow(server):
    server.push(
        reply(START, es.exception("validationException", "Input is too long for requested model."))
    )
    err = failed(await collect(model(server), request([USER])))
    assert err.error.kind == "context_overflow" and len(server.requests) == 1


async def test_broken_frame_is_malformed_with_raw_bytes(server):
    good = es.event("messageStart", {"role": "assistant"})
    broken = bytearray(
        es.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}})
    )
    broken[-1] ^= 0xFF  # corrupt the message CRC
    server.push(Reply(200, {"content-type": es.CONTENT_TYPE}, (good, bytes(broken))))
    m = BedrockModel(MODEL_ID, base_url=server.url, options=OPTIONS)
    err = failed(await collect(m, request([USER])))
    assert err.error.kind == "malformed_response" and err.error.raw


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("model_context_window_exceeded", "context_overflow"),
        ("malformed_tool_use", "malformed_response"),
        ("malformed_model_output", "malformed_response"),
    ],
)
async def test_failure_stop_reasons_are_errors_with_partial(server, raw, kind):
    server.push(reply(START, *text(0, "So far"), *stop(raw)))
    err = failed(await collect(model(server), request([USER])))
    assert err.error.kind == kind and raw in (err.error.raw or "")
    assert err.partial is not None and err.partial.text == "So far"


@pytest.mark.parametrize("raw", ["guardrail_intervened", "content_filtered"])
async def test_filtered_stops_are_refusals(server, raw):
    server.push(reply(START, *text(0, "Sorry."), *stop(raw)))
    assert done(await collect(model(server), request([USER]))).stop_reason is StopReason.REFUSAL


# ----------------------------------------------------------------- request shape


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", None),
        ("required", {"any": {}}),
        (NamedTool("top_song"), {"tool": {"name": "top_song"}}),
    ],
)
def test_tool_choice_mapping(choice, expected):
    payload, _ = encode_request(MODEL_ID, request([USER], tool_choice=choice))
    assert payload["toolConfig"].get("toolChoice") == expected


def test_tool_choice_none_drops_tools_unless_history_needs_them():
    payload, _ = encode_request(MODEL_ID, request([USER], tool_choice="none"))
    assert "toolConfig" not in payload
    history = [
        USER,
        Message("assistant", (ToolCallPart("t1", "top_song", {"sign": "A"}),)),
        Message.tool_results([Result("t1", "top_song", "x")]),
    ]
    payload, _ = encode_request(MODEL_ID, request(history, tool_choice="none"))
    assert payload["toolConfig"]["tools"] and "toolChoice" not in payload["toolConfig"]


def test_inference_config_thinking_and_extra():
    payload, _ = encode_request(
        MODEL_ID,
        request(
            [USER],
            temperature=0.1,
            max_tokens=50,
            stop=("END",),
            extra={"serviceTier": {"type": "priority"}},
        ),
    )
    assert payload["inferenceConfig"] == {
        "maxTokens": 50,
        "temperature": 0.1,
        "stopSequences": ["END"],
    }
    assert payload["serviceTier"] == {"type": "priority"}
    payload, _ = encode_request(MODEL_ID, request([USER], reasoning="low", temperature=0.1))
    assert payload["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 2048}
    }
    assert payload["inferenceConfig"]["maxTokens"] > 2048
    assert "temperature" not in payload["inferenceConfig"]


def test_roles_alternate_and_foreign_ids_are_normalised():
    history = [
        USER,
        Message.user("again"),
        Message("assistant", (ToolCallPart("call.1/x", "top_song", {"sign": "A"}),)),
        Message.tool_results([Result("call.1/x", "top_song", "y")]),
        Message.user("thanks"),
    ]
    payload, _ = encode_request(MODEL_ID, request(history))
    roles = [m["role"] for m in payload["messages"]]
    assert roles == ["user", "assistant", "user"]
    use_id = payload["messages"][1]["content"][0]["toolUse"]["toolUseId"]
    assert use_id != "call.1/x" and all(c.isalnum() or c in "_-" for c in use_id)
    assert payload["messages"][2]["content"][0]["toolResult"]["toolUseId"] == use_id
    assert payload["messages"][2]["content"][1] == {"text": "thanks"}


async def test_redacted_reasoning_round_trips_as_bytes(server):
    blob = b"\x01opaque\xfe"
    server.push(
        reply(
            START,
            (
                "contentBlockDelta",
                {
                    "contentBlockIndex": 0,
                    "delta": {
                        "reasoningContent": {"redactedContent": base64.b64encode(blob).decode()}
                    },
                },
            ),
            ("contentBlockStop", {"contentBlockIndex": 0}),
            *text(1, "Done."),
            *stop("end_turn"),
        ),
        reply(START, *text(0, "ok"), *stop("end_turn")),
    )
    m = model(server)
    first = done(await collect(m, request([USER], reasoning=1024)))
    reasoning = first.message.parts[0]
    assert isinstance(reasoning, ReasoningPart)
    assert reasoning.provider_meta == {"bedrock": {"redacted": base64.b64encode(blob).decode()}}
    done(await collect(m, request([USER, first.message, Message.user("go on")], reasoning=1024)))
    block = server.requests[1].json["messages"][1]["content"][0]
    assert base64.b64decode(block["reasoningContent"]["redactedContent"]) == blob


async def test_hook_sees_request_and_jsonable_events(server):
    seen: list[tuple[str, object]] = []
    server.push(reply(START, *text(0, "hi"), *stop("end_turn")))
    m = BedrockModel(
        MODEL_ID,
        base_url=server.url,
        options=OPTIONS,
        on_payload=lambda d, p: seen.append((d, p)),
    )
    done(await collect(m, request([USER])))
    assert [d for d, _ in seen] == ["request", "response"]
    assert seen[0][1]["modelId"] == MODEL_ID
    json.dumps(seen[1][1])
    assert {"messageStop": {"stopReason": "end_turn"}} in seen[1][1]["events"]


# ----------------------------------------------------------------- properties


class _Raw:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self):
        yield from self.chunks


class _Stream:
    def __init__(self, chunks: list[bytes]) -> None:
        self._raw_stream = _Raw(chunks)


@settings(max_examples=150, deadline=None)
@given(chunks=st.lists(st.binary(max_size=64), max_size=6))
def test_frame_reader_never_crashes_on_garbage_bytes(chunks):
    try:
        list(_frames(_Stream(chunks), 1 << 20))
    except ProviderError as exc:
        assert exc.kind in (
            "malformed_response",
            "transient",
            "rate_limited",
            "bad_request",
            "auth",
            "context_overflow",
        )


JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=8,
)
EVENT = st.dictionaries(
    st.sampled_from(
        [
            "messageStart",
            "contentBlockStart",
            "contentBlockDelta",
            "contentBlockStop",
            "messageStop",
            "metadata",
            "internalServerException",
            "newThing",
        ]
    ),
    ANY_JSON,
    min_size=1,
    max_size=1,
)


@settings(max_examples=150, deadline=None)
@given(events=st.lists(EVENT, max_size=8))
def test_decoder_raises_only_taxonomy_errors_on_arbitrary_events(events):
    acc = StreamAccumulator("bedrock")
    blocks = _Blocks()
    for event in events:
        try:
            list(decode_event(event, acc, blocks))
        except ProviderError:
            return
    assert acc.finish().type in ("response_done", "stream_error")


# ----------------------------------------------------------------- configuration errors


@pytest.fixture
def bare_aws_env(monkeypatch, tmp_path):
    for var in (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_BEARER_TOKEN_BEDROCK",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


async def test_missing_region_is_one_line_naming_the_variable(server, bare_aws_env):
    m = BedrockModel(MODEL_ID, base_url=server.url)
    err = failed(await collect(m, request([USER])))
    assert err.error.kind == "bad_request" and "AWS_REGION" in str(err.error)
    assert server.requests == []


async def test_missing_credentials_is_an_auth_error(server, bare_aws_env):
    m = BedrockModel(
        MODEL_ID,
        base_url=server.url,
        options=BedrockOptions(region="eu-west-1"),
    )
    err = failed(await collect(m, request([USER])))
    assert err.error.kind == "auth" and "AWS_BEARER_TOKEN_BEDROCK" in str(err.error)


async def test_html_page_with_status_200_is_malformed_with_the_bytes(server):
    server.push(Reply.html(200))
    m = BedrockModel(MODEL_ID, base_url=server.url, options=OPTIONS)
    err = failed(await collect(m, request([USER])))
    assert err.error.kind == "malformed_response" and "html" in (err.error.raw or "").lower()


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 60
SHOT = Result(
    "call-1",
    "top_song",
    "[image image/png, 68 bytes]",
    media=(MediaPart("image/png", base64.b64encode(PNG).decode()),),
)
SHOT_HISTORY = [
    USER,
    Message("assistant", (ToolCallPart("call-1", "top_song", {"sign": "WZPZ"}),)),
    Message.tool_results([SHOT]),
]


async def test_claude_gets_the_image_inside_the_tool_result_as_bytes(server):
    # the service model documents images in tool results for Claude and Nova: boto3
    # sends the raw bytes base64-encoded on the JSON wire, as Bedrock expects
    server.push(reply(START, *text(0, "A black square."), *stop("end_turn")))
    done(await collect(model(server), request(SHOT_HISTORY)))
    [block] = server.requests[0].json["messages"][2]["content"]
    content = block["toolResult"]["content"]
    assert content[0] == {"text": "[image image/png, 68 bytes]"}
    assert content[1]["image"]["format"] == "png"
    assert base64.b64decode(content[1]["image"]["source"]["bytes"]) == PNG


@pytest.mark.parametrize(
    ("model_id", "takes"),
    [
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", True),
        ("amazon.nova-pro-v1:0", True),
        ("meta.llama3-1-70b-instruct-v1:0", False),
        ("mistral.mistral-large-2407-v1:0", False),
    ],
)
def test_only_models_that_take_images_in_tool_results_get_them(model_id, takes):
    payload, _ = encode_request(model_id, request(SHOT_HISTORY))
    content = payload["messages"][2]["content"][0]["toolResult"]["content"]
    assert any("image" in c for c in content) is takes
    if not takes:
        assert "takes no images" in content[0]["text"]


def test_an_image_type_bedrock_cannot_take_falls_back_to_the_note():
    odd = Result(
        "call-1", "top_song", "[image image/bmp, 4 bytes]", media=(MediaPart("image/bmp", "AAAA"),)
    )
    history = [*SHOT_HISTORY[:2], Message.tool_results([odd])]
    payload, _ = encode_request(MODEL_ID, request(history))
    [content] = payload["messages"][2]["content"][0]["toolResult"]["content"]
    assert "takes no images" in content["text"]
