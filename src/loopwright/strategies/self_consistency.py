"""Self-consistency (CoT-SC): sample several reasoning paths, vote on their answers.

``k`` chain-of-thought samples (the ``cot`` prompt file) run concurrently, at most
``concurrency`` at a time. Each reply's final answer is extracted by ``parser`` (default
:func:`extract_answer`: the last ``Answer:`` line, normalised) and counted. The answer
with most votes wins; a tie is reported in ``data["tie"]`` (the winner is then the tied
answer seen first).

**Adaptive stopping**: with ``adaptive=True`` sampling stops once the leading answer
cannot be overtaken by the samples still to come (its lead over the runner-up exceeds
the number of samples not yet counted), and unfinished samples are cancelled. With
``concurrency < k`` this saves calls at no cost in accuracy: the winner is the one the
full ``k`` samples would have chosen. ``min_lead`` adds a confidence rule: stop as soon
as the leader is that many votes ahead of the runner-up (more calls saved; the answer may
then differ from the full vote's).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable
from typing import Final

from loopwright.core.messages import JSONValue
from loopwright.core.protocols import Model, ModelSettings
from loopwright.loop.limits import Limits
from loopwright.strategies.prompts import strategy_prompt
from loopwright.strategies.runtime import Outcome, Strategy, StrategyContext

AnswerParser = Callable[[str], "str | None"]
_ANSWER: Final = re.compile(r"answer\s*(?:is|:)\s*(.+)", re.IGNORECASE)
_NUMBER: Final = re.compile(r"^[-+]?\d+(?:\.\d+)?$")


def normalise(answer: str) -> str:
    """Case, surrounding punctuation/spaces and number formatting removed
    (``" 42.0. "`` -> ``"42"``, ``"Paris!"`` -> ``"paris"``)."""
    text = answer.strip().strip("*`\"' ").rstrip(".!。 ").strip().lower()
    text = text.replace(",", "") if _NUMBER.match(text.replace(",", "")) else text
    if _NUMBER.match(text):
        value = float(text)
        return str(int(value)) if value == int(value) else str(value)
    return " ".join(text.split())


def extract_answer(text: str) -> str | None:
    """The normalised final answer of a chain of thought: the last ``Answer: ...`` (or
    ``the answer is ...``) line; ``None`` when the reply has none."""
    found = None
    for line in text.splitlines():
        m = _ANSWER.search(line)
        if m:
            found = m.group(1)
    if found is None:
        return None
    answer = normalise(found)
    return answer or None


def decided(counts: Counter[str], remaining: int, min_lead: int | None = None) -> bool:
    """Can the leader no longer be overtaken (nor tied) by ``remaining`` more votes -- or,
    with ``min_lead``, does it lead the runner-up by at least that many votes?"""
    top = counts.most_common(2)
    if not top:
        return False
    lead = top[0][1] - (top[1][1] if len(top) > 1 else 0)
    return lead > remaining or (min_lead is not None and lead >= min_lead)


class SelfConsistency(Strategy):
    """CoT-SC (module docstring): ``k`` samples at ``temperature``, majority vote."""

    name = "self_consistency"

    def __init__(
        self,
        model: Model,
        *,
        k: int = 10,
        concurrency: int | None = None,
        adaptive: bool = True,
        parser: AnswerParser = extract_answer,
        settings: ModelSettings | None = None,
        limits: Limits | None = None,
        min_lead: int | None = None,
    ) -> None:
        super().__init__(limits)
        if k < 1:
            raise ValueError(f"SelfConsistency(k=...) must be >= 1, got {k}")
        self.model = model
        self.k = k
        self.concurrency = max(1, concurrency or k)
        self.adaptive = adaptive
        self.min_lead = min_lead
        self.parser = parser
        self.settings = settings or ModelSettings(temperature=0.7)

    async def _solve(self, ctx: StrategyContext, prompt: str) -> Outcome:
        question = ctx.prepare(strategy_prompt("cot", question=prompt), settings=self.settings)
        counts: Counter[str] = Counter()
        first_seen: dict[str, int] = {}
        pending: set[asyncio.Task[str]] = set()
        launched = completed = unparsed = 0
        try:
            while launched < self.k or pending:
                while launched < self.k and len(pending) < self.concurrency:
                    pending.add(asyncio.create_task(ctx.ask(self.model, question)))
                    launched += 1
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    answer = self.parser(task.result())
                    completed += 1
                    if answer is None:
                        unparsed += 1
                    else:
                        counts[answer] += 1
                        first_seen.setdefault(answer, completed)
                    ctx.step("sample", index=completed, answer=answer)
                ctx.best = _leader(counts, first_seen)
                if self.adaptive and decided(counts, self.k - completed, self.min_lead):
                    break
        finally:
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        return self._vote(ctx, counts, first_seen, completed, unparsed)

    def _vote(
        self,
        ctx: StrategyContext,
        counts: Counter[str],
        first_seen: dict[str, int],
        completed: int,
        unparsed: int,
    ) -> Outcome:
        top = max(counts.values(), default=0)
        tie = sorted((a for a, n in counts.items() if n == top), key=first_seen.__getitem__)
        votes: dict[str, JSONValue] = dict(counts.most_common())
        data: dict[str, JSONValue] = {
            "votes": votes,
            "samples": completed,
            "unparsed": unparsed,
            "tie": list(tie) if len(tie) > 1 else [],
            "stopped_early": completed < self.k,
        }
        ctx.step("vote", **data)
        return _leader(counts, first_seen), data


def _leader(counts: Counter[str], first_seen: dict[str, int]) -> str:
    if not counts:
        return ""
    top = max(counts.values())
    return min((a for a, n in counts.items() if n == top), key=first_seen.__getitem__)
