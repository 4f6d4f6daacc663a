"""Gemini response decoding (the ``gemini`` adapter's stream half).

:func:`decode_sdk_chunk` decodes one streamed ``GenerateContentResponse``, the
google-genai SDK's typed object, into canonical events through a
:class:`StreamAccumulator`. It is the only decoder, whether or not an ``on_payload`` hook
watches: a hook is shown each chunk's full wire JSON (pydantic's dump), recorded beside
the decoding, never instead of it.

Calls arrive whole (``functionCall{name, args}``, never fragmented) and usually without
an id: ids are synthesised, stable per (turn, position, name). Thought signatures are
kept on the part they came with (see :mod:`loopwright.providers.gemini`).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopwright.core.errors import (
    AuthError,
    BadRequest,
    IncompleteTurn,
    MalformedResponse,
    ProviderError,
)
from loopwright.core.events import ModelEvent
from loopwright.core.messages import StopReason, Usage
from loopwright.providers._common import StreamAccumulator

PROVIDER = "gemini"

FINISH_REASONS: Mapping[str, StopReason] = {
    "STOP": StopReason.FINAL_ANSWER,
    "MAX_TOKENS": StopReason.MAX_TOKENS,
    **{
        reason: StopReason.REFUSAL
        for reason in (
            "SAFETY",
            "RECITATION",
            "LANGUAGE",
            "BLOCKLIST",
            "PROHIBITED_CONTENT",
            "SPII",
            "IMAGE_SAFETY",
            "IMAGE_PROHIBITED_CONTENT",
            "IMAGE_RECITATION",
            "MODEL_ARMOR",
            "ESCALATION",
        )
    },
}
"""Gemini ``finishReason`` -> canonical, for the reasons that end a usable response (a
content filter's block is a refusal). Every other value of google-genai's
``FinishReason`` is an error, by :data:`FAILED_REASONS`; an unknown one too."""

FAILED_REASONS: Mapping[str, tuple[type[ProviderError], str]] = {
    "MALFORMED_FUNCTION_CALL": (
        MalformedResponse,
        "the model wrote a function call that does not parse",
    ),
    "UNEXPECTED_TOOL_CALL": (
        MalformedResponse,
        "the model called a function that is not declared, or with function calling off",
    ),
    "TOO_MANY_TOOL_CALLS": (
        MalformedResponse,
        "the model made too many tool calls in one response",
    ),
    "MALFORMED_RESPONSE": (MalformedResponse, "the model produced a malformed response"),
    "OTHER": (MalformedResponse, "generation stopped for an unspecified reason"),
    "FINISH_REASON_UNSPECIFIED": (MalformedResponse, "generation stopped with no reason"),
    "IMAGE_OTHER": (MalformedResponse, "image generation stopped for an unspecified reason"),
    "NO_IMAGE": (MalformedResponse, "the model was expected to generate an image and did not"),
    "MISSING_THOUGHT_SIGNATURE": (
        BadRequest,
        "the request's history lacks a thought signature the model requires (a function"
        " call replayed without the thoughtSignature it came with); the same history fails"
        " again",
    ),
    "PUP_LIMITED_DISABLED": (
        AuthError,
        "the account is limited or disabled for Prohibited Use Policy violations",
    ),
    "CONTINUATION": (
        IncompleteTurn,
        "the response reached the per-request token limit before it was complete and"
        " expects a continuation request, which loopwright does not send",
    ),
}
"""Gemini ``finishReason`` values that end the call with an error: the class (whether the
loop retries follows from it: a malformed answer may come out right when sampled again; a
request defect, a disabled account or a paused turn would not) and what it means."""

MALFORMED_REASONS = frozenset(
    reason for reason, (cls, _) in FAILED_REASONS.items() if cls is MalformedResponse
)
"""The model-output failures among :data:`FAILED_REASONS` (retryable)."""


@functools.lru_cache(maxsize=1024)
def synthesize_call_id(turn: int, index: int, name: str) -> str:
    """A stable id for an id-less Gemini call: same turn/position/name, same id."""
    digest = hashlib.sha256(f"{turn}:{index}:{name}".encode()).hexdigest()[:16]
    return f"gemini_{turn}_{index}_{digest}"


def map_finish_reason(raw: object, chunk: Mapping[str, Any]) -> StopReason:
    """Canonical stop reason; the :data:`FAILED_REASONS` and unknown values raise."""
    if isinstance(raw, str) and raw in FINISH_REASONS:
        return FINISH_REASONS[raw]
    snippet = json.dumps(chunk, default=str)[:500]
    failed = FAILED_REASONS.get(raw) if isinstance(raw, str) else None
    if failed is not None:
        cls, meaning = failed
        raise cls(f"gemini: {meaning} (finishReason {raw})", raw=snippet, provider=PROVIDER)
    raise MalformedResponse(f"gemini: unknown finishReason {raw!r}", raw=snippet, provider=PROVIDER)


@dataclass(slots=True)
class _Turn:
    """Per-call decoding state: the id-synthesis turn number and call count."""

    turn: int
    calls: int = 0


def _call_event(
    name: object,
    call_id: object,
    args: object,
    signature: object,
    acc: StreamAccumulator,
    turn: _Turn,
) -> ModelEvent:
    """A ``functionCall`` part (whole: Gemini never fragments arguments)."""
    index = turn.calls
    turn.calls += 1
    wire = str(name or "")
    meta: dict[str, Any] = {}
    if isinstance(signature, str) and signature:
        meta["thought_signature"] = signature
    if isinstance(call_id, str) and call_id:
        meta["id"] = call_id
    acc.break_block()
    return acc.call(
        index,
        id=meta.get("id") or synthesize_call_id(turn.turn, index, wire),
        name=wire,
        arguments=json.dumps(args if isinstance(args, dict) else {}),
        meta={PROVIDER: meta} if meta else None,
    )


def _text_event(
    text: object, thought: bool, signature: object, acc: StreamAccumulator
) -> ModelEvent | None:
    """A text or thought part (its signature, if any, kept for the echo)."""
    signed = isinstance(signature, str) and bool(signature)
    if thought and isinstance(text, str):
        meta = {"thought": True, **({"signature": signature} if signed else {})}
        return acc.reasoning(text, {PROVIDER: meta})
    if signed:
        acc.meta["thought_signature"] = signature
    return acc.text(text) if isinstance(text, str) else None


def decode_sdk_chunk(chunk: Any, acc: StreamAccumulator, turn: _Turn) -> list[ModelEvent | None]:
    """One typed ``GenerateContentResponse`` -> canonical events, read straight off the
    object (signatures re-encoded to base64 on the part they came with).

    Raises only :class:`ProviderError` (an unexpected shape is a :class:`MalformedResponse`
    with the chunk as raw snippet)."""
    if acc.raw_events is not None:  # an on_payload hook watches: show it the wire JSON
        acc.record(full_chunk(chunk))
    try:
        usage = chunk.usage_metadata
        if usage is not None:
            acc.usage = _sdk_usage(usage)
        if chunk.model_version:
            acc.model = str(chunk.model_version)
        if chunk.response_id:
            acc.meta["response_id"] = chunk.response_id
        candidates = chunk.candidates
        if not candidates:
            feedback = chunk.prompt_feedback
            block = _enum_value(feedback.block_reason) if feedback is not None else None
            if block:
                acc.finish_reason(str(block), StopReason.REFUSAL)
            return []
        candidate = candidates[0]
        content = candidate.content
        events: list[ModelEvent | None] = []
        for part in (content.parts if content else None) or ():
            if part.function_call is None and not part.thought_signature and not part.thought:
                text = part.text  # a plain text part (the common case), as _text_event does
                events.append(acc.text(text) if isinstance(text, str) else None)
            else:
                events.append(_sdk_part(part, acc, turn))
        if candidate.finish_reason is not None:
            raw = _enum_value(candidate.finish_reason)
            stop = FINISH_REASONS.get(raw) if isinstance(raw, str) else None
            if stop is None:  # raises, with the chunk's wire JSON as the snippet
                stop = map_finish_reason(raw, wire_chunk(chunk))
            acc.finish_reason(str(raw), stop)
        return events
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        raise MalformedResponse(
            f"gemini: unexpected response chunk shape ({exc})",
            raw=repr(chunk)[:500],
            provider=PROVIDER,
        ) from exc


def _count(value: object) -> int:
    return value if isinstance(value, int) else 0


def _sdk_usage(usage: Any) -> Usage:
    """``promptTokenCount`` includes cached tokens; thoughts are billed as output, so the
    canonical ``output_tokens`` is candidates + thoughts."""
    thoughts = _count(usage.thoughts_token_count)
    return Usage(
        _count(usage.prompt_token_count) + _count(usage.tool_use_prompt_token_count),
        _count(usage.candidates_token_count) + thoughts,
        _count(usage.cached_content_token_count),
        thoughts,
        0.0,
    )


def _sdk_part(part: Any, acc: StreamAccumulator, turn: _Turn) -> ModelEvent | None:
    raw_signature = part.thought_signature
    signature = base64.b64encode(raw_signature).decode() if raw_signature else None
    call = part.function_call
    if call is not None:
        return _call_event(call.name, call.id, call.args, signature, acc, turn)
    return _text_event(part.text, part.thought is True, signature, acc)


def _enum_value(value: Any) -> Any:
    return getattr(value, "value", value)


def _wire_part(part: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if part.text is not None:
        out["text"] = part.text
    if part.thought is not None:
        out["thought"] = part.thought
    signature = part.thought_signature
    if signature:
        out["thoughtSignature"] = base64.b64encode(signature).decode()
    call = part.function_call
    if call is not None:
        body: dict[str, Any] = {"name": call.name, "args": call.args}
        if call.id:
            body["id"] = call.id
        out["functionCall"] = body
    return out


_USAGE_FIELDS = (
    ("prompt_token_count", "promptTokenCount"),
    ("candidates_token_count", "candidatesTokenCount"),
    ("cached_content_token_count", "cachedContentTokenCount"),
    ("thoughts_token_count", "thoughtsTokenCount"),
    ("tool_use_prompt_token_count", "toolUsePromptTokenCount"),
)


def full_chunk(chunk: Any) -> Any:
    """The whole wire JSON of a typed chunk (camelCase, signatures base64), for
    ``on_payload("response", ...)``."""
    dump = getattr(chunk, "model_dump", None)
    if dump is None:
        return chunk
    return dump(mode="json", by_alias=True, exclude_none=True, exclude={"sdk_http_response"})


def wire_chunk(chunk: Any) -> dict[str, Any]:
    """The decoder-relevant fields of a typed ``GenerateContentResponse`` as wire JSON."""
    out: dict[str, Any] = {}
    candidates = []
    for candidate in chunk.candidates or ():
        entry: dict[str, Any] = {}
        content = candidate.content
        if content is not None:
            entry["content"] = {"parts": [_wire_part(p) for p in content.parts or ()]}
        if candidate.finish_reason is not None:
            entry["finishReason"] = _enum_value(candidate.finish_reason)
        candidates.append(entry)
    if candidates:
        out["candidates"] = candidates
    usage = chunk.usage_metadata
    if usage is not None:
        out["usageMetadata"] = {
            wire: getattr(usage, field)
            for field, wire in _USAGE_FIELDS
            if getattr(usage, field) is not None
        }
    feedback = chunk.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        out["promptFeedback"] = {"blockReason": _enum_value(feedback.block_reason)}
    if chunk.model_version:
        out["modelVersion"] = chunk.model_version
    if chunk.response_id:
        out["responseId"] = chunk.response_id
    return out


__all__ = [
    "FAILED_REASONS",
    "FINISH_REASONS",
    "MALFORMED_REASONS",
    "decode_sdk_chunk",
    "full_chunk",
    "map_finish_reason",
    "synthesize_call_id",
    "wire_chunk",
]
