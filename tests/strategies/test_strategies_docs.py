"""Every ```python block of docs/strategies.md runs and prints what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
BLOCKS = BLOCK.findall((ROOT / "docs" / "strategies.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_example_prints_what_it_says(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    code = BLOCKS[index]
    exec(compile(code, f"strategies.md[{index}]", "exec"), {"__name__": f"docs_{index}"})
    expected = re.findall(r"^print\(.*\)\s*# (.*)$", code, re.M)
    assert expected, "every example documents its output"
    assert capsys.readouterr().out.splitlines()[-len(expected) :] == expected
