"""Keyed calls in flight: at most one execution per idempotency key at a time.

The ledger answers a key whose call *finished*. Between a keyed call's start and the
moment its result is recorded there is a window the ledger cannot cover: most visibly a
sync tool that timed out (the model is told so) while its thread keeps running; the
model retries, the ledger has nothing, and the side effect would happen twice. This
table closes the window: the first call of ``(tool, key)`` claims it; a second call
while it is claimed waits for that execution's result (up to its own timeout) instead
of starting another. The claim is released only once the result is known and recorded
in the ledger -- for a timed-out thread, when the thread really finishes.

The table is process-wide (keyed by tool name and key, not by dispatcher or ledger):
a durable run resumed in the same process builds a new dispatcher and ledger object,
and must still see the execution its previous incarnation left running. Across
processes no thread survives a crash, so the persistent ledger and intent records are
enough there.
"""

from __future__ import annotations

import concurrent.futures
import threading

from loopwright.core.messages import ToolResultPart

Slot = concurrent.futures.Future
"""Resolved with the call's final :class:`ToolResultPart`, or ``None`` when the claiming
call was cancelled before its tool ran to an end."""

_CLAIMS: dict[tuple[str, str], Slot[ToolResultPart | None]] = {}
_LOCK = threading.Lock()


def claim(tool: str, key: str) -> tuple[Slot[ToolResultPart | None], bool]:
    """``(slot, True)`` when this call owns ``(tool, key)`` now and must run the tool;
    ``(slot, False)`` when another execution holds it (wait on ``slot``)."""
    with _LOCK:
        slot = _CLAIMS.get((tool, key))
        if slot is not None:
            return slot, False
        slot = _CLAIMS[(tool, key)] = Slot()
        return slot, True


def resolve(slot: Slot[ToolResultPart | None], result: ToolResultPart | None) -> None:
    """Give waiting calls ``result`` (the claim stays until :func:`release`)."""
    if not slot.done():
        slot.set_result(result)


def release(tool: str, key: str, slot: Slot[ToolResultPart | None]) -> None:
    """Drop the claim held by ``slot`` (a no-op when another one replaced it)."""
    with _LOCK:
        if _CLAIMS.get((tool, key)) is slot:
            del _CLAIMS[(tool, key)]


def held(tool: str, key: str) -> bool:
    """Whether ``(tool, key)`` is claimed (for tests and diagnostics)."""
    return (tool, key) in _CLAIMS
