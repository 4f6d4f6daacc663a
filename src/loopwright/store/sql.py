"""Shared SQL implementation of :class:`~loopwright.store.base.CheckpointStore`.

SQLite and PostgreSQL differ only in connections, placeholders and row locking; the
schema and every statement are shared: the tables, checkpoints, intents and ledger
here, the session locks in ``sql_locks.py``, the connection seams and many-row
statements in ``sql_base.py``. Tables:

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
from dataclasses import dataclass
from typing import Any

from loopwright.core.messages import ToolResultPart
from loopwright.core.run import LoopState, RunState, RunStop
from loopwright.store.base import save_one, save_rounds, write_start
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
    SessionNotFound,
)
from loopwright.store.sql_base import Cursor
from loopwright.store.sql_locks import SqlLocks
from loopwright.store.state import (
    CheckpointRef,
    Encoded,
    IntentRecord,
    SessionInfo,
    Write,
    WriteOutcome,
)

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


class SqlStore(SqlLocks):
    """Statements shared by the SQL stores: the tables and the checkpoints (the locks are
    :class:`~loopwright.store.sql_locks.SqlLocks`'). Subclasses provide ``_tx`` and
    ``_read`` (``store/sql_base.py``)."""

    kind = "sql"
    blocking = True

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
