"""The :class:`CheckpointStore` protocol every store implements, and shared helpers.

Contracts
---------
* ``save(state)`` appends one checkpoint. The store keeps each session's history as
  append-only message rows: a save writes only ``state.messages[stored:]`` (the messages
  the store has not seen) plus a small header, in ONE transaction, so its cost does not
  grow with the history. The caller guarantees the first ``stored`` messages are the
  ones already stored; when it rewrote earlier history it passes ``rewrite_from=k`` (the
  first changed index): rows from ``k`` are replaced and checkpoints that referenced
  them are dropped (they can no longer be reproduced). A history *shorter* than the
  stored one without ``rewrite_from`` raises :class:`HistoryRewritten`.
* ``load(session_id)`` returns the latest checkpoint, ``load(session_id, checkpoint=n)``
  checkpoint ``n`` (numbered from 1, see ``history``). Unknown ids raise
  :class:`SessionNotFound` / :class:`CheckpointNotFound`; undecodable rows raise
  :class:`CorruptCheckpoint` and are left untouched.
* Locks: ``acquire_lock(session_id, owner, ttl)`` succeeds when the session is unlocked,
  locked by ``owner`` (refresh), expired, or held by a dead process on this host;
  otherwise it raises :class:`SessionLocked` naming the holder and how to break it.
* Intent records (:class:`IntentRecord`) and the idempotency ledger survive restarts.
* A server that cannot be reached raises :class:`StoreUnavailable`; a failed save leaves
  the previously stored checkpoints intact (each save is one transaction).
* ``write(writes)`` applies many callers' writes (checkpoints, intent records, lock
  releases: :class:`~loopwright.store.state.Write`) together -- one transaction on
  SQLite and PostgreSQL, with the statements of all of them sent together -- and
  returns one outcome per write, in order. A write that fails on its own (a rewritten
  or conflicting history) fails alone; a failure of the whole (the server went away)
  raises, and then none of them is stored. This is what
  :class:`~loopwright.store.aio.AsyncStore`'s group commit calls.
* ``claim(claims)`` is the same for runs starting: each takes its session's lock and
  loads the session (:class:`~loopwright.store.state.Claim`), all in one transaction;
  one outcome per claim (a claim whose lock is held elsewhere gets ``SessionLocked``).
* Stores are safe to share between threads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol, runtime_checkable

from loopwright.core.messages import ToolResultPart
from loopwright.core.run import RunState
from loopwright.core.run import new_session_id as fresh_session_id
from loopwright.store.errors import HistoryRewritten, SessionNotFound
from loopwright.store.state import (
    CheckpointRef,
    Claim,
    ClaimOutcome,
    Encoded,
    IntentRecord,
    SessionInfo,
    Write,
    WriteOutcome,
)

log = logging.getLogger("loopwright.store")

DEFAULT_LOCK_TTL = 120.0
"""Seconds a session lock lives without a refresh (each checkpoint refreshes it)."""


class Checkpoints(Protocol):
    """The checkpoint role: a session's saved states."""

    def save(
        self, state: RunState, *, rewrite_from: int | None = None, encoded: Encoded | None = None
    ) -> CheckpointRef:
        """Append a checkpoint of ``state`` (see the module contract); ``encoded``: the
        caller's encoding of ``state`` (``store.codec.StateEncoder``), written as given
        instead of encoding ``state`` again."""
        ...

    def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        """The latest checkpoint, or checkpoint number ``checkpoint``."""
        ...

    def history(self, session_id: str) -> list[CheckpointRef]:
        """Every stored checkpoint of the session, oldest first."""
        ...

    def sessions(
        self, *, limit: int | None = None, unfinished: bool = False, prefix: str = ""
    ) -> list[SessionInfo]:
        """Stored sessions, most recently updated first; with ``unfinished`` only those
        whose run recorded no stop yet (``stop`` is ``None``: running, or interrupted by a
        dying process; not one waiting for an approval), found through an index rather
        than by listing every session (what crash recovery looks for); with ``prefix``
        only those whose id starts with it (a server lists one tenant's sessions this
        way: the filter and ``limit`` apply in the store, not after listing them all)."""
        ...

    def delete(self, session_id: str) -> bool:
        """Remove the session with its checkpoints, intents and lock. False if absent."""
        ...


class Locks(Protocol):
    """The lock role: one process runs a session at a time."""

    def acquire_lock(self, session_id: str, owner: str, ttl: float = DEFAULT_LOCK_TTL) -> None:
        """Take or refresh the session's lock for ``ttl`` seconds (see contract)."""
        ...

    def release_lock(self, session_id: str, owner: str) -> None:
        """Drop the lock if ``owner`` holds it."""
        ...

    def break_lock(self, session_id: str) -> bool:
        """Remove the lock whoever holds it. True if there was one."""
        ...

    def lock_owner(self, session_id: str) -> str | None:
        """Who holds an unexpired lock on the session, if anyone."""
        ...


class Intents(Protocol):
    """The intent role: crash-safety records around non-idempotent tool calls."""

    def put_intent(self, intent: IntentRecord) -> None:
        """Insert or replace the intent record ``(session_id, call_id)``."""
        ...

    def intents(self, session_id: str) -> list[IntentRecord]:
        """The session's intent records, oldest first."""
        ...


class Ledger(Protocol):
    """The ledger role: the first known result per idempotency key, across sessions."""

    def ledger_get(self, key: str) -> ToolResultPart | None:
        """The stored result for an idempotency key."""
        ...

    def ledger_put(self, key: str, result: ToolResultPart) -> None:
        """Record the first result for ``key`` (later puts for the same key are ignored)."""
        ...


@runtime_checkable
class CheckpointStore(Checkpoints, Locks, Intents, Ledger, Protocol):
    """A store backend: all four roles over one database. Its methods block (they do
    I/O); async code reaches a store through :class:`~loopwright.store.aio.AsyncStore`,
    which runs them off the event loop."""

    kind: str
    """``"memory"``, ``"sqlite"``, ``"redis"`` or ``"postgres"``."""

    blocking: bool
    """``False`` only for a store whose methods never wait on I/O (``MemoryStore``):
    :class:`~loopwright.store.aio.AsyncStore` then calls it inline instead of on a thread."""

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        """Apply ``writes`` together; one outcome per write (see the contract)."""
        ...

    def claim(self, claims: Sequence[Claim]) -> list[ClaimOutcome]:
        """Lock and load many sessions together; one outcome per claim (see contract)."""
        ...

    def close(self) -> None:
        """Release connections. The store is unusable afterwards."""
        ...


def save_rounds(writes: Sequence[Write]) -> list[list[int]]:
    """Indexes of the writes with a state, in rounds where each session appears once:
    two checkpoints of one session in a batch are applied one after the other."""
    rounds: list[list[int]] = []
    seen: list[set[str]] = []
    for i, w in enumerate(writes):
        if w.state is None:
            continue
        sid = w.state.session_id
        k = next((k for k, sids in enumerate(seen) if sid not in sids), len(rounds))
        if k == len(rounds):
            rounds.append([])
            seen.append(set())
        rounds[k].append(i)
        seen[k].add(sid)
    return rounds


def write_start(sid: str, stored: int, n: int, rewrite_from: int | None) -> int:
    """The first message index a save of ``n`` messages writes when ``stored`` are
    stored: ``stored`` (an append), or ``rewrite_from`` (capped at both lengths) when the
    caller rewrote history from there. A history shorter than the stored one without
    ``rewrite_from`` raises :class:`HistoryRewritten`, a negative ``rewrite_from``
    ``ValueError`` (see the contract above)."""
    if rewrite_from is not None:
        if rewrite_from < 0:
            raise ValueError(f"rewrite_from must be >= 0, got {rewrite_from}")
        return min(rewrite_from, stored, n)
    if n < stored:
        raise HistoryRewritten(
            f"session {sid!r}: the state has {n} messages but {stored} are stored; "
            "pass rewrite_from=<first changed index> to rewrite history, or fork the "
            "session (loopwright.store.fork) to branch from an earlier checkpoint"
        )
    return stored


def save_one(
    write: Callable[[Sequence[Write]], list[WriteOutcome]],
    state: RunState,
    rewrite_from: int | None,
    encoded: Encoded | None,
) -> CheckpointRef:
    """``save`` for a store whose batch ``write`` is its one code path: a batch of one,
    its failure raised."""
    (outcome,) = write((Write(state, rewrite_from, encoded=encoded),))
    if isinstance(outcome, Exception):
        raise outcome
    assert outcome is not None
    return outcome


def write_each(store: CheckpointStore, writes: Sequence[Write]) -> list[WriteOutcome]:
    """``store.write`` as one call per part, for stores without a cheaper whole (a
    memory store has no round trips to save)."""
    outcomes: list[WriteOutcome] = []
    for w in writes:
        outcome: WriteOutcome
        try:
            outcome = (
                None
                if w.state is None
                else store.save(w.state, rewrite_from=w.rewrite_from, encoded=w.encoded)
            )
            for intent in w.intents:
                store.put_intent(intent)
        except Exception as exc:
            outcome = exc
        if w.release is not None:
            try:
                store.release_lock(*w.release)
            except Exception as exc:  # reported unless the write failed already
                outcome = outcome if isinstance(outcome, Exception) else exc
        outcomes.append(outcome)
    return outcomes


def claim_each(store: CheckpointStore, claims: Sequence[Claim]) -> list[ClaimOutcome]:
    """``store.claim`` as one lock and one load per claim (see :func:`write_each`)."""
    outcomes: list[ClaimOutcome] = []
    for c in claims:
        try:
            if c.break_first:
                store.break_lock(c.session_id)
            store.acquire_lock(c.session_id, c.owner, c.ttl)
        except Exception as exc:
            outcomes.append(exc)
            continue
        try:
            outcomes.append(store.load(c.session_id))
        except SessionNotFound:
            outcomes.append(None)
        except Exception as exc:
            outcomes.append(exc)
            try:
                store.release_lock(c.session_id, c.owner)
            except Exception:  # the lock expires after its TTL anyway
                log.warning("session %s: releasing the lock failed", c.session_id)
    return outcomes


def fork(
    store: CheckpointStore,
    session_id: str,
    checkpoint: int | None = None,
    *,
    new_session_id: str | None = None,
) -> RunState:
    """Time travel: copy checkpoint ``checkpoint`` of a session into a NEW session.

    The fork starts with that checkpoint's state (history, pending calls ...), records
    ``parent = "<session>@<checkpoint>"`` and is saved as its first checkpoint. The
    original session is not modified. Returns the fork's state.
    """
    refs = store.history(session_id)
    source = store.load(session_id, checkpoint)
    number = checkpoint if checkpoint is not None else (refs[-1].checkpoint if refs else 0)
    now = time.time()
    forked = replace(
        source,
        session_id=new_session_id or fresh_session_id(),
        parent=f"{session_id}@{number}",
        created_at=now,
        updated_at=now,
    )
    store.save(forked)
    return forked
