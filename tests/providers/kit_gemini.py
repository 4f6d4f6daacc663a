"""Wire kit for Gemini ``streamGenerateContent?alt=sse`` (see contract.py for the contract).

Chunk shapes follow the REST reference (``GenerateContentResponse``: ``candidates[0].content
.parts``, ``finishReason``, ``usageMetadata``); function calls arrive whole (the Gemini API
does not stream arguments), a thinking model sends ``thought: true`` summary parts and a
``thoughtSignature`` on the first function-call part. Error bodies follow
ai.google.dev "Troubleshooting" (``{"error": {"code", "message", "status", "details"}}``).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from contract import Answer
from fakeserver import Recorded, Reply

from loopwright.core.protocols import Model, PayloadHook
from loopwright.providers._common import wire_name
from loopwright.providers.gemini import GeminiModel
from loopwright.providers.transport import CallLimits

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
SIGNATURE = base64.b64encode(b"gemini-thought-signature-bytes-1").decode()
FINISH = {"final": "STOP", "tool_use": "STOP", "max_tokens": "MAX_TOKENS"}
NOISE = ["\n", "\r\n"]  # blank keep-alive lines between events


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def gemini_error(kind: str) -> Reply:
    if kind == "html":
        return Reply.html(502)
    status, headers, state, message, details = {
        "rate_limited": (
            429,
            {"retry-after": "2"},
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}],
        ),
        "server_error": (500, {}, "INTERNAL", "An internal error has occurred. Please retry.", []),
        "auth": (
            400,
            {},
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ],
        ),
        "bad_request": (
            400,
            {},
            "INVALID_ARGUMENT",
            "Invalid value at 'generation_config.temperature' (TYPE_FLOAT), \"hot\"",
            [],
        ),
        "context_overflow": (
            400,
            {},
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of"
            " tokens allowed (1048576).",
            [],
        ),
    }[kind]
    error: dict[str, Any] = {"code": status, "message": message, "status": state}
    if details:
        error["details"] = details
    return Reply.json({"error": error}, status, headers)


class GeminiKit:
    name = "gemini"
    native_ids = False
    reasoning = True
    # must never reach another protocol (pydantic dumps the URL-safe alphabet)
    opaque_markers = (SIGNATURE, SIGNATURE.replace("+", "-").replace("/", "_"))
    streams_arguments = False

    def model(
        self,
        base_url: str,
        on_payload: PayloadHook | None = None,
        call_limits: CallLimits | None = None,
    ) -> Model:
        return GeminiModel(
            "gemini-2.5-flash",
            base_url=base_url,
            api_key="test-key",
            on_payload=on_payload,
            call_limits=call_limits,
        )

    @staticmethod
    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        return {
            "candidates": [candidate],
            "modelVersion": "gemini-2.5-flash",
            "responseId": "mP5ZaJ2DBoW8nvgPqt2-8Qw",
        }

    def events(self, answer: Answer) -> list[Any]:
        out: list[Any] = [
            self.chunk([{"text": p, "thought": True}])
            for p in pieces(answer.reasoning, 16)
            if answer.reasoning
        ]
        out += [
            self.chunk([{"text": p}]) for p in pieces(answer.text, answer.fragment) if answer.text
        ]
        for n, call in enumerate(answer.calls):
            if call.raw is not None:
                # Gemini sends args as an object; an unclosed one is a truncated chunk.
                out.append(
                    'data: {"candidates": [{"content": {"role": "model", "parts": '
                    f'[{{"functionCall": {{"name": "{wire_name(call.name)}", "args": '
                    f"{call.raw}\n\n"
                )
                continue
            part: dict[str, Any] = {
                "functionCall": {"name": wire_name(call.name), "args": call.arguments}
            }
            if n == 0 and answer.reasoning:
                part["thoughtSignature"] = SIGNATURE
            out.append(self.chunk([part]))
        i, o, cached, reasoning = answer.usage
        usage = {
            "promptTokenCount": i,
            "candidatesTokenCount": o - reasoning,
            "totalTokenCount": i + o,
            "cachedContentTokenCount": cached,
        }
        if reasoning:
            usage["thoughtsTokenCount"] = reasoning
        last = self.chunk([{"text": ""}], FINISH.get(answer.stop, answer.stop))
        last["usageMetadata"] = usage
        out.append(last)
        return out

    def reply(self, answer: Answer, cut_after: int | None = None, noise: bool = False) -> Reply:
        events = self.events(answer)
        if noise:
            events = [e for pair in zip(events, NOISE * len(events), strict=False) for e in pair]
        return Reply.sse(events, cut_after=cut_after)

    def error(self, kind: str) -> Reply:
        return gemini_error(kind)

    def garbage(self) -> Reply:
        return Reply.sse(['data: {"candidates": [{"content": oops not json\n\n'])

    def snapshot(self, request: Recorded) -> Any:
        return {"path": request.path, "body": request.json}

    def check_request(self, body: Any) -> None:
        """Roles are user/model; each model turn's function calls are answered, in order
        and by name, by the next user turn's functionResponse parts."""
        pending: list[str] = []
        for content in body["contents"]:
            role, parts = content["role"], content["parts"]
            assert role in ("user", "model"), role
            if role == "user":
                answered = [p["functionResponse"]["name"] for p in parts if "functionResponse" in p]
                assert answered == pending, "results must follow their calls' order"
                pending = []
                continue
            for part in parts:
                if "functionCall" in part:
                    assert NAME_RE.match(part["functionCall"]["name"])
                    assert isinstance(part["functionCall"]["args"], dict)
                    pending.append(part["functionCall"]["name"])
        assert not pending, "calls left without results"
        for tool in body.get("tools", ()):
            for decl in tool.get("functionDeclarations", ()):
                assert NAME_RE.match(decl["name"])
        json.dumps(body)


KITS = [GeminiKit()]
