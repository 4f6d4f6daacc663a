"""The exit codes belong to the command line: one per stop reason, documented."""

from __future__ import annotations

import re
from pathlib import Path

from loopwright.cli import exit_codes
from loopwright.core.run import RunStop

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_every_stop_reason_has_its_own_code() -> None:
    assert set(exit_codes.STOP_CODES) == set(RunStop)
    codes = list(exit_codes.STOP_CODES.values()) + list(exit_codes.FAILURE_KINDS)
    assert len(codes) == len(set(codes))


def test_core_no_longer_owns_exit_codes() -> None:
    import loopwright
    import loopwright.core.run as core_run

    assert not hasattr(core_run, "EXIT_CODES")
    assert "EXIT_CODES" not in loopwright.__all__


def test_docs_table_matches_the_codes() -> None:
    section = DOCS.read_text("utf-8").split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d+) \| `?([a-z_]+)", section, re.MULTILINE))
    for stop, code in exit_codes.STOP_CODES.items():
        assert rows.get(str(code)) == stop.value, stop
    for code in exit_codes.FAILURE_KINDS:
        assert str(code) in rows
    help_table = exit_codes.table()
    for stop, code in exit_codes.STOP_CODES.items():
        assert re.search(rf"^\s*{code}\s+{stop.value}", help_table, re.MULTILINE)
