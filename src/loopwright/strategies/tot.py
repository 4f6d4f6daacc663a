"""Tree of Thoughts: search over partial solutions with a thought generator and a state
evaluator.

A *state* is the problem plus the steps (thoughts) taken so far. The **generator**
proposes next steps -- ``"propose"``: one call of the ``tot_propose`` prompt returns up
to ``n_generate`` steps, one per line; ``"sample"``: ``n_generate`` calls of
``tot_sample`` return one step each -- or is your function ``(problem, steps) ->
next steps``. The **evaluator** scores states -- ``"value"``: one ``tot_value`` call per
state (``sure`` / ``likely`` / ``impossible`` scored 20 / 1 / 0.001, averaged over
``n_evaluate`` calls); ``"vote"``: ``n_evaluate`` ``tot_vote`` calls over all candidate
states, a state's score is its votes -- or is your function ``(problem, steps) -> score``.

Search: ``"bfs"`` keeps the ``beam`` best states at each depth; every frontier state is
expanded concurrently and every new state evaluated concurrently (a level costs about
two model latencies, not one per node). ``"dfs"`` goes deepest-first through the
children in score order, prunes states scoring below ``threshold`` and backtracks, up
to ``max_nodes`` evaluated states. ``threshold`` is on the evaluator's own scale (0-20 for
``"value"``, 0-``n_evaluate`` votes for ``"vote"``, any number for a function), and is
checked against it when the strategy is built. Scores (values and votes) are cached by
``state_key(steps)`` (default: the steps themselves), so identical states reached by
different paths are scored once (a batch is voted on again unless all of its states
have a score: votes compare the states of one batch). ``is_solution(problem, steps)`` ends the search early; ``answer(problem,
steps)`` turns the chosen path into the answer (default: its last step).
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal, TypeAlias

from loopwright.core.checks import check_choice, check_count, check_number
from loopwright.core.errors import UserError
from loopwright.core.messages import JSONValue
from loopwright.core.protocols import Model, ModelSettings
from loopwright.loop.limits import Limits
from loopwright.prompts import OutputParseError
from loopwright.strategies.prompts import strategy_prompt
from loopwright.strategies.runtime import (
    Outcome,
    Prepared,
    Strategy,
    StrategyContext,
)

Steps: TypeAlias = tuple[str, ...]
GenerateFn: TypeAlias = Callable[[str, Steps], "Sequence[str] | Awaitable[Sequence[str]]"]
EvaluateFn: TypeAlias = Callable[[str, Steps], "float | Awaitable[float]"]

VALUE_SCORES: Final = {"sure": 20.0, "likely": 1.0, "impossible": 0.001}
_VALUE_WORD: Final = re.compile(r"\b(sure|likely|impossible)\b", re.IGNORECASE)
_VOTE: Final = re.compile(r"best choice is\s*(\d+)", re.IGNORECASE)
_BULLET: Final = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def parse_steps(text: str) -> list[str]:
    """Proposed steps: the non-empty lines, without list bullets or numbering."""
    return [s for s in (_BULLET.sub("", line).strip() for line in text.splitlines()) if s]


def parse_value(text: str) -> float:
    """The score of a ``tot_value`` reply: its last sure/likely/impossible (0 if none)."""
    words = _VALUE_WORD.findall(text)
    return VALUE_SCORES[words[-1].lower()] if words else 0.0


def parse_vote(text: str, choices: int) -> int | None:
    """The 0-based choice a ``tot_vote`` reply names, or ``None``."""
    found = _VOTE.findall(text)
    if not found or len(found[-1].lstrip("0")) > 9:  # no choice has that many digits
        return None  # (and int() refuses a number of over 4,300 digits)
    index = int(found[-1]) - 1
    return index if 0 <= index < choices else None


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """How the tree is searched (module docstring)."""

    method: Literal["bfs", "dfs"] = "bfs"
    depth: int = 3
    beam: int = 5
    n_generate: int = 5
    n_evaluate: int = 1
    threshold: float = 0.5
    """``"dfs"`` prunes states scoring below it, on the evaluator's scale (module
    docstring; the default prunes states judged ``impossible`` and states with no vote)."""
    max_nodes: int = 200
    max_concurrency: int = 32
    settings: ModelSettings | None = None
    """Settings of every model call (sampled calls get ``temperature=0.7`` on top)."""

    def __post_init__(self) -> None:
        check_choice("SearchConfig.method", self.method, ("bfs", "dfs"))
        for name in ("depth", "beam", "n_generate", "n_evaluate", "max_nodes", "max_concurrency"):
            check_count(f"SearchConfig.{name}", getattr(self, name))
        # its range depends on the evaluator: TreeOfThoughts checks it against the one in use
        check_number("SearchConfig.threshold", self.threshold)


def _default_key(steps: Steps) -> Hashable:
    return steps


def _last_step(problem: str, steps: Steps) -> str:
    return steps[-1] if steps else ""


@dataclass(frozen=True, slots=True)
class ThoughtHooks:
    """The problem-specific functions of a :class:`TreeOfThoughts` (all optional)."""

    generate: GenerateFn | None = None
    evaluate: EvaluateFn | None = None
    is_solution: Callable[[str, Steps], bool] | None = None
    answer: Callable[[str, Steps], str] = _last_step
    state_key: Callable[[Steps], Hashable] = _default_key


class TreeOfThoughts(Strategy):
    """Tree of Thoughts (module docstring)."""

    name = "tree_of_thoughts"

    def __init__(
        self,
        model: Model | None = None,
        *,
        generator: Literal["propose", "sample"] = "propose",
        evaluator: Literal["value", "vote"] = "value",
        search: SearchConfig | None = None,
        hooks: ThoughtHooks | None = None,
        limits: Limits | None = None,
    ) -> None:
        super().__init__(limits)
        self.hooks = hooks or ThoughtHooks()
        if model is None and (self.hooks.generate is None or self.hooks.evaluate is None):
            raise ValueError(
                "TreeOfThoughts needs a model unless both generate and evaluate are functions"
            )
        check_choice("TreeOfThoughts(generator=...)", generator, ("propose", "sample"))
        check_choice("TreeOfThoughts(evaluator=...)", evaluator, ("value", "vote"))
        self.model = model
        self.generator = generator
        self.evaluator = evaluator
        self.search = search or SearchConfig()
        _check_threshold(self.search, evaluator, self.hooks)

    # -- search -----------------------------------------------------------------------
    async def _solve(self, ctx: StrategyContext, prompt: str) -> Outcome:
        run = _Search(self, ctx, prompt)
        if self.search.method == "bfs":
            best = await run.bfs()
        else:
            best = await run.dfs((), 0) or run.best_seen()
        answer = self.hooks.answer(prompt, best)
        data: dict[str, JSONValue] = {
            "path": list(best),
            "score": run.scores.get(self.hooks.state_key(best), 0.0),
            "evaluated": run.evaluated,
            "expanded": run.expanded,
            "cache_hits": run.cache_hits,
            "solved": run.solved is not None,
        }
        ctx.step("result", **data)
        if not best:
            # no thought at all: an empty "final answer" would pass for a result
            ctx.record = data
            raise OutputParseError(
                "the generator proposed no thought to search (its replies had no step lines)",
                retry_message="",
                raw="",
            )
        return answer, data


class _Search:
    """The state of one search: scores (the evaluation cache), counters, the solution."""

    def __init__(self, owner: TreeOfThoughts, ctx: StrategyContext, problem: str) -> None:
        self.owner = owner
        self.ctx = ctx
        self.problem = problem
        self.cfg = owner.search
        self.hooks = owner.hooks
        self.scores: dict[Hashable, float] = {}
        self.sem = asyncio.Semaphore(self.cfg.max_concurrency)
        base = self.cfg.settings or ModelSettings()
        self.settings = base
        self.sampling = replace(base, temperature=0.7)
        self.evaluated = self.expanded = self.cache_hits = 0
        self.solved: Steps | None = None
        self.seen: list[Steps] = []

    async def bfs(self) -> Steps:
        frontier: list[Steps] = [()]
        for depth in range(1, self.cfg.depth + 1):
            expansions = await asyncio.gather(*(self.expand(s) for s in frontier))
            children = list(dict.fromkeys(c for group in expansions for c in group))
            if not children:
                break
            scores = await self.score_all(children)
            ranked = sorted(zip(scores, range(len(children)), children, strict=True), reverse=True)
            frontier = [c for _, _, c in ranked[: self.cfg.beam]]
            self.ctx.best = self.hooks.answer(self.problem, frontier[0])
            self.ctx.step(
                "level", depth=depth, candidates=len(children), kept=[list(s) for s in frontier]
            )
            if self.solved is not None:
                return self.solved
        return frontier[0]

    async def dfs(self, steps: Steps, depth: int) -> Steps | None:
        if self.solved is not None:
            return self.solved
        if depth >= self.cfg.depth or self.evaluated >= self.cfg.max_nodes:
            return None
        children = await self.expand(steps)
        scores = await self.score_all(children)
        for score, _, child in sorted(
            zip(scores, range(len(children)), children, strict=True), reverse=True
        ):
            if self.solved is not None:
                return self.solved
            if score < self.cfg.threshold:
                self.ctx.step("pruned", steps=list(child), score=score)
                continue
            found = await self.dfs(child, depth + 1)
            if found is not None:
                return found
            self.ctx.step("backtrack", steps=list(child))
        return None

    def best_seen(self) -> Steps:
        if not self.seen:
            return ()
        key = self.hooks.state_key
        return max(self.seen, key=lambda s: (len(s), self.scores.get(key(s), 0.0)))

    # -- generation ---------------------------------------------------------------------
    async def expand(self, steps: Steps) -> list[Steps]:
        self.expanded += 1
        fn = self.hooks.generate
        if fn is not None:
            proposed = fn(self.problem, steps)
            found = _proposed(await proposed if inspect.isawaitable(proposed) else proposed, steps)
        elif self.owner.generator == "propose":
            text = await self.ask(
                strategy_prompt(
                    "tot_propose", problem=self.problem, steps=_show(steps), n=self.cfg.n_generate
                )
            )
            found = parse_steps(text)[: self.cfg.n_generate]
        else:
            sample = self.ctx.prepare(
                strategy_prompt("tot_sample", problem=self.problem, steps=_show(steps)),
                settings=self.sampling,
            )
            replies = await asyncio.gather(*(self.ask(sample) for _ in range(self.cfg.n_generate)))
            found = [s for r in replies for s in parse_steps(r)[:1]]
        children = [(*steps, step) for step in dict.fromkeys(found)]
        self.seen.extend(children)
        return children

    # -- evaluation ---------------------------------------------------------------------
    async def score_all(self, states: Sequence[Steps]) -> list[float]:
        if not states:
            return []
        if self.owner.evaluator == "vote" and self.hooks.evaluate is None:
            scores = await self.vote(states)
        else:
            scores = await self.values(states)
        solve = self.hooks.is_solution
        if solve is not None and self.solved is None:
            self.solved = next((s for s in states if solve(self.problem, s)), None)
        return scores

    async def values(self, states: Sequence[Steps]) -> list[float]:
        """The cached scores of ``states``: states already scored, or equal to another
        in the batch (by ``state_key``), are not evaluated again; the rest concurrently.
        A search scores one batch at a time, so the batch is the unit of sharing."""
        key = self.hooks.state_key
        keys = [key(s) for s in states]
        scores = self.scores
        fresh: dict[Hashable, Steps] = {}
        for k, state in zip(keys, states, strict=True):
            if k in scores or k in fresh:
                self.cache_hits += 1
            else:
                fresh[k] = state
        if fresh:
            found = await asyncio.gather(*(self._evaluate(s) for s in fresh.values()))
            scores.update(zip(fresh, found, strict=True))
            self.evaluated += len(fresh)
        return [scores[k] for k in keys]

    async def _evaluate(self, steps: Steps) -> float:
        fn = self.hooks.evaluate
        if fn is not None:
            value = fn(self.problem, steps)
            value = await value if inspect.isawaitable(value) else value
            if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
                # float(None) would be a TypeError naming neither the hook nor the state;
                # nan would sort anywhere
                raise UserError(
                    f"ThoughtHooks.evaluate returned {value!r:.80} for {list(steps)!r:.120}; "
                    "return a number (a higher score is a better state)"
                )
            return float(value)
        prompt = self.ctx.prepare(
            strategy_prompt("tot_value", problem=self.problem, steps=_show(steps)),
            settings=self.settings,
        )
        if self.cfg.n_evaluate == 1:
            return parse_value(await self.ask(prompt))
        replies = await asyncio.gather(*(self.ask(prompt) for _ in range(self.cfg.n_evaluate)))
        return sum(parse_value(r) for r in replies) / len(replies)

    async def vote(self, states: Sequence[Steps]) -> list[float]:
        """The votes of ``states``, recorded per state (by ``state_key``) in ``scores``
        like evaluations are: the search's result and the depth-first fallback
        (:meth:`best_seen`) read them there. Votes compare the states of one batch, so a
        batch is voted on unless every state in it already has a score."""
        key = self.hooks.state_key
        keys = [key(s) for s in states]
        scores = self.scores
        if all(k in scores for k in keys):
            self.cache_hits += len(keys)
            return [scores[k] for k in keys]
        choices = "\n".join(f"Choice {i}:\n{_show(s)}" for i, s in enumerate(states, 1))
        prompt = self.ctx.prepare(
            strategy_prompt("tot_vote", problem=self.problem, choices=choices),
            settings=self.sampling,
        )
        replies = await asyncio.gather(*(self.ask(prompt) for _ in range(self.cfg.n_evaluate)))
        votes = [0.0] * len(states)
        for reply in replies:
            choice = parse_vote(reply, len(states))
            if choice is not None:
                votes[choice] += 1
        self.evaluated += len(states)
        for k, count in zip(keys, votes, strict=True):
            scores.setdefault(k, count)  # a state's first score stays, as for evaluations
        return votes

    async def ask(self, prompt: str | Prepared) -> str:
        assert self.owner.model is not None
        if not isinstance(prompt, Prepared):
            prompt = self.ctx.prepare(prompt, settings=self.settings)
        async with self.sem:
            return await self.ctx.ask(self.owner.model, prompt)


def _check_threshold(search: SearchConfig, evaluator: str, hooks: ThoughtHooks) -> None:
    """Refuse a threshold outside the scores the evaluator in use can give: above them
    it would prune every state, so it cannot be what was meant (a function's scores
    have no known range)."""
    if hooks.evaluate is not None:
        return
    if evaluator == "value":
        high = VALUE_SCORES["sure"]
        why = " for evaluator='value' (it scores sure 20, likely 1, impossible 0.001)"
    else:
        high = float(search.n_evaluate)
        why = f" for evaluator='vote' (a state scores its votes, 0-n_evaluate={search.n_evaluate})"
    check_number("SearchConfig.threshold", search.threshold, 0.0, high, why)


def _proposed(value: object, steps: Steps) -> list[str]:
    """A generate hook's reply as steps: a list (or tuple) of strings -- a bare string
    would be searched letter by letter."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise UserError(
            f"ThoughtHooks.generate returned {value!r:.80} for {list(steps)!r:.120}; return "
            "a list of strings, one per proposed next step"
        )
    return list(value)


def _show(steps: Steps) -> str:
    return "\n".join(steps) if steps else "(none yet)"
