"""Wire kit for the Anthropic Messages protocol (see contract.py for the kit contract).

Event shapes follow the recorded SDK stream in ``shared/wire-samples/
anthropic_tool_use_stream.sse`` and the streaming docs (thinking blocks end with a
``signature_delta``); error bodies follow docs.anthropic.com "Errors"
(``{"type": "error", "error": {"type", "message"}}``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from contract import Answer
from fakeserver import Recorded, Reply

from loopwright.core.protocols import Model, PayloadHook
from loopwright.providers._common import wire_name
from loopwright.providers.anthropic import AnthropicModel
from loopwright.providers.transport import CallLimits

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ID_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
SIGNATURE = "EqQBCkgIARABGAIiQL3R8mQKdW3Xl8yFmYvYtVPm9v2YjM+test+signature=="
NOISE = [": keep-alive\n\n", "retry: 3000\n\n", ("ping", {"type": "ping"})]
STOPS = {"final": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens"}


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def anthropic_error(kind: str) -> Reply:
    if kind == "html":
        return Reply.html(502)
    status, headers, error_type, message = {
        "rate_limited": (
            429,
            {"retry-after": "2"},
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ),
        "server_error": (500, {}, "api_error", "Internal server error"),
        "auth": (401, {}, "authentication_error", "invalid x-api-key"),
        "bad_request": (400, {}, "invalid_request_error", "max_tokens: Field required"),
        "context_overflow": (
            400,
            {},
            "invalid_request_error",
            "prompt is too long: 208310 tokens > 200000 maximum",
        ),
    }[kind]
    body = {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }
    return Reply.json(body, status, {"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy", **headers})


class AnthropicKit:
    name = "anthropic"
    native_ids = True
    reasoning = True
    opaque_markers = (SIGNATURE,)  # must never reach another protocol

    def model(
        self,
        base_url: str,
        on_payload: PayloadHook | None = None,
        call_limits: CallLimits | None = None,
    ) -> Model:
        return AnthropicModel(
            "claude-sonnet-5",
            base_url=base_url,
            api_key="sk-ant-test",
            on_payload=on_payload,
            call_limits=call_limits,
        )

    def events(self, answer: Answer) -> list[Any]:
        i, o, cached, reasoning = answer.usage
        start = {
            "id": "msg_019Q1hrJbZG26Fb9BQhrkHEr",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-5",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": i - cached,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": cached,
                "output_tokens": 1,
            },
        }
        out: list[Any] = [("message_start", {"type": "message_start", "message": start})]
        index = 0
        if answer.reasoning:
            block = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in pieces(answer.reasoning, 16)
            ]
            deltas.append({"type": "signature_delta", "signature": SIGNATURE})
            out += self._block(index, block, deltas)
            index += 1
        if answer.text:
            deltas = [
                {"type": "text_delta", "text": p} for p in pieces(answer.text, answer.fragment)
            ]
            out += self._block(index, {"type": "text", "text": ""}, deltas)
            index += 1
        for call in answer.calls:
            block = {"type": "tool_use", "id": call.id, "name": wire_name(call.name), "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": p}
                for p in pieces(call.wire_arguments, answer.fragment)
            ]
            out += self._block(index, block, deltas)
            index += 1
        usage: dict[str, Any] = {"output_tokens": o}
        if reasoning:
            usage["output_tokens_details"] = {"thinking_tokens": reasoning}
        delta = {"stop_reason": STOPS.get(answer.stop, answer.stop), "stop_sequence": None}
        out.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
        out.append(("message_stop", {"type": "message_stop"}))
        return out

    @staticmethod
    def _block(index: int, block: dict[str, Any], deltas: list[dict[str, Any]]) -> list[Any]:
        out: list[Any] = [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        ]
        out += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        return out

    def reply(self, answer: Answer, cut_after: int | None = None, noise: bool = False) -> Reply:
        events = self.events(answer)
        if noise:
            events = [e for pair in zip(events, NOISE * len(events), strict=False) for e in pair]
        return Reply.sse(events, cut_after=cut_after)

    def error(self, kind: str) -> Reply:
        return anthropic_error(kind)

    def garbage(self) -> Reply:
        return Reply.sse(['event: message_start\ndata: {"type": "message_start", oops\n\n'])

    def snapshot(self, request: Recorded) -> Any:
        return {"path": request.path, "body": request.json}

    def check_request(self, body: Any) -> None:
        """Roles alternate from ``user``; every ``tool_use`` is answered by a
        ``tool_result`` first in the next user message; ids and names are valid."""
        pending: list[str] = []
        for n, message in enumerate(body["messages"]):
            role = message["role"]
            assert role == ("user" if n % 2 == 0 else "assistant"), "roles must alternate"
            blocks = message["content"]
            if role == "user":
                results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
                assert results == pending[: len(results)] and len(results) == len(pending), (
                    "every tool_use needs its tool_result, in order, first in the next turn"
                )
                pending = []
                continue
            for block in blocks:
                if block["type"] == "tool_use":
                    assert ID_RE.match(block["id"]) and NAME_RE.match(block["name"])
                    assert isinstance(block["input"], dict)
                    pending.append(block["id"])
                elif block["type"] == "thinking":
                    assert block["signature"], "only signed (own) thinking is echoed"
        for tool in body.get("tools", ()):
            assert NAME_RE.match(tool["name"])
        json.dumps(body)


KITS = [AnthropicKit()]
