"""OpenAI Chat / Responses specifics beyond the shared contract (vendor flags, hooks,
non-streamed mode, refusal, in-stream failures, history re-encoding)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from contract import collect, done, failed
from fakeserver import FakeServer, Reply
from kit_openai import ChatKit, ResponsesKit

from loopwright import Agent, Limits, RunStop, tool
from loopwright.core.messages import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from loopwright.core.protocols import ModelRequest, ModelSettings, NamedTool
from loopwright.core.tools import ToolSpec
from loopwright.providers.openai_chat import OpenAIChatModel
from loopwright.providers.openai_responses import OpenAIResponsesModel
from loopwright.providers.registry import VENDORS, Vendor

TOOL = ToolSpec(
    "files.read",
    "Read a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"],
    },
)
USER = Message.user("hi")


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


def chat(server: FakeServer, vendor: str = "openai", **kw: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        "m",
        base_url=server.url + "/v1",
        api_key="k",
        vendor=VENDORS[vendor],
        **kw,
    )


def responses(server: FakeServer, **kw: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("m", base_url=server.url + "/v1", api_key="k", **kw)


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return ChatKit.chunk(delta, finish)


# ----------------------------------------------------------------- request shape


def test_chat_settings_follow_vendor_flags():
    req = ModelRequest(
        [USER],
        "sys",
        [TOOL],
        ModelSettings(
            temperature=0.2,
            max_tokens=50,
            stop=("END",),
            seed=7,
            reasoning=10_000,
            tool_choice=NamedTool("files.read"),
            parallel_tool_calls=False,
            strict_tools=True,
            extra={"user": "u1"},
        ),
    )
    openai = OpenAIChatModel("m", api_key="k", vendor=VENDORS["openai"]).encode(req)[0]
    assert openai["max_completion_tokens"] == 50 and "max_tokens" not in openai
    assert openai["reasoning_effort"] == "high" and openai["seed"] == 7 and openai["user"] == "u1"
    assert openai["stop"] == ["END"] and openai["parallel_tool_calls"] is False
    wire = openai["tools"][0]["function"]
    assert openai["tool_choice"] == {"type": "function", "function": {"name": wire["name"]}}
    assert wire["strict"] is True and wire["parameters"]["additionalProperties"] is False
    assert wire["parameters"]["properties"]["limit"]["type"] == ["integer", "null"]
    deepseek = OpenAIChatModel("m", api_key="k", vendor=VENDORS["deepseek"]).encode(req)[0]
    assert deepseek["max_tokens"] == 50
    assert "strict" not in deepseek["tools"][0]["function"]  # vendor has no strict mode
    dev = dataclasses.replace(VENDORS["openai"], system_role="developer")
    body = OpenAIChatModel("m", api_key="k", vendor=dev).encode(req)[0]
    assert body["messages"][0] == {"role": "developer", "content": "sys"}


@pytest.mark.parametrize("choice", ["required", "none"])
def test_tool_choice_strings(choice):
    req = ModelRequest([USER], None, [TOOL], ModelSettings(tool_choice=choice))
    assert OpenAIChatModel("m", api_key="k").encode(req)[0]["tool_choice"] == choice
    assert OpenAIResponsesModel("m", api_key="k").encode(req)[0]["tool_choice"] == choice
    no_tools = ModelRequest([USER], None, [], ModelSettings(tool_choice=choice))
    assert "tool_choice" not in OpenAIChatModel("m", api_key="k").encode(no_tools)[0]


def test_responses_named_choice_strict_and_no_stop():
    req = ModelRequest(
        [USER],
        "sys",
        [TOOL],
        ModelSettings(tool_choice=NamedTool("files.read"), strict_tools=True, max_tokens=9),
    )
    body = OpenAIResponsesModel("m", api_key="k").encode(req)[0]
    assert body["tool_choice"] == {"type": "function", "name": body["tools"][0]["name"]}
    assert body["tools"][0]["strict"] is True and body["max_output_tokens"] == 9
    assert body["instructions"] == "sys"


async def test_responses_stop_sequences_are_a_bad_request(server):
    req = ModelRequest([USER], settings=ModelSettings(stop=("x",)))
    err = failed(await collect(responses(server), req))
    assert err.error.kind == "bad_request" and "settings.stop" in str(err.error)
    assert not server.requests, "nothing is sent for a request that cannot be expressed"


def test_history_reencoding_ids_reasoning_and_names():
    foreign = ReasoningPart("I pondered.", {"anthropic": {"signature": "sig-abc"}})
    own = ReasoningPart("Mine.", {"openai-chat": {"field": "reasoning_content"}})
    call = ToolCallPart(
        "toolu_01A09q90qw90lq917835lq9.x/with:odd#chars-and-length", "files.read", {"path": "a"}, ""
    )
    history = [
        USER,
        Message("assistant", (foreign, own, TextPart("ok"), call)),
        Message.tool_results([ToolResultPart(call.id, call.name, "data")]),
    ]
    req = ModelRequest(history, tools=[TOOL])
    deepseek = OpenAIChatModel("m", api_key="k", vendor=VENDORS["deepseek"]).encode(req)[0]
    assistant, result = deepseek["messages"][1], deepseek["messages"][2]
    assert assistant["reasoning_content"] == "<reasoning>\nI pondered.\n</reasoning>\nMine."
    wire_id = assistant["tool_calls"][0]["id"]
    assert len(wire_id) <= 40 and result["tool_call_id"] == wire_id
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"path": "a"}'
    openai = OpenAIChatModel("m", api_key="k", vendor=VENDORS["openai"]).encode(req)[0]
    assert "reasoning_content" not in openai["messages"][1]  # OpenAI takes no reasoning input
    resp = OpenAIResponsesModel("m", api_key="k").encode(req)[0]
    kinds = [i.get("type", "message") for i in resp["input"]]
    assert "reasoning" not in kinds  # foreign reasoning has no place in Responses input
    assert resp["input"][2]["call_id"] == resp["input"][3]["call_id"]
    assert "sig-abc" not in str(resp) and "sig-abc" not in str(deepseek)


# ----------------------------------------------------------------- hooks


async def test_on_payload_sees_and_replaces_request(server):
    seen: list[tuple[str, Any]] = []

    def hook(direction: str, payload: Any) -> Any:
        seen.append((direction, payload))
        if direction == "request":
            return {**payload, "model": "replaced", "metadata": {"k": "v"}}
        return None

    server.push(ChatKit().reply(__import__("contract").PLAIN))
    done(await collect(chat(server, on_payload=hook), ModelRequest([USER])))
    body = server.requests[0].json
    assert body["model"] == "replaced" and body["metadata"] == {"k": "v"}
    assert [d for d, _ in seen] == ["request", "response"]
    events = seen[1][1]["events"]
    assert events and events[0]["object"] == "chat.completion.chunk"


async def test_failing_hook_is_a_stream_error_not_an_exception(server):
    def hook(direction: str, payload: Any) -> Any:
        raise RuntimeError("boom")

    err = failed(await collect(chat(server, on_payload=hook), ModelRequest([USER])))
    assert err.error.kind == "bad_request" and "boom" in str(err.error)
    assert not server.requests


# ----------------------------------------------------------------- decoding details


async def test_chat_non_streamed(server):
    server.push(
        Reply.json(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "reasoning_content": "think",
                            "tool_calls": [
                                {
                                    "id": "call_abc123",
                                    "type": "function",
                                    "function": {
                                        "name": "get_current_weather",
                                        "arguments": '{\n"location": "Boston, MA"\n}',
                                    },
                                }
                            ],
                        },
                    }
                ],
                "usage": {
                    "prompt_tokens": 82,
                    "completion_tokens": 17,
                    "total_tokens": 99,
                    "prompt_cache_hit_tokens": 64,
                },
            }
        )
    )
    result = done(await collect(chat(server, "deepseek", stream=False), ModelRequest([USER])))
    assert "stream" not in server.requests[0].json
    assert result.stop_reason == "tool_use"
    assert result.message.tool_calls[0].arguments == {"location": "Boston, MA"}
    assert result.message.parts[0] == ReasoningPart(
        "think", {"openai-chat": {"field": "reasoning_content"}}
    )
    assert (result.usage.input_tokens, result.usage.cached_tokens) == (82, 64)


async def test_chat_legacy_function_call_is_a_tool_call(server):
    """A server speaking the deprecated functions API answers with ``function_call`` (no
    id), streamed or whole; it was an "empty response" error on every retry."""
    pieces = ['{"path": "a', '.txt", "limit": 3}']
    server.push(
        Reply.sse(
            [
                chunk(
                    {"role": "assistant", "content": None, "function_call": {"name": "files_read"}}
                ),
                *[chunk({"function_call": {"arguments": p}}) for p in pieces],
                chunk({}, "function_call"),
            ],
            done=True,
        )
    )
    result = done(await collect(chat(server), ModelRequest([USER])))
    assert result.stop_reason == "tool_use"
    [call] = result.message.tool_calls
    assert (call.name, call.arguments) == ("files_read", {"path": "a.txt", "limit": 3})
    message = {"role": "assistant", "content": None, "function_call": {"name": "files_read"}}
    message["function_call"]["arguments"] = "".join(pieces)
    whole = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "function_call", "message": message}],
    }
    server.push(Reply.json(whole))
    result = done(await collect(chat(server, stream=False), ModelRequest([USER])))
    assert result.message.tool_calls[0].arguments == {"path": "a.txt", "limit": 3}


async def test_chat_reasoning_field_variant_and_refusal(server):
    server.push(
        Reply.sse(
            [chunk({"reasoning": "hm"}), chunk({"refusal": "I can't help."}), chunk({}, "stop")],
            done=True,
        )
    )
    result = done(await collect(chat(server, "openrouter"), ModelRequest([USER])))
    assert result.stop_reason == "refusal"
    assert result.message.text == "I can't help." and result.message.parts[0].text == "hm"


async def test_chat_parallel_calls_reusing_index_zero(server):
    server.push(
        Reply.sse(
            [
                chunk(
                    {
                        "tool_calls": [
                            {"index": 0, "id": "a1", "function": {"name": "x", "arguments": "{}"}}
                        ]
                    }
                ),
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "b2",
                                "function": {"name": "y", "arguments": '{"q": 1}'},
                            }
                        ]
                    }
                ),
                chunk({}, "tool_calls"),
            ],
            done=True,
        )
    )
    result = done(await collect(chat(server), ModelRequest([USER])))
    assert [(c.id, c.name, dict(c.arguments)) for c in result.message.tool_calls] == [
        ("a1", "x", {}),
        ("b2", "y", {"q": 1}),
    ]


async def test_chat_content_filter_cutting_a_call_runs_no_tool_and_stops_as_refused(server):
    ran: list[str] = []

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(path)
        return "content"

    start = {"index": 0, "id": "call_1", "type": "function"}
    server.push(
        Reply.sse(
            [
                chunk({"role": "assistant", "content": ""}),
                chunk(
                    {"tool_calls": [{**start, "function": {"name": "read_file", "arguments": ""}}]}
                ),
                chunk(
                    {"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "/home/us'}}]}
                ),
                chunk({}, "content_filter"),
            ],
            done=True,
        )
    )
    result = await Agent(chat(server), tools=[read_file], limits=Limits(max_turns=3)).arun("go")
    assert result.stop is RunStop.REFUSAL and ran == [] and len(server.requests) == 1
    reply = result.messages[-1]
    assert reply.role == "assistant" and not reply.tool_calls
    withheld = reply.provider_meta["openai-chat"]["withheld_calls"]
    assert withheld == [{"name": "read_file", "arguments": '{"path": "/home/us'}]


async def test_an_aborted_generation_is_retried_not_taken_for_the_answer(server):
    """vLLM ends a request it aborted with finish_reason "abort": the text so far is a
    fragment; it was the run's final answer."""
    server.push(
        Reply.sse([chunk({"role": "assistant", "content": "The answer is"}), chunk({}, "abort")]),
        Reply.sse([chunk({"content": "The answer is 4."}), chunk({}, "stop")], done=True),
    )
    err = failed(await collect(chat(server, "vllm"), ModelRequest([USER])))
    assert err.error.kind == "transient" and "aborted" in str(err.error)
    assert err.partial is not None and err.partial.text == "The answer is"
    result = await Agent(chat(server, "vllm"), sleep=_no_wait).arun("2+2?")
    assert result.stop is RunStop.FINAL_ANSWER and result.answer == "The answer is 4."


async def _no_wait(_: float) -> None:
    return None


async def test_a_cancelled_response_is_not_an_answer(server):
    server.push(_text_then("response.completed", _response("cancelled")))
    err = failed(await collect(responses(server), ModelRequest([USER])))
    assert err.error.kind == "transient" and "'cancelled'" in str(err.error)
    assert err.partial is not None and err.partial.text == "Half"


async def test_chat_empty_answer_is_an_error(server):
    server.push(
        Reply.sse([chunk({"role": "assistant", "content": ""}), chunk({}, "stop")], done=True)
    )
    err = failed(await collect(chat(server), ModelRequest([USER])))
    assert err.error.kind == "malformed_response" and "empty response" in str(err.error)


async def test_chat_stream_ending_without_finish_reason(server):
    server.push(Reply.sse([chunk({"content": "partial"})]))  # clean end, no finish, no [DONE]
    err = failed(await collect(chat(server), ModelRequest([USER])))
    assert err.error.kind == "transient" and err.partial is not None
    assert err.partial.text == "partial"


async def test_chat_in_stream_error_object(server):
    server.push(
        Reply.sse(
            [
                chunk({"content": "a"}),
                {
                    "error": {
                        "message": "This model's maximum context length is 4096 tokens",
                        "code": 400,
                    }
                },
            ]
        )
    )
    err = failed(await collect(chat(server), ModelRequest([USER])))
    assert err.error.kind == "context_overflow" and err.partial is not None


async def test_responses_non_streamed(server):
    events = ResponsesKit().events(__import__("contract").PARALLEL)
    final_response = events[-1][1]["response"]
    server.push(Reply.json(final_response))
    result = done(await collect(responses(server, stream=False), ModelRequest([USER])))
    assert result.message.text == "Checking both."
    assert [c.id for c in result.message.tool_calls] == ["call_p1", "call_p2"]
    assert result.message.parts[0].provider_meta == {"openai-responses": {"id": "msg_1"}}


async def test_responses_failed_overflow_and_error_event(server):
    failed_response = {
        "id": "resp_1",
        "object": "response",
        "status": "failed",
        "output": [],
        "error": {
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model.",
        },
    }
    server.push(
        Reply.sse(
            [
                (
                    "response.failed",
                    {"type": "response.failed", "sequence_number": 1, "response": failed_response},
                )
            ]
        )
    )
    err = failed(await collect(responses(server), ModelRequest([USER])))
    assert err.error.kind == "context_overflow"
    server.push(
        Reply.sse(
            [
                (
                    "error",
                    {
                        "type": "error",
                        "sequence_number": 1,
                        "code": "server_error",
                        "message": "upstream hiccup",
                        "param": None,
                    },
                )
            ]
        )
    )
    err = failed(await collect(responses(server), ModelRequest([USER])))
    assert err.error.kind == "transient" and "upstream hiccup" in str(err.error)


def _response(status: str, **fields: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": status, "output": [], **fields}


def _text_then(event: str, response: dict[str, Any]) -> Reply:
    """A Responses stream writing "Half" and ending with ``event`` carrying ``response``."""
    item = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    return Reply.sse(
        [
            (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "sequence_number": 1,
                    "item": {**item, "status": "in_progress"},
                },
            ),
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "output_index": 0,
                    "item_id": "msg_1",
                    "content_index": 0,
                    "delta": "Half",
                    "sequence_number": 2,
                },
            ),
            (event, {"type": event, "sequence_number": 3, "response": response}),
        ]
    )


@pytest.mark.parametrize(
    ("code", "kind", "retryable"),
    [
        ("invalid_prompt", "bad_request", False),
        ("bio_policy", "bad_request", False),
        ("image_parse_error", "bad_request", False),
        ("rate_limit_exceeded", "rate_limited", True),
        ("vector_store_timeout", "transient", True),
    ],
)
async def test_responses_failed_is_classified_by_its_error_code(server, code, kind, retryable):
    error = {"code": code, "message": "The response failed."}
    server.push(_text_then("response.failed", _response("failed", error=error)))
    err = failed(await collect(responses(server), ModelRequest([USER])))
    assert (err.error.kind, err.error.retryable) == (kind, retryable)
    assert err.partial is not None and err.partial.text == "Half"
    event = {"type": "error", "sequence_number": 1, "code": code, "message": "No.", "param": None}
    server.push(Reply.sse([("error", event)]))  # the same code in an in-stream error event
    err = failed(await collect(responses(server), ModelRequest([USER])))
    assert (err.error.kind, err.error.retryable) == (kind, retryable)


@pytest.mark.parametrize("reason", ["max_messages", "steered"])
async def test_responses_incomplete_for_a_continuation_is_an_incomplete_turn(server, reason):
    details = {"reason": reason}
    server.push(
        _text_then("response.incomplete", _response("incomplete", incomplete_details=details))
    )
    err = failed(await collect(responses(server), ModelRequest([USER])))
    assert err.error.kind == "incomplete_turn" and not err.error.retryable
    assert reason in str(err.error) and err.partial is not None and err.partial.text == "Half"


async def test_responses_incomplete_for_an_unknown_reason_is_not_max_tokens(server):
    details = {"reason": "quota_window"}
    server.push(
        _text_then("response.incomplete", _response("incomplete", incomplete_details=details))
    )
    err = failed(await collect(responses(server), ModelRequest([USER])))
    assert err.error.kind == "malformed_response" and "quota_window" in str(err.error)


async def test_responses_refusal(server):
    item = {
        "id": "msg_9",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": "No."}],
    }
    server.push(
        Reply.sse(
            [
                (
                    "response.output_item.added",
                    {
                        "type": "response.output_item.added",
                        "output_index": 0,
                        "sequence_number": 1,
                        "item": {**item, "content": []},
                    },
                ),
                (
                    "response.refusal.delta",
                    {
                        "type": "response.refusal.delta",
                        "output_index": 0,
                        "item_id": "msg_9",
                        "content_index": 0,
                        "delta": "No.",
                        "sequence_number": 2,
                    },
                ),
                (
                    "response.output_item.done",
                    {
                        "type": "response.output_item.done",
                        "output_index": 0,
                        "sequence_number": 3,
                        "item": item,
                    },
                ),
                (
                    "response.completed",
                    {
                        "type": "response.completed",
                        "sequence_number": 4,
                        "response": {
                            "id": "resp_1",
                            "object": "response",
                            "status": "completed",
                            "output": [item],
                        },
                    },
                ),
            ]
        )
    )
    result = done(await collect(responses(server), ModelRequest([USER])))
    assert result.stop_reason == "refusal" and result.message.text == "No."


def test_custom_vendor_entry_is_enough():
    vendor = Vendor(
        "acme",
        "openai-chat",
        "https://llm.acme.test/v1",
        ("ACME_KEY",),
        max_tokens_field="max_completion_tokens",
        reasoning_field="reasoning",
    )
    model = OpenAIChatModel("acme-1", api_key="k", vendor=vendor)
    body = model.encode(ModelRequest([USER], settings=ModelSettings(max_tokens=3)))[0]
    assert body["max_completion_tokens"] == 3 and model.name == "acme:acme-1"


@pytest.mark.parametrize("make", [chat, responses], ids=["chat", "responses"])
async def test_an_html_page_with_status_200_is_malformed_with_the_page(server, make) -> None:
    # a proxy's login page used to end as "the stream ended before the response completed"
    server.push(Reply.html(200))
    err = failed(await collect(make(server), ModelRequest(messages=(USER,))))
    assert err.error.kind == "malformed_response"
    assert "expected an event stream, got text/html" in str(err.error)
    assert "<html" in (err.error.raw or "").lower()
