"""Hypothesis strategies: random agent histories (parallel calls, errors, reasoning, CJK).

Hypothesis draws the shape (segment kinds, sizes) and a seed per segment; the details
follow from a seeded ``random.Random``, which keeps generation cheap enough for
thousands of examples per test run.
"""

from __future__ import annotations

import json
import random

from hypothesis import strategies as st

from loopwright.context import pin
from loopwright.core import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

_WORDS = [
    "alpha",
    "beta",
    "search",
    "the",
    "result",
    "上下文",
    "窗口",
    "token",
    "42",
    "{}",
    "日本語",
]


def _text(rng: random.Random, max_words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, max_words)))


def _content(rng: random.Random, size: int) -> str:
    if size == 0:
        return _text(rng, 8)
    if size == 1:
        return _text(rng, 60)
    if size == 2:
        n = rng.randint(0, 120)
        return json.dumps(
            [{"id": i, "name": f"row {i}", "note": "上下文" * (i % 3)} for i in range(n)]
        )
    return _text(rng, 400) * 3


def _exchange(rng: random.Random, turn: int, size: int) -> list[Message]:
    calls = [
        ToolCallPart(f"c{turn}_{k}", rng.choice(["search", "read", "calc"]), {"q": k})
        for k in range(rng.randint(1, 3))
    ]
    parts: list[ReasoningPart | TextPart | ToolCallPart] = []
    if rng.random() < 0.5:
        parts.append(ReasoningPart(_text(rng, 20), {"anthropic": {"signature": "sig"}}))
    if rng.random() < 0.5:
        parts.append(TextPart(_text(rng, 10)))
    out = [Message("assistant", (*parts, *calls))]
    results = []
    for c in calls:
        is_error = rng.random() < 0.2
        results.append(
            ToolResultPart(
                c.id,
                c.name,
                _content(rng, rng.randint(0, size)),
                is_error,
                "permanent" if is_error else None,
            )
        )
    if len(results) > 1 and rng.random() < 0.5:
        out.extend(Message.tool_results([r]) for r in results)  # split over messages
    else:
        out.append(Message.tool_results(results))
    return out


_SEGMENT = st.tuples(
    st.sampled_from(["exchange", "exchange", "exchange", "user", "answer"]),
    st.integers(0, 3),
    st.integers(0, 2**20),
)


@st.composite
def histories(draw: st.DrawFn, max_segments: int = 14) -> list[Message]:
    head = draw(st.tuples(st.integers(0, 2), st.booleans(), st.integers(0, 2**20)))
    n_system, constraint, seed = head
    rng = random.Random(seed)
    msgs: list[Message] = [Message.system(_text(rng, 30)) for _ in range(n_system)]
    if constraint:
        msgs.append(pin(Message.user("Constraint: " + _text(rng, 15))))
    msgs.append(Message.user(_text(rng, 20)))
    for turn, (kind, size, seg_seed) in enumerate(draw(st.lists(_SEGMENT, max_size=max_segments))):
        seg = random.Random(seg_seed)
        if kind == "exchange":
            msgs.extend(_exchange(seg, turn, size))
        elif kind == "user":
            msgs.append(Message.user(_text(seg, 20)))
        else:
            msgs.append(Message.assistant(_text(seg, 30)))
    return msgs


@st.composite
def broken_histories(draw: st.DrawFn) -> list[Message]:
    """A sound history with one or more pairing faults injected."""
    msgs = list(draw(histories()))
    msgs.append(Message("assistant", (ToolCallPart("lost", "search", {"q": 1}),)))
    faults = draw(
        st.lists(
            st.tuples(st.sampled_from(["drop", "stray", "call"]), st.integers(0, 999)), max_size=3
        )
    )
    for fault, where in faults:
        tool_idx = [i for i, m in enumerate(msgs) if m.role == "tool"]
        if fault == "drop" and tool_idx:
            del msgs[tool_idx[where % len(tool_idx)]]
        elif fault == "stray":
            at = 1 + where % len(msgs)
            msgs.insert(at, Message.tool_results([ToolResultPart("ghost", "search", "stray")]))
        else:
            at = 1 + where % len(msgs)
            msgs.insert(at, Message("assistant", (ToolCallPart(f"o{at}", "calc", {}),)))
    return msgs
