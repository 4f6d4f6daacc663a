"""Idempotency ledger: the first result recorded for an idempotency key wins.

The dispatcher consults a ledger only for calls that carry an idempotency key (see
``@tool(idempotency_key=...)``). A repeated key returns the stored result, re-addressed
to the new call id, without executing the tool again. Only results whose outcome is
known are stored: successes and permanent failures. Transient failures and timeouts are
not stored, so a later call with the same key runs the tool again.

Persistent ledgers (``store/``) implement the same protocol; ``get``/``put`` may also
return awaitables, which the dispatcher awaits.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable
from typing import Protocol, runtime_checkable

from loopwright.core.messages import ToolResultPart


@runtime_checkable
class IdempotencyLedger(Protocol):
    """Maps an idempotency key to the first known result of a call with that key."""

    def get(self, key: str) -> ToolResultPart | Awaitable[ToolResultPart | None] | None:
        """The stored result for ``key``, or ``None`` when the key was never recorded."""
        ...

    def put(self, key: str, result: ToolResultPart) -> Awaitable[None] | None:
        """Record ``result`` for ``key``. A key already recorded keeps its first result."""
        ...


class MemoryLedger:
    """In-process ledger, bounded to ``max_entries`` keys (oldest evicted first).

    ``max_entries=None`` keeps every key for the life of the object.
    """

    __slots__ = ("_entries", "_max")

    def __init__(self, max_entries: int | None = 10_000) -> None:
        if max_entries is not None and max_entries < 1:
            raise ValueError(f"max_entries must be >= 1 or None, got {max_entries}")
        self._entries: OrderedDict[str, ToolResultPart] = OrderedDict()
        self._max = max_entries

    def get(self, key: str) -> ToolResultPart | None:
        return self._entries.get(key)

    def put(self, key: str, result: ToolResultPart) -> None:
        if key in self._entries:
            return
        self._entries[key] = result
        if self._max is not None and len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
