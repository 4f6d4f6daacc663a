"""Repetition and cycle detection over a bounded tail of tool calls and their results.

The detector keeps the last ``repeat_limit * max_cycle_period`` calls in a ``deque`` and
compares only those, so its cost per step does not depend on how long the run has been
going. Two calls repeat each other when they have the same name, equal arguments *and*
the same result: polling a job whose status goes queued -> running -> done makes
progress and is not a loop, while the same call getting the same answer again is.
Arguments are compared by equality (no serialisation, no hashing, so unhashable JSON
values are fine). The tail holds the call parts and result texts themselves (already in
the history: no new object per call).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from loopwright.core.messages import JSONValue, Message, ToolCallPart, ToolResultPart


class RepetitionDetector:
    """Detects the same call ``repeat_limit`` times in a row, or (with ``cycles``) a
    cycle of ``2..max_period`` calls repeated ``repeat_limit`` times in a row.

    Feed it every tool call in order with :meth:`add`; :meth:`check` returns a
    description of the repetition found, or ``None``.
    """

    __slots__ = ("_cycles", "_max_period", "_repeat", "_results", "_tail")

    def __init__(self, repeat_limit: int, *, cycles: bool = True, max_period: int = 4) -> None:
        if repeat_limit < 2:
            raise ValueError(f"repeat_limit must be >= 2, got {repeat_limit}")
        self._repeat = repeat_limit
        self._cycles = cycles
        self._max_period = max_period if cycles else 1
        size = repeat_limit * self._max_period
        self._tail: deque[ToolCallPart] = deque(maxlen=size)
        self._results: deque[str | None] = deque(maxlen=size)

    def add(
        self, calls: Sequence[ToolCallPart], results: Sequence[ToolResultPart] | None = None
    ) -> None:
        """Record ``calls`` in order, with their ``results`` (in call order) when known."""
        self._tail.extend(calls)
        if results is None or len(results) != len(calls):
            self._results.extend([None] * len(calls))
        else:
            self._results.extend([r.content for r in results])

    def prime(self, messages: list[Message]) -> None:
        """Refill the tail from the end of a history (used when a run resumes)."""
        need = self._tail.maxlen or 0
        found: list[ToolCallPart] = []
        answers: dict[str, ToolResultPart] = {}
        i = len(messages) - 1
        while i >= 0 and len(found) < need:
            message = messages[i]
            for result in message.tool_results_parts:
                answers.setdefault(result.call_id, result)
            found[:0] = message.tool_calls
            i -= 1
        self._tail.clear()
        self._results.clear()
        kept = found[-need:] if need else []
        self._tail.extend(kept)
        self._results.extend([_content(answers.get(c.id)) for c in kept])

    def check(self) -> str | None:
        tail = self._tail
        n = len(tail)
        repeat = self._repeat
        if n < repeat:
            return None
        last = tail[-1]
        name, arguments = last.name, last.arguments
        for period in range(1, self._max_period + 1):
            span = period * repeat
            if span > n:
                break
            prior = tail[n - 1 - period]  # cheap pre-check: almost always decides
            if prior.name != name or prior.arguments != arguments:
                continue
            start = n - span
            if all(self._same(start + k, start + k + period) for k in range(span - period)):
                return self._describe(period, start)
        return None

    def _same(self, i: int, j: int) -> bool:
        a, b = self._tail[i], self._tail[j]
        return (
            a.name == b.name and a.arguments == b.arguments and self._results[i] == self._results[j]
        )

    def _describe(self, period: int, start: int) -> str:
        tail = self._tail
        if period == 1:
            name, args = tail[-1].name, tail[-1].arguments
            return (
                f"tool {name!r} was called with the same arguments {self._repeat} times "
                f"in a row and got the same result each time ({_short(args)})"
            )
        names = " -> ".join(tail[start + k].name for k in range(period))
        return f"the cycle {names} repeated {self._repeat} times in a row"


def _content(result: ToolResultPart | None) -> str | None:
    return None if result is None else result.content


def _short(args: Mapping[str, JSONValue], limit: int = 120) -> str:
    text = repr(dict(args))
    return text if len(text) <= limit else text[: limit - 3] + "..."
