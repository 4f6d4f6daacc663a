"""Checkpointing as an event subscriber, and intent records around tool execution.

:class:`Checkpointer` subscribes to a run's events (``Hooks.on_event``) and checkpoints
the run's live :class:`~loopwright.core.run.RunState` according to a
:class:`CheckpointPolicy`:

* ``every_step`` -- after every appended message and at the end: finest recovery, most
  writes (cheap here: each write appends only the new messages);
* ``tool_calls`` -- before tools run (the assistant message holding the calls) and after
  (the results), plus the end: covers the failures that matter for side effects;
* ``interval`` -- at most one checkpoint per ``interval`` seconds, plus the end: fewest
  writes; a crash loses up to ``interval`` seconds of progress (intent records still
  protect non-idempotent tools).

The event callback never waits for the store: it marks the state dirty, and on the next
loop iteration the checkpoint goes into the group commit of
:class:`~loopwright.store.aio.AsyncStore` (one queue for every run; batches written off
the event loop). The snapshot is taken when its batch starts, so requests made while a
checkpoint waits in the queue, or while one is in flight, coalesce: the next write
saves the latest state, and a checkpoint superseded before it was written is never
written. The run waits for the store only where safety needs it: before a
non-idempotent tool runs (:meth:`IntentRecorder.before` flushes, so the call is stored
before its side effect) and at the end of the run (:meth:`Checkpointer.finish`, which
also releases the session lock in the same write). Result records of intents ride in
the same batch as the next checkpoint (:meth:`Checkpointer.add_intent`).

:class:`IntentRecorder` provides the dispatcher's ``before_tool_call`` /
``after_tool_call`` hooks: before a non-idempotent tool runs it writes an intent record
(call id + idempotency key); after, the result. Both run whatever the policy.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopwright.core.checks import check_choice
from loopwright.core.errors import UserError
from loopwright.core.events import MessageAppended, RunEvent, RunFinished
from loopwright.core.messages import Message
from loopwright.core.run import RunState
from loopwright.store.aio import AsyncStore
from loopwright.store.base import DEFAULT_LOCK_TTL
from loopwright.store.codec import StateEncoder
from loopwright.store.errors import SessionLocked
from loopwright.store.state import CheckpointRef, IntentRecord, Write

log = logging.getLogger("loopwright.durable")


class CheckpointPolicy(enum.StrEnum):
    EVERY_STEP = "every_step"
    TOOL_CALLS = "tool_calls"
    INTERVAL = "interval"


def checkpoint_policy(owner: str, value: object) -> CheckpointPolicy:
    """``value`` (a member or its name, ``"tool_calls"``) as a policy; anything else is a
    ``ConfigError`` naming the choices. (The checkpointer compares members by identity:
    a plain ``"every_step"`` string would otherwise have meant the interval policy.)"""
    return CheckpointPolicy(check_choice(owner, value, tuple(p.value for p in CheckpointPolicy)))


# ---------------------------------------------------------------- checkpointer
@dataclass(frozen=True, slots=True)
class CheckpointConfig:
    policy: CheckpointPolicy = CheckpointPolicy.EVERY_STEP
    interval: float = 5.0
    lock_owner: str | None = None
    lock_ttl: float = DEFAULT_LOCK_TTL

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "policy", checkpoint_policy("CheckpointConfig.policy", self.policy)
        )


class Checkpointer:
    """Checkpoints ``state`` (the live object the run mutates) on the events the policy
    selects, through the store's group commit (see the module doc).

    Only messages the store has not seen are written: the checkpointer keeps the list it
    last saved and passes ``rewrite_from`` to the store if the history was rewritten.
    Saving refreshes the session lock. A failed write is logged and retried with the
    next one; :meth:`flush` raises it if the latest write failed.

    It runs on callbacks, not on a task of its own: a request schedules one look at the
    state on the next loop iteration (the run finishes its current step first, so the
    messages it appends meanwhile join the same write), and each write's completion
    schedules the next one if more was requested. At most one checkpoint of the run is
    in the store's queue or in flight at a time.
    """

    def __init__(
        self,
        store: AsyncStore,
        state: RunState,
        config: CheckpointConfig = CheckpointConfig(),
        persisted: int = 0,
    ) -> None:
        self.store = store
        self.state = state
        self.config = config
        self.saves = 0
        self.last_ref: CheckpointRef | None = None
        self._saved: list[Message] = state.messages[:persisted]
        self._encoder = StateEncoder()  # each message of the run encoded once
        self._last_save = float("-inf")
        self._last_lock = time.monotonic()
        self._dirty = False
        self._intents: list[IntentRecord] = []  # written with the next write
        self._release: str | None = None  # the lock owner the next write releases for
        self._released = False
        self._scheduled = False  # a _kick waits on the event loop
        self._pending = 0  # store calls in flight (a checkpoint, result records, a refresh)
        self._taken: RunState | None = None  # the snapshot of the checkpoint in flight
        self._idle: asyncio.Future[None] | None = None  # flush() waits on it
        self._error: Exception | None = None
        self._claim: asyncio.Future[Any] | None = None  # the lock, while being taken
        self._refused: Exception | None = None  # the lock was not taken: write nothing
        self.on_lost: Callable[[Exception], None] | None = None
        """Called once when the run turns out not to hold its lock any more (see
        :meth:`lose`): the runner stops the run."""

    def on_event(self, event: RunEvent) -> None:
        if isinstance(event, RunFinished):
            self.request()
            return
        if not isinstance(event, MessageAppended):
            return
        policy = self.config.policy
        if policy is CheckpointPolicy.EVERY_STEP:
            self.request()
        elif policy is CheckpointPolicy.TOOL_CALLS:
            if event.source == "tools" or event.message.tool_calls:
                self.request()
        elif time.monotonic() - self._last_save >= self.config.interval:
            self._last_save = time.monotonic()
            self.request()

    def request(self) -> None:
        """Ask for a checkpoint of the state as it will be when the write starts. Never
        waits; call it from the event loop's thread."""
        self._dirty = True
        self._wake()

    def add_intent(self, intent: IntentRecord) -> None:
        """Write ``intent`` with the next checkpoint (or alone, if the policy asks for no
        checkpoint soon). Never waits; a failed intent write is logged, not raised."""
        self._intents.append(intent)
        self._wake()

    def hold_until(self, claim: asyncio.Future[Any]) -> None:
        """Write nothing until ``claim`` -- the session lock being taken -- has landed.
        A new session's run starts before its lock is held (its first model call
        overlaps the claim, ``Durable.arun``), but no checkpoint or record of it may
        reach the store before the lock: the claim is tracked like a store call in
        flight, so the first write is handed over when it lands. If it fails, nothing
        of the run is ever written and :meth:`flush` / :meth:`lock_held` raise its
        error."""
        self._claim = claim
        self._track(claim, self._claimed)

    async def lock_held(self) -> None:
        """Wait until the session lock is held (at once unless :meth:`hold_until` gave a
        claim that has not landed yet); raise the claim's error if it failed. Tools wait
        on this: none runs before the lock is held."""
        if self._claim is not None:
            await asyncio.shield(self._claim)
        if self._refused is not None:
            raise self._refused

    def _claimed(self, f: asyncio.Future[Any]) -> None:
        self._refused = claim_refusal(f, self.state.session_id)
        if self._refused is None:
            self._claim = None  # held: tools and writes no longer wait

    def _wake(self) -> None:
        if not self._scheduled and not self._pending:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._kick)

    async def finish(self, release: str | None = None) -> CheckpointRef | None:
        """:meth:`flush` the final checkpoint (``RunFinished`` requested it) and release
        the session lock held by ``release`` (the owner), in the same store call when
        that write has not started yet, else right after it. The lock is released even
        when the write fails."""
        if release is not None and self._dirty:
            self._release = release  # taken by the pending write
        try:
            return await self.flush()
        finally:
            if release is not None and not self._released and self._refused is None:
                self._release = None
                await self.store.release_lock(self.state.session_id, release)

    async def flush(self) -> CheckpointRef | None:
        """Wait until every requested checkpoint is written; raise the error of the
        latest write if it failed. Cancelling the caller does not cancel the write."""
        while self._scheduled or self._pending:
            if self._idle is None or self._idle.done():
                self._idle = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._idle)
        if self._refused is not None:
            raise self._refused
        if self._error is not None:
            raise self._error
        return self.last_ref

    async def save(self) -> CheckpointRef | None:
        """Checkpoint now and wait for it."""
        self.request()
        return await self.flush()

    def submit_now(self) -> None:
        """Hand what was requested to the store's queue now instead of on the next loop
        iteration, so that a write queued right after (the intent record before a side
        effect) joins the same batch: with many runs, a batch another run's write
        started could otherwise take the record alone and leave the checkpoint for the
        next one, and the tool waits for both. Nothing changes while a write of this
        run is in flight (the next one follows it)."""
        if not self._pending:
            self._kick()

    def _kick(self) -> None:
        """Hand what was requested to the store (on the event loop)."""
        self._scheduled = False
        if self._pending:
            return  # the landing of what is in flight looks again
        if self._refused is not None or not (self._dirty or self._intents):
            if self._idle is not None and not self._idle.done():
                self._idle.set_result(None)
            return
        cfg = self.config
        if cfg.lock_owner is not None and time.monotonic() - self._last_lock > cfg.lock_ttl / 4:
            self._last_lock = time.monotonic()
            refresh = self.store.acquire_lock(self.state.session_id, cfg.lock_owner, cfg.lock_ttl)
            self._track(asyncio.ensure_future(refresh), self._failed)
            return  # the checkpoint follows the refresh
        # result records ride in the same batch as this checkpoint, as a write of their
        # own: a failed record must not fail the checkpoint (see IntentRecorder._record)
        records = self._submit_intents()
        if records is not None:
            self._track(records, None)
        if self._dirty:
            self._track(self.store.submit(self._prepare), self._written)

    def _track(
        self, future: asyncio.Future[Any], then: Callable[[asyncio.Future[Any]], None] | None
    ) -> None:
        self._pending += 1

        def landed(f: asyncio.Future[Any]) -> None:
            self._pending -= 1
            if then is not None:
                then(f)
            if not self._pending:
                self._scheduled = True
                self._kick()

        future.add_done_callback(landed)

    def lose(self, exc: Exception) -> None:
        """The session's lock is held by another owner now (a refresh found it: it
        expired while this process stalled, or someone broke it): another process may
        be running the session, so nothing more of this run is written, no further tool
        starts (:meth:`lock_held` raises ``exc``) and :attr:`on_lost` stops the run."""
        if self._refused is not None:
            return
        self._refused = exc
        if self.on_lost is not None:
            self.on_lost(exc)

    def _failed(self, f: asyncio.Future[Any]) -> None:
        exc = RuntimeError("cancelled") if f.cancelled() else f.exception()
        if isinstance(exc, SessionLocked):  # a refresh found another owner
            self.lose(exc)
            return
        if exc is not None:  # kept for flush(); the next write retries it all
            self._error = exc if isinstance(exc, Exception) else RuntimeError(str(exc))
            log.warning("session %s: checkpoint failed: %s", self.state.session_id, exc)

    def _written(self, f: asyncio.Future[CheckpointRef | None]) -> None:
        self._failed(f)
        if f.cancelled() or f.exception() is not None or self._taken is None:
            return
        self._error = None
        self.last_ref = f.result()
        self._saved = self._taken.messages
        self.saves += 1

    def _prepare(self) -> Write:
        """The write, built when its batch starts (``AsyncStore.submit``): the snapshot
        then holds everything requested while the write waited in the queue. It is taken
        on the event loop's thread, between two steps of the run, so it is consistent."""
        self._dirty = False  # every request so far is in this snapshot
        snapshot = self.state.snapshot()
        snapshot.updated_at = time.time()
        self._taken = snapshot
        release, self._release = self._release, None
        self._released = release is not None  # the write releases even if the save fails
        lock = None if release is None else (snapshot.session_id, release)
        rewrite = self._rewrite_point(snapshot.messages)
        return Write(snapshot, rewrite, (), lock, self._encoder.encode(snapshot))

    def _submit_intents(self) -> asyncio.Future[CheckpointRef | None] | None:
        intents, self._intents = self._intents, []
        if not intents:
            return None
        written = self.store.submit(Write(intents=tuple(intents)))
        session = self.state.session_id

        def logged(f: asyncio.Future[CheckpointRef | None]) -> None:
            if not f.cancelled() and f.exception() is not None:
                log.warning(
                    "session %s: recording the result of call(s) %s failed: %s",
                    session,
                    ", ".join(i.call_id for i in intents),
                    f.exception(),
                )

        written.add_done_callback(logged)
        return written

    def _rewrite_point(self, messages: list[Message]) -> int | None:
        saved = self._saved
        n = len(saved)
        if n == 0 or (len(messages) >= n and messages[n - 1] is saved[-1]):
            return None  # append-only since the last save (the loop's contract)
        for i, (old, new) in enumerate(zip(saved, messages, strict=False)):
            if old is not new:
                return i
        return min(n, len(messages))


def claim_refusal(claim: asyncio.Future[Any], session_id: str = "") -> Exception | None:
    """Why a landed claim of a NEW session did not give the run its lock: the claim's
    error, or a session already stored under the id (which a new session's claim must
    not find); ``None`` when the lock is held and nothing was stored."""
    if claim.cancelled():
        return RuntimeError("the session lock was not taken")
    exc = claim.exception()
    if exc is not None:
        return exc if isinstance(exc, Exception) else RuntimeError(str(exc))
    if claim.result() is not None:
        return UserError(f"session {session_id!r} already exists")
    return None
