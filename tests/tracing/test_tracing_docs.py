"""Every ```python block of docs/tracing.md runs as written (pytest-only blocks excepted:
the conftest line and the test function are run by the cassette plugin test)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[tuple[int, str]]:
    text = (ROOT / "docs" / "tracing.md").read_text(encoding="utf-8")
    return [(i, code) for i, code in enumerate(BLOCK.findall(text)) if "cassette)" not in code]


@pytest.mark.parametrize(("index", "code"), _blocks(), ids=lambda v: str(v)[:12])
def test_doc_example_runs(
    index: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_tracing_{index}"}
    exec(compile(code, f"tracing.md[{index}]", "exec"), namespace)
    assert len(namespace) > 1


def _expected_output(code: str) -> list[str]:
    """The output a block documents: a comment on a ``print`` line, and the comment lines
    right after a line that prints (a loop's lines are listed after it)."""
    lines = code.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if "print(" not in line:
            continue
        same = re.search(r"\)\s*# (.*)$", line)
        if same:
            out.append(same.group(1).strip())
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith("#"):
            if lines[j].startswith(" "):  # the rest of a loop body
                j += 1
                continue
            break
        while j < len(lines) and lines[j].strip().startswith("# "):
            out.append(lines[j].strip()[2:])
            j += 1
    return out


def test_the_blocks_print_what_they_say(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for index, code in _blocks():
        exec(compile(code, f"tracing.md[{index}]", "exec"), {"__name__": "docs"})
        got = capsys.readouterr().out.splitlines()
        want = _expected_output(code)
        assert len(got) == len(want), (index, got, want)
        for line, expected in zip(got, want, strict=True):
            head, ellipsis, tail = expected.partition("…")
            if ellipsis:
                assert line.startswith(head) and line.endswith(tail), (line, expected)
            else:
                assert line == expected, (line, expected)
