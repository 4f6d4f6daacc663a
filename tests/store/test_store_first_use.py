"""Several processes (threads here) opening one store for the first time at once: the
first use creates the tables, and none of the openers may fail on the others' creation."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import quote

import pytest
from store_testlib import POSTGRES_ENV, service_url


def _open_at_once(open_store: Callable[[], object], n: int = 6) -> list[str]:
    errors: list[str] = []
    barrier = threading.Barrier(n)

    def one() -> None:
        barrier.wait()
        try:
            store = open_store()
            store.close()  # type: ignore[attr-defined]
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.fixture
def fresh_schema() -> Iterator[str]:
    """A URL whose ``search_path`` is a new, empty schema (the tables do not exist yet)."""
    import psycopg

    base = service_url(POSTGRES_ENV)
    schema = "lw_first_use_" + uuid.uuid4().hex[:10]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    try:
        yield base + sep + "options=" + quote(f"-csearch_path={schema}")
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.services
def test_postgres_stores_opened_at_once_on_new_tables_all_open(fresh_schema: str) -> None:
    from loopwright.store.postgres import PostgresStore

    assert _open_at_once(lambda: PostgresStore(fresh_schema)) == []
    store = PostgresStore(fresh_schema)
    try:
        assert store.sessions() == []
    finally:
        store.close()


def test_tables_of_a_newer_loopwright_are_refused_naming_both_versions(tmp_path) -> None:
    import sqlite3

    from loopwright.store import SchemaVersionError, SQLiteStore
    from loopwright.store.sql import TABLES_VERSION

    db = tmp_path / "newer.db"
    SQLiteStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE lw_meta SET value = ? WHERE name = 'tables_version'", (str(TABLES_VERSION + 1),)
        )
    with pytest.raises(SchemaVersionError) as caught:
        SQLiteStore(db)
    text = str(caught.value)
    assert f"version {TABLES_VERSION + 1}" in text and "upgrade loopwright" in text, text
    assert str(db) in text


@pytest.mark.services
def test_a_postgres_that_refuses_writes_is_store_unavailable() -> None:
    """A read-only server (a hot standby, or default_transaction_read_only) refuses every
    write: the store is unavailable for them, with the server's reason."""
    from loopwright.core.messages import Message
    from loopwright.core.run import RunState
    from loopwright.store import StoreUnavailable
    from loopwright.store.postgres import PostgresStore

    base = service_url(POSTGRES_ENV)
    sep = "&" if "?" in base else "?"
    url = base + sep + "options=" + quote("-cdefault_transaction_read_only=on")
    with pytest.raises(StoreUnavailable, match="read-only transaction"):
        PostgresStore(url)
    store = PostgresStore(url, migrate=False)
    try:
        with pytest.raises(StoreUnavailable, match="read-only transaction"):
            store.save(RunState(f"ro-{uuid.uuid4().hex[:8]}", messages=[Message.user("a")]))
        store.sessions(limit=1)  # reads still work
    finally:
        store.close()
