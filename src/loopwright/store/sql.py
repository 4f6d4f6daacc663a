"""Shared SQL implementation of :class:`~loopwright.store.base.CheckpointStore`.

SQLite and PostgreSQL differ only in connections, placeholders and row locking; the
schema and every statement are shared here. Tables:

``lw_sessions``     one row per session (status, counters, timestamps)
``lw_messages``     the history, one row per message, append-only ``(session_id, seq)``
``lw_checkpoints``  one small header per checkpoint ``(session_id, seq)``
``lw_intents``      crash-safety records ``(session_id, call_id)``
``lw_ledger``       idempotency ledger ``key -> result``
``lw_locks``        session locks ``session_id -> owner, expires_at``
``lw_meta``         the schema version of these tables
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from loopwright.core.messages import ToolResultPart
from loopwright.core.run import LoopState, RunState, RunStop
from loopwright.store.base import DEFAULT_LOCK_TTL, save_one, save_rounds, write_start
from loopwright.store.codec import (
    check_continues,
    decode_intent,
    decode_result,
    decode_state,
    encode_intent,
    encode_result,
)
from loopwright.store.codec import encoded as encoded_state
from loopwright.store.errors import (
    CheckpointNotFound,
    CorruptCheckpoint,
    HistoryConflict,
    HistoryRewritten,
    SchemaVersionError,
    SessionLocked,
    SessionNotFound,
)
from loopwright.store.state import (
    CheckpointRef,
    Claim,
    ClaimOutcome,
    Encoded,
    IntentRecord,
    SessionInfo,
    Write,
    WriteOutcome,
    owner_is_dead,
)

_R = TypeVar("_R")

TABLES_VERSION = 1

SCHEMA: tuple[str, ...] = (  # lw_meta first: its version is checked before the rest
    """CREATE TABLE IF NOT EXISTS lw_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS lw_sessions (
        session_id TEXT PRIMARY KEY, status TEXT NOT NULL, stop TEXT, turn INTEGER NOT NULL,
        message_count INTEGER NOT NULL, last_checkpoint INTEGER NOT NULL,
        checkpoints INTEGER NOT NULL, parent TEXT,
        created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS lw_messages (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (session_id, seq))""",
    """CREATE TABLE IF NOT EXISTS lw_checkpoints (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, turn INTEGER NOT NULL,
        status TEXT NOT NULL, stop TEXT, message_count INTEGER NOT NULL,
        header TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (session_id, seq))""",
    """CREATE TABLE IF NOT EXISTS lw_intents (
        session_id TEXT NOT NULL, call_id TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
        data TEXT NOT NULL, PRIMARY KEY (session_id, call_id))""",
    """CREATE TABLE IF NOT EXISTS lw_ledger (
        key TEXT PRIMARY KEY, data TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS lw_locks (
        session_id TEXT PRIMARY KEY, owner TEXT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL)""",
    """CREATE INDEX IF NOT EXISTS lw_sessions_updated ON lw_sessions (updated_at)""",
    # the sessions without a result (what crash recovery looks at), without a scan of all
    """CREATE INDEX IF NOT EXISTS lw_sessions_unfinished ON lw_sessions (updated_at)
        WHERE stop IS NULL""",
)


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...
    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class SqlStore:
    """Statements shared by the SQL stores. Subclasses provide ``_tx`` and ``_read``."""

    kind = "sql"
    blocking = True
    _placeholder = "?"
    _for_update = ""
    """Row locking of a ``SELECT`` (``{}``: the table or alias locked); SQLite locks the
    whole database for the transaction instead."""

    # -- subclass seams ---------------------------------------------------------
    def _tx(self) -> AbstractContextManager[Cursor]:
        """A cursor inside one write transaction (commit on success, rollback on error)."""
        raise TypeError(f"{type(self).__name__} must define _tx")

    def _read(self) -> AbstractContextManager[Cursor]:
        """A cursor for reads (a consistent snapshot where the database offers one)."""
        return self._tx()

    def _batch(self) -> AbstractContextManager[Cursor]:
        """The transaction of a group-commit batch (``write``, ``claim``), whose code
        reads rows only where it needs them (``fetchall``) and never ``rowcount``: a
        database may send the statements between two reads without waiting for each."""
        return self._tx()

    def _q(self, sql: str) -> str:
        return sql if self._placeholder == "?" else sql.replace("?", self._placeholder)

    def _lock_schema(self, cur: Cursor) -> None:
        """Serialize the creation of the tables between processes opening a new store at
        once, inside the creating transaction (SQLite's ``BEGIN IMMEDIATE`` already does)."""

    def _create_tables(self) -> None:
        meta, *tables = SCHEMA
        with self._tx() as cur:
            self._lock_schema(cur)
            cur.execute(meta)
            cur.execute(
                self._q(
                    "INSERT INTO lw_meta (name, value) VALUES ('tables_version', ?) "
                    "ON CONFLICT (name) DO NOTHING"
                ),
                (str(TABLES_VERSION),),
            )
            cur.execute("SELECT value FROM lw_meta WHERE name = 'tables_version'")
            row = cur.fetchone()
            self._check_tables_version(None if row is None else row[0])
            for stmt in tables:
                cur.execute(stmt)

    def _check_tables_version(self, stored: object) -> None:
        """Refuse tables a newer loopwright laid out: writing rows it does not expect
        could break them for it (the creating transaction is rolled back: nothing is
        written)."""
        try:
            version = int(str(stored))
        except ValueError:
            version = -1
        if 0 < version <= TABLES_VERSION:
            return
        what = f"tables version {version}" if version > 0 else f"an unreadable version {stored!r}"
        raise SchemaVersionError(
            f"{self!r} has {what} in lw_meta, but this loopwright knows tables versions "
            f"1..{TABLES_VERSION}; upgrade loopwright (pip install -U loopwright) to use "
            "this store, or point --store-url / LOOPWRIGHT_STORE_URL at another one"
        )

    # -- checkpoints ------------------------------------------------------------
    def save(
        self, state: RunState, *, rewrite_from: int | None = None, encoded: Encoded | None = None
    ) -> CheckpointRef:
        return save_one(self.write, state, rewrite_from, encoded)

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        """Every write in ONE transaction, each statement once for all of them
        (``executemany``), so a batch costs a handful of round trips and one commit
        whatever its size. A save that fails its own checks (``HistoryRewritten``,
        ``HistoryConflict``) fails alone, before any of it is written; a database error
        fails the batch (raised: nothing of it is stored)."""
        outcomes: list[WriteOutcome] = [None] * len(writes)
        now = time.time()
        with self._batch() as cur:
            for batch in save_rounds(writes):
                self._save_many(cur, [(i, writes[i]) for i in batch], outcomes, now)
            intents = [
                x
                for w, outcome in zip(writes, outcomes, strict=True)
                if not isinstance(outcome, Exception)
                for x in w.intents
            ]
            # one row per call: a later record of a call replaces an earlier one
            latest = {(x.session_id, x.call_id): x for x in intents}
            self._insert(
                cur,
                "lw_intents",
                ("session_id", "call_id", "created_at", "data"),
                [
                    (x.session_id, x.call_id, x.created_at, encode_intent(x))
                    for x in latest.values()
                ],
                "ON CONFLICT (session_id, call_id) DO UPDATE SET data = excluded.data",
            )
            releases = [w.release for w in writes if w.release is not None]
            for where, params in self._matching(("session_id", "owner"), releases):
                cur.execute(self._q(f"DELETE FROM lw_locks WHERE {where}"), params)
        return outcomes

    # -- statements over many rows (PostgreSQL overrides these three) ------------
    def _select_in(self, cur: Cursor, sql: str, ids: Sequence[str]) -> list[Any]:
        """The rows of ``sql`` (its ``IN ({})`` filled with ``ids``), chunked under the
        parameter limit; chunks run in the order of ``ids`` (a sorted list keeps one
        lock order across batches)."""
        rows: list[Any] = []
        for chunk in _chunks(ids, 1):
            cur.execute(self._q(sql.format(", ".join("?" * len(chunk)))), list(chunk))
            rows.extend(cur.fetchall())
        return rows

    def _insert(
        self,
        cur: Cursor,
        table: str,
        columns: tuple[str, ...],
        rows: Sequence[tuple[Any, ...]],
        tail: str = "",
    ) -> None:
        """``INSERT INTO table (columns) VALUES (...), (...) {tail}``: one statement for
        many rows (chunked under the databases' limits on parameters per statement)."""
        if not rows:
            return
        one = "(" + ", ".join("?" * len(columns)) + ")"
        into = f"{table} ({', '.join(columns)})"
        for chunk in _chunks(rows, len(columns)):
            values = ", ".join([one] * len(chunk))
            cur.execute(
                self._q(f"INSERT INTO {into} VALUES {values} {tail}"),
                [x for row in chunk for x in row],
            )

    def _matching(
        self, columns: tuple[str, str], pairs: Sequence[tuple[Any, Any]]
    ) -> list[tuple[str, list[Any]]]:
        """``WHERE`` conditions (with their parameters) matching rows whose two
        ``columns`` equal one of ``pairs``: an ``OR`` chain per chunk (SQLite refuses a
        chain deeper than 1,000 terms, "Expression tree is too large")."""
        one = f"({columns[0]} = ? AND {columns[1]} = ?)"
        return [
            (" OR ".join([one] * len(chunk)), [x for pair in chunk for x in pair])
            for chunk in _chunks(pairs, 2)
        ]

    def _save_many(
        self,
        cur: Cursor,
        saves: list[tuple[int, Write]],
        outcomes: list[WriteOutcome],
        now: float,
    ) -> None:
        """Checkpoints of distinct sessions (``outcomes[i]`` gets each one's result)."""
        sids = sorted({w.state.session_id for _, w in saves if w.state is not None})
        # one query for each session's row and its last stored message (what an
        # appending save checks it continues); sorted: concurrent batches lock session
        # rows in one order
        rows = self._select_in(
            cur,
            "SELECT s.session_id, s.message_count, s.last_checkpoint, m.data "
            "FROM lw_sessions s LEFT JOIN lw_messages m ON m.session_id = s.session_id "
            "AND m.seq = s.message_count - 1 WHERE s.session_id IN ({}) "
            "ORDER BY s.session_id" + self._for_update.format("s"),
            sids,
        )
        known = {str(r[0]): (int(r[1]), int(r[2])) for r in rows}
        last_rows = {str(r[0]): r[3] for r in rows if r[3] is not None}
        plans: list[_SavePlan] = []
        for i, w in saves:
            state = w.state
            assert state is not None
            stored, last = known.get(state.session_id, (0, 0))
            try:
                start = write_start(state.session_id, stored, len(state.messages), w.rewrite_from)
            except (HistoryRewritten, ValueError) as exc:
                outcomes[i] = exc
                continue
            plans.append(
                _SavePlan(
                    i,
                    state,
                    start,
                    stored,
                    last,
                    state.session_id in known,
                    encoded_state(state, w.encoded),
                )
            )
        plans = self._continuing(cur, plans, outcomes, last_rows)
        for p in plans:
            if p.start < p.stored:  # a rewritten history: rare, one statement pair each
                cur.execute(
                    self._q("DELETE FROM lw_messages WHERE session_id = ? AND seq >= ?"),
                    (p.state.session_id, p.start),
                )
                cur.execute(
                    self._q(
                        "DELETE FROM lw_checkpoints WHERE session_id = ? AND message_count > ?"
                    ),
                    (p.state.session_id, p.start),
                )
        self._insert_checkpoints(cur, plans, now)
        for p in plans:
            s = p.state
            ref = CheckpointRef(
                s.session_id, p.last + 1, s.turn, s.status, s.stop, len(s.messages), now
            )
            outcomes[p.index] = ref

    def _continuing(
        self,
        cur: Cursor,
        plans: list[_SavePlan],
        outcomes: list[WriteOutcome],
        last_rows: dict[str, Any],
    ) -> list[_SavePlan]:
        """The plans whose state continues the stored history (``check_continues``); the
        others get their ``HistoryConflict``. ``last_rows``: each session's last stored
        message, which an appending save continues from; a rewrite continues from an
        earlier one, read here (one query for all of them)."""
        if not any(p.start > 0 for p in plans):
            return plans
        rows = {p.state.session_id: last_rows.get(p.state.session_id) for p in plans}
        earlier = [(p.state.session_id, p.start - 1) for p in plans if 0 < p.start < p.stored]
        for where, params in self._matching(("session_id", "seq"), earlier):
            cur.execute(self._q(f"SELECT session_id, data FROM lw_messages WHERE {where}"), params)
            rows.update((str(r[0]), r[1]) for r in cur.fetchall())
        keep = []
        for p in plans:
            if p.start > 0:
                row = rows.get(p.state.session_id)
                try:
                    check_continues(
                        p.state.session_id,
                        p.start - 1,
                        None if row is None else (row,),
                        p.encoded.rows[p.start - 1],
                    )
                except HistoryConflict as exc:
                    outcomes[p.index] = exc
                    continue
            keep.append(p)
        return keep

    def _insert_checkpoints(self, cur: Cursor, plans: list[_SavePlan], now: float) -> None:
        """The new message rows, checkpoint headers and session rows of ``plans``."""
        rows = [
            (p.state.session_id, k, p.encoded.rows[k])
            for p in plans
            for k in range(p.start, len(p.state.messages))
        ]
        self._insert(cur, "lw_messages", ("session_id", "seq", "data"), rows)
        self._insert(
            cur,
            "lw_checkpoints",
            _CHECKPOINT_COLUMNS,
            [
                (
                    p.state.session_id,
                    p.last + 1,
                    p.state.turn,
                    p.state.status.value,
                    None if p.state.stop is None else p.state.stop.value,
                    len(p.state.messages),
                    p.encoded.header,
                    now,
                )
                for p in plans
            ],
        )
        self._insert(
            cur,
            "lw_sessions",
            _SESSION_COLUMNS,
            [
                (p.state.session_id, *_session_row(p, now), 1, p.state.parent, p.state.created_at)
                for p in plans
            ],
            # a stored session keeps its parent and creation time; its checkpoint count is
            # recounted (a rewrite may have dropped some)
            "ON CONFLICT (session_id) DO UPDATE SET status = excluded.status, "
            "stop = excluded.stop, turn = excluded.turn, "
            "message_count = excluded.message_count, "
            "last_checkpoint = excluded.last_checkpoint, updated_at = excluded.updated_at, "
            "checkpoints = (SELECT COUNT(*) FROM lw_checkpoints c "
            "WHERE c.session_id = excluded.session_id)",
        )

    def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        with self._read() as cur:
            if checkpoint is None:
                cur.execute(
                    self._q(
                        "SELECT seq, message_count, header FROM lw_checkpoints "
                        "WHERE session_id = ? ORDER BY seq DESC LIMIT 1"
                    ),
                    (session_id,),
                )
            else:
                cur.execute(
                    self._q(
                        "SELECT seq, message_count, header FROM lw_checkpoints "
                        "WHERE session_id = ? AND seq = ?"
                    ),
                    (session_id, checkpoint),
                )
            row = cur.fetchone()
            if row is None:
                self._missing(cur, session_id, checkpoint)
            seq, count, header = int(row[0]), int(row[1]), row[2]
            cur.execute(
                self._q(
                    "SELECT data FROM lw_messages WHERE session_id = ? AND seq < ? ORDER BY seq"
                ),
                (session_id, count),
            )
            messages = [r[0] for r in cur.fetchall()]
        return decode_state(header, messages, session_id=session_id, checkpoint=seq)

    def _missing(self, cur: Cursor, session_id: str, checkpoint: int | None) -> None:
        cur.execute(
            self._q("SELECT last_checkpoint FROM lw_sessions WHERE session_id = ?"), (session_id,)
        )
        row = cur.fetchone()
        if row is None or checkpoint is None:
            raise SessionNotFound(session_id)
        raise CheckpointNotFound(session_id, checkpoint, int(row[0]))

    def history(self, session_id: str) -> list[CheckpointRef]:
        with self._read() as cur:
            cur.execute(
                self._q(
                    "SELECT seq, turn, status, stop, message_count, created_at FROM "
                    "lw_checkpoints WHERE session_id = ? ORDER BY seq"
                ),
                (session_id,),
            )
            rows = cur.fetchall()
        if not rows:
            raise SessionNotFound(session_id)
        return [
            CheckpointRef(
                session_id,
                int(r[0]),
                int(r[1]),
                _status(session_id, r[2]),
                _stop(session_id, r[3]),
                int(r[4]),
                float(r[5]),
            )
            for r in rows
        ]

    def sessions(
        self, *, limit: int | None = None, unfinished: bool = False, prefix: str = ""
    ) -> list[SessionInfo]:
        conditions = ["stop IS NULL"] if unfinished else []
        params: list[Any] = []
        if prefix:
            conditions.append("session_id LIKE ? ESCAPE '!'")
            params.append(_like_prefix(prefix))
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        sql = (
            "SELECT session_id, status, stop, turn, checkpoints, message_count, created_at, "
            f"updated_at, parent FROM lw_sessions{where} ORDER BY updated_at DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        with self._read() as cur:
            cur.execute(self._q(sql), params)
            rows = cur.fetchall()
        return [_info(r) for r in rows]

    def delete(self, session_id: str) -> bool:
        with self._tx() as cur:
            cur.execute(self._q("DELETE FROM lw_sessions WHERE session_id = ?"), (session_id,))
            found = bool(cur.rowcount)
            for table in ("lw_messages", "lw_checkpoints", "lw_intents", "lw_locks"):
                cur.execute(self._q(f"DELETE FROM {table} WHERE session_id = ?"), (session_id,))
        return found

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
                cur.executemany(self._q(_RELEASE_LOCK), failed)
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
            cur.execute(self._q(_RELEASE_LOCK), (session_id, owner))

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

    # -- intents and ledger -----------------------------------------------------
    def put_intent(self, intent: IntentRecord) -> None:
        with self._tx() as cur:
            cur.execute(
                self._q(_PUT_INTENT),
                (intent.session_id, intent.call_id, intent.created_at, encode_intent(intent)),
            )

    def intents(self, session_id: str) -> list[IntentRecord]:
        with self._read() as cur:
            cur.execute(
                self._q(
                    "SELECT data FROM lw_intents WHERE session_id = ? ORDER BY created_at, call_id"
                ),
                (session_id,),
            )
            rows = cur.fetchall()
        return [decode_intent(r[0], session_id) for r in rows]

    def ledger_get(self, key: str) -> ToolResultPart | None:
        with self._read() as cur:
            cur.execute(self._q("SELECT data FROM lw_ledger WHERE key = ?"), (key,))
            row = cur.fetchone()
        return None if row is None else decode_result(row[0], f"ledger key {key!r}")

    def ledger_put(self, key: str, result: ToolResultPart) -> None:
        with self._tx() as cur:
            cur.execute(
                self._q(
                    "INSERT INTO lw_ledger (key, data, created_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (key) DO NOTHING"
                ),
                (key, encode_result(result), time.time()),
            )


_PUT_INTENT = (
    "INSERT INTO lw_intents (session_id, call_id, created_at, data) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (session_id, call_id) DO UPDATE SET data = excluded.data"
)
_RELEASE_LOCK = "DELETE FROM lw_locks WHERE session_id = ? AND owner = ?"
_CHECKPOINT_COLUMNS = (
    "session_id",
    "seq",
    "turn",
    "status",
    "stop",
    "message_count",
    "header",
    "created_at",
)
_SESSION_COLUMNS = (
    "session_id",
    "status",
    "stop",
    "turn",
    "message_count",
    "last_checkpoint",
    "updated_at",
    "checkpoints",
    "parent",
    "created_at",
)


@dataclass(frozen=True, slots=True)
class _SavePlan:
    """One checkpoint of a batch: ``writes[index]``'s state, appended from ``start``
    over ``stored`` stored messages; ``last`` is the session's last checkpoint number."""

    index: int
    state: RunState
    start: int
    stored: int
    last: int
    exists: bool
    encoded: Encoded


_PARAMS = 900
"""Parameters per statement at most (SQLite before 3.32 allows 999, PostgreSQL 65,535)."""


def _chunks(rows: Sequence[_R], width: int) -> list[Sequence[_R]]:
    step = max(1, _PARAMS // width)
    return [rows[k : k + step] for k in range(0, len(rows), step)]


def _like_prefix(prefix: str) -> str:
    """A ``LIKE`` pattern (``ESCAPE '!'``) matching the ids that start with ``prefix``."""
    return "".join(f"!{c}" if c in "!%_" else c for c in prefix) + "%"


def _session_row(p: _SavePlan, now: float) -> tuple[object, ...]:
    s = p.state
    stop = None if s.stop is None else s.stop.value
    return (s.status.value, stop, s.turn, len(s.messages), p.last + 1, now)


def _info(r: Sequence[Any]) -> SessionInfo:
    try:
        return SessionInfo(
            str(r[0]),
            _status(r[0], r[1]),
            _stop(r[0], r[2]),
            int(r[3]),
            int(r[4]),
            int(r[5]),
            float(r[6]),
            float(r[7]),
            r[8],
        )
    except (CorruptCheckpoint, TypeError, ValueError) as exc:
        return SessionInfo.unreadable(str(r[0]), str(exc))


def _status(session_id: object, raw: object) -> LoopState:
    try:
        return LoopState(str(raw))
    except ValueError:
        raise CorruptCheckpoint(str(session_id), "session row", f"unknown status {raw!r}") from None


def _stop(session_id: object, raw: object) -> RunStop | None:
    if raw is None:
        return None
    try:
        return RunStop(str(raw))
    except ValueError:
        raise CorruptCheckpoint(str(session_id), "session row", f"unknown stop {raw!r}") from None
