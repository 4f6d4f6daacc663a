"""``result.output`` is typed for a type checker: ``RunResult[T]`` from ``output_type=T``,
``str`` without one, for ``Agent`` and the one-shot ``run``/``arun`` alike; the type comes
from ``output_type``, never from the assignment target (checked with mypy on a small user
program)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

import loopwright

PROGRAM = """
import loopwright
from pydantic import BaseModel
from loopwright import Agent, ScriptedModel
from loopwright.core.run import RunState

class Section(BaseModel):
    heading: str

model = ScriptedModel([])
reveal_type(Agent(model))  # R1
reveal_type(Agent(model, output_type=Section))  # R2
typed = Agent(model, output_type=Section).run("x")
reveal_type(typed.output)  # R3
plain = Agent(model).run("x")
reveal_type(plain.output)  # R4
if typed.output is not None:
    words: int = typed.output.heading  # E1: a type error the checker must find
wrong: Agent[Section] = Agent(model)  # E2: a text agent is not an Agent[Section]
reveal_type(loopwright.run(model, "x"))  # R5
reveal_type(loopwright.run(model, "x", output_type=Section).output)  # R6

async def main() -> None:
    reveal_type(await loopwright.arun(model, "x", output_type=Section))  # R7
    reveal_type(await Agent(model, output_type=Section).arun("x"))  # R9
    reveal_type(await Agent(model).aresume(RunState(session_id="s")))  # R10

from loopwright.loop import Agent as LoopAgent
reveal_type(LoopAgent(model))  # R8
also_wrong: LoopAgent[Section] = LoopAgent(model)  # E3
"""

EXPECTED = {
    "R1": 'Revealed type is "loopwright.agent.Agent[str]"',
    "R2": 'Revealed type is "loopwright.agent.Agent[user_program.Section]"',
    "R3": 'Revealed type is "user_program.Section | None"',
    "R4": 'Revealed type is "str | None"',
    "R5": 'Revealed type is "loopwright.core.run.RunResult[str]"',
    "R6": 'Revealed type is "user_program.Section | None"',
    "R7": 'Revealed type is "loopwright.core.run.RunResult[user_program.Section]"',
    "R8": 'Revealed type is "loopwright.loop.agent.Agent[str]"',
    "R9": 'Revealed type is "loopwright.core.run.RunResult[user_program.Section]"',
    "R10": 'Revealed type is "loopwright.core.run.RunResult[str]"',
    "E1": 'expression has type "str", variable has type "int"',
    "E2": 'expression has type "Agent[str]", variable has type "Agent[Section]"',
    "E3": 'expression has type "Agent[str]", variable has type "Agent[Section]"',
}


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
    lines = PROGRAM.splitlines()
    for mark, expected in EXPECTED.items():
        # the line carrying the mark, as mypy numbers it (from 1)
        number = next(i for i, text in enumerate(lines, 1) if f"# {mark}" in text)
        found = [o for o in out.splitlines() if f"user_program.py:{number}: " in o]
        assert any(expected in o for o in found), (mark, found, out)
