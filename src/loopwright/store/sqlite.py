"""SQLite checkpoint store (the default).

One file, by default ``$XDG_DATA_HOME/loopwright/loopwright.db`` (``~/.local/share/...``).
WAL mode lets readers run while one writer commits; every write transaction starts
with ``BEGIN IMMEDIATE`` so concurrent writers (threads or processes) queue on SQLite's
lock (``busy_timeout``) instead of failing on a lock upgrade. Each thread gets its own
connection.

``synchronous=NORMAL`` (the WAL default recommendation) survives a process crash (the
kill test) but may lose the last commits on power loss; pass ``durable=True`` for
``synchronous=FULL``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from loopwright.store.errors import StoreMissing, StoreUnavailable
from loopwright.store.sql import SqlStore
from loopwright.store.sql_base import Cursor


def default_path() -> Path:
    """``$XDG_DATA_HOME/loopwright/loopwright.db`` (``~/.local/share`` when unset)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "loopwright" / "loopwright.db"


def _missing(path: Path) -> tuple[str, str]:
    """The detail and the fix of a store file that ``create=False`` found missing."""
    folder = path.parent
    where = "" if folder.is_dir() else f" (its folder {folder} does not exist either)"
    return (
        f"no such file{where}",
        "this command works on existing sessions and creates no store: point --store-url / "
        "LOOPWRIGHT_STORE_URL at an existing one (sqlite:///path/to/file.db), or start a "
        "session there first (loopwright chat --store-url ...)",
    )


class SQLiteStore(SqlStore):
    """Checkpoint store in one SQLite file. ``path=":memory:"`` is not supported (use
    :class:`~loopwright.store.memory.MemoryStore`): each thread opens its own connection.

    The file and its folders are created on first use; ``create=False`` (for callers
    that only read or change existing sessions) refuses a path with no file instead,
    with :class:`StoreMissing` (a :class:`StoreUnavailable`) naming it, and creates nothing."""

    kind = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        durable: bool = False,
        busy_timeout: float = 30.0,
        create: bool = True,
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        if str(self.path) == ":memory:":
            raise ValueError("SQLiteStore needs a file path; use MemoryStore for in-memory state")
        if not create and not self.path.exists():
            # a caller that only reads (listing sessions) must not leave an empty store
            # (or its folders) behind a mistyped path
            raise StoreMissing("sqlite", str(self.path), *_missing(self.path))
        self._durable = durable
        self._busy_ms = int(busy_timeout * 1000)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._closed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(
                "sqlite", str(self.path), f"cannot create its directory ({exc})"
            ) from None
        self._create_tables()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise ValueError(f"SQLiteStore({self.path}) is closed")
        try:
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=self._busy_ms / 1000,
            )
        except sqlite3.Error as exc:
            raise StoreUnavailable("sqlite", str(self.path), str(exc)) from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            self._wal(conn)
            conn.execute(f"PRAGMA synchronous = {'FULL' if self._durable else 'NORMAL'}")
        except sqlite3.Error as exc:
            conn.close()
            raise StoreUnavailable("sqlite", str(self.path), str(exc)) from None
        self._local.conn = conn
        with self._all_lock:
            self._all.append(conn)
        return conn

    def _wal(self, conn: sqlite3.Connection) -> None:
        """Switch the file to WAL. SQLite answers "database is locked" to that switch at
        once, without waiting ``busy_timeout``, while another connection opens the same
        new file; so it is retried (with backoff) until the busy timeout, like a write."""
        deadline = time.monotonic() + self._busy_ms / 1000
        delay = 0.001
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    @contextmanager
    def _tx(self) -> Iterator[Cursor]:
        conn = self._conn()
        try:
            cur = conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreUnavailable("sqlite", str(self.path), str(exc)) from None
        try:
            yield cur
        except BaseException:
            conn.rollback()
            raise
        else:
            conn.commit()
        finally:
            cur.close()

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        conn = self._conn()
        cur = conn.cursor()
        try:
            # one read transaction: the checkpoint header and its messages come from
            # the same snapshot even while another process appends
            cur.execute("BEGIN")
            yield cur
        finally:
            conn.rollback()
            cur.close()

    def close(self) -> None:
        self._closed = True
        with self._all_lock:
            for conn in self._all:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._all.clear()
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"
