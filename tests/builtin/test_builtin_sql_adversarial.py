"""sql_query under queries a model really writes: comments, stray statements, writes
dressed as other statements. Each either runs read-only or is refused with a message
that says what to send instead."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from loopwright.core.errors import ToolError
from loopwright.tools.builtin.sql import MAX_CELL_CHARS, SqlRunner


@pytest.fixture
def runner(tmp_path: Path) -> SqlRunner:
    path = tmp_path / "shop.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE orders (id INTEGER, total REAL)")
    conn.executemany("INSERT INTO orders VALUES (?, ?)", [(1, 10.0), (2, 25.5)])
    conn.commit()
    conn.close()
    return SqlRunner(path)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT COUNT(*) FROM orders -- how many orders",
        "SELECT COUNT(*) FROM orders; -- how many orders",
        "-- count them\nSELECT COUNT(*) FROM orders",
    ],
)
def test_a_query_with_a_line_comment_runs(runner: SqlRunner, query: str) -> None:
    # a comment at the end swallowed the ';' appended to test completeness: refused as
    # "not a complete SQL statement"
    assert runner.query(query)["rows"] == [[2]]


def test_a_second_statement_is_refused_with_the_fix(runner: SqlRunner) -> None:
    # ProgrammingError is a DatabaseError: caught as such, the hint was never shown
    with pytest.raises(ToolError) as err:
        runner.query("SELECT 1; DELETE FROM orders")
    assert "send exactly one SELECT statement" in str(err.value)


def test_missing_parameters_are_named_as_such(runner: SqlRunner) -> None:
    with pytest.raises(ToolError) as err:
        runner.query("SELECT * FROM orders WHERE id = ?")
    assert "pass one value in params for each ? placeholder" in str(err.value)


def test_vacuum_into_is_refused_as_a_write(runner: SqlRunner, tmp_path: Path) -> None:
    # refused by the authorizer while running ("authorization denied"), not while
    # compiling ("not authorized"): the message was a bare "SQL error"
    copy = tmp_path / "copy.db"
    with pytest.raises(ToolError) as err:
        runner.query(f"VACUUM INTO '{copy}'")
    assert "only read-only SELECT statements are allowed" in str(err.value)
    assert not copy.exists()


@pytest.mark.parametrize(
    ("query", "params", "fragment"),
    [
        ("SELECT ?", [2**70], "params[0]"),  # OverflowError, kind permanent
        ("SELECT ?", ["ok", "\ud800"], "params[1]"),  # UnicodeEncodeError, kind permanent
        ("SELECT '\ud800'", None, "query"),
    ],
)
def test_values_sqlite_cannot_take_are_invalid_arguments_naming_them(
    runner: SqlRunner, query: str, params: list[object] | None, fragment: str
) -> None:
    # JSON allows both: integers of any size and escaped lone surrogates ("\ud800")
    with pytest.raises(ToolError) as err:
        runner.query(query, params)
    assert err.value.kind.value == "invalid_arguments"
    assert fragment in str(err.value)


_BIG = "hex(randomblob(499999))"  # a value of almost 1 MB, SQLite's length limit


def test_rows_of_huge_values_are_cut_as_they_are_read(runner: SqlRunner) -> None:
    # every value was kept whole until the result was rendered: 20 rows of 30 such
    # values held 600 MB, and a 4,000-character query could ask for gigabytes
    columns = ", ".join([_BIG] * 30)
    query = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20) "
        f"SELECT {columns} FROM c"
    )
    out = runner.query(query)
    rows = out["rows"]
    assert isinstance(rows, list) and len(rows) == 20
    cells = [cell for row in rows for cell in row]
    assert all(isinstance(c, str) and len(c) <= MAX_CELL_CHARS + 100 for c in cells)
    assert "chars cut" in cells[0]


def test_a_query_of_very_many_columns_is_refused(runner: SqlRunner) -> None:
    with pytest.raises(ToolError) as err:
        runner.query("SELECT " + ", ".join(["1"] * 200))
    assert "too many columns" in str(err.value)
