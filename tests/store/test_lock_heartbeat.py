"""LockHeartbeat: refreshes a session lock on a timer, and stopping it waits for a
refresh already running on a worker thread (cancelling the awaiting task would not stop
the thread, which could then re-take the lock after the run released it)."""

from __future__ import annotations

import asyncio
import threading

from loopwright.store import AsyncStore, MemoryStore
from loopwright.store.heartbeat import LockHeartbeat


class _SlowLocks(MemoryStore):
    """A memory store that runs on worker threads and whose refreshes can be held."""

    blocking = True

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.go = threading.Event()
        self.refreshes = 0

    def acquire_lock(self, session_id: str, owner: str, ttl: float = 120.0) -> None:
        if self.refreshes:  # the first call takes the lock; later ones are refreshes
            self.entered.set()
            self.go.wait(5)
        super().acquire_lock(session_id, owner, ttl)
        self.refreshes += 1


async def test_refreshes_on_a_timer_and_stop_waits_for_a_refresh_in_flight() -> None:
    store = _SlowLocks()
    aio = AsyncStore(store, workers=2)
    store.acquire_lock("s", "me", 0.3)
    store.go.set()
    beat = LockHeartbeat(aio, "s", "me", ttl=0.3)
    beat.start()
    await asyncio.sleep(0.5)  # a TTL and more without a checkpoint
    assert store.lock_owner("s") == "me" and store.refreshes >= 2
    store.go.clear()
    store.entered.clear()
    await asyncio.get_running_loop().run_in_executor(None, store.entered.wait, 5)
    stopping = asyncio.ensure_future(beat.stop())  # a refresh is blocked in the store
    await asyncio.sleep(0.05)
    assert not stopping.done()  # it waits for the refresh instead of abandoning it
    store.go.set()
    await stopping
    refreshes = store.refreshes
    store.release_lock("s", "me")
    await asyncio.sleep(0.25)  # no timer left to refresh it again
    assert store.lock_owner("s") is None and store.refreshes == refreshes
    aio.close()
