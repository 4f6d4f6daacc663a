"""Self-consistency (CoT-SC): sample several reasoning paths, vote on their answers.

``k`` samples run concurrently, at most ``concurrency`` at a time. Built from a
:class:`~loopwright.core.protocols.Model`, a sample is one chain of thought (the ``cot``
prompt file) and ``parser`` (default :func:`extract_answer`: the last ``Answer:`` line,
normalised) reads its answer. Built from an :class:`~loopwright.loop.Agent`, a sample is
one complete run of the agent on the question -- with its tools, dispatch settings and
system prompt, at the sampling temperature -- counted against the strategy's limits
(``StrategyContext.run_agent``); ``parser`` (default :func:`answer_key`: the ``Answer:``
line, else the last number, else the whole answer normalised) turns its final answer
into a vote, and a run that ends without a final answer gives none (``data["failed"]``
counts them by stop reason). The answer with most votes wins; a tie is reported in
``data["tie"]`` (the winner is then the tied answer seen first). The model's winner is
the vote itself; the agent's is the full final answer of the first run that voted for it.

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
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Final

from loopwright.core.checks import check_count
from loopwright.core.errors import UserError
from loopwright.core.messages import JSONValue
from loopwright.core.protocols import Model, ModelSettings
from loopwright.core.run import RunResult
from loopwright.loop.agent import Agent
from loopwright.loop.limits import Limits
from loopwright.prompts import OutputParseError
from loopwright.strategies.prompts import strategy_prompt
from loopwright.strategies.runtime import BudgetExhausted, Outcome, Strategy, StrategyContext

AnswerParser = Callable[[str], "str | None"]
_ANSWER: Final = re.compile(r"answer\s*(?:is|:)\s*(.+)", re.IGNORECASE)
_NUMBER: Final = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
# a number as answers write it: "391", "-2.5", "1,000" (the thousands commas are dropped)
_NUMBERS: Final = re.compile(
    r"(?<![\w.])[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|[-+]?\d+(?:\.\d+)?"
)


def normalise(answer: str) -> str:
    """Case, surrounding punctuation/spaces and number formatting removed
    (``" 42.0. "`` -> ``"42"``, ``"Paris!"`` -> ``"paris"``)."""
    text = answer.strip().strip("*`\"' ").rstrip(".!。 ").strip().lower()
    plain = text.replace(",", "")
    if _NUMBER.match(plain):
        return _plain_number(plain)
    return " ".join(text.split())


def _plain_number(number: str) -> str:
    """``number`` (digits, an optional sign and fraction) without its sign ``+``, leading
    zeros and trailing fraction zeros. Done on the digits: through a float, distinct long
    numbers became one vote (9007199254740993 -> ...992) and a 400-digit one ``inf``."""
    sign = "-" if number[0] == "-" else ""
    body = number.lstrip("+-")
    if "." in body:
        body = body.rstrip("0").rstrip(".")
    body = body.lstrip("0")
    if not body:
        return "0"
    return sign + ("0" + body if body[0] == "." else body)


def extract_answer(text: str) -> str | None:
    """The normalised final answer of a chain of thought: the last ``Answer: ...`` (or
    ``the answer is ...``) line; ``None`` when the reply has none."""
    # one scan of the whole reply (``.`` stops at a line end, so each match is the rest
    # of its line), not a search per line: this runs once per sample
    found = _ANSWER.findall(text)
    if not found:
        return None
    answer = normalise(found[-1])
    return answer or None


def answer_key(text: str) -> str | None:
    """The vote of an agent's complete answer: its ``Answer: ...`` line when it has one
    (:func:`extract_answer`), else its last number (``"17 * 23 = 391."`` -> ``"391"``),
    else its whole text normalised (:func:`normalise`); ``None`` for an empty answer.
    Two answers stating one result in other words vote together when the result is a
    number; other results vote together only when written alike."""
    stated = extract_answer(text)
    if stated is not None:
        return stated
    numbers = _NUMBERS.findall(text)
    if numbers:
        return _plain_number(numbers[-1].replace(",", ""))
    return normalise(text) or None


def decided(counts: Counter[str], remaining: int, min_lead: int | None = None) -> bool:
    """Can the leader no longer be overtaken (nor tied) by ``remaining`` more votes -- or,
    with ``min_lead``, does it lead the runner-up by at least that many votes?"""
    top = counts.most_common(2)
    if not top:
        return False
    lead = top[0][1] - (top[1][1] if len(top) > 1 else 0)
    return lead > remaining or (min_lead is not None and lead >= min_lead)


class SelfConsistency(Strategy):
    """CoT-SC (module docstring): ``k`` samples at ``temperature``, majority vote; each
    sample is a chain of thought of ``model``, or a complete run when given an agent."""

    name = "self_consistency"

    def __init__(
        self,
        model: Model | Agent[Any],
        *,
        k: int = 10,
        concurrency: int | None = None,
        adaptive: bool = True,
        parser: AnswerParser | None = None,
        settings: ModelSettings | None = None,
        limits: Limits | None = None,
        min_lead: int | None = None,
    ) -> None:
        super().__init__(limits)
        check_count("SelfConsistency(k=...)", k)
        if concurrency is not None:
            check_count("SelfConsistency(concurrency=...)", concurrency)
        if min_lead is not None:
            check_count("SelfConsistency(min_lead=...)", min_lead)
        self.agent = model if isinstance(model, Agent) else None
        self.model = model.model if isinstance(model, Agent) else model
        self.k = k
        self.concurrency = max(1, concurrency or k)
        self.adaptive = adaptive
        self.min_lead = min_lead
        self.parser = parser or (extract_answer if self.agent is None else answer_key)
        self.settings = settings or ModelSettings(temperature=0.7)

    def _parsed(self, reply: str) -> str | None:
        return _checked_answer(self.parser(reply))

    async def _solve(self, ctx: StrategyContext, prompt: str) -> Outcome:
        tally = _Tally(self, ctx)
        ctx.record = tally.summary  # a run a limit stops keeps its votes
        sample = self._sampler(ctx, prompt, tally)
        workers = min(self.concurrency, self.k)
        tasks: list[asyncio.Task[None]] = []

        async def sampler() -> None:
            # each sampler draws samples one after another until k are drawn or the vote
            # is decided (one bookkeeping step per sample, no re-waiting on every pending
            # call). Before its first call it starts the next sampler, up to
            # ``concurrency``: against a real model all of them start within as many
            # loop turns, while a model that answers without waiting lets the first
            # sampler decide the vote before the others are even created
            first = True
            try:
                while tally.launched < self.k and not tally.stopped:
                    tally.launched += 1
                    if first and 1 < workers > len(tasks) and tally.launched < self.k:
                        tasks.append(asyncio.create_task(sampler()))
                    first = False
                    await sample()
            except BudgetExhausted as exc:
                # a limit: no new samples, but those running finish (their calls were
                # counted already) and their votes are kept
                tally.limit = tally.limit or exc
                tally.stopped = True
            except Exception:
                tally.stop()  # a model error: the other samplers stop too
                raise

        if workers == 1:
            await sampler()
        else:
            tasks.append(asyncio.create_task(sampler()))
            await _drain(tasks, tally)
        if tally.limit is not None:
            raise tally.limit
        return tally.vote()

    def _sampler(
        self, ctx: StrategyContext, prompt: str, tally: _Tally
    ) -> Callable[[], Awaitable[None]]:
        """Draw one sample and count its vote: a chain of thought of the model, or a run
        of the agent (at the sampling temperature, with the agent's other settings)."""
        agent = self.agent
        if agent is None:
            question = ctx.prepare(strategy_prompt("cot", question=prompt), settings=self.settings)

            async def think() -> None:
                tally.add(self._parsed(await ctx.ask(self.model, question)))

            return think
        sampling = replace(agent.config.settings, temperature=self.settings.temperature)

        async def run() -> None:
            result = await ctx.run_agent(agent, prompt, settings=sampling)
            if result.ok:
                tally.add(self._parsed(result.answer), result.answer)
            else:
                tally.failed(result)

        return run


def _checked_answer(answer: object) -> str | None:
    if answer is None or isinstance(answer, str):
        return answer
    raise UserError(
        f"SelfConsistency(parser=...) returned {answer!r:.60} ({type(answer).__name__}) for a "
        "sample; return the answer as a string, or None when the reply has none"
    )


async def _drain(tasks: list[asyncio.Task[None]], tally: _Tally) -> None:
    """Wait for the samplers in ``tasks`` (which grows while they start one another) and
    raise the first failure. On a decided vote (or a failure) the samplers still waiting
    for a reply are cancelled -- one loop turn later, so replies that have already
    arrived are counted."""
    loop = asyncio.get_running_loop()
    tally.on_stop = lambda: loop.call_soon(lambda: [t.cancel() for t in tasks])
    try:
        while pending := [t for t in tasks if not t.done()]:
            await asyncio.wait(pending)
    finally:
        unfinished = [t for t in tasks if not t.done()]
        for t in unfinished:
            t.cancel()
        if unfinished:
            await asyncio.gather(*unfinished, return_exceptions=True)
    failures = [t.exception() for t in tasks if not t.cancelled()]  # each one retrieved
    failure = next((f for f in failures if f is not None), None)
    if failure is not None:
        raise failure


class _Tally:
    """The votes of one run: counted as samples arrive, the leader kept current."""

    def __init__(self, owner: SelfConsistency, ctx: StrategyContext) -> None:
        self.owner = owner
        self.ctx = ctx
        self.counts: Counter[str] = Counter()
        self.first_seen: dict[str, int] = {}
        self.shown: dict[str, str] = {}  # each vote's answer as first given (an agent's text)
        self.failures: Counter[str] = Counter()  # agent runs without a final answer, by stop
        self.last_failure: RunResult[Any] | None = None
        self.launched = self.completed = self.unparsed = 0
        self.stopped = False
        self.on_stop: Callable[[], object] | None = None
        self.leader = ""
        self.limit: BudgetExhausted | None = None  # the limit that stopped the sampling

    def add(self, answer: str | None, shown: str | None = None) -> None:
        """Count one sample's vote ``answer`` (``None``: unreadable); ``shown`` is the
        answer as given, what the run answers when this vote wins (default: the vote)."""
        self.completed += 1
        counts = self.counts
        if answer is None:
            self.unparsed += 1
        else:
            counts[answer] += 1
            first = self.first_seen.setdefault(answer, self.completed)
            self.shown.setdefault(answer, answer if shown is None else shown)
            if self.leader != answer and (
                not self.leader
                or counts[answer] > counts[self.leader]
                or (counts[answer] == counts[self.leader] and first < self.first_seen[self.leader])
            ):
                self.leader = answer  # ties go to the answer seen first
                self.ctx.best = self.shown[answer]
        self.ctx.step("sample", index=self.completed, answer=answer)
        self._decide()

    def failed(self, result: RunResult[Any]) -> None:
        """Count an agent run that ended without a final answer: no vote."""
        self.completed += 1
        self.failures[result.stop.value] += 1
        self.last_failure = result
        self.ctx.step("sample", index=self.completed, answer=None, stop=result.stop.value)
        self._decide()

    def _decide(self) -> None:
        counts = self.counts
        owner = self.owner
        if owner.adaptive and decided(counts, owner.k - self.completed, owner.min_lead):
            self.stop()

    def stop(self) -> None:
        """No more samples: unfinished ones are not needed any more."""
        if not self.stopped:
            self.stopped = True
            if self.on_stop is not None:
                self.on_stop()

    def summary(self) -> dict[str, JSONValue]:
        """The vote so far (also what a run a limit stopped returns as its data)."""
        counts, first_seen = self.counts, self.first_seen
        top = max(counts.values(), default=0)
        tie = sorted((a for a, n in counts.items() if n == top), key=first_seen.__getitem__)
        votes: dict[str, JSONValue] = dict(counts.most_common())
        summary: dict[str, JSONValue] = {
            "votes": votes,
            "samples": self.completed,
            "unparsed": self.unparsed,
            "tie": list(tie) if len(tie) > 1 else [],
            "stopped_early": self.completed < self.owner.k,
        }
        if self.owner.agent is not None:
            summary["failed"] = dict(self.failures.most_common())
        return summary

    def vote(self) -> Outcome:
        counts, first_seen = self.counts, self.first_seen
        data = self.summary()
        self.ctx.step("vote", **data)
        if not counts:
            # nothing to vote on: an empty "final answer" would pass for a result
            last = self.last_failure
            if last is not None and len(self.failures) == 1 and not self.unparsed:
                # every agent run stopped alike (max_turns, model_error ...): that is the
                # run's outcome, as the agent's own would be
                raise self.ctx.failed_run(last, f"each of the {self.completed} agent runs")
            wanted = (
                "the default parser wants a last line 'Answer: ...'"
                if self.owner.agent is None
                else f"runs without a final answer: {dict(self.failures) or 'none'}"
            )
            raise OutputParseError(
                f"none of the {self.completed} samples gave an answer the parser could "
                f"read ({wanted})",
                retry_message="",
                raw="",
            )
        return self.shown[_leader(counts, first_seen)], data


def _leader(counts: Counter[str], first_seen: dict[str, int]) -> str:
    if not counts:
        return ""
    top = max(counts.values())
    return min((a for a, n in counts.items() if n == top), key=first_seen.__getitem__)
