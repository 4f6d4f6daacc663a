"""Wire kits for the two OpenAI protocols (see contract.py for the kit contract).

Shapes follow the OpenAI API reference and the OpenAPI examples in
``shared/wire-samples/openai_openapi_examples.json``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from contract import Answer, Call
from fakeserver import Recorded, Reply

from loopwright.core.protocols import Model, PayloadHook
from loopwright.providers.openai_chat import OpenAIChatModel
from loopwright.providers.openai_responses import OpenAIResponsesModel
from loopwright.providers.registry import VENDORS
from loopwright.providers.transport import CallLimits

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# Lines a conforming SSE client ignores. (A bare "retry:" or "id:" event, which the openai
# SDK dispatches with empty data, is removed by providers/transport.py (SSELines) and tested in
# test_providers_sse_lines.py.)
NOISE = [": keep-alive\n\n", ": OPENROUTER PROCESSING\n\n", "x-unknown-field: 1\n\n"]


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def openai_error(kind: str) -> Reply:
    """Error replies shaped like OpenAI's documented error objects."""
    if kind == "html":
        return Reply.html(502)
    status, headers, error = {
        "rate_limited": (
            429,
            {"retry-after": "2"},
            {
                "message": "Rate limit reached for requests",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            },
        ),
        "server_error": (
            500,
            {},
            {
                "message": "The server had an error while processing your request.",
                "type": "server_error",
                "param": None,
                "code": None,
            },
        ),
        "auth": (
            401,
            {},
            {
                "message": "Incorrect API key provided: sk-test. You can find your API key at"
                " https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            },
        ),
        "bad_request": (
            400,
            {},
            {
                "message": "Invalid value for 'temperature': expected a number <= 2.",
                "type": "invalid_request_error",
                "param": "temperature",
                "code": "invalid_value",
            },
        ),
        "context_overflow": (
            400,
            {},
            {
                "message": "This model's maximum context length is 128000 tokens. However, your"
                " messages resulted in 130412 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            },
        ),
    }[kind]
    return Reply.json({"error": error}, status, headers)


def _check_names_and_ids(tools: list[dict[str, Any]], names: list[str]) -> None:
    for name in names:
        assert NAME_RE.match(name), f"invalid wire tool name {name!r}"


# ----------------------------------------------------------------- Chat Completions


class ChatKit:
    name = "openai-chat"
    native_ids = True
    reasoning = True  # via reasoning_content (DeepSeek / vLLM / llama.cpp style)

    def __init__(self, vendor: str = "deepseek") -> None:
        # DeepSeek's dialect exercises reasoning_content and max_tokens.
        self.vendor = VENDORS[vendor]

    def model(
        self,
        base_url: str,
        on_payload: PayloadHook | None = None,
        call_limits: CallLimits | None = None,
    ) -> Model:
        return OpenAIChatModel(
            "deepseek-chat",
            base_url=base_url + "/v1",
            api_key="sk-test",
            on_payload=on_payload,
            call_limits=call_limits,
            vendor=self.vendor,
        )

    @staticmethod
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion.chunk",
            "created": 1694268190,
            "model": "deepseek-chat",
            "system_fingerprint": "fp_44709d6fcb",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def events(self, answer: Answer) -> list[Any]:
        out: list[Any] = [self.chunk({"role": "assistant", "content": ""})]
        out += [
            self.chunk({"reasoning_content": p})
            for p in pieces(answer.reasoning, 16)
            if answer.reasoning
        ]
        out += [
            self.chunk({"content": p}) for p in pieces(answer.text, answer.fragment) if answer.text
        ]
        for index, call in enumerate(answer.calls):
            out.append(
                self.chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call.id,
                                "type": "function",
                                "function": {"name": wire(call.name), "arguments": ""},
                            }
                        ]
                    }
                )
            )
            out += [
                self.chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
                for p in pieces(call.wire_arguments, answer.fragment)
            ]
        finish = {"final": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
        out.append(self.chunk({}, finish.get(answer.stop, answer.stop)))
        i, o, cached, reasoning = answer.usage
        usage = {
            "prompt_tokens": i,
            "completion_tokens": o,
            "total_tokens": i + o,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        }
        out.append({**self.chunk({}), "choices": [], "usage": usage})
        return out

    def reply(self, answer: Answer, cut_after: int | None = None, noise: bool = False) -> Reply:
        events = self.events(answer)
        if noise:
            events = [e for pair in zip(events, NOISE * len(events), strict=False) for e in pair]
        return Reply.sse(events, done=True, cut_after=cut_after)

    def error(self, kind: str) -> Reply:
        return openai_error(kind)

    def garbage(self) -> Reply:
        return Reply.sse(
            [self.chunk({"content": "Hi"}), "data: {'not': json at all\n\n"], done=True
        )

    def snapshot(self, request: Recorded) -> Any:
        return {"path": request.path, "body": request.json}

    def check_request(self, body: Any) -> None:
        pending: set[str] = set()
        for message in body["messages"]:
            role = message["role"]
            assert role in ("system", "developer", "user", "assistant", "tool"), role
            for call in message.get("tool_calls") or ():
                assert 0 < len(call["id"]) <= 40
                assert NAME_RE.match(call["function"]["name"])
                json.loads(call["function"]["arguments"])
                pending.add(call["id"])
            if role == "tool":
                assert message["tool_call_id"] in pending, "result without its call"
                pending.discard(message["tool_call_id"])
            else:
                assert not pending or "tool_calls" in message, "calls left without results"
        for tool in body.get("tools", ()):
            assert NAME_RE.match(tool["function"]["name"])


def wire(name: str) -> str:
    from loopwright.providers._common import wire_name

    return wire_name(name)


# ----------------------------------------------------------------- Responses


class ResponsesKit:
    name = "openai-responses"
    native_ids = True
    reasoning = True

    def model(
        self,
        base_url: str,
        on_payload: PayloadHook | None = None,
        call_limits: CallLimits | None = None,
    ) -> Model:
        return OpenAIResponsesModel(
            "gpt-5-mini",
            base_url=base_url + "/v1",
            api_key="sk-test",
            on_payload=on_payload,
            call_limits=call_limits,
        )

    def events(self, answer: Answer) -> list[Any]:
        seq = iter(range(1, 10_000))
        ev: list[Any] = []
        output: list[dict[str, Any]] = []

        def emit(name: str, **data: Any) -> None:
            ev.append((name, {"type": name, "sequence_number": next(seq), **data}))

        base = {
            "id": "resp_1",
            "object": "response",
            "created_at": 1741476542,
            "model": "gpt-5-mini",
            "output": [],
            "status": "in_progress",
        }
        emit("response.created", response=base)
        if answer.reasoning:
            self._reasoning(answer, emit, output)
        if answer.text:
            self._message(answer, emit, output)
        for call in answer.calls:
            self._call(call, answer.fragment, emit, output)
        i, o, cached, reasoning = answer.usage
        final = {
            **base,
            "output": output,
            "usage": {
                "input_tokens": i,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": o,
                "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": i + o,
            },
        }
        if answer.stop == "max_tokens":
            final.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
            emit("response.incomplete", response=final)
        else:
            status = "completed" if answer.stop in ("final", "tool_use") else answer.stop
            final["status"] = status
            emit("response.completed", response=final)
        return ev

    @staticmethod
    def _reasoning(answer: Answer, emit: Any, output: list[dict[str, Any]]) -> None:
        index = len(output)
        item = {"id": "rs_1", "type": "reasoning", "summary": []}
        emit("response.output_item.added", output_index=index, item=item)
        emit(
            "response.reasoning_summary_part.added",
            item_id="rs_1",
            output_index=index,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        )
        for p in pieces(answer.reasoning, 16):
            emit(
                "response.reasoning_summary_text.delta",
                item_id="rs_1",
                output_index=index,
                summary_index=0,
                delta=p,
            )
        done = {
            **item,
            "summary": [{"type": "summary_text", "text": answer.reasoning}],
            "encrypted_content": "gAAAAB-opaque-1",
        }
        emit("response.output_item.done", output_index=index, item=done)
        output.append(done)

    @staticmethod
    def _message(answer: Answer, emit: Any, output: list[dict[str, Any]]) -> None:
        index = len(output)
        item = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        emit("response.output_item.added", output_index=index, item=item)
        emit(
            "response.content_part.added",
            item_id="msg_1",
            output_index=index,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        )
        for p in pieces(answer.text, answer.fragment):
            emit(
                "response.output_text.delta",
                item_id="msg_1",
                output_index=index,
                content_index=0,
                delta=p,
                logprobs=[],
            )
        emit(
            "response.output_text.done",
            item_id="msg_1",
            output_index=index,
            content_index=0,
            text=answer.text,
            logprobs=[],
        )
        done = {
            **item,
            "status": "completed",
            "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
        }
        emit("response.output_item.done", output_index=index, item=done)
        output.append(done)

    @staticmethod
    def _call(call: Call, size: int, emit: Any, output: list[dict[str, Any]]) -> None:
        index = len(output)
        fc = f"fc_{call.id}"
        item = {
            "id": fc,
            "type": "function_call",
            "call_id": call.id,
            "name": wire(call.name),
            "arguments": "",
            "status": "in_progress",
        }
        emit("response.output_item.added", output_index=index, item=item)
        for p in pieces(call.wire_arguments, size):
            emit("response.function_call_arguments.delta", item_id=fc, output_index=index, delta=p)
        emit(
            "response.function_call_arguments.done",
            item_id=fc,
            output_index=index,
            arguments=call.wire_arguments,
        )
        done = {**item, "arguments": call.wire_arguments, "status": "completed"}
        emit("response.output_item.done", output_index=index, item=done)
        output.append(done)

    def reply(self, answer: Answer, cut_after: int | None = None, noise: bool = False) -> Reply:
        events = self.events(answer)
        if noise:
            events = [e for pair in zip(events, NOISE * len(events), strict=False) for e in pair]
        return Reply.sse(events, cut_after=cut_after)

    def error(self, kind: str) -> Reply:
        return openai_error(kind)

    def garbage(self) -> Reply:
        return Reply.sse(["event: response.created\ndata: <html>oops</html>\n\n"])

    def snapshot(self, request: Recorded) -> Any:
        return {"path": request.path, "body": request.json}

    def check_request(self, body: Any) -> None:
        calls: set[str] = set()
        for item in body["input"]:
            kind = item.get("type", "message")
            if kind == "function_call":
                assert NAME_RE.match(item["name"])
                json.loads(item["arguments"])
                calls.add(item["call_id"])
            elif kind == "function_call_output":
                assert item["call_id"] in calls, "output without its call"
            elif kind == "reasoning":
                assert item["id"].startswith("rs_"), "only own reasoning items are echoed"
        for tool in body.get("tools", ()):
            assert NAME_RE.match(tool["name"])


KITS = [ChatKit(), ResponsesKit()]
