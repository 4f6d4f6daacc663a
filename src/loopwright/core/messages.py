"""Canonical conversation values.

A :class:`Message` is a role plus an ordered tuple of typed parts. Every provider
adapter converts *to* its wire shape at the call boundary and *from* it when a reply
arrives; nothing else in loopwright ever sees a vendor's message format.

Contracts
---------
* Values are frozen and slotted. Never mutate the dict/list payloads inside them
  (``arguments``, ``provider_meta``); build a new part with :func:`dataclasses.replace`.
* ``provider_meta`` carries what a provider needs echoed back on the next request
  (Anthropic thinking signatures, Gemini thought signatures, Responses item ids ...).
  Keys are namespaced by protocol (``"anthropic"``, ``"gemini"`` ...) so a history can
  move between providers: an adapter reads only its own namespace.
* ``to_dict`` / ``message_from_dict`` are a lossless JSON round trip (property-tested).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, assert_never

from loopwright.core.values import slot_init

JSONValue: TypeAlias = Any
"""Any value that ``json.dumps`` accepts without a custom encoder."""

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")

_EMPTY: Mapping[str, JSONValue] = {}


class StopReason(enum.StrEnum):
    """Why one model response ended (normalised across providers)."""

    FINAL_ANSWER = "final_answer"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    ERROR = "error"
    ABORTED = "aborted"


@slot_init
@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    provider_meta: Mapping[str, JSONValue] = field(default_factory=dict)
    kind: Literal["text"] = "text"


@slot_init
@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """Model reasoning ("thinking"). ``provider_meta`` keeps signatures / opaque ids."""

    text: str
    provider_meta: Mapping[str, JSONValue] = field(default_factory=dict)
    kind: Literal["reasoning"] = "reasoning"


@slot_init
@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A model's request to run a tool.

    ``arguments`` is the parsed object (empty when ``raw_arguments`` did not parse);
    ``raw_arguments`` is exactly what the model produced, kept for repair and audit.
    """

    id: str
    name: str
    arguments: Mapping[str, JSONValue] = field(default_factory=dict)
    raw_arguments: str = ""
    provider_meta: Mapping[str, JSONValue] = field(default_factory=dict)
    kind: Literal["tool_call"] = "tool_call"


@slot_init
@dataclass(frozen=True, slots=True)
class MediaPart:
    """An image a tool returned (``data`` base64-encoded, ``mime_type`` such as
    ``image/png``), carried with its tool result to models whose API takes images in
    tool results; for the others the result's text names it (docs/mcp.md)."""

    mime_type: str
    data: str


@slot_init
@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """The outcome of one tool call, paired to it by ``call_id``.

    ``error_kind`` is one of :class:`loopwright.core.errors.ToolErrorKind` values when
    ``is_error`` is true. ``media`` holds images the tool returned besides its text
    (``content`` then has a line naming each).
    """

    call_id: str
    name: str
    content: str
    is_error: bool = False
    error_kind: str | None = None
    provider_meta: Mapping[str, JSONValue] = field(default_factory=dict)
    kind: Literal["tool_result"] = "tool_result"
    media: tuple[MediaPart, ...] = ()


Part: TypeAlias = TextPart | ReasoningPart | ToolCallPart | ToolResultPart


@slot_init
@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cost + other.cost,
        )

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cost": self.cost,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> Usage:
        return cls(
            int(data.get("input_tokens", 0)),
            int(data.get("output_tokens", 0)),
            int(data.get("cached_tokens", 0)),
            int(data.get("reasoning_tokens", 0)),
            float(data.get("cost", 0.0)),
        )


@slot_init
@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: tuple[Part, ...]
    provider_meta: Mapping[str, JSONValue] = field(default_factory=dict)

    # -- construction helpers -------------------------------------------------
    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", (TextPart(text),))

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextPart(text),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls("assistant", (TextPart(text),))

    @classmethod
    def tool_results(cls, results: Sequence[ToolResultPart]) -> Message:
        return cls("tool", tuple(results))

    # -- views -----------------------------------------------------------------
    @property
    def text(self) -> str:
        """Concatenated text parts (reasoning excluded)."""
        # a loop, not a generator expression (a function call of its own): asked for
        # every final reply and for a run's answer (benchmarks/notes/loop.md, round 10)
        texts = []
        for part in self.parts:
            if isinstance(part, TextPart):
                texts.append(part.text)
        return "".join(texts)

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        # a loop, not a comprehension: in CPython 3.11 a comprehension is a function
        # call of its own, and the loop asks for every reply's calls (4.0 k -> 2.8 k
        # instructions for one call; benchmarks/notes/loop.md, round 9)
        calls = []
        for part in self.parts:
            if isinstance(part, ToolCallPart):
                calls.append(part)
        return tuple(calls)

    @property
    def tool_results_parts(self) -> tuple[ToolResultPart, ...]:
        return tuple([p for p in self.parts if isinstance(p, ToolResultPart)])

    def to_dict(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {
            "role": self.role,
            "parts": [part_to_dict(p) for p in self.parts],
        }
        if self.provider_meta:
            out["provider_meta"] = dict(self.provider_meta)
        return out


def part_to_dict(part: Part) -> dict[str, JSONValue]:
    match part:
        case TextPart(text=text):
            out: dict[str, JSONValue] = {"kind": "text", "text": text}
        case ReasoningPart(text=text):
            out = {"kind": "reasoning", "text": text}
        case ToolCallPart():
            out = {
                "kind": "tool_call",
                "id": part.id,
                "name": part.name,
                "arguments": dict(part.arguments),
                "raw_arguments": part.raw_arguments,
            }
        case ToolResultPart():
            out = {
                "kind": "tool_result",
                "call_id": part.call_id,
                "name": part.name,
                "content": part.content,
                "is_error": part.is_error,
                "error_kind": part.error_kind,
            }
            if part.media:
                out["media"] = [{"mime_type": m.mime_type, "data": m.data} for m in part.media]
        case _:
            assert_never(part)
    if part.provider_meta:
        out["provider_meta"] = dict(part.provider_meta)
    return out


class CodecError(ValueError):
    """A serialized message/part does not have the expected shape."""


def _mapping(value: JSONValue, where: str) -> dict[str, JSONValue]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CodecError(f"{where} must be a JSON object, got {type(value).__name__}")
    return dict(value)


def _media(value: JSONValue) -> tuple[MediaPart, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise CodecError(f"tool_result 'media' must be a list, got {type(value).__name__}")
    out = []
    for item in value:
        entry = _mapping(item, "a tool_result 'media' item")
        out.append(MediaPart(str(entry["mime_type"]), str(entry["data"])))
    return tuple(out)


def part_from_dict(data: Mapping[str, JSONValue]) -> Part:
    if not isinstance(data, Mapping):
        raise CodecError(f"a message part must be a JSON object, got {type(data).__name__}")
    kind = data.get("kind")
    try:
        meta = _mapping(data.get("provider_meta"), "part 'provider_meta'")
        if kind == "text":
            return TextPart(str(data["text"]), meta)
        if kind == "reasoning":
            return ReasoningPart(str(data["text"]), meta)
        if kind == "tool_call":
            return ToolCallPart(
                str(data["id"]),
                str(data["name"]),
                _mapping(data.get("arguments"), "tool_call 'arguments'"),
                str(data.get("raw_arguments", "")),
                meta,
            )
        if kind == "tool_result":
            ek = data.get("error_kind")
            return ToolResultPart(
                str(data["call_id"]),
                str(data["name"]),
                str(data["content"]),
                bool(data.get("is_error", False)),
                None if ek is None else str(ek),
                meta,
                media=_media(data.get("media")),
            )
    except KeyError as exc:
        raise CodecError(f"message part of kind {kind!r} lacks field {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise CodecError(f"malformed message part of kind {kind!r}: {exc}") from exc
    raise CodecError(
        f"unknown part kind {kind!r}; expected text, reasoning, tool_call or tool_result"
    )


def message_from_dict(data: Mapping[str, JSONValue]) -> Message:
    if not isinstance(data, Mapping):
        raise CodecError(f"a message must be a JSON object, got {type(data).__name__}")
    if "role" not in data or "parts" not in data:
        raise CodecError("message needs 'role' and 'parts'")
    role = data["role"]
    parts_raw = data["parts"]
    if not isinstance(role, str) or role not in ROLES:
        raise CodecError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    if not isinstance(parts_raw, list):
        raise CodecError("message 'parts' must be a list")
    return Message(
        role,  # type: ignore[arg-type]  # checked against ROLES above
        tuple(part_from_dict(p) for p in parts_raw),
        _mapping(data.get("provider_meta"), "message 'provider_meta'"),
    )


def messages_to_list(messages: Sequence[Message]) -> list[dict[str, JSONValue]]:
    return [m.to_dict() for m in messages]


def messages_from_list(data: Sequence[Mapping[str, JSONValue]]) -> list[Message]:
    return [message_from_dict(d) for d in data]
