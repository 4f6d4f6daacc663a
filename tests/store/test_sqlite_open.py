"""Opening a SQLite store while another connection holds the new file's lock."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from loopwright.store import StoreUnavailable
from loopwright.store.sqlite import SQLiteStore


def test_opening_waits_for_a_writer_of_a_new_file_instead_of_failing(tmp_path: Path) -> None:
    # was: "database is locked" at once (the switch to WAL does not wait busy_timeout),
    # so one of several threads opening a new file died and its writes were lost
    db = tmp_path / "new.db"
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE unrelated (x)")
    commit = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    commit.start()
    try:
        store = SQLiteStore(db)
        assert store.sessions() == []
        assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        commit.join()
        other.close()


def test_opening_gives_up_after_the_busy_timeout_naming_the_file(tmp_path: Path) -> None:
    db = tmp_path / "held.db"
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    other.execute("CREATE TABLE unrelated (x)")
    try:
        with pytest.raises(StoreUnavailable, match="database is locked") as err:
            SQLiteStore(db, busy_timeout=0.2)
        assert str(db) in str(err.value)
    finally:
        other.rollback()
        other.close()


def test_many_threads_open_one_new_file_at_once(tmp_path: Path) -> None:
    for round_ in range(20):
        db = tmp_path / f"race{round_}.db"
        start = threading.Barrier(6)
        errors: list[BaseException] = []

        def open_one(
            db: Path = db, start: threading.Barrier = start, errors: list[BaseException] = errors
        ) -> None:
            start.wait()
            try:
                SQLiteStore(db).sessions()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=open_one) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
