"""One run per thread: a top-level run of a graph with a checkpointer holds its thread's
store lock (the session lock every loopwright store has) from its start to its end.

Two runs of one thread at once would interleave their checkpoints, each continuing from
its own idea of the thread's latest state; the second one is refused with
:class:`~loopwright.graph.types.ThreadBusy` instead (LangGraph's server refuses a second
run on a busy thread the same way by default). The lock is the store's, so a run in
another process is seen too; a heartbeat keeps it while a superstep runs longer than its
TTL, and a lock left by a process that died on this host is taken over.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from loopwright.graph.types import ThreadBusy
from loopwright.store import AsyncStore, CheckpointStore, SessionLocked
from loopwright.store.base import DEFAULT_LOCK_TTL
from loopwright.store.heartbeat import LockHeartbeat
from loopwright.store.state import lock_owner_id


class ThreadLock:
    """The lock of one run on ``thread`` (:meth:`claim` at its start, :meth:`release`
    at its end, both on the run's event loop)."""

    __slots__ = ("_heartbeat", "owner", "store", "thread")

    def __init__(self, store: AsyncStore, thread: str) -> None:
        self.store = store
        self.thread = thread
        self.owner = lock_owner_id()
        self._heartbeat: LockHeartbeat | None = None

    async def claim(self) -> None:
        try:
            await self.store.acquire_lock(self.thread, self.owner, DEFAULT_LOCK_TTL)
        except SessionLocked as exc:
            raise ThreadBusy(self.thread, exc.owner) from None
        self._heartbeat = LockHeartbeat(self.store, self.thread, self.owner, DEFAULT_LOCK_TTL)
        self._heartbeat.start()

    async def release(self) -> None:
        heartbeat, self._heartbeat = self._heartbeat, None
        if heartbeat is None:
            return  # never claimed
        await heartbeat.stop()
        await self.store.release_lock(self.thread, self.owner)


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
