"""One run per thread: a top-level run of a graph with a checkpointer holds its thread's
store lock (the session lock every loopwright store has) from its start to its end.

Two runs of one thread at once would interleave their checkpoints, each continuing from
its own idea of the thread's latest state; the second one is refused with
:class:`~loopwright.graph.types.ThreadBusy` instead (LangGraph's server refuses a second
run on a busy thread the same way by default). The lock is the store's, so a run in
another process is seen too; a heartbeat keeps it while a superstep runs longer than its
TTL, and a lock left by a process that died on this host is taken over.

One exception: a stream that is closing. ``async for chunk in graph.astream(...): break``
leaves the stream's generator to be closed by the event loop a moment later (Python
closes an abandoned async generator in a task of its own); a run of the same thread
started right after it waits for that close instead of being refused.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from loopwright.graph.types import ThreadBusy
from loopwright.store import AsyncStore, CheckpointStore, SessionLocked
from loopwright.store.base import DEFAULT_LOCK_TTL
from loopwright.store.heartbeat import LockHeartbeat
from loopwright.store.state import lock_owner_id

_HELD: dict[tuple[int, str], ThreadLock] = {}
"""The runs of this process holding a thread, by (store, thread)."""
_HELD_GUARD = threading.Lock()
_CLOSE_TURNS = 4
"""Loop turns a new run gives an abandoned stream to start closing: its generator's
close is scheduled when it is dropped and starts within two turns."""


class ThreadLock:
    """The lock of one run on ``thread`` (:meth:`claim` at its start, :meth:`release`
    at its end, both on the run's event loop). ``closing`` is set when the run's stream
    consumer left and the run is being stopped."""

    __slots__ = ("_heartbeat", "closing", "key", "owner", "released", "store", "thread")

    def __init__(self, store: AsyncStore, thread: str) -> None:
        self.store = store
        self.thread = thread
        self.key = (id(store.store), thread)
        self.owner = lock_owner_id()
        self.closing = False
        self.released = threading.Event()
        self._heartbeat: LockHeartbeat | None = None

    async def claim(self) -> None:
        await self._after_closing_stream()
        try:
            await self.store.acquire_lock(self.thread, self.owner, DEFAULT_LOCK_TTL)
        except SessionLocked as exc:
            raise ThreadBusy(self.thread, exc.owner) from None
        with _HELD_GUARD:
            _HELD[self.key] = self
        self._heartbeat = LockHeartbeat(self.store, self.thread, self.owner, DEFAULT_LOCK_TTL)
        self._heartbeat.start()

    async def _after_closing_stream(self) -> None:
        """Wait for a run of this process on the thread whose stream is closing."""
        for _ in range(_CLOSE_TURNS):
            holder = _HELD.get(self.key)
            if holder is None or holder.closing:
                break
            await asyncio.sleep(0)  # an abandoned stream's close is scheduled: let it start
        else:
            return  # a run that goes on: the store lock refuses this one
        if holder is not None:
            await asyncio.to_thread(holder.released.wait)  # it may run on another loop

    async def release(self) -> None:
        heartbeat, self._heartbeat = self._heartbeat, None
        if heartbeat is None:
            return  # never claimed
        try:
            await heartbeat.stop()
            await self.store.release_lock(self.thread, self.owner)
        finally:
            with _HELD_GUARD:
                if _HELD.get(self.key) is self:
                    del _HELD[self.key]
            self.released.set()


@contextmanager
def thread_held(store: CheckpointStore, thread: str) -> Iterator[None]:
    """Hold ``thread``'s lock around a synchronous write (``update_state``): refused with
    :class:`ThreadBusy` while a run holds it."""
    owner = lock_owner_id()
    try:
        store.acquire_lock(thread, owner, DEFAULT_LOCK_TTL)
    except SessionLocked as exc:
        raise ThreadBusy(thread, exc.owner) from None
    try:
        yield
    finally:
        store.release_lock(thread, owner)
