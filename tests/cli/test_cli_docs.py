"""docs/cli.md documents every option of ``loopwright run`` in its tables, and no table
in docs/ is cut in two (rows after a blank line render as a paragraph of pipes)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from loopwright.cli.main import main

DOCS = Path(__file__).resolve().parents[2] / "docs"
_SEPARATOR = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+$")


def _tables(text: str) -> list[list[str]]:
    """Each run of consecutive lines starting with ``|``, outside code blocks."""
    tables: list[list[str]] = []
    current: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("|"):
            current.append(line.strip())
            continue
        if current:
            tables.append(current)
        current = []
    if current:
        tables.append(current)
    return tables


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda path: path.name)
def test_every_table_starts_with_a_header_row_and_its_separator(page: Path) -> None:
    for rows in _tables(page.read_text(encoding="utf-8")):
        assert len(rows) >= 2 and _SEPARATOR.match(rows[1]), (
            f"{page.name}: a table without its header (cut by a blank line or text?): {rows[0]}"
        )


def test_cli_md_documents_every_option_of_run_in_a_table_row() -> None:
    ctx = click.Context(main, info_name="loopwright")
    run = main.get_command(ctx, "run")
    assert run is not None
    rows = [
        row for table in _tables((DOCS / "cli.md").read_text(encoding="utf-8")) for row in table
    ]
    first_cells = " ".join(row.split("|")[1] for row in rows)
    for param in run.params:
        if isinstance(param, click.Option) and "--help" not in param.opts:
            assert f"`{max(param.opts, key=len)}" in first_cells, param.opts


def test_strategy_examples_name_a_model_that_follows_instructions() -> None:
    # the formats of plan_execute, tree_of_thoughts and react_text (a JSON plan, verdict
    # words, Action lines) are beyond the embedded base model, which is refused for them:
    # their examples name a model; self_consistency and self_refine run the agent
    from loopwright.strategies.catalog import TEXT_FORMATS

    ctx = click.Context(main, info_name="loopwright")
    run = main.get_command(ctx, "run")
    assert run is not None and run.help is not None
    examples = [line for line in run.help.splitlines() if "--strategy " in line]
    assert examples
    for line in examples:
        name = line.split("--strategy ", 1)[1].split()[0]
        assert name not in TEXT_FORMATS or "--model" in line, line
    text = (DOCS / "strategies.md").read_text(encoding="utf-8")
    assert "`follows_text_formats = False`" in text
