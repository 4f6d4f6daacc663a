"""PostgreSQL checkpoint store (psycopg 3, ``pip install loopwright[postgres]``).

``PostgresStore(url)`` runs :meth:`PostgresStore.migrate` (idempotent ``CREATE TABLE IF
NOT EXISTS`` plus a version row) unless ``migrate=False``; run it once by hand with
``loopwright sessions --store postgres --store-url URL`` or ``store.migrate()``.
Transactions take connections from the store's pool (``PostgresStore._connection``).
Concurrent saves of one session serialize on ``SELECT ... FOR UPDATE`` of its row.

Round trips and client CPU. A group-commit batch (``write``/``claim``: the writes of many
runs) is one transaction in psycopg's pipeline mode: statements whose rows are not read
are sent without waiting for the server, so a batch of checkpoints costs two round trips
(``BEGIN`` and its ``SELECT ... FOR UPDATE``; the inserts and ``COMMIT``) whatever its
size.
Statements over many rows pass each column as one array (``unnest``) instead of a
``VALUES`` list with a placeholder per value: their text is the same for every batch, so
psycopg parses it once (a statement of 800 placeholders was re-parsed on every batch,
about half of the client's CPU per batch) and the server prepares it once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final
from urllib.parse import urlsplit

from loopwright.store.errors import StoreUnavailable
from loopwright.store.sql import SqlStore
from loopwright.store.sql_base import Cursor

_TYPES: Final = {
    "session_id": "text",
    "call_id": "text",
    "owner": "text",
    "data": "text",
    "header": "text",
    "status": "text",
    "stop": "text",
    "parent": "text",
    "seq": "integer",
    "turn": "integer",
    "message_count": "integer",
    "last_checkpoint": "integer",
    "checkpoints": "integer",
    "created_at": "double precision",
    "updated_at": "double precision",
    "expires_at": "double precision",
}
"""The SQL type of each column the batch statements fill from arrays (``sql.SCHEMA``)."""


def _redact(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"postgresql://{host}{port}{parts.path}"


class PostgresStore(SqlStore):
    kind = "postgres"
    _placeholder = "%s"
    _for_update = " FOR UPDATE OF {}"

    def __init__(self, url: str, *, migrate: bool = True, connect_timeout: float = 5.0) -> None:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise StoreUnavailable(
                "postgres",
                _redact(url),
                "psycopg is not installed: pip install 'loopwright[postgres]'",
            ) from exc
        self._psycopg: Any = psycopg
        self.url = url
        self.target = _redact(url)
        self._timeout = connect_timeout
        self._all: list[Any] = []  # every open connection, idle or in use
        self._idle: list[Any] = []  # the pool: taken last in, first out
        self._all_lock = threading.Lock()
        if migrate:
            self.migrate()

    def migrate(self) -> None:
        """Create the tables (idempotent; safe to run from several processes)."""
        self._create_tables()

    def _lock_schema(self, cur: Cursor) -> None:
        # Concurrent ``CREATE TABLE IF NOT EXISTS`` of one new table fail with a unique
        # violation on pg_type: first-time migrations queue on one advisory lock, held
        # by the transaction that creates the tables until it commits.
        cur.execute("SELECT pg_advisory_xact_lock(7419265)")

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """A connection of the store's pool for one transaction, returned to it after.
        The pool grows to the most transactions ever open at once (a few: the group
        commit keeps two batches in flight) and its connections outlive the threads
        that used them, so the adapter's worker threads do not each connect (5-10 ms
        each on a local server) and the connection ``migrate`` opened serves the first
        batch."""
        with self._all_lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None or conn.closed:
            conn = self._connect()
        try:
            yield conn
        finally:
            idle = self._psycopg.pq.TransactionStatus.IDLE
            reusable = not conn.closed and not conn.broken and conn.info.transaction_status == idle
            with self._all_lock:
                if reusable:
                    self._idle.append(conn)
                elif conn in self._all:
                    self._all.remove(conn)
            if not reusable:
                conn.close()

    def _connect(self) -> Any:
        try:
            # autocommit: ``_tx`` and ``_batch`` open every transaction themselves
            conn = self._psycopg.connect(
                self.url, connect_timeout=max(1, int(self._timeout)), autocommit=True
            )
        except self._psycopg.Error as exc:
            raise StoreUnavailable("postgres", self.target, _first_line(exc)) from None
        with self._all_lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def _tx(self) -> Iterator[Cursor]:
        with (
            self._connection() as conn,
            self._errors(),
            conn.transaction(),
            conn.cursor() as cur,
        ):
            yield cur

    @contextmanager
    def _batch(self) -> Iterator[Cursor]:
        """One transaction in pipeline mode (see the module): ``BEGIN`` goes with the
        first statement and ``COMMIT`` with the last, so only the reads the batch needs
        wait for the server. ``COMMIT`` is sent only when the body finished: after an
        error (in the body, or a statement the server rejected, which makes it skip the
        rest) the transaction is rolled back, never committed in part."""
        with self._connection() as conn, self._errors():
            try:
                with conn.pipeline(), conn.cursor() as cur:
                    cur.execute("BEGIN")
                    yield cur
                    cur.execute("COMMIT")
            finally:
                if conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
                    conn.rollback()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        psycopg = self._psycopg
        try:
            yield
        except psycopg.OperationalError as exc:
            raise StoreUnavailable("postgres", self.target, _first_line(exc)) from None
        except psycopg.errors.ReadOnlySqlTransaction as exc:  # a hot standby, read-only mode
            raise StoreUnavailable("postgres", self.target, _first_line(exc)) from None
        except psycopg.errors.InFailedSqlTransaction as exc:  # pragma: no cover - defensive
            raise StoreUnavailable("postgres", self.target, _first_line(exc)) from None

    # -- statements over many rows: one array per column (see the module) ---------
    def _select_in(self, cur: Cursor, sql: str, ids: Sequence[str]) -> list[Any]:
        cur.execute(sql.format("SELECT unnest(%b::text[])"), (list(ids),))
        return list(cur.fetchall())

    def _insert(
        self,
        cur: Cursor,
        table: str,
        columns: tuple[str, ...],
        rows: Sequence[tuple[Any, ...]],
        tail: str = "",
    ) -> None:
        if not rows:
            return
        arrays = ", ".join(f"%b::{_TYPES[c]}[]" for c in columns)
        cur.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM unnest({arrays}) {tail}",
            [list(column) for column in zip(*rows, strict=True)],
        )

    def _matching(
        self, columns: tuple[str, str], pairs: Sequence[tuple[Any, Any]]
    ) -> list[tuple[str, list[Any]]]:
        if not pairs:
            return []
        a, b = columns
        where = f"({a}, {b}) IN (SELECT * FROM unnest(%b::{_TYPES[a]}[], %b::{_TYPES[b]}[]))"
        return [(where, [list(x) for x in zip(*pairs, strict=True)])]

    def close(self) -> None:
        with self._all_lock:
            for conn in self._all:
                try:
                    conn.close()
                except Exception:  # closing a dead connection may raise anything
                    pass
            self._all.clear()
            self._idle.clear()

    def __repr__(self) -> str:
        return f"PostgresStore({self.target!r})"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
