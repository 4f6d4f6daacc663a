"""Every ```python block of docs/loop.md and docs/testing.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, int, str]]:
    out = []
    for name in ("loop.md", "testing.md"):
        text = (ROOT / "docs" / name).read_text()
        out += [(name, i, code) for i, code in enumerate(BLOCK.findall(text))]
    return out


@pytest.mark.parametrize(("doc", "index", "code"), _blocks(), ids=lambda v: str(v)[:12])
def test_doc_example_runs(doc: str, index: int, code: str) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{doc}_{index}"}
    exec(compile(code, f"{doc}[{index}]", "exec"), namespace)  # a fresh module namespace
    assert namespace, f"{doc} block {index} defined nothing"
