"""Self-Refine: generate a draft, ask for feedback on it, refine it, repeat.

The generator answers the task (``refine_draft``); the critic -- the same model or
``critic`` -- gives feedback (``refine_feedback``) ending with ``Score: N/10`` and
``STOP`` when nothing needs changing; the generator rewrites the draft to address it
(``refine_improve``). The cycle ends when the feedback says ``STOP``, when the score
reaches ``threshold``, after ``max_rounds`` refinements, or when a limit is reached.
Every draft and its feedback are kept in ``data["drafts"]``; the answer is the
highest-scored draft (the latest among equal scores). A draft whose feedback has no
score cannot be judged better than the one before it: it never replaces an earlier
draft (a scored draft beats every unscored one).

Built from an :class:`~loopwright.loop.Agent`, the generator is the agent: the first
draft is one complete run of it on the task (with its tools, as the agent alone would
answer), and each rewrite continues that conversation with the ``refine_improve``
request -- so a rewrite sees the tool results its draft was made from and may call the
tools again. A run that ends without a final answer ends the cycle (no draft: the run's
stop). The critic is ``critic`` or the agent's model, asked without tools; its request
starts with the tool results of the conversation (``refine_evidence``). Agent runs
count against the strategy's limits call by call (``StrategyContext.run_agent``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from loopwright.core.checks import check_count, check_score
from loopwright.core.messages import JSONValue, Message
from loopwright.core.protocols import Model
from loopwright.loop.agent import Agent
from loopwright.loop.limits import Limits
from loopwright.prompts import OutputParseError, prompt_message
from loopwright.strategies.prompts import strategy_prompt
from loopwright.strategies.runtime import Outcome, Strategy, StrategyContext

_SCORE: Final = re.compile(r"score\s*:\s*(\d+(?:\.\d+)?)\s*(?:/\s*(\d+))?", re.IGNORECASE)
_STOP: Final = re.compile(r"^\s*STOP\s*$", re.MULTILINE)
_EVIDENCE: Final = 8  # the latest tool results shown to the critic
_CLIP: Final = 600  # characters of each


@dataclass(frozen=True, slots=True)
class Feedback:
    """A critic's reply: its text, its score (0-1, ``None`` if it gave none), and
    whether it asked to stop."""

    text: str
    score: float | None
    stop: bool


def parse_feedback(text: str) -> Feedback:
    """``Score: N/M`` (the last one; ``/10`` assumed) and a ``STOP`` line."""
    scores = _SCORE.findall(text)
    score = None
    if scores:
        value, scale = scores[-1]
        ratio = float(value) / float(scale or 10) if float(scale or 10) > 0 else math.nan
        # "N/0" (or numbers too long for a float) is no score: the critic's reply counts
        # as unscored, it does not end the run with a ZeroDivisionError
        score = min(1.0, ratio) if math.isfinite(ratio) else None
    return Feedback(text, score, bool(_STOP.search(text)))


class SelfRefine(Strategy):
    """Self-Refine (module docstring). ``threshold`` is a score in 0-1 (``None``: only
    ``STOP`` or the round limit end the cycle). ``model`` is the generator: a model, or
    an agent whose runs write the drafts."""

    name = "self_refine"

    def __init__(
        self,
        model: Model | Agent[Any],
        *,
        critic: Model | None = None,
        max_rounds: int = 3,
        threshold: float | None = None,
        limits: Limits | None = None,
    ) -> None:
        super().__init__(limits)
        check_count("SelfRefine(max_rounds=...)", max_rounds, minimum=0)
        if threshold is not None:
            check_score("SelfRefine(threshold=...)", threshold)
        self.agent = model if isinstance(model, Agent) else None
        self.model = model.model if isinstance(model, Agent) else model
        self.critic = critic or self.model
        self.max_rounds = max_rounds
        self.threshold = threshold

    async def _solve(self, ctx: StrategyContext, prompt: str) -> Outcome:
        writer = _Writer(self, ctx)
        draft = await writer.draft(prompt)
        if not draft.strip():
            raise OutputParseError(
                "the model's first draft was empty: nothing to refine", retry_message="", raw=""
            )
        drafts: list[JSONValue] = []
        best: tuple[float, int, str] = (-1.0, 0, draft)
        ctx.best, ctx.record = draft, {"drafts": drafts}
        for round_ in range(self.max_rounds + 1):
            reply = await ctx.ask(self.critic, writer.critique(prompt, draft))
            feedback = parse_feedback(reply)
            drafts.append({"draft": draft, "feedback": reply, "score": feedback.score})
            if feedback.score is not None and feedback.score >= best[0]:
                best = (feedback.score, round_, draft)
            ctx.best = best[2]
            ctx.step("feedback", round=round_, score=feedback.score, stop=feedback.stop)
            if self._done(feedback) or round_ == self.max_rounds:
                break
            rewrite = await writer.rewrite(prompt, draft, reply)
            if not rewrite.strip():
                break  # an empty rewrite is no improvement (and would win a tie of scores)
            draft = rewrite
        return best[2], {"drafts": drafts, "chosen": best[1]}

    def _done(self, feedback: Feedback) -> bool:
        if feedback.stop:
            return True
        return (
            self.threshold is not None
            and feedback.score is not None
            and feedback.score >= self.threshold
        )


class _Writer:
    """The drafts of one run: the model's replies, or the agent's runs (a rewrite
    continues the conversation of the draft before it)."""

    def __init__(self, owner: SelfRefine, ctx: StrategyContext) -> None:
        self.owner = owner
        self.ctx = ctx
        self.history: Sequence[Message] = ()

    def critique(self, task: str, draft: str) -> str:
        """The critic's request on ``draft``; an agent's draft comes with the tool results
        of its conversation (``refine_evidence``), so the critic judges it against them."""
        results = [p for m in self.history for p in m.tool_results_parts]
        shown = "\n".join(f"- {p.name}: {_clipped(p.content)}" for p in results[-_EVIDENCE:])
        evidence = strategy_prompt("refine_evidence", results=shown) if shown else ""
        return strategy_prompt("refine_feedback", prefix=evidence, task=task, draft=draft)

    async def draft(self, task: str) -> str:
        agent = self.owner.agent
        if agent is None:
            return await self.ctx.ask(self.owner.model, strategy_prompt("refine_draft", task=task))
        result = await self.ctx.run_agent(agent, task)
        if not result.ok:
            # no draft to refine: the agent's own outcome is the run's
            raise self.ctx.failed_run(result, "the draft's agent run")
        self.history = result.messages
        return result.answer

    async def rewrite(self, task: str, draft: str, feedback: str) -> str:
        """The rewrite of ``draft``; empty when there is none (an agent run without a
        final answer)."""
        request = strategy_prompt("refine_improve", task=task, draft=draft, feedback=feedback)
        agent = self.owner.agent
        if agent is None:
            return await self.ctx.ask(self.owner.model, request)
        result = await self.ctx.run_agent(agent, prompt_message(request), history=self.history)
        if not result.ok:
            return ""
        self.history = result.messages
        return result.answer


def _clipped(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _CLIP else f"{flat[: _CLIP - 3]}..."
