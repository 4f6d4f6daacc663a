"""Wire kit for Bedrock ``ConverseStream`` (see contract.py for the kit contract).

The fake server answers with real AWS event-stream frames (``eventstream.py``); event
payloads follow the botocore service model (``contentBlockStart{start{toolUse}}``,
``contentBlockDelta{delta{text | toolUse{input} | reasoningContent}}``, ``messageStop``,
``metadata{usage}``). HTTP errors carry ``x-amzn-ErrorType`` and a ``{"message"}`` body, as
the Bedrock runtime sends them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import eventstream as es
from contract import Answer
from fakeserver import Recorded, Reply

from loopwright.core.protocols import Model, PayloadHook
from loopwright.providers._common import wire_name
from loopwright.providers.bedrock import BedrockModel, BedrockOptions
from loopwright.providers.transport import CallLimits

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
SIGNATURE = "ErcBCkgIAhABGAIiQKz1-bedrock-test-signature"
STOPS = {"final": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens"}
MODEL_ID = "anthropic.claude-3-7-sonnet-20250219-v1:0"
OPTIONS = BedrockOptions(
    region="us-east-1",
    aws_access_key_id="AKIDEXAMPLE",
    aws_secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
)


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def bedrock_error(kind: str) -> Reply:
    if kind == "html":
        return Reply.html(502)
    status, code, message, headers = {
        "rate_limited": (
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
            {"retry-after": "2"},
        ),
        "server_error": (
            500,
            "InternalServerException",
            "The server encountered an error processing the request.",
            {},
        ),
        "auth": (
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
            {},
        ),
        "bad_request": (
            400,
            "ValidationException",
            "Malformed input request: #: extraneous"
            " key [temperature_x] is not permitted, please reformat your input and"
            " try again.",
            {},
        ),
        "context_overflow": (
            400,
            "ValidationException",
            "Input is too long for requested model.",
            {},
        ),
    }[kind]
    headers = {
        "x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/",
        "x-amzn-RequestId": "6b7c8e54-3f2a-4b7e-9d2a-1c3e5f7a9b0d",
        **headers,
    }
    return Reply.json({"message": message}, status, headers)


class BedrockKit:
    name = "bedrock"
    native_ids = True
    reasoning = True
    opaque_markers = (SIGNATURE,)  # must never reach another protocol
    reasoning_tokens = False  # Converse's TokenUsage has no reasoning count

    def model(
        self,
        base_url: str,
        on_payload: PayloadHook | None = None,
        call_limits: CallLimits | None = None,
    ) -> Model:
        return BedrockModel(
            MODEL_ID,
            base_url=base_url,
            on_payload=on_payload,
            call_limits=call_limits,
            options=OPTIONS,
        )

    def events(self, answer: Answer) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
        index = 0
        if answer.reasoning:
            out += [
                (
                    "contentBlockDelta",
                    {"contentBlockIndex": index, "delta": {"reasoningContent": {"text": p}}},
                )
                for p in pieces(answer.reasoning, 16)
            ]
            out.append(
                (
                    "contentBlockDelta",
                    {
                        "contentBlockIndex": index,
                        "delta": {"reasoningContent": {"signature": SIGNATURE}},
                    },
                )
            )
            out.append(("contentBlockStop", {"contentBlockIndex": index}))
            index += 1
        if answer.text:
            out += [
                ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": p}})
                for p in pieces(answer.text, answer.fragment)
            ]
            out.append(("contentBlockStop", {"contentBlockIndex": index}))
            index += 1
        for call in answer.calls:
            start = {"toolUse": {"toolUseId": call.id, "name": wire_name(call.name)}}
            out.append(("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            out += [
                (
                    "contentBlockDelta",
                    {"contentBlockIndex": index, "delta": {"toolUse": {"input": p}}},
                )
                for p in pieces(call.wire_arguments, answer.fragment)
            ]
            out.append(("contentBlockStop", {"contentBlockIndex": index}))
            index += 1
        out.append(("messageStop", {"stopReason": STOPS.get(answer.stop, answer.stop)}))
        i, o, cached, _ = answer.usage
        usage = {
            "inputTokens": i - cached,
            "outputTokens": o,
            "totalTokens": i + o,
            "cacheReadInputTokens": cached,
            "cacheWriteInputTokens": 0,
        }
        out.append(("metadata", {"usage": usage, "metrics": {"latencyMs": 412}}))
        return out

    def reply(self, answer: Answer, cut_after: int | None = None, noise: bool = False) -> Reply:
        frames = list(es.stream(self.events(answer)))
        if noise:
            # Unknown event types (newer service versions) must be skipped by the client.
            extra = es.event("keepAlive", {})
            frames = [f for frame in frames for f in (frame, extra)]
        if cut_after is not None:
            # A cut inside the next frame: the client sees a truncated message.
            frames = [*frames[:cut_after], frames[cut_after][:10]]
        return Reply(200, {"content-type": es.CONTENT_TYPE}, tuple(frames), cut_after is not None)

    def error(self, kind: str) -> Reply:
        return bedrock_error(kind)

    def garbage(self) -> Reply:
        bad = es.frame(
            {
                ":event-type": "contentBlockDelta",
                ":content-type": "application/json",
                ":message-type": "event",
            },
            b'{"contentBlockIndex": 0, "delta": {oops',
        )
        return Reply(200, {"content-type": es.CONTENT_TYPE}, (bad,))

    def snapshot(self, request: Recorded) -> Any:
        return {"path": request.path, "body": request.json}

    def check_request(self, body: Any) -> None:
        """Roles alternate from ``user``; each ``toolUse`` is answered by a ``toolResult``
        with the same id in the next user message; ids and names are valid."""
        pending: list[str] = []
        for n, message in enumerate(body["messages"]):
            role = message["role"]
            assert role == ("user" if n % 2 == 0 else "assistant"), "roles must alternate"
            if role == "user":
                results = [
                    b["toolResult"]["toolUseId"] for b in message["content"] if "toolResult" in b
                ]
                assert sorted(results) == sorted(pending), "every toolUse needs its toolResult"
                pending = []
                continue
            for block in message["content"]:
                if "toolUse" in block:
                    assert ID_RE.match(block["toolUse"]["toolUseId"])
                    assert NAME_RE.match(block["toolUse"]["name"])
                    pending.append(block["toolUse"]["toolUseId"])
                if "reasoningContent" in block:
                    text = block["reasoningContent"].get("reasoningText")
                    assert text is None or text["signature"], "only signed reasoning is echoed"
        if any("toolUse" in b for m in body["messages"] for b in m["content"]):
            assert "toolConfig" in body, "Bedrock requires toolConfig with tool blocks"
        for tool in body.get("toolConfig", {}).get("tools", ()):
            assert NAME_RE.match(tool["toolSpec"]["name"])
        json.dumps(body)


KITS = [BedrockKit()]
