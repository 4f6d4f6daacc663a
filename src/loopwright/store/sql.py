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
from typing import Any, Protocol

from loopwright.core.messages import ToolResultPart
from loopwright.core.run import LoopState, RunState, RunStop
from loopwright.store.base import DEFAULT_LOCK_TTL
from loopwright.store.codec import (
    check_continues,
    decode_intent,
    decode_result,
    decode_state,
    encode_header,
    encode_intent,
    encode_message,
    encode_result,
)
from loopwright.store.errors import (
    CheckpointNotFound,
    CorruptCheckpoint,
    HistoryRewritten,
    SessionLocked,
    SessionNotFound,
)
from loopwright.store.state import (
    CheckpointRef,
    IntentRecord,
    SessionInfo,
    owner_is_dead,
)

TABLES_VERSION = 1

SCHEMA: tuple[str, ...] = (
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

    # -- subclass seams ---------------------------------------------------------
    def _tx(self) -> AbstractContextManager[Cursor]:
        """A cursor inside one write transaction (commit on success, rollback on error)."""
        raise TypeError(f"{type(self).__name__} must define _tx")

    def _read(self) -> AbstractContextManager[Cursor]:
        """A cursor for reads (a consistent snapshot where the database offers one)."""
        return self._tx()

    def _q(self, sql: str) -> str:
        return sql if self._placeholder == "?" else sql.replace("?", self._placeholder)

    def _create_tables(self) -> None:
        with self._tx() as cur:
            for stmt in SCHEMA:
                cur.execute(stmt)
            cur.execute(
                self._q(
                    "INSERT INTO lw_meta (name, value) VALUES ('tables_version', ?) "
                    "ON CONFLICT (name) DO NOTHING"
                ),
                (str(TABLES_VERSION),),
            )

    # -- checkpoints ------------------------------------------------------------
    def save(self, state: RunState, *, rewrite_from: int | None = None) -> CheckpointRef:
        sid = state.session_id
        n = len(state.messages)
        now = time.time()
        header = encode_header(state)
        with self._tx() as cur:
            cur.execute(
                self._q(
                    "SELECT message_count, last_checkpoint, created_at FROM lw_sessions "
                    f"WHERE session_id = ?{self._for_update}"
                ),
                (sid,),
            )
            row = cur.fetchone()
            stored, last = (int(row[0]), int(row[1])) if row else (0, 0)
            start = self._append_start(sid, stored, n, rewrite_from)
            if start > 0:
                cur.execute(
                    self._q("SELECT data FROM lw_messages WHERE session_id = ? AND seq = ?"),
                    (sid, start - 1),
                )
                check_continues(sid, start - 1, cur.fetchone(), state)
            if start < stored:
                cur.execute(
                    self._q("DELETE FROM lw_messages WHERE session_id = ? AND seq >= ?"),
                    (sid, start),
                )
                cur.execute(
                    self._q(
                        "DELETE FROM lw_checkpoints WHERE session_id = ? AND message_count > ?"
                    ),
                    (sid, start),
                )
            if start < n:
                cur.executemany(
                    self._q("INSERT INTO lw_messages (session_id, seq, data) VALUES (?, ?, ?)"),
                    [(sid, i, encode_message(state.messages[i])) for i in range(start, n)],
                )
            seq = last + 1
            stop = None if state.stop is None else state.stop.value
            cur.execute(
                self._q(
                    "INSERT INTO lw_checkpoints (session_id, seq, turn, status, stop, "
                    "message_count, header, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                (sid, seq, state.turn, state.status.value, stop, n, header, now),
            )
            self._upsert_session(cur, state, seq, row is None, now)
        return CheckpointRef(sid, seq, state.turn, state.status, state.stop, n, now)

    @staticmethod
    def _append_start(sid: str, stored: int, n: int, rewrite_from: int | None) -> int:
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

    def _upsert_session(
        self, cur: Cursor, state: RunState, seq: int, new: bool, now: float
    ) -> None:
        stop = None if state.stop is None else state.stop.value
        params = (state.status.value, stop, state.turn, len(state.messages), seq, now)
        if new:
            cur.execute(
                self._q(
                    "INSERT INTO lw_sessions (status, stop, turn, message_count, "
                    "last_checkpoint, updated_at, checkpoints, parent, created_at, session_id) "
                    "VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)"
                ),
                (*params, state.parent, state.created_at, state.session_id),
            )
        else:
            cur.execute(
                self._q(
                    "UPDATE lw_sessions SET status = ?, stop = ?, turn = ?, message_count = ?, "
                    "last_checkpoint = ?, updated_at = ?, checkpoints = ("
                    "SELECT COUNT(*) FROM lw_checkpoints WHERE session_id = ?) "
                    "WHERE session_id = ?"
                ),
                (*params, state.session_id, state.session_id),
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

    def sessions(self, *, limit: int | None = None) -> list[SessionInfo]:
        sql = (
            "SELECT session_id, status, stop, turn, checkpoints, message_count, created_at, "
            "updated_at, parent FROM lw_sessions ORDER BY updated_at DESC"
        )
        params: tuple[Any, ...] = ()
        if limit is not None:
            sql += " LIMIT ?"
            params = (int(limit),)
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
        now = time.time()
        with self._tx() as cur:
            cur.execute(
                self._q(
                    "INSERT INTO lw_locks (session_id, owner, expires_at) VALUES (?, '', 0) "
                    "ON CONFLICT (session_id) DO NOTHING"
                ),
                (session_id,),
            )
            cur.execute(
                self._q(
                    f"SELECT owner, expires_at FROM lw_locks WHERE session_id = ?{self._for_update}"
                ),
                (session_id,),
            )
            holder, expires = cur.fetchone()
            if holder and holder != owner and float(expires) > now and not owner_is_dead(holder):
                raise SessionLocked(session_id, holder, float(expires) - now)
            cur.execute(
                self._q("UPDATE lw_locks SET owner = ?, expires_at = ? WHERE session_id = ?"),
                (owner, now + ttl, session_id),
            )

    def release_lock(self, session_id: str, owner: str) -> None:
        with self._tx() as cur:
            cur.execute(
                self._q("DELETE FROM lw_locks WHERE session_id = ? AND owner = ?"),
                (session_id, owner),
            )

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
                self._q(
                    "INSERT INTO lw_intents (session_id, call_id, created_at, data) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (session_id, call_id) "
                    "DO UPDATE SET data = excluded.data"
                ),
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
