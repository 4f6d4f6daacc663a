"""What every SQL store statement goes through: the connection seams a database
fills in (``_tx``, ``_read``, ``_batch``, the placeholder and row-locking syntax) and the
statements over many rows, chunked under the databases' limits on parameters per
statement (PostgreSQL overrides ``_select_in`` and ``_insert``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

_R = TypeVar("_R")


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...
    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class SqlBase:
    """The seams and many-row statements of :class:`~loopwright.store.sql.SqlStore`."""

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


_PARAMS = 900
"""Parameters per statement at most (SQLite before 3.32 allows 999, PostgreSQL 65,535)."""


def _chunks(rows: Sequence[_R], width: int) -> list[Sequence[_R]]:
    step = max(1, _PARAMS // width)
    return [rows[k : k + step] for k in range(0, len(rows), step)]
