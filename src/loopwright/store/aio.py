"""The one async face of every store.

Store backends block (SQLite, redis-py and psycopg calls wait on I/O). Async code never
calls them directly: :class:`AsyncStore` wraps a backend once and runs its calls on the
adapter's own worker threads, so a 5 ms write suspends only the run that waits for it,
never the event loop. A store that declares ``blocking = False`` (``MemoryStore``) is
called inline: a thread hop would cost more than the call.

Group commit. Writes -- checkpoints, intent records, lock releases -- do not get a
thread of their own: they go into ONE queue, and a worker takes every queued write, of
every run, and hands them to ``store.write`` at once (one transaction, the statements of
all of them sent together). While that batch is written the next one gathers. So 100
concurrent runs share a few round trips, commits and thread hops instead of paying one
each; on a loaded machine the hop (thread wake-up, GIL hand-off, the event loop's
wake-up), not the store, had been most of each wait (``benchmarks/notes/durable.md``).
Each caller gets its own write's outcome: a write that fails alone (a history conflict)
fails only its caller; if the batch's transaction fails as a whole (a database error, e.g.
a constraint one write breaks), its writes are retried in halves, each in a transaction
of its own, so only the culprit fails and nothing else is lost. Only a store that cannot
be reached fails every caller in the batch (none of their writes is stored). Other
calls (locks, loads, reads) need an answer before their caller can go on and run one
per worker job; calls that must follow one
another share one (:meth:`AsyncStore.lock_and_load`).

It also serves as the dispatcher's persistent idempotency ledger (``get`` / ``put``
return awaitables, which the dispatcher awaits).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from loopwright.core.messages import ToolResultPart
from loopwright.core.run import RunState
from loopwright.store.base import DEFAULT_LOCK_TTL, CheckpointStore
from loopwright.store.errors import StoreUnavailable
from loopwright.store.state import CheckpointRef, Claim, IntentRecord, Write

log = logging.getLogger("loopwright.store")

_P = ParamSpec("_P")
_T = TypeVar("_T")

DEFAULT_WORKERS = 64
"""Worker threads per adapter: concurrent store calls beyond this wait for a thread (a
thread mostly waits on the server, so many cost little CPU; each may hold a connection)."""

WRITE_BATCHES = 2
"""Group-commit batches in flight at once. Few are enough: while they are written, the
next batch gathers every write that arrives; more would only split the same writes into
more, smaller transactions."""

_Op = Write | Claim
_Pending = tuple[_Op | Callable[[], Write], "asyncio.Future[object]"]
_Built = tuple[_Op, "asyncio.Future[object]"]


def _apply(store: CheckpointStore, ops: Sequence[_Op]) -> list[object]:
    """One batch, on a worker thread: the claims (runs starting) in one ``store.claim``,
    then the writes in one ``store.write``; outcomes in the order of ``ops``."""
    outcomes: list[object] = [None] * len(ops)
    claims = [i for i, op in enumerate(ops) if isinstance(op, Claim)]
    writes = [i for i, op in enumerate(ops) if isinstance(op, Write)]
    if claims:
        _spread(outcomes, [ops[i] for i in claims], claims, store.claim)  # type: ignore[arg-type]
    if writes:
        _spread(outcomes, [ops[i] for i in writes], writes, store.write)  # type: ignore[arg-type]
    return outcomes


def _spread(
    outcomes: list[object],
    parts: list[_Op],
    picked: list[int],
    call: Callable[[Sequence[_Op]], Sequence[object]],
) -> None:
    """``call(parts)``, its outcomes put at ``picked`` (see :func:`_outcomes`)."""
    for i, result in zip(picked, _outcomes(call, parts), strict=True):
        outcomes[i] = result


def _outcomes(call: Callable[[Sequence[_Op]], Sequence[object]], parts: list[_Op]) -> list[object]:
    """``call(parts)``'s outcomes. A call that fails as a whole (one transaction rolled
    back: nothing of it stored) is tried again in halves, each in a transaction of its
    own, down to the part that fails alone: an error one run's write causes (a
    constraint, a key conflict) fails that run only instead of every run batched with
    it, for about 2·log2(n) transactions rather than one per part (the halves keep the
    parts' order). A store that cannot be reached is not retried: that error is no one
    part's."""
    try:
        return list(call(parts))
    except StoreUnavailable as exc:
        return [exc] * len(parts)
    except Exception as exc:
        if len(parts) == 1:
            return [exc]
        log.warning("a batch of %d store calls failed (%s): retrying in halves", len(parts), exc)
        half = len(parts) // 2
        return _outcomes(call, parts[:half]) + _outcomes(call, parts[half:])


class _Queue:
    """The group-commit queue of one event loop: ops waiting for the next batch, whether
    a batch starts on the next iteration, and how many are in flight."""

    __slots__ = ("ops", "scheduled", "writing")

    def __init__(self) -> None:
        self.ops: list[_Pending] = []
        self.scheduled = False
        self.writing = 0


class AsyncStore:
    """``await``-able store calls over a blocking :class:`CheckpointStore` (see module)."""

    __slots__ = ("_last", "_lock", "_pool", "_queues", "store")

    def __init__(self, store: CheckpointStore, *, workers: int = DEFAULT_WORKERS) -> None:
        self.store = store
        self._pool: ThreadPoolExecutor | None = None
        # one queue per event loop: ``Durable.run`` runs each call in a loop of its own,
        # and threads may each run one over the same adapter
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )
        self._last: tuple[asyncio.AbstractEventLoop, _Queue] | None = None
        self._lock = threading.Lock()
        if store.blocking:
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix=f"lw-{store.kind}")

    async def _call(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        return await self._job(functools.partial(fn, *args, **kwargs))

    async def _job(self, job: Callable[[], _T]) -> _T:
        """``job()`` on a worker thread (inline for a non-blocking store)."""
        if self._pool is None:
            return job()
        return await asyncio.get_running_loop().run_in_executor(self._pool, job)

    # -- group commit -------------------------------------------------------------
    def submit(self, write: Write | Callable[[], Write]) -> asyncio.Future[CheckpointRef | None]:
        """Queue ``write`` for the next batch (see module); the future holds its outcome.
        Writes submitted before the caller next suspends share a batch.

        ``write`` may be a function that builds the write when its batch starts (on the
        event loop): a checkpoint taken then includes whatever the run did while the
        write waited in the queue, so a checkpoint the next one would supersede before
        it was written is never written (see ``durable.Checkpointer``)."""
        return self._submit(write)  # type: ignore[return-value]

    def _queue(self, loop: asyncio.AbstractEventLoop) -> _Queue:
        last = self._last
        if last is not None and last[0] is loop:
            return last[1]
        with self._lock:
            queue = self._queues.get(loop)
            if queue is None:
                queue = self._queues[loop] = _Queue()
            self._last = (loop, queue)
        return queue

    def _submit(self, op: _Op | Callable[[], Write]) -> asyncio.Future[object]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[object] = loop.create_future()
        if self._pool is None:
            built = _build([(op, future)])
            if built:
                _settle(future, _apply(self.store, [built[0][0]])[0])
            return future
        queue = self._queue(loop)
        queue.ops.append((op, future))
        if not queue.scheduled and queue.writing < WRITE_BATCHES:
            # on the next iteration, so the ops queued during this one join the batch
            queue.scheduled = True
            loop.call_soon(self._start, queue)
        return future

    async def write(self, write: Write | Callable[[], Write]) -> CheckpointRef | None:
        """:meth:`submit` ``write`` and wait until it is stored."""
        return await self._queued(write)  # type: ignore[return-value]

    async def _queued(self, op: _Op | Callable[[], Write]) -> object:
        """Queue ``op`` and wait for its outcome. Cancelling the caller does not take
        back what was queued: it is applied with its batch (a caller that gives up must
        not leave a lock held, or a checkpoint half-known)."""
        future = self._submit(op)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(_consume)  # nobody waits for its error any more
            raise

    def _start(self, queue: _Queue) -> None:
        """Hand every queued op to a worker as one batch (on the event loop)."""
        queue.scheduled = False
        queued, queue.ops = queue.ops, []
        if not queued or self._pool is None:
            return
        # each op travels with its own future: a future cancelled while queued still has
        # its op applied (it may release a lock), and the pairing never shifts
        batch = _build(queued)
        if not batch:
            return
        loop = asyncio.get_running_loop()
        queue.writing += 1
        done = self._pool.submit(_apply, self.store, [op for op, _ in batch])

        def finished(f: Future[list[object]]) -> None:  # on the worker thread
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                loop.call_soon_threadsafe(self._finish, queue, batch, f)

        done.add_done_callback(finished)

    def _finish(self, queue: _Queue, batch: list[_Built], done: Future[list[object]]) -> None:
        queue.writing -= 1
        try:
            outcomes: Sequence[object] = done.result()
        except Exception as exc:  # the worker itself failed: none of it was applied
            outcomes = [exc] * len(batch)
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if not future.done():  # done: cancelled, or the loop is closing
                _settle(future, outcome)
        if queue.ops and not queue.scheduled:
            self._start(queue)

    # -- checkpoints ------------------------------------------------------------
    async def save(
        self, state: RunState, *, rewrite_from: int | None = None, release: str | None = None
    ) -> CheckpointRef:
        """Checkpoint ``state`` through the group commit; ``state`` must not change until
        this returns (pass a :meth:`RunState.snapshot` of a live state). With ``release``
        (the owner) the session's lock is released, whether or not the save succeeded."""
        lock = None if release is None else (state.session_id, release)
        ref = await self.write(Write(state, rewrite_from, (), lock))
        assert ref is not None  # a write with a state has a checkpoint reference
        return ref

    async def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        return await self._call(self.store.load, session_id, checkpoint)

    async def delete(self, session_id: str) -> bool:
        return await self._call(self.store.delete, session_id)

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
        load the session (``None``: not stored yet), through the group commit
        (``store.claim``). The lock is not held if loading fails."""
        return await self._queued(Claim(session_id, owner, ttl, break_first))  # type: ignore[return-value]

    def claim(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LOCK_TTL
    ) -> asyncio.Future[RunState | None]:
        """:meth:`lock_and_load` without waiting: the claim is queued for the next batch
        and the future holds its outcome, so the caller can do what is safe without the
        lock (a new session's first model call) while it is written. Like a queued
        write, it is applied with its batch even if nobody waits for it any more."""
        return self._submit(Claim(session_id, owner, ttl))  # type: ignore[return-value]

    async def acquire_lock(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LOCK_TTL
    ) -> None:
        await self._call(self.store.acquire_lock, session_id, owner, ttl)

    async def release_lock(self, session_id: str, owner: str) -> None:
        await self.write(Write(release=(session_id, owner)))

    async def break_lock(self, session_id: str) -> bool:
        return await self._call(self.store.break_lock, session_id)

    # -- intents ------------------------------------------------------------------
    async def put_intent(self, intent: IntentRecord) -> None:
        await self.write(Write(intents=(intent,)))

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


def _build(queued: list[_Pending]) -> list[_Built]:
    """The ops of ``queued`` with their futures, calling the functions that build writes;
    one whose build fails gets that error (unless its future is cancelled) and is left
    out."""
    built: list[_Built] = []
    for op, future in queued:
        if isinstance(op, Write | Claim):
            built.append((op, future))
            continue
        try:
            built.append((op(), future))
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
    return built


def _settle(future: asyncio.Future[object], outcome: object) -> None:
    if isinstance(outcome, Exception):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def _consume(future: asyncio.Future[object]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("a store write whose caller was cancelled failed: %s", future.exception())
