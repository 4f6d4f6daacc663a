"""What every reasoning strategy shares: limits over all its model calls, events, results.

A strategy (plan-and-execute, self-consistency, tree of thoughts ...) makes many model
calls for one question. :class:`StrategyContext` is the one place those calls go
through, so that

* :class:`~loopwright.loop.Limits` bound the whole strategy run: ``max_turns`` counts
  every model call (reserved when the call starts, so concurrent calls cannot overshoot
  it), ``token_budget`` / ``cost_budget`` sum the usage of every call, ``timeout`` is the
  wall clock of the whole run, and ``model_retries`` retries retryable provider errors.
  An agent run a strategy starts (:meth:`StrategyContext.run_agent`) is counted the
  same way, call by call: its model is seen through the strategy's accounting, so
  concurrent agent runs share one ``max_turns`` and one budget;
* every call is visible as ``ModelCallStarted`` / ``ModelCallFinished`` events (with the
  fingerprints of the prompt templates it was rendered from), and strategy progress as
  :class:`~loopwright.core.events.StrategyStep` events, between one ``RunStarted`` and
  one ``RunFinished`` -- the same stream shape an agent run has, so tracing and the CLI's
  ``--stream`` work unchanged.

:class:`Strategy` turns a subclass's ``_solve`` into ``run`` / ``arun`` / ``stream``.
See ``docs/strategies.md``.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from loopwright.core.errors import ProviderError
from loopwright.core.events import (
    LimitReached,
    ModelCallFailed,
    ModelCallFinished,
    ModelCallStarted,
    ResponseDone,
    RunEvent,
    RunFinished,
    RunStarted,
    StrategyStep,
    ToolCallFinished,
    ToolCallStarted,
)
from loopwright.core.messages import JSONValue, Message, ToolCallPart, Usage
from loopwright.core.protocols import (
    Model,
    ModelEvent,
    ModelRequest,
    ModelSettings,
    StreamError,
    complete,
)
from loopwright.core.run import (
    TAINT_LOG_SIZE,
    RunResult,
    RunStop,
    TaintSource,
    new_session_id,
    run_sync,
)
from loopwright.loop.agent import Agent, running_as_parent
from loopwright.loop.limits import Limits
from loopwright.prompts.patterns import OutputParseError
from loopwright.prompts.template import fingerprints_of, prompt_message
from loopwright.strategies.wrapper import ModelWrapper
from loopwright.tools.confirm import Confirmation
from loopwright.tools.dispatcher import Dispatcher, DispatchOutcome

EventSink = Callable[[RunEvent], None]
_DEFAULT_LIMITS = Limits(max_turns=None)
_NO_USAGE = Usage()
_SETTINGS = ModelSettings()


class BudgetExhausted(Exception):
    """Raised inside a strategy when a limit is reached (or an agent run it started
    failed); :class:`Strategy` turns it into a result with the best answer so far and
    the stop reason."""

    def __init__(self, stop: RunStop, detail: str) -> None:
        super().__init__(detail)
        self.stop = stop
        self.detail = detail


class ModelFailed(Exception):
    """A model call failed for good (not retryable, or out of retries)."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(frozen=True, slots=True)
class StrategyResult:
    """What a strategy run returns.

    ``answer`` is the final answer (or the best so far when a limit stopped the run);
    ``calls`` counts model calls; ``data`` is the strategy's own record (the plan and
    each step's result, the votes, the search tree ...), JSON-ready. ``state`` is set
    when a run paused (``stop`` is ``awaiting_confirmation``): pass it to the strategy's
    ``resume`` to continue.
    """

    answer: str
    stop: RunStop
    calls: int
    usage: Usage
    duration_s: float
    session_id: str
    detail: str = ""
    data: Mapping[str, JSONValue] = field(default_factory=dict)
    state: Mapping[str, JSONValue] | None = None

    @property
    def ok(self) -> bool:
        return self.stop is RunStop.FINAL_ANSWER

    def run_result(self) -> RunResult:
        """The same outcome as the loop's :class:`RunResult` (what the CLI prints)."""
        messages = (Message.assistant(self.answer),) if self.answer else ()
        return RunResult(
            self.answer, self.stop, self.calls, self.usage, messages, self.session_id, self.detail
        )


# stops that are no limit (no LimitReached event)
_NOT_LIMITS = (
    RunStop.FINAL_ANSWER,
    RunStop.MODEL_ERROR,
    RunStop.AWAITING_CONFIRMATION,
    RunStop.OUTPUT_INVALID,
    RunStop.CONTEXT_ERROR,
)


class StrategyContext:
    """The bookkeeping of one strategy run (see the module docstring). Strategies call
    :meth:`ask` for every model call and :meth:`step` to report progress; ``best`` and
    ``record`` are the answer and the data a limit-stopped run returns (``record`` may be
    a function building that data, called only when a limit stops the run)."""

    def __init__(self, name: str, limits: Limits, emit: EventSink | None, session_id: str):
        self.name = name
        self.limits = limits
        self.session_id = session_id
        self.calls = 0
        self.usage = _NO_USAGE
        self.best = ""
        self.record: Mapping[str, JSONValue] | Callable[[], Mapping[str, JSONValue]] = {}
        self.started = time.perf_counter()
        self.taint: tuple[TaintSource, ...] = ()
        self._emit = emit

    def recorded(self) -> Mapping[str, JSONValue]:
        """The strategy's record so far (see ``record``)."""
        record = self.record
        return record() if callable(record) else record

    # -- limits -----------------------------------------------------------------------
    def check(self) -> None:
        """Raise :class:`BudgetExhausted` if a budget is used up (before new work)."""
        limits = self.limits
        if limits.token_budget is not None and self.usage.total_tokens >= limits.token_budget:
            raise BudgetExhausted(
                RunStop.TOKEN_BUDGET,
                f"{self.usage.total_tokens} tokens used of a budget of {limits.token_budget}",
            )
        if limits.cost_budget is not None and self.usage.cost >= limits.cost_budget:
            raise BudgetExhausted(
                RunStop.COST_BUDGET,
                f"cost {self.usage.cost:.4f} of a budget of {limits.cost_budget}",
            )

    def _reserve_call(self) -> int:
        self.check()
        cap = self.limits.max_turns
        if cap is not None and self.calls >= cap:
            raise BudgetExhausted(RunStop.MAX_TURNS, f"{cap} model calls used (Limits.max_turns)")
        self.calls += 1
        return self.calls

    def add_usage(self, usage: Usage) -> None:
        """Count usage spent outside :meth:`ask` (an agent called as a tool by a step)."""
        self.usage = self.usage + usage

    async def run_agent(
        self,
        agent: Agent[Any],
        prompt: str | Message,
        *,
        history: Sequence[Message] | None = None,
        settings: ModelSettings | None = None,
    ) -> RunResult[Any]:
        """One run of ``agent`` on ``prompt`` (after ``history``) as part of this strategy.

        Every model call of the run is counted as one of :meth:`ask`'s is -- reserved
        against ``Limits.max_turns`` when it starts, its usage added to the budgets when
        it ends -- so agent runs going on at the same time share the strategy's limits and
        cannot overshoot them (the usage of agents its tools call, ``Agent.as_tool``,
        is added when the run ends). The run's events (but its own ``RunStarted`` /
        ``RunFinished``) go to the strategy's stream instead of the agent's
        ``hooks.on_event``. ``settings`` replace the agent's model settings for this run.
        A run that ends without a final answer is returned as it is (the strategy
        decides); a strategy limit reached during the run raises
        :class:`BudgetExhausted`."""
        self.check()
        counted = _Counted(agent.model, self)
        config = agent.config
        hooks = replace(config.hooks, on_event=self._forward_child)
        run = type(agent).from_config(
            replace(config, model=counted, hooks=hooks, settings=settings or config.settings)
        )
        result = await run.arun(prompt, history=history)
        # usage the run had beyond its own calls: agents its tools called (Agent.as_tool)
        self.usage = self.usage + _beyond(result.usage, counted.usage)
        if counted.refused is not None:
            raise counted.refused
        return result

    @staticmethod
    def failed_run(result: RunResult[Any], what: str) -> BudgetExhausted:
        """The strategy's outcome when an agent run it needed (``what``: "the draft's
        agent run") ended without a final answer: that run's stop reason -- except a
        pause for a person's approval, which a strategy run cannot keep (nothing would
        resume it): that ends ``output_invalid``, saying how to answer for the tool."""
        stop, detail = result.stop, f"{what} stopped with {result.stop.value}: {result.detail}"
        if stop is RunStop.AWAITING_CONFIRMATION:
            stop = RunStop.OUTPUT_INVALID
            detail += (
                "; a strategy run cannot pause for approval: give the agent a confirmation "
                "handler (on the command line --yes or --no)"
            )
        return BudgetExhausted(stop, detail)

    def _forward_child(self, event: RunEvent) -> None:
        if not isinstance(event, RunStarted | RunFinished):
            self.emit(event)

    # -- as the parent of agents called as tools (loopwright.loop.agent.ParentRun) ------
    def forward(self, event: RunEvent) -> None:
        self.emit(event)

    def budget_left(self) -> tuple[int | None, float | None]:
        limits = self.limits
        tokens = (
            None if limits.token_budget is None else limits.token_budget - self.usage.total_tokens
        )
        cost = None if limits.cost_budget is None else limits.cost_budget - self.usage.cost
        return tokens, cost

    # -- events -----------------------------------------------------------------------
    def emit(self, event: RunEvent) -> None:
        if self._emit is not None:
            self._emit(event)

    async def call_tool(
        self,
        dispatcher: Dispatcher,
        call: ToolCallPart,
        *,
        taint: Sequence[TaintSource] | None = None,
        confirmation: Confirmation | None = None,
    ) -> DispatchOutcome:
        """Run one tool call through ``dispatcher``, reporting it as the loop does
        (:class:`ToolCallStarted` / :class:`ToolCallFinished`).

        Taint works as in the loop (docs/security.md, "Taint"): ``taint`` is what the
        run had read when the call was written (default: everything read so far, the
        run's ``taint``) -- while it is not empty a side-effect call needs a person's
        approval -- and an untrusted result the call returns is added to the run's
        ``taint``. ``confirmation`` is a person's decision already made for this call."""
        self.emit(ToolCallStarted(self.calls, call))
        outcome = await dispatcher.run_one(
            call, confirmation=confirmation, taint=self.taint if taint is None else taint
        )
        if outcome.taint is not None:
            self.taint = (*self.taint[1 - TAINT_LOG_SIZE :], outcome.taint)
        self.emit(
            ToolCallFinished(
                self.calls,
                call,
                outcome.result,
                outcome.duration_s,
                outcome.attempts,
                outcome.repairs,
            )
        )
        return outcome

    def step(self, kind: str, **detail: JSONValue) -> None:
        """Report strategy progress as a :class:`StrategyStep` event."""
        if self._emit is not None:
            self._emit(StrategyStep(self.name, kind, detail))

    # -- model calls ------------------------------------------------------------------
    @staticmethod
    def prepare(
        prompt: str, *, system: str | None = None, settings: ModelSettings | None = None
    ) -> Prepared:
        """A request for ``prompt`` that many calls can share (the samples of one prompt:
        built once, not per call)."""
        messages = (prompt_message(prompt),)
        # what request_fingerprints(system, messages) reads back, taken from the texts
        fingerprints = fingerprints_of(system, prompt)
        return Prepared(ModelRequest(messages, system, (), settings or _SETTINGS), fingerprints)

    async def ask(
        self,
        model: Model,
        prompt: str | Prepared,
        *,
        system: str | None = None,
        settings: ModelSettings | None = None,
    ) -> str:
        """One model call with ``prompt`` (or a :meth:`prepare`-d request) as the user
        message; returns the reply text.

        Counts against the limits, retries retryable provider errors up to
        ``Limits.model_retries`` and raises :class:`ModelFailed` past them."""
        turn = self._reserve_call()
        call = (
            prompt
            if isinstance(prompt, Prepared)
            else self.prepare(prompt, system=system, settings=settings)
        )
        emit = self._emit
        attempt = 0
        while True:
            attempt += 1
            if emit is not None:
                emit(ModelCallStarted(turn, model.name, 1, call.fingerprints, attempt))
            started = time.perf_counter()
            final = await complete(model, call.request)
            self.usage = self.usage + final.usage
            if isinstance(final, ResponseDone):
                if emit is not None:
                    emit(
                        ModelCallFinished(
                            turn,
                            final.message,
                            final.stop_reason,
                            final.usage,
                            time.perf_counter() - started,
                            call.fingerprints,
                            final.model,
                        )
                    )
                return final.message.text
            error = final.error
            retry = error.retryable and attempt <= self.limits.model_retries
            self.emit(ModelCallFailed(turn, error, attempt, retry))
            if not retry:
                raise ModelFailed(error)
            delay = self.limits.retry_base_delay * 2 ** (attempt - 1)
            await asyncio.sleep(min(delay, self.limits.retry_max_delay))


class _Counted(ModelWrapper):
    """An agent's model seen through a strategy's accounting (:meth:`StrategyContext.
    run_agent`): each call is reserved like one of ``ask``'s, and its usage counted.
    A call the limits refuse ends the agent's run with a model error; ``refused`` keeps
    the limit, which ``run_agent`` raises once the run has stopped."""

    def __init__(self, model: Model, ctx: StrategyContext) -> None:
        super().__init__(model)
        self.ctx = ctx
        self.refused: BudgetExhausted | None = None
        self.usage = _NO_USAGE  # of the calls counted here

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        ctx = self.ctx
        try:
            ctx._reserve_call()
        except BudgetExhausted as exc:
            self.refused = exc
            yield StreamError(ProviderError(f"strategy limit reached: {exc.detail}"))
            return
        async for event in self.model.stream(request):
            if isinstance(event, ResponseDone | StreamError):
                ctx.usage = ctx.usage + event.usage
                self.usage = self.usage + event.usage
                if isinstance(event, StreamError) and event.error.retryable:
                    # the agent retries it as the same turn (Limits: retries are no turns)
                    ctx.calls -= 1
            yield event


def _beyond(total: Usage, counted: Usage) -> Usage:
    """What ``total`` holds beyond ``counted`` (never below zero)."""
    return Usage(
        max(0, total.input_tokens - counted.input_tokens),
        max(0, total.output_tokens - counted.output_tokens),
        max(0, total.cached_tokens - counted.cached_tokens),
        max(0, total.reasoning_tokens - counted.reasoning_tokens),
        max(0.0, total.cost - counted.cost),
    )


@dataclass(frozen=True, slots=True)
class Prepared:
    """A model request and the prompt fingerprints recorded on its events."""

    request: ModelRequest
    fingerprints: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Paused:
    """Returned as a strategy's data when the run pauses for a person: ``reason`` says
    why, ``state`` is what ``resume`` needs (JSON), ``data`` the record so far."""

    reason: str
    state: Mapping[str, JSONValue]
    data: Mapping[str, JSONValue]


Outcome = tuple[str, Mapping[str, JSONValue] | Paused]
"""What ``_solve`` returns: the answer and the strategy's record (or a pause)."""


class Strategy(ABC):
    """Base of every strategy: ``run`` / ``arun`` / ``stream`` around ``_solve``.

    A subclass sets ``name`` and implements ``async _solve(ctx, prompt) -> (answer, data)``;
    it keeps ``ctx.best`` current so a limit-stopped run still has an answer.
    """

    name = "strategy"

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or _DEFAULT_LIMITS

    @abstractmethod
    async def _solve(self, ctx: StrategyContext, prompt: str) -> Outcome:
        """The strategy itself: the answer and its record (or a :class:`Paused`)."""

    def _context(self, on_event: EventSink | None, session_id: str | None) -> StrategyContext:
        return StrategyContext(self.name, self.limits, on_event, session_id or new_session_id())

    async def arun(
        self, prompt: str, *, on_event: EventSink | None = None, session_id: str | None = None
    ) -> StrategyResult:
        """Run to the end; ``on_event`` receives every event of the run."""
        ctx = self._context(on_event, session_id)
        ctx.emit(RunStarted(ctx.session_id, Message.user(prompt)))
        return await self._finish(ctx, self._solve(ctx, prompt))

    async def _finish(self, ctx: StrategyContext, work: Awaitable[Outcome]) -> StrategyResult:
        """Await ``work`` (the strategy's coroutine) under the wall-clock limit and turn
        its outcome -- or the limit that ended it -- into a :class:`StrategyResult`."""
        stop, detail = RunStop.FINAL_ANSWER, ""
        data: Mapping[str, JSONValue] = {}
        state: Mapping[str, JSONValue] | None = None
        try:
            # agents called as tools by the strategy's steps report to this run
            with running_as_parent(ctx):
                async with asyncio.timeout(self.limits.timeout):
                    answer, outcome = await work
            ctx.best = answer
            if isinstance(outcome, Paused):
                stop, detail = RunStop.AWAITING_CONFIRMATION, outcome.reason
                state, data = outcome.state, outcome.data
            else:
                data = outcome
        except BudgetExhausted as exc:
            stop, detail, data = exc.stop, exc.detail, ctx.recorded()
        except TimeoutError:
            stop, detail = RunStop.TIMEOUT, f"wall clock over {self.limits.timeout}s"
            data = ctx.recorded()
        except ModelFailed as exc:
            stop, detail, data = RunStop.MODEL_ERROR, str(exc.error), ctx.recorded()
        except OutputParseError as exc:
            # a reply that stayed unusable after every re-ask (a planner's plan): the run's
            # outcome, like an agent's output_type failure, not a traceback
            stop, detail, data = RunStop.OUTPUT_INVALID, str(exc), ctx.recorded()
        if stop not in _NOT_LIMITS:
            ctx.emit(LimitReached(ctx.calls, stop, detail))
        result = StrategyResult(
            ctx.best,
            stop,
            ctx.calls,
            ctx.usage,
            time.perf_counter() - ctx.started,
            ctx.session_id,
            detail,
            data,
            state,
        )
        ctx.emit(RunFinished(result.run_result()))
        return result

    def run(
        self, prompt: str, *, on_event: EventSink | None = None, session_id: str | None = None
    ) -> StrategyResult:
        """Synchronous :meth:`arun` (``asyncio.run``); inside async code use ``arun``."""
        return run_sync(
            lambda: self.arun(prompt, on_event=on_event, session_id=session_id),
            f"{type(self).__name__}.run()",
            "strategy.arun(...)",
        )

    async def stream(self, prompt: str) -> AsyncIterator[RunEvent]:
        """Every event of one run, ending with ``RunFinished``."""
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        task = asyncio.create_task(self.arun(prompt, on_event=queue.put_nowait))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            await task
        finally:
            task.cancel()
