"""Every python block of docs/prompts.md runs (one namespace, in order, from the repo root)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "prompts.md"


def test_prompts_doc_examples_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) >= 6
    namespace: dict[str, object] = {"__name__": "docs_prompts"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    out = capsys.readouterr().out
    assert "did you mean 'user_input'" in out and "malformed version name" in out
    assert "calculator" in out and "PASS" in out and "purge_records" in out
