"""Shared helpers for the loop tests (imported by name: tests/loop is on sys.path)."""

from __future__ import annotations

from loopwright import tool
from loopwright.core.messages import Message


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


class FakeSleep:
    """Records requested delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def well_formed(messages: list[Message] | tuple[Message, ...]) -> None:
    """Every tool call of an assistant message has exactly one result, in the next
    message (role tool), in call order, and tool messages only follow such calls."""
    for i, message in enumerate(messages):
        calls = message.tool_calls
        if message.role == "assistant" and calls:
            assert i + 1 < len(messages), f"message {i} has calls but no results follow"
            results = messages[i + 1]
            assert results.role == "tool", f"message {i + 1} should hold the results"
            got = [r.call_id for r in results.tool_results_parts]
            assert got == [c.id for c in calls], (got, [c.id for c in calls])
            assert len({c.id for c in calls}) == len(calls), "duplicate call ids"
        if message.role == "tool":
            assert i > 0 and messages[i - 1].role == "assistant" and messages[i - 1].tool_calls
