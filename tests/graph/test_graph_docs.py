"""The examples of docs/graph.md run in order and print exactly the output the page
shows under each of them."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "graph.md"
BLOCK = re.compile(r"```python\n(.*?)```\n(?:\n```text\n(.*?)```)?", re.S)


def test_every_example_prints_what_the_page_says() -> None:
    blocks = BLOCK.findall(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 6
    namespace: dict[str, object] = {"__name__": "graph_doc"}
    for index, (code, expected) in enumerate(blocks):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(
                compile(code, f"docs/graph.md example {index + 1}", "exec", dont_inherit=True),
                namespace,
            )
        assert out.getvalue() == expected, f"example {index + 1}"
