"""Reflexion: an actor tries, an evaluator judges, the actor reflects and tries again.

* The **actor** is an :class:`~loopwright.loop.Agent` (a ReAct loop with its tools); each
  trial is one agent run on the task plus the lessons remembered so far
  (``reflexion_task``). Its events appear in the strategy's stream (between the
  strategy's own ``RunStarted`` and ``RunFinished``), its usage counts against the
  strategy's limits and its turns as model calls.
* The **evaluator** is any function ``(task, answer) -> Evaluation`` (sync or async):
  unit tests, an exact-match check, a model. A ``bool`` is taken as
  ``Evaluation(passed)``; anything else is a :class:`~loopwright.core.errors.UserError`.
* On failure the ``reflector`` model (default: the actor's model) writes a lesson
  (``reflexion_reflect``), kept as long-term memory under ``key`` in a
  :class:`~loopwright.strategies.memory.ReflectionMemory` (short-term memory: the lessons
  of this run's trials are in the next trial's prompt too). Lessons persist in the store,
  so a later task with the same key -- in another process -- starts with them.

The run ends at the first passing trial, or after ``max_trials`` (stop ``final_answer``
with ``data["passed"] = False`` and the last answer).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias

from loopwright.core.checks import check_count
from loopwright.core.errors import UserError
from loopwright.core.messages import JSONValue
from loopwright.core.protocols import Model
from loopwright.core.run import RunResult, RunStop
from loopwright.loop.agent import Agent
from loopwright.loop.limits import Limits
from loopwright.prompts import prompt_message
from loopwright.strategies.memory import ReflectionMemory
from loopwright.strategies.prompts import strategy_prompt
from loopwright.strategies.runtime import (
    BudgetExhausted,
    Outcome,
    Strategy,
    StrategyContext,
)


@dataclass(frozen=True, slots=True)
class Evaluation:
    """An evaluator's verdict: passed or not, and what it saw (sent to the reflection)."""

    passed: bool
    feedback: str = ""


Evaluator: TypeAlias = Callable[[str, str], "Evaluation | bool | Awaitable[Evaluation | bool]"]


class Reflexion(Strategy):
    """Reflexion (module docstring)."""

    name = "reflexion"

    def __init__(
        self,
        actor: Agent,
        evaluator: Evaluator,
        memory: ReflectionMemory,
        *,
        key: str,
        reflector: Model | None = None,
        max_trials: int = 3,
        limits: Limits | None = None,
    ) -> None:
        super().__init__(limits)
        check_count("Reflexion(max_trials=...)", max_trials)
        self.actor = actor
        self.evaluator = evaluator
        self.memory = memory
        self.key = key
        self.reflector = reflector or actor.model
        self.max_trials = max_trials

    async def _solve(self, ctx: StrategyContext, prompt: str) -> Outcome:
        trials: list[JSONValue] = []
        ctx.record = {"trials": trials, "passed": False}
        answer = ""
        for trial in range(1, self.max_trials + 1):
            lessons = self.memory.recall(self.key)
            result = await self._attempt(ctx, prompt, lessons)
            answer = ctx.best = result.answer
            verdict = await self._evaluate(prompt, answer)
            trials.append(
                {
                    "answer": answer,
                    "passed": verdict.passed,
                    "feedback": verdict.feedback,
                    "lessons": len(lessons),
                }
            )
            ctx.step("trial", trial=trial, passed=verdict.passed, feedback=verdict.feedback)
            if verdict.passed:
                return answer, {"trials": trials, "passed": True}
            lesson = await ctx.ask(
                self.reflector,
                strategy_prompt(
                    "reflexion_reflect",
                    task=prompt,
                    answer=answer,
                    feedback=verdict.feedback or "(no details)",
                    reflections=_listed(lessons),
                ),
            )
            lesson = lesson.strip()
            if lesson:  # an empty reply teaches nothing: it would crowd out real lessons
                self.memory.remember(self.key, lesson)
            ctx.step("reflection", trial=trial, lesson=lesson)
        return answer, {"trials": trials, "passed": False}

    async def _attempt(self, ctx: StrategyContext, task: str, lessons: list[str]) -> RunResult:
        """One actor run, counted against the strategy's limits (``ctx.run_agent``)."""
        prompt = strategy_prompt("reflexion_task", task=task, reflections=_listed(lessons))
        # as a message carrying the template's fingerprint (recorded on the actor's calls)
        result = await ctx.run_agent(self.actor, prompt_message(prompt))
        if result.stop in _ACTOR_FAILURES:
            # the model (or the context) failed, not the attempt: another trial and a
            # reflection on an empty answer would fail the same way
            raise BudgetExhausted(result.stop, f"the actor's run failed: {result.detail}")
        return result

    async def _evaluate(self, task: str, answer: str) -> Evaluation:
        verdict: object = self.evaluator(task, answer)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if isinstance(verdict, Evaluation):
            return verdict
        # a plain check (`lambda task, answer: answer == "42"`) is the most common
        # evaluator: its bool is the verdict, with nothing to tell the reflector
        if isinstance(verdict, bool):
            return Evaluation(verdict)
        raise UserError(
            f"the Reflexion evaluator returned {type(verdict).__name__} {verdict!r:.80}; "
            "return an Evaluation(passed, feedback) or a bool"
        )


_ACTOR_FAILURES = frozenset({RunStop.MODEL_ERROR, RunStop.CONTEXT_ERROR})


def _listed(lessons: list[str]) -> str:
    return "\n".join(f"- {lesson}" for lesson in lessons) if lessons else "(none yet)"
