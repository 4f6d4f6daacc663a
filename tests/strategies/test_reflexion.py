"""Reflexion: trial, evaluation, reflection kept as long-term memory in a store; the
memory survives a process restart and shows in the next task's prompt."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from loopwright import Agent, FunctionModel, ModelRequest
from loopwright.core.events import StrategyStep
from loopwright.core.messages import Message
from loopwright.store import MemoryStore, SQLiteStore
from loopwright.strategies import Evaluation, ReflectionMemory, Reflexion

LESSON = "Answers must be written in upper case."


def model_reply(messages: Sequence[Message], request: ModelRequest) -> str:
    prompt = messages[-1].text
    if "say why the attempt failed" in prompt:
        return LESSON
    return "PARIS" if "upper case" in prompt else "paris"


def upper(task: str, answer: str) -> Evaluation:
    return Evaluation(answer.isupper(), "" if answer.isupper() else "expected upper case")


def test_a_failed_trial_is_reflected_on_and_the_lesson_used_next() -> None:
    model = FunctionModel(model_reply)
    memory = ReflectionMemory(MemoryStore())
    events: list[object] = []
    result = Reflexion(Agent(model), upper, memory, key="capitals").run(
        "Capital of France?", on_event=events.append
    )
    assert result.ok and result.answer == "PARIS" and result.data["passed"] is True
    assert memory.recall("capitals") == [LESSON]
    trials = [e.detail for e in events if isinstance(e, StrategyStep) and e.kind == "trial"]
    assert [t["passed"] for t in trials] == [False, True]
    assert any(type(e).__name__ == "ModelCallFinished" for e in events)  # the actor's calls
    assert result.calls == 3  # trial, reflection, trial


def test_memory_is_bounded_and_scoped_by_key() -> None:
    memory = ReflectionMemory(MemoryStore(), limit=2)
    for n in range(4):
        memory.remember("a", f"lesson {n}")
    memory.remember("b", "other")
    assert memory.recall("a") == ["lesson 2", "lesson 3"]
    assert memory.recall("b") == ["other"] and memory.recall("c") == []


def test_memory_survives_a_restart_and_reaches_the_next_prompt(tmp_path: Path) -> None:
    db = tmp_path / "lessons.db"
    first = ReflectionMemory(SQLiteStore(db))
    Reflexion(Agent(FunctionModel(model_reply)), upper, first, key="geo").run("Capital of France?")
    script = textwrap.dedent(
        f"""
        from loopwright import Agent, ScriptedModel
        from loopwright.store import SQLiteStore
        from loopwright.strategies import Evaluation, ReflectionMemory, Reflexion

        model = ScriptedModel(["ROME"])
        memory = ReflectionMemory(SQLiteStore({str(db)!r}))
        ok = lambda task, answer: Evaluation(True)
        result = Reflexion(Agent(model), ok, memory, key="geo").run("Capital of Italy?")
        print(result.answer)
        print(model.requests[0].tail[-1].text)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out.startswith("ROME\n")
    assert "Capital of Italy?" in out and f"- {LESSON}" in out
