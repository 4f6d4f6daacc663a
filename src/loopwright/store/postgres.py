"""PostgreSQL checkpoint store (psycopg 3, ``pip install loopwright[postgres]``).

``PostgresStore(url)`` runs :meth:`PostgresStore.migrate` (idempotent ``CREATE TABLE IF
NOT EXISTS`` plus a version row) unless ``migrate=False``; run it once by hand with
``loopwright sessions --store postgres --store-url URL`` or ``store.migrate()``.
Each thread uses its own connection. Concurrent saves of one session serialize on
``SELECT ... FOR UPDATE`` of its row.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from loopwright.store.errors import StoreUnavailable
from loopwright.store.sql import Cursor, SqlStore


def _redact(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"postgresql://{host}{port}{parts.path}"


class PostgresStore(SqlStore):
    kind = "postgres"
    _placeholder = "%s"
    _for_update = " FOR UPDATE"

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
        self._local = threading.local()
        self._all: list[Any] = []
        self._all_lock = threading.Lock()
        if migrate:
            self.migrate()

    def migrate(self) -> None:
        """Create the tables (idempotent; safe to run from several processes)."""
        with self._tx() as cur:
            # serialize concurrent first-time migrations on one advisory lock
            cur.execute("SELECT pg_advisory_xact_lock(7419265)")
        self._create_tables()

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed:
            return conn
        try:
            conn = self._psycopg.connect(self.url, connect_timeout=max(1, int(self._timeout)))
        except self._psycopg.Error as exc:
            raise StoreUnavailable("postgres", self.target, _first_line(exc)) from None
        self._local.conn = conn
        with self._all_lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def _tx(self) -> Iterator[Cursor]:
        conn = self._conn()
        psycopg = self._psycopg
        try:
            with conn.transaction(), conn.cursor() as cur:
                yield cur
        except psycopg.OperationalError as exc:
            self._local.conn = None
            raise StoreUnavailable("postgres", self.target, _first_line(exc)) from None
        except psycopg.errors.InFailedSqlTransaction as exc:  # pragma: no cover - defensive
            raise StoreUnavailable("postgres", self.target, _first_line(exc)) from None

    def close(self) -> None:
        with self._all_lock:
            for conn in self._all:
                try:
                    conn.close()
                except Exception:  # closing a dead connection may raise anything
                    pass
            self._all.clear()
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"PostgresStore({self.target!r})"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
