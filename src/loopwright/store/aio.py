"""The one async face of every store.

Store backends block (SQLite, redis-py and psycopg calls wait on I/O). Async code never
calls them directly: :class:`AsyncStore` wraps a backend once and runs each call on the
adapter's own worker threads, so a 5 ms write suspends only the run that waits for it,
never the event loop (100 concurrent durable runs then overlap their writes instead of
queueing behind one another: see ``benchmarks/durable.py``). A store that declares
``blocking = False`` (``MemoryStore``) is called inline: a thread hop would cost more
than the call.

Calls that must happen one after another anyway share one worker job
(:meth:`AsyncStore.lock_and_load`, :meth:`AsyncStore.save` with ``intents`` and
``release``): on a loaded machine a thread hop, not the store, is most of a call's latency
(measured: 18-25 ms p50 per hop for 100 concurrent durable runs at load 9, for 5 ms
writes), so a durable run's path to its answer pays three hops instead of six.

It also serves as the dispatcher's persistent idempotency ledger (``get`` / ``put``
return awaitables, which the dispatcher awaits).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from loopwright.core.messages import ToolResultPart
from loopwright.core.run import RunState
from loopwright.store.base import DEFAULT_LOCK_TTL, CheckpointStore
from loopwright.store.errors import SessionNotFound
from loopwright.store.state import CheckpointRef, IntentRecord

log = logging.getLogger("loopwright.store")

_P = ParamSpec("_P")
_T = TypeVar("_T")

DEFAULT_WORKERS = 64
"""Worker threads per adapter: concurrent store calls beyond this wait for a thread (a
thread mostly waits on the server, so many cost little CPU; each may hold a connection)."""


class AsyncStore:
    """``await``-able store calls over a blocking :class:`CheckpointStore` (see module)."""

    __slots__ = ("_pool", "store")

    def __init__(self, store: CheckpointStore, *, workers: int = DEFAULT_WORKERS) -> None:
        self.store = store
        self._pool: ThreadPoolExecutor | None = None
        if store.blocking:
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix=f"lw-{store.kind}")

    async def _call(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        return await self._job(functools.partial(fn, *args, **kwargs))

    async def _job(self, job: Callable[[], _T]) -> _T:
        """``job()`` on a worker thread (inline for a non-blocking store)."""
        if self._pool is None:
            return job()
        return await asyncio.get_running_loop().run_in_executor(self._pool, job)

    # -- checkpoints ------------------------------------------------------------
    async def save(
        self,
        state: RunState,
        *,
        rewrite_from: int | None = None,
        intents: Sequence[IntentRecord] = (),
        release: str | None = None,
    ) -> CheckpointRef:
        """``store.save``; ``state`` must not change until this returns (pass a
        :meth:`RunState.snapshot` of a live state). In the same worker job, after the
        save: ``intents`` are written (a failed one is logged, not raised: it does not
        undo the checkpoint) and, with ``release`` (the owner), the session's lock is
        released, whether or not the save succeeded."""
        store = self.store

        def job() -> CheckpointRef:
            try:
                ref = store.save(state, rewrite_from=rewrite_from)
                for intent in intents:
                    try:
                        store.put_intent(intent)
                    except Exception as exc:
                        log.warning(
                            "session %s: writing the intent record of call %s failed: %s",
                            intent.session_id,
                            intent.call_id,
                            exc,
                        )
                return ref
            finally:
                if release is not None:
                    store.release_lock(state.session_id, release)

        return await self._job(job)

    async def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        return await self._call(self.store.load, session_id, checkpoint)

    # -- locks --------------------------------------------------------------------
    async def lock_and_load(
        self,
        session_id: str,
        owner: str,
        ttl: float = DEFAULT_LOCK_TTL,
        *,
        break_first: bool = False,
    ) -> RunState | None:
        """Take the session's lock (breaking a held one first with ``break_first``), then
        load the session (``None``: not stored yet), in one worker job. The lock is
        released again if loading fails."""
        store = self.store

        def job() -> RunState | None:
            if break_first:
                store.break_lock(session_id)
            store.acquire_lock(session_id, owner, ttl)
            try:
                return store.load(session_id)
            except SessionNotFound:
                return None
            except BaseException:
                store.release_lock(session_id, owner)
                raise

        return await self._job(job)

    async def acquire_lock(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LOCK_TTL
    ) -> None:
        await self._call(self.store.acquire_lock, session_id, owner, ttl)

    async def release_lock(self, session_id: str, owner: str) -> None:
        await self._call(self.store.release_lock, session_id, owner)

    async def break_lock(self, session_id: str) -> bool:
        return await self._call(self.store.break_lock, session_id)

    # -- intents ------------------------------------------------------------------
    async def put_intent(self, intent: IntentRecord) -> None:
        await self._call(self.store.put_intent, intent)

    async def intents(self, session_id: str) -> list[IntentRecord]:
        return await self._call(self.store.intents, session_id)

    # -- ledger (the dispatcher's IdempotencyLedger protocol) ---------------------
    async def get(self, key: str) -> ToolResultPart | None:
        return await self._call(self.store.ledger_get, key)

    async def put(self, key: str, result: ToolResultPart) -> None:
        await self._call(self.store.ledger_put, key, result)

    def close(self) -> None:
        """Stop the worker threads (calls in flight finish); the store stays open."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
