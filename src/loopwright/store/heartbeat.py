"""Keeping a session lock alive while a run holds it.

A session lock lives ``ttl`` seconds from its latest refresh (:class:`~loopwright.store.
base.Locks`). A run refreshes it when it checkpoints, but one step -- a slow tool, a long
model call -- can outlast the TTL, and another process could then take the session.
:class:`LockHeartbeat` refreshes the lock every ``ttl / 3`` seconds while the run holds
it. It is a timer on the event loop, not a sleeping task: most runs end before it ever
fires, and one that does costs one store call (on a worker thread, via
:class:`~loopwright.store.aio.AsyncStore`). Durable agent runs and strategy runs both
hold their lock through it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from loopwright.store.aio import AsyncStore
from loopwright.store.errors import SessionLocked, StoreError

log = logging.getLogger("loopwright.store")


class LockHeartbeat:
    """Refresh ``owner``'s lock on ``session_id`` every ``ttl / 3`` seconds between
    :meth:`start` and :meth:`stop` (both called on the event loop running the run)."""

    __slots__ = (
        "_refresh",
        "_stopped",
        "_timer",
        "on_lost",
        "owner",
        "session_id",
        "store",
        "ttl",
    )

    def __init__(self, store: AsyncStore, session_id: str, owner: str, ttl: float) -> None:
        self.store = store
        self.session_id = session_id
        self.owner = owner
        self.ttl = ttl
        self.on_lost: Callable[[SessionLocked], None] | None = None
        """Called when a refresh finds the lock held by another owner (it expired while
        this process stalled, or someone broke it): the holder must stop, since another
        process may be running the session now. The heartbeat stops."""
        self._timer: asyncio.TimerHandle | None = None
        self._refresh: asyncio.Task[None] | None = None
        self._stopped = False

    def start(self) -> None:
        """Arm the timer (the lock must be held already)."""
        self._stopped = False
        self._arm()

    def _arm(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self.ttl / 3, self._beat)

    def _beat(self) -> None:
        self._refresh = asyncio.get_running_loop().create_task(self._refresh_lock())

    async def _refresh_lock(self) -> None:
        try:
            await self.store.acquire_lock(self.session_id, self.owner, self.ttl)
        except SessionLocked as exc:
            log.warning("session %s: lock lost: %s", self.session_id, exc)
            if self.on_lost is not None and not self._stopped:
                self.on_lost(exc)
            return
        except StoreError as exc:  # the run's next checkpoint reports a lasting problem
            log.warning("session %s: lock refresh failed: %s", self.session_id, exc)
        if not self._stopped:
            self._arm()

    async def stop(self) -> None:
        """Stop refreshing. A refresh in flight is awaited, not cancelled: its store call
        runs on a worker thread that a cancellation would not stop, so it could re-take
        the lock after the caller released it."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
        refresh = self._refresh
        if refresh is not None and not refresh.done():
            await asyncio.wait((refresh,))  # neither raises its error nor cancels it
