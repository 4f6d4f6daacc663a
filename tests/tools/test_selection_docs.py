"""The runnable example of docs/tool-selection.md prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "tool-selection.md"


def test_doc_example_runs_and_prints_its_comments() -> None:
    [block] = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "tool-selection.md", "exec"), {"__name__": "doc"})
    commented = [line.split("# ", 1)[1].strip() for line in block.splitlines() if "print(" in line]
    assert out.getvalue().splitlines() == commented
