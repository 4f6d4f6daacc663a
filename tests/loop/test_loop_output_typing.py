"""``result.output`` is typed for a type checker: ``RunResult[T]`` from ``output_type=T``,
``str`` without one (checked with mypy on a small user program)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

import loopwright

PROGRAM = """
from pydantic import BaseModel
from loopwright import Agent, ScriptedModel

class Section(BaseModel):
    heading: str

typed = Agent(ScriptedModel([]), output_type=Section).run("x")
reveal_type(typed.output)
plain = Agent(ScriptedModel([])).run("x")
reveal_type(plain.output)
if typed.output is not None:
    words: int = typed.output.heading  # a type error the checker must find
"""


def test_output_is_typed_for_mypy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the loopwright under test, wherever it is imported from (source tree or install)
    monkeypatch.setenv("MYPYPATH", str(Path(loopwright.__file__).resolve().parents[1]))
    program = tmp_path / "user_program.py"
    program.write_text(PROGRAM)
    out, _, _ = api.run(
        [
            str(program),
            "--follow-imports=silent",
            "--ignore-missing-imports",
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    )
    assert 'Revealed type is "user_program.Section | None"' in out, out
    assert 'Revealed type is "str | None"' in out, out
    assert 'expression has type "str", variable has type "int"' in out, out
