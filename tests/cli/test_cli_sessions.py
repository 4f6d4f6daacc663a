"""``loopwright sessions`` and friends against a real SQLite store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from loopwright.cli.main import main
from loopwright.durable import Durable
from loopwright.loop import Agent
from loopwright.providers.scripted import ScriptedModel
from loopwright.store import SQLiteStore


def _store_with_sessions(db: Path, *ids: str) -> None:
    store = SQLiteStore(db)
    try:
        for sid in ids:
            Durable(Agent(ScriptedModel(["ok"])), store).run("hi", session_id=sid)
    finally:
        store.close()


def test_one_bad_row_does_not_hide_the_other_sessions(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _store_with_sessions(db, "s-good", "s-bad")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE lw_sessions SET status = 'bogus' WHERE session_id = 's-bad'")
    url = f"sqlite://{db}"
    listed = CliRunner().invoke(main, ["sessions", "--json", "--store-url", url])
    assert listed.exit_code == 0, listed.output
    rows = {r["session_id"]: r for r in json.loads(listed.stdout)["sessions"]}
    assert rows["s-good"]["status"] == "done"
    assert rows["s-bad"]["status"] == "unreadable"
    assert "unknown status 'bogus'" in rows["s-bad"]["problem"]
    plain = CliRunner().invoke(main, ["sessions", "--store-url", url])
    assert plain.exit_code == 0 and "s-good" in plain.stdout and "unreadable" in plain.stdout


def test_sqlite_errors_do_not_talk_about_a_server(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.db"
    folder.mkdir()  # a path SQLite cannot open as a file
    result = CliRunner().invoke(main, ["sessions", "--store-url", f"sqlite://{folder}"])
    assert result.exit_code != 0
    assert "server is running" not in result.stderr
    assert "sqlite:///path/to/file.db" in result.stderr


def test_redis_rows_that_do_not_decode_are_listed_too() -> None:
    from loopwright.store.redis_store import _info

    info = _info("s-x", {b"status": b"bogus", b"turn": b"1"})
    assert info.display_status == "unreadable" and "s-x" in info.problem


def test_commands_on_existing_sessions_create_no_store(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "dir" / "x.db"
    url = f"sqlite://{missing}"
    for args in (
        ["sessions", "--store-url", url],
        ["sessions", "show", "s-1", "--store-url", url],
        ["sessions", "delete", "s-1", "--store-url", url],
        ["resume", "s-1", "--approve", "--store-url", url],  # session 's-1' not found: ...
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code != 0, args
        assert str(missing) in result.output and "does not exist" in result.output
        assert "creates no store" in result.output
    assert not (tmp_path / "missing").exists()
    # a store that exists is read as before
    SQLiteStore(missing).close()
    assert CliRunner().invoke(main, ["sessions", "--store-url", url]).exit_code == 0
