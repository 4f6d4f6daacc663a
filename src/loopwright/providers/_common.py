"""Small helpers every adapter shares (the stable import surface for adapter modules).

Re-exports the error mapping (:mod:`._errors`), retries (:mod:`._retry`), partial JSON
(:mod:`._partial_json`), tool-name mapping (:mod:`._names`) and the stream driver
(:mod:`._stream`), and adds the request-side pieces: the ``on_payload`` hook, id
normalisation for cross-provider histories, and the foreign-reasoning policy.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loopwright.core.errors import BadRequest
from loopwright.core.messages import JSONValue, Message, ReasoningPart, ToolCallPart
from loopwright.core.protocols import PayloadHook
from loopwright.core.tools import ToolSpec
from loopwright.providers._errors import (
    error_from_exception,
    error_from_http,
    is_context_overflow,
    parse_retry_after,
)
from loopwright.providers._names import ToolNameMap, wire_name
from loopwright.providers._partial_json import parse_final, parse_partial
from loopwright.providers._retry import NO_RETRY, RetryPolicy, with_retries
from loopwright.providers._stream import StreamAccumulator, StreamPlan, drive

__all__ = [
    "NO_RETRY",
    "RetryPolicy",
    "StreamAccumulator",
    "StreamPlan",
    "EncodeCache",
    "ToolNameMap",
    "apply_request_hook",
    "drive",
    "error_from_exception",
    "error_from_http",
    "foreign_reasoning_text",
    "is_context_overflow",
    "name_map_for",
    "normalize_call_id",
    "own_meta",
    "parse_final",
    "parse_partial",
    "parse_retry_after",
    "report_response",
    "wire_name",
    "with_retries",
]

_ID_OK = re.compile(r"^[a-zA-Z0-9_-]+$")


@functools.lru_cache(maxsize=8192)
def normalize_call_id(call_id: str, max_len: int = 64) -> str:
    """A tool-call id every protocol accepts (``[a-zA-Z0-9_-]``, at most ``max_len``).

    Deterministic, so a call and its result (normalised separately) still pair up. Ids
    that already fit are unchanged; empty ids become ``call_<hash of ''>``.
    """
    if call_id and len(call_id) <= max_len and _ID_OK.match(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode()).hexdigest()
    room = max_len - 13
    if room < 1:
        return ("c" + digest)[: max(1, max_len)]
    stem = re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:room] or "call"[:room]
    return f"{stem}_{digest[:12]}"


def own_meta(meta: Mapping[str, JSONValue], protocol: str) -> Mapping[str, JSONValue]:
    """This protocol's slice of a ``provider_meta`` mapping (empty when absent)."""
    value = meta.get(protocol)
    return value if isinstance(value, Mapping) else {}


def foreign_reasoning_text(part: ReasoningPart) -> str | None:
    """How reasoning produced by another provider is replayed: as plain text, or dropped
    (``None``) when it has no text (e.g. only an encrypted blob). Signatures and opaque
    ids never cross protocols: they are only valid for the issuer."""
    text = part.text.strip()
    return f"<reasoning>\n{text}\n</reasoning>" if text else None


def name_map_for(tools: Sequence[ToolSpec], messages: Iterable[Message]) -> ToolNameMap:
    """Wire names for the request's tools and every tool name in the history."""
    names = ToolNameMap.build(t.name for t in tools)
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                names.add(part.name)
    return names


def apply_request_hook(
    hook: PayloadHook | None, provider: str, payload: dict[str, Any]
) -> dict[str, Any]:
    """Let ``on_payload("request", payload)`` see and optionally replace the request.

    Raises :class:`BadRequest` when the hook fails or returns something that is not a
    mapping, so the adapter reports it as a final ``StreamError`` (never retried).
    """
    if hook is None:
        return payload
    try:
        replaced = hook("request", payload)
    except Exception as exc:
        raise BadRequest(
            f"on_payload hook failed on the request: {type(exc).__name__}: {exc}",
            provider=provider,
        ) from exc
    if replaced is None:
        return payload
    if not isinstance(replaced, Mapping):
        raise BadRequest(
            f"on_payload hook must return a mapping or None, got {type(replaced).__name__}",
            provider=provider,
        )
    return dict(replaced)


def report_response(hook: PayloadHook | None, payload: Mapping[str, Any]) -> None:
    """Show the raw response to ``on_payload("response", ...)``; its return is ignored."""
    if hook is None:
        return
    try:
        hook("response", payload)
    except Exception:  # an observer must not turn a good answer into a failure
        return


class EncodeCache:
    """Memo of encoded history messages, so a growing conversation is not re-encoded
    from scratch on every step (messages are frozen: the same object encodes the same).

    Keyed by object identity; the entry keeps the message alive, so an id is never reused
    while cached. An entry records the tool names it mapped and is only reused while the
    request's :class:`ToolNameMap` maps them the same way. Cached wire dicts are shared
    between requests: adapters disable the cache when an ``on_payload`` hook (which could
    mutate them) is installed. ``limit`` bounds memory (the cache is cleared when full).
    """

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._data: dict[int, tuple[Message, tuple[tuple[str, str], ...], list[Any]]] = {}

    def get(self, message: Message, names: ToolNameMap) -> list[Any] | None:
        hit = self._data.get(id(message))
        if hit is None or hit[0] is not message:
            return None
        for canonical, wire in hit[1]:
            if names.to_wire(canonical) != wire:
                return None
        return hit[2]

    def put(self, message: Message, names: ToolNameMap, items: list[Any]) -> list[Any]:
        if len(self._data) >= self._limit:
            self._data.clear()
        used = tuple(
            (p.name, names.to_wire(p.name)) for p in message.parts if isinstance(p, ToolCallPart)
        )
        self._data[id(message)] = (message, used, items)
        return items
