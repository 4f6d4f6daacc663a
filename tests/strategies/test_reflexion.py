"""Reflexion: trial, evaluation, reflection kept as long-term memory in a store; the
memory survives a process restart and shows in the next task's prompt."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from loopwright import Agent, FunctionModel, ModelRequest, RunStop
from loopwright.core.errors import UserError
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


def test_an_evaluator_may_return_a_bool_and_anything_else_is_named() -> None:
    # was: a bare AssertionError for `lambda task, answer: answer.isupper()`
    memory = ReflectionMemory(MemoryStore())
    actor = Agent(FunctionModel(model_reply))
    result = Reflexion(actor, lambda task, answer: answer.isupper(), memory, key="b").run("Q?")
    assert result.answer == "PARIS" and [t["passed"] for t in result.data["trials"]] == [
        False,
        True,
    ]
    with pytest.raises(UserError, match="evaluator returned NoneType None; return an Evaluation"):
        Reflexion(actor, lambda task, answer: None, memory, key="n").run("Q?")  # type: ignore[arg-type, return-value]


def test_an_actor_whose_model_fails_ends_the_run_as_model_error() -> None:
    # was: the failed run's empty answer was evaluated and reflected on (by a working
    # reflector), and every trial failed the same way
    def down(messages: Sequence[Message], request: ModelRequest) -> str:
        raise RuntimeError("model down")

    reflector = FunctionModel(lambda messages, request: "Try harder.")
    memory = ReflectionMemory(MemoryStore())
    strategy = Reflexion(Agent(FunctionModel(down)), upper, memory, key="down", reflector=reflector)
    result = strategy.run("Q?")
    assert result.stop is RunStop.MODEL_ERROR and "model down" in result.detail
    assert reflector.calls == 0 and memory.recall("down") == []


def test_an_empty_reflection_is_not_kept_as_a_lesson() -> None:
    memory = ReflectionMemory(MemoryStore())
    model = FunctionModel(lambda messages, request: "" if "failed" in messages[-1].text else "x")
    fail = lambda task, answer: Evaluation(False, "wrong")  # noqa: E731
    result = Reflexion(Agent(model), fail, memory, key="e", max_trials=2).run("Q?")
    assert result.data["passed"] is False and memory.recall("e") == []


def test_concurrent_writers_of_one_key_lose_no_lesson(tmp_path: Path) -> None:
    # was: HistoryConflict / HistoryRewritten raised and lessons dropped when runs in
    # several threads or processes remembered lessons under one key
    db = tmp_path / "lessons.db"
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:  # opening the store too: a writer that failed to open it lost its lessons
            memory = ReflectionMemory(SQLiteStore(db), limit=100)
            for i in range(15):
                memory.remember("shared", f"lesson {n}-{i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    lessons = ReflectionMemory(SQLiteStore(db), limit=100).recall("shared")
    assert sorted(lessons) == sorted(f"lesson {n}-{i}" for n in range(4) for i in range(15))


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
