"""Reading the embedded model's output: one grammar-constrained turn as a call or an
answer (:func:`parse_output`), and the answer text of a turn still being decoded
(:func:`partial_answer`, for streaming). The prompt writes every string argument
with one leading space (``local_prompt._spaced``); parsing strips it again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def _unspaced(value: Any) -> Any:
    if isinstance(value, str):
        return value[1:] if value.startswith(" ") else value
    if isinstance(value, dict):
        return {k: _unspaced(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unspaced(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    text: str


def parse_output(text: str, tool_names: Sequence[str]) -> ParsedCall | ParsedAnswer | None:
    """Parse one constrained turn. ``None`` when it is not a complete object (the token
    budget ran out mid-object)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("answer"), str):
        return ParsedAnswer(data["answer"])
    name, args = data.get("tool"), data.get("arguments")
    if isinstance(name, str) and name in tool_names and isinstance(args, dict):
        return ParsedCall(name, _unspaced(args))
    return None


def partial_answer(text: str) -> str | None:
    """The answer text decoded so far from a partial ``{"answer": "...`` output, or
    ``None`` when the output is not an answer."""
    head = '{"answer"'
    stripped = text.lstrip()
    if not stripped.startswith(head[: len(stripped)]) or len(stripped) < len(head):
        return None
    rest = stripped[len(head) :].lstrip()
    if not rest.startswith(":"):
        return ""
    rest = rest[1:].lstrip()
    if not rest.startswith('"'):
        return ""
    body = rest[1:]
    end = _string_end(body)
    if end is not None:
        body = body[:end]
    # Drop an unfinished escape at the tail so the fragment decodes.
    for cut in range(0, 7):
        candidate = body[: len(body) - cut] if cut else body
        try:
            decoded: str = json.loads('"' + candidate + '"')
        except ValueError:
            continue
        # A lone high surrogate is half of an escaped pair whose second half is
        # still to come: hold it back so every partial is a prefix of the final text.
        if decoded and "\ud800" <= decoded[-1] <= "\udbff":
            decoded = decoded[:-1]
        return decoded
    return ""


def _string_end(body: str) -> int | None:
    escaped = False
    for i, ch in enumerate(body):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            return i
    return None
