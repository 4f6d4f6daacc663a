"""The offline examples of docs/providers.md run as written (sections that only build
objects; the others talk to real services and are exercised by the adapter tests)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
OFFLINE_SECTIONS = ("## Deadlines and response size", "## Prices and cost")


def _blocks() -> list[tuple[str, str]]:
    text = DOC.read_text()
    out = []
    for title in OFFLINE_SECTIONS:
        start = text.find(title)
        if start < 0:
            continue
        end = text.find("\n## ", start + len(title))
        section = text[start : end if end > 0 else len(text)]
        out += [(title, code) for code in BLOCK.findall(section)]
    return out


def test_the_offline_sections_have_examples():
    assert {title for title, _ in _blocks()} >= {OFFLINE_SECTIONS[0]}


@pytest.mark.parametrize(("title", "code"), _blocks(), ids=lambda v: str(v)[:24])
def test_doc_example_runs(title: str, code: str, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    namespace: dict[str, object] = {"__name__": "docs_providers"}
    exec(compile(code, title, "exec"), namespace)
