"""The runnable examples of docs/mcp.md print what their comments say (real servers)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def run_and_check(block: str, name: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, name, "exec"), {"__name__": "doc"})
    commented = [line.split("# ", 1)[1].strip() for line in block.splitlines() if "print(" in line]
    assert out.getvalue().splitlines() == commented


def test_doc_tools_example_runs_and_prints_its_comments() -> None:
    run_and_check(BLOCKS[0], "mcp.md")


def test_doc_resources_and_prompts_example_runs_against_its_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the server block is written where the example expects it, then the client runs
    [server] = [b for b in BLOCKS if b.startswith("# library_server.py\n")]
    client = BLOCKS[BLOCKS.index(server) + 1]
    (tmp_path / "library_server.py").write_text(server, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run_and_check(client, "mcp.md (resources and prompts)")
    assert len(BLOCKS) == 3  # every python block of the page is run above
