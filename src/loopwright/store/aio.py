"""The one async face of every store.

Store backends block (SQLite, redis-py and psycopg calls wait on I/O). Async code never
calls them directly: :class:`AsyncStore` wraps a backend once and runs each call on the
adapter's own worker threads, so a 5 ms write suspends only the run that waits for it,
never the event loop (100 concurrent durable runs then overlap their writes instead of
queueing behind one another: see ``benchmarks/durable.py``). A store that declares
``blocking = False`` (``MemoryStore``) is called inline: a thread hop would cost more
than the call.

It also serves as the dispatcher's persistent idempotency ledger (``get`` / ``put``
return awaitables, which the dispatcher awaits).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from loopwright.core.messages import ToolResultPart
from loopwright.core.run import RunState
from loopwright.store.base import DEFAULT_LOCK_TTL, CheckpointStore
from loopwright.store.state import CheckpointRef, IntentRecord

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
        if self._pool is None:
            return fn(*args, **kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    # -- checkpoints ------------------------------------------------------------
    async def save(self, state: RunState, *, rewrite_from: int | None = None) -> CheckpointRef:
        """``store.save``; ``state`` must not change until this returns (pass a
        :meth:`RunState.snapshot` of a live state)."""
        return await self._call(self.store.save, state, rewrite_from=rewrite_from)

    async def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        return await self._call(self.store.load, session_id, checkpoint)

    # -- locks --------------------------------------------------------------------
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
