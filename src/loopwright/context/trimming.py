"""Shorten one tool result to a token limit: JSON-aware, head/tail with a marker.

JSON results keep their structure: long arrays keep their first items and a note of how
many were omitted, long strings inside keep their head, and the result is still valid
JSON the model (or a later tool) can read. Other text keeps its head and its tail (the
end of a log or a traceback is often what matters) around a marker that says how much
was cut, so the model knows the content is incomplete and can ask for more.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Final

from loopwright.context.structure import META_NS
from loopwright.context.tokens import TokenCounter
from loopwright.core.messages import JSONValue, Message, ToolResultPart

MIN_RESULT_TOKENS: Final = 16
"""Below this a trimmed result would be only its marker; limits are raised to it."""


def _marker(omitted_chars: int, total_chars: int) -> str:
    return (
        f"\n[... loopwright trimmed {omitted_chars:,} of {total_chars:,} characters here; "
        "ask for a narrower query to see them ...]\n"
    )


def trim_text(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """``text`` itself if it fits in ``max_tokens``, else a shortened version that fits.

    JSON objects/arrays stay valid JSON; anything else keeps head (2/3) and tail (1/3)
    around a marker, snapped to line breaks when one is near.
    """
    max_tokens = max(max_tokens, MIN_RESULT_TOKENS)
    tokens = counter.count_text(text)
    if tokens <= max_tokens:
        return text
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, (dict, list)):
            shrunk = _shrink_json_to_fit(value, max_tokens, counter)
            if shrunk is not None:
                return shrunk
    return _head_tail(text, tokens, max_tokens, counter)


def _head_tail(text: str, tokens: int, max_tokens: int, counter: TokenCounter) -> str:
    chars_per_token = len(text) / max(tokens, 1)
    keep = int(max_tokens * chars_per_token * 0.85)
    for _ in range(12):
        marker_cost = 40
        keep = max(0, min(keep, len(text) - 1))
        head_len = max(0, (keep * 2) // 3 - marker_cost)
        tail_len = max(0, keep - head_len - marker_cost)
        head = text[:head_len]
        nl = head.rfind("\n")
        if nl > head_len * 0.8:
            head = head[: nl + 1]
        tail = text[len(text) - tail_len :] if tail_len else ""
        nl = tail.find("\n")
        if 0 <= nl < tail_len * 0.2:
            tail = tail[nl + 1 :]
        out = head + _marker(len(text) - len(head) - len(tail), len(text)) + tail
        if counter.count_text(out) <= max_tokens:
            return out
        keep = int(keep * 0.75)
    return f"[trimmed: {len(text)} chars]"


def _shrink_json_to_fit(
    value: dict[str, JSONValue] | list[JSONValue], max_tokens: int, counter: TokenCounter
) -> str | None:
    """Progressively tighter JSON shrinking; None when even the tightest does not fit."""
    for max_items, max_chars in ((50, 2000), (20, 500), (10, 200), (5, 80), (3, 40), (1, 20)):
        out = json.dumps(_shrink(value, max_items, max_chars), ensure_ascii=False)
        if counter.count_text(out) <= max_tokens:
            return out
    return None


def _shrink(value: JSONValue, max_items: int, max_chars: int) -> JSONValue:
    if isinstance(value, str):
        if len(value) <= max_chars:
            return value
        return value[:max_chars] + f"...[+{len(value) - max_chars} chars]"
    if isinstance(value, list):
        kept = [_shrink(v, max_items, max_chars) for v in value[:max_items]]
        if len(value) > max_items:
            kept.append(f"[... {len(value) - max_items} more items omitted by loopwright]")
        return kept
    if isinstance(value, dict):
        items = list(value.items())
        out = {str(k): _shrink(v, max_items, max_chars) for k, v in items[: max_items * 2]}
        if len(items) > max_items * 2:
            out["_loopwright_omitted_keys"] = len(items) - max_items * 2
        return out
    return value


def trim_result_part(
    part: ToolResultPart, max_tokens: int, counter: TokenCounter
) -> ToolResultPart:
    """``part`` unchanged if it fits, else a copy whose content is trimmed and whose
    ``provider_meta["loopwright"]["trimmed"]`` records the original size.

    Images count with the text: when they do not fit beside it they are no longer sent
    (an image costs hundreds to about 1,600 tokens on every request); the text, which
    names each image on a line, says so and ``["loopwright"]["media_dropped"]`` counts
    them."""
    if part.media:
        part = _drop_media_over(part, max_tokens, counter)
    content = trim_text(part.content, max_tokens, counter)
    if content is part.content:
        return part
    meta: dict[str, JSONValue] = dict(part.provider_meta)
    meta[META_NS] = {
        **dict(meta.get(META_NS) or {}),
        "trimmed": {"original_chars": len(part.content), "kept_chars": len(content)},
    }
    return replace(part, content=content, provider_meta=meta)


def _drop_media_over(
    part: ToolResultPart, max_tokens: int, counter: TokenCounter
) -> ToolResultPart:
    bare = replace(part, media=())
    with_media = counter.count_message(Message("tool", (part,)))
    media_tokens = with_media - counter.count_message(Message("tool", (bare,)))
    if counter.count_text(part.content) + media_tokens <= max(max_tokens, MIN_RESULT_TOKENS):
        return part
    count = len(part.media)
    images = "its image" if count == 1 else f"its {count} images"
    note = f"\n[loopwright no longer sends {images} (an older result); call the tool again to see them]"
    meta: dict[str, JSONValue] = dict(part.provider_meta)
    meta[META_NS] = {**dict(meta.get(META_NS) or {}), "media_dropped": count}
    return replace(bare, content=part.content + note, provider_meta=meta)


def trim_message_results(message: Message, max_tokens: int, counter: TokenCounter) -> Message:
    """A tool message with every result trimmed to ``max_tokens`` (same object if none was)."""
    if message.role != "tool":
        return message
    parts = tuple(
        trim_result_part(p, max_tokens, counter) if isinstance(p, ToolResultPart) else p
        for p in message.parts
    )
    if all(a is b for a, b in zip(parts, message.parts, strict=True)):
        return message
    return replace(message, parts=parts)
