"""docs/security.md's example runs and prints what its comment promises."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def test_security_doc_example_runs() -> None:
    block = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None
    code = block.group(1)
    promised = re.search(r"print\(.*\)\s*# (.+)", code)
    assert promised is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "security.md", "exec"), {"__name__": "security_doc"})
    assert out.getvalue().strip() == promised.group(1).strip()
