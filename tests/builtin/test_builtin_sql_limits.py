"""sql_query's time limit holds even for statements whose one step could loop for long:
what a statement may build is bounded by SQLite's own limits and the authorizer."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.tools.builtin.sql import SqlRunner


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "t.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x TEXT)")
    conn.execute("CREATE VIEW v AS SELECT printf('%.*c', 2147483647, 'x') AS big")
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize(
    "query",
    [
        "SELECT length(printf('%.*c', 2147483647,'x'))",  # 26 s in one step before
        "SELECT length(PRINTF('%2000000000.2000000000c', 'x'))",
        "SELECT length(format('%.*c', 2147483647,'x'))",
        "SELECT length(big) FROM v",  # hidden in a view of the database file
    ],
)
def test_single_step_builders_are_refused_at_once(db: Path, query: str) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError) as err:
        SqlRunner(db, timeout=1.0).query(query)
    assert time.monotonic() - started < 1.0
    assert err.value.kind is ToolErrorKind.INVALID_ARGUMENTS


def test_the_refusal_names_the_function(db: Path) -> None:
    with pytest.raises(ToolError, match=r"printf\(\) cannot be used"):
        SqlRunner(db).query("SELECT printf('%d', 1)")


@pytest.mark.parametrize(
    "query",
    [
        "SELECT length(zeroblob(2000000000))",
        "SELECT length(replace(hex(zeroblob(400000)),'0','0000000000'))",
        "SELECT length(substr(hex(randomblob(600000)), 1))",
    ],
)
def test_values_past_the_length_limit_fail_fast(db: Path, query: str) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match="too big"):
        SqlRunner(db, timeout=1.0).query(query)
    assert time.monotonic() - started < 1.0


def test_ordinary_queries_still_work(db: Path) -> None:
    out = SqlRunner(db).query("SELECT upper('a') || lower('B'), length(hex(randomblob(8)))")
    assert out["rows"] == [["Ab", 16]]
