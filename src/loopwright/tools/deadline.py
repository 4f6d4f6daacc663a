"""Cheap per-call deadlines: one watchdog timer per event loop instead of one per call.

``asyncio.timeout`` (or ``wait_for``) schedules and cancels a timer handle for every
call; that was ~30 % of a whole tool dispatch in profiles. Here a call registers its
deadline in a dict (O(1)) and removes it when done; one timer per loop is armed at the
earliest pending deadline. When it fires it cancels the tasks whose deadlines passed and
re-arms for the next one. Semantics match ``asyncio.timeout``: the task is cancelled at
the deadline and :func:`expired` lets the caller turn that cancellation into a timeout.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any


class Deadline:
    """One registered deadline; ``fired`` turns true when the watchdog cancelled it."""

    __slots__ = ("fired", "task", "when")

    def __init__(self, when: float, task: asyncio.Task[Any]) -> None:
        self.when = when
        self.task = task
        self.fired = False


class _Watchdog:
    __slots__ = ("_armed_at", "_handle", "entries", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        # insertion-ordered set of pending deadlines (Deadline hashes by identity)
        self.entries: dict[Deadline, None] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._armed_at = float("inf")

    def add(self, timeout: float, task: asyncio.Task[Any]) -> Deadline:
        """Register a deadline ``timeout`` seconds from now; pass it to :meth:`discard`
        when the call ends first."""
        d = Deadline(self.loop.time() + timeout, task)
        self.entries[d] = None
        if d.when < self._armed_at:
            self._arm(d.when)
        return d

    def discard(self, d: Deadline) -> None:
        self.entries.pop(d, None)

    def _arm(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed_at = when
        self._handle = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._armed_at = float("inf")
        now = self.loop.time()
        nxt = float("inf")
        for d in list(self.entries):
            if d.when <= now:
                del self.entries[d]
                d.fired = True
                d.task.cancel()
            elif d.when < nxt:
                nxt = d.when
        if nxt != float("inf"):
            self._arm(nxt)


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watchdog] = (
    weakref.WeakKeyDictionary()
)
_last: list[_Watchdog] = []


def watchdog(loop: asyncio.AbstractEventLoop | None = None) -> _Watchdog:
    """The watchdog of ``loop`` (default: the running loop), created on first use."""
    if loop is None:
        loop = asyncio.get_running_loop()
    if _last and _last[0].loop is loop:
        return _last[0]
    wd = _BY_LOOP.get(loop)
    if wd is None:
        wd = _BY_LOOP[loop] = _Watchdog(loop)
    _last[:] = [wd]
    return wd
