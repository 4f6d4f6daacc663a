"""The conversation as the embedded model's prompt sees it: what it says (the latest
request, whether a tool result came since, whether a reply repeats an answered call)
and fitting it into the context window (tokenized with the model's own tokenizer; the
oldest blocks dropped first, a call staying with its results)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopwright.core.messages import Message
from loopwright.providers import local_prompt as lp

_RETRYABLE = frozenset({"transient", "timeout", "outcome_unknown", "awaiting_confirmation"})


def repeats_answered_call(reply: Message, history: Sequence[Message]) -> bool:
    """True when ``reply`` calls a tool with the same arguments as an earlier call (since
    the last user message) that already has a result: a success, or a failure that the
    same arguments will meet again (invalid arguments, not found, ...; a transient
    error or a timeout may pass on a new try)."""
    calls = reply.tool_calls
    if len(calls) != 1:
        return False
    call = calls[0]
    answered: set[str] = set()
    for message in reversed(history):
        if message.role == "user":
            break
        for result in message.tool_results_parts:
            if not result.is_error or result.error_kind not in _RETRYABLE:
                answered.add(result.call_id)
        for earlier in message.tool_calls:
            if (
                earlier.id in answered
                and earlier.name == call.name
                and dict(earlier.arguments) == dict(call.arguments)
            ):
                return True
    return False


def last_user_text(messages: Sequence[Message]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            return message.text
    return ""


def awaits_first_call(messages: Sequence[Message]) -> bool:
    """True when no tool result arrived since the last user message."""
    for message in reversed(messages):
        if message.role == "tool":
            return False
        if message.role == "user":
            return True
    return False


def tokenize(llm: Any, text: str, *, bos: bool) -> list[int]:
    tokens: list[int] = llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False)
    return tokens


def common_prefix(llm: Any, tokens: Sequence[int]) -> int:
    """How many of ``tokens`` are already in llama.cpp's KV cache (reused, not re-read)."""
    try:
        previous = list(llm.input_ids[: llm.n_tokens])
    except (AttributeError, TypeError):
        return 0
    n = 0
    for a, b in zip(previous, tokens, strict=False):
        if a != b:
            break
        n += 1
    return n


def _blocks(messages: Sequence[Message]) -> list[list[Message]]:
    """Group history into droppable blocks: a tool message stays with its call."""
    blocks: list[list[Message]] = []
    for message in messages:
        if message.role == "tool" and blocks:
            blocks[-1].append(message)
        else:
            blocks.append([message])
    return blocks


def fit_history(llm: Any, messages: Sequence[Message], budget: int) -> tuple[str, int]:
    """Render the conversation within ``budget`` tokens. Returns (text, dropped blocks).

    System messages are kept; the oldest other blocks go first; the newest block is
    cut in the middle if it alone is too long.
    """
    blocks = _blocks(messages)
    system = [b for b in blocks if b[0].role == "system"]
    rest = [b for b in blocks if b[0].role != "system"]
    rendered = ["".join(lp.render_message(m) for m in b) for b in system + rest]
    sizes = [len(tokenize(llm, r, bos=False)) for r in rendered]
    n_sys = len(system)
    dropped = 0
    while sum(sizes) > budget and len(rendered) - n_sys > 1:
        del rendered[n_sys], sizes[n_sys]
        dropped += 1
    if sum(sizes) > budget and len(rendered) > n_sys:
        keep = max(0, budget - sum(sizes[:-1]))
        rendered[-1] = _cut_to_tokens(llm, rendered[-1], keep)
    return "".join(rendered), dropped


def _cut_to_tokens(llm: Any, text: str, budget: int) -> str:
    """Cut the middle of ``text`` until it tokenizes to at most ``budget`` tokens."""
    marker = " [... {} characters cut to fit the context ...] "
    # Start from a character estimate so a 1 MB text is not re-tokenized many times.
    keep = min(len(text), max(0, budget * 3))
    for _ in range(8):
        if keep >= len(text):
            candidate = text
        else:
            half = keep // 2
            candidate = text[:half] + marker.format(len(text) - keep) + text[len(text) - half :]
        if len(tokenize(llm, candidate, bos=False)) <= budget:
            return candidate.rstrip()
        keep = int(keep * 0.7)
    return marker.format(len(text)).strip()


__all__ = [
    "awaits_first_call",
    "common_prefix",
    "fit_history",
    "last_user_text",
    "repeats_answered_call",
    "tokenize",
]
