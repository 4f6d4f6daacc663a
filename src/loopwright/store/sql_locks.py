"""Session locks of the SQL stores: one owner at a time per session, taken for many
sessions in one transaction (``claim``), with each stored session's latest checkpoint
read along with its lock row.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from loopwright.store.base import DEFAULT_LOCK_TTL
from loopwright.store.codec import decode_state
from loopwright.store.errors import SessionLocked
from loopwright.store.sql_base import Cursor, SqlBase
from loopwright.store.state import Claim, ClaimOutcome, owner_is_dead

RELEASE_LOCK = "DELETE FROM lw_locks WHERE session_id = ? AND owner = ?"


class SqlLocks(SqlBase):
    """``acquire_lock``, ``claim``, ``release_lock``, ``break_lock`` and ``lock_owner`` of
    the SQL stores (see ``CheckpointStore``'s lock contract in ``store/base.py``)."""

    # -- locks ------------------------------------------------------------------
    def acquire_lock(self, session_id: str, owner: str, ttl: float = DEFAULT_LOCK_TTL) -> None:
        outcomes: list[ClaimOutcome] = [None]
        with self._tx() as cur:
            self._lock_many(cur, [Claim(session_id, owner, ttl)], outcomes, time.time())
        if isinstance(outcomes[0], Exception):
            raise outcomes[0]

    def claim(self, claims: Sequence[Claim]) -> list[ClaimOutcome]:
        """Every claim in ONE transaction: the locks with a few statements for all of
        them, whose row-locking read also finds each session's latest checkpoint, then
        one query for the messages of the sessions that are stored (none for new ones:
        a batch of new sessions waits for the server twice, its read and its COMMIT)."""
        outcomes: list[ClaimOutcome] = [None] * len(claims)
        with self._batch() as cur:
            granted, heads = self._lock_many(cur, claims, outcomes, time.time())
            stored = self._latest(
                cur, {s: heads[s] for s in {claims[i].session_id for i in granted} if s in heads}
            )
            failed: list[tuple[str, str]] = []
            for i in granted:
                c = claims[i]
                if c.session_id not in stored:
                    continue  # not stored yet: the lock is held, the outcome is None
                seq, header, rows = stored[c.session_id]
                try:
                    outcomes[i] = decode_state(
                        header, rows, session_id=c.session_id, checkpoint=seq
                    )
                except Exception as exc:  # e.g. CorruptCheckpoint: do not keep the lock
                    outcomes[i] = exc
                    failed.append((c.session_id, c.owner))
            if failed:
                cur.executemany(self._q(RELEASE_LOCK), failed)
        return outcomes

    def _lock_many(
        self, cur: Cursor, claims: Sequence[Claim], outcomes: list[ClaimOutcome], now: float
    ) -> tuple[list[int], dict[str, tuple[int, int, str]]]:
        """Take the claims' locks (see ``acquire_lock``'s contract): the indexes of the
        claims that got theirs (a ``SessionLocked`` in ``outcomes`` for the others), and
        ``session -> (checkpoint, message count, header)`` of each stored session's latest
        checkpoint, read with the locks' rows (after they are locked)."""
        sids = sorted({c.session_id for c in claims})  # one lock order for every batch
        breaks = sorted({c.session_id for c in claims if c.break_first})
        if breaks:
            cur.executemany(
                self._q("DELETE FROM lw_locks WHERE session_id = ? AND owner <> ''"),
                [(sid,) for sid in breaks],
            )
        self._insert(
            cur,
            "lw_locks",
            ("session_id", "owner", "expires_at"),
            [(sid, "", 0.0) for sid in sids],
            "ON CONFLICT (session_id) DO NOTHING",
        )
        rows = self._select_in(
            cur,
            "SELECT l.session_id, l.owner, l.expires_at, c.seq, c.message_count, c.header "
            "FROM lw_locks l LEFT JOIN lw_sessions s ON s.session_id = l.session_id "
            "LEFT JOIN lw_checkpoints c ON c.session_id = s.session_id "
            "AND c.seq = s.last_checkpoint WHERE l.session_id IN ({}) "
            "ORDER BY l.session_id" + self._for_update.format("l"),
            sids,
        )
        holders = {str(r[0]): (str(r[1]), float(r[2])) for r in rows}
        heads = {str(r[0]): (int(r[3]), int(r[4]), r[5]) for r in rows if r[3] is not None}
        granted = []
        for i, c in enumerate(claims):
            holder, expires = holders[c.session_id]
            if holder and holder != c.owner and expires > now and not owner_is_dead(holder):
                outcomes[i] = SessionLocked(c.session_id, holder, expires - now)
                continue
            holders[c.session_id] = (c.owner, now + c.ttl)
            granted.append(i)
        taken = {claims[i].session_id: claims[i] for i in granted}  # one row per session
        self._insert(
            cur,
            "lw_locks",
            ("session_id", "owner", "expires_at"),
            [(sid, c.owner, now + c.ttl) for sid, c in sorted(taken.items())],
            "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
            "expires_at = excluded.expires_at",
        )
        return granted, heads

    def _latest(
        self, cur: Cursor, heads: dict[str, tuple[int, int, str]]
    ) -> dict[str, tuple[int, str, list[Any]]]:
        """``session -> (checkpoint number, header, message rows)`` of the checkpoints
        ``heads`` (``session -> (checkpoint, message count, header)``)."""
        if not heads:
            return {}
        found = sorted(heads)
        messages = self._select_in(
            cur,
            "SELECT session_id, seq, data FROM lw_messages WHERE session_id IN ({}) "
            "ORDER BY session_id, seq",
            found,
        )
        rows: dict[str, list[Any]] = {sid: [] for sid in found}
        for sid, seq, data in messages:
            if int(seq) < heads[str(sid)][1]:
                rows[str(sid)].append(data)
        return {sid: (heads[sid][0], heads[sid][2], rows[sid]) for sid in found}

    def release_lock(self, session_id: str, owner: str) -> None:
        with self._tx() as cur:
            cur.execute(self._q(RELEASE_LOCK), (session_id, owner))

    def break_lock(self, session_id: str) -> bool:
        with self._tx() as cur:
            cur.execute(
                self._q("DELETE FROM lw_locks WHERE session_id = ? AND owner <> ''"), (session_id,)
            )
            return bool(cur.rowcount)

    def lock_owner(self, session_id: str) -> str | None:
        with self._read() as cur:
            cur.execute(
                self._q("SELECT owner, expires_at FROM lw_locks WHERE session_id = ?"),
                (session_id,),
            )
            row = cur.fetchone()
        if row is None or not row[0] or float(row[1]) <= time.time():
            return None
        return str(row[0])
