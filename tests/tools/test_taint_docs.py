"""docs/security.md's taint example runs and prints what its comments promise."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def test_taint_doc_example_runs() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Taint:") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    code = block.group(1)
    promised = [m.group(1).strip() for m in re.finditer(r"print\(.*\)\s*# (.+)", code)]
    assert len(promised) == 3
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "security.md", "exec"), {"__name__": "taint_doc"})
    assert out.getvalue().strip().splitlines() == promised
