"""The runnable examples of docs/durable.md run and print what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "durable.md"


def test_doc_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 3
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for i, block in enumerate(blocks[:3]):
            exec(compile(block, f"durable.md block {i}", "exec"), {"__name__": f"doc{i}"})
    text = out.getvalue()
    assert "[1, 2]\nhello\n1\ndemo@1\n2\n" in text
    assert "awaiting_confirmation s-" in text
    assert "sent to ann@example.org ['ann@example.org']" in text
