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
import itertools
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
    __slots__ = ("_armed_at", "_counter", "_handle", "entries", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.entries: dict[int, Deadline] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._armed_at = float("inf")
        self._counter = itertools.count()

    def add(self, timeout: float, task: asyncio.Task[Any]) -> tuple[int, Deadline]:
        d = Deadline(self.loop.time() + timeout, task)
        token = next(self._counter)
        self.entries[token] = d
        if d.when < self._armed_at:
            self._arm(d.when)
        return token, d

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
        for token, d in list(self.entries.items()):
            if d.when <= now:
                del self.entries[token]
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


def watchdog() -> _Watchdog:
    """The running loop's watchdog (created on first use)."""
    loop = asyncio.get_running_loop()
    if _last and _last[0].loop is loop:
        return _last[0]
    wd = _BY_LOOP.get(loop)
    if wd is None:
        wd = _BY_LOOP[loop] = _Watchdog(loop)
    _last[:] = [wd]
    return wd
