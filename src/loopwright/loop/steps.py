"""The control loop: a short flat loop over phases that return the next step.

``OBSERVE -> THINK -> (ACT -> [OBSERVE ->] THINK ...) -> DONE | ERROR | PAUSED``

OBSERVE is entered at the start and whenever steering messages are queued (or a cancel
was requested); otherwise the next turn goes straight to THINK. REFLECT, the accounting
that closes a turn (errors, repetition, budgets), is a phase but not a state of its own:
it runs synchronously between two states and its outcome is the next state or the stop
(as a state, its ``StateChanged`` repeated what the events around it say).

Each phase (:meth:`RunEngine.observe`, :meth:`~RunEngine.think`, :meth:`~RunEngine.act`,
:meth:`~RunEngine.reflect`) returns the next step as a value carrying the data that step
needs (:class:`Act` holds the calls to run, :class:`Reflect` whether the turn failed,
:class:`Stop` why the run ends). The run's :class:`~loopwright.core.run.RunState` is
what the phases change; the engine keeps only what a run needs besides it (the request
builder, the repetition detector, the batch in flight for repair on interruption).

This module holds the flat loop, the phases and everything a run passes through on its
way from prompt to answer (``tests/loop/test_module_path.py`` pins how many modules that
path enters); what only some runs need lives beside it, in modules named for it: a failed
model call or an empty reply (``loop/model_failures.py``), the final answer of an
``output_type`` (``loop/final_answer.py``), a batch paused or cut off
(``loop/resumption.py``), and the texts the loop tells the model (``loop/notices.py``).

Every run takes the same path whether or not anyone observes it: events are built only
when someone listens, behind one ``emit is not None`` check at each site.

Performance contract (see ``benchmarks/loop.py``): a step never copies or rescans the
history. The loop appends to one list and hands that list to the model; usage totals
are incremental; repetition detection looks at a bounded tail.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

from loopwright.core.errors import MalformedResponse, ProviderError, ToolErrorKind
from loopwright.core.events import (
    LimitReached,
    MessageAppended,
    ModelCallFinished,
    ModelCallStarted,
    ModelStreamed,
    ResponseDone,
    RunEvent,
    RunFinished,
    RunStarted,
    StateChanged,
    StreamError,
    ToolCallFinished,
    ToolCallStarted,
)
from loopwright.core.messages import (
    Message,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from loopwright.core.protocols import ModelRequest
from loopwright.core.run import ErrorRecord, LoopState, RunResult, RunState, RunStop
from loopwright.core.values import slot_init
from loopwright.loop.config import AgentConfig
from loopwright.loop.final_answer import check_call, check_text
from loopwright.loop.model_failures import empty_reply, model_failed
from loopwright.loop.output import FINAL_RESULT, final_answer_text
from loopwright.loop.resumption import Resume, in_call_order, repair, resumed_calls
from loopwright.loop.turn import (
    AgentView,
    ContextFailure,
    RepetitionDetector,
    Requests,
    as_reply,
    describe,
    unique_call_ids,
)
from loopwright.tools import Confirmation, Dispatcher, DispatchOutcome
from loopwright.tools.taint import describe as describe_taint

_AWAITING = ToolErrorKind.AWAITING_CONFIRMATION.value
_SKIPPED = ToolErrorKind.SKIPPED.value
_CUT_OFF = (StopReason.MAX_TOKENS, StopReason.REFUSAL)
_LIMIT_STOPS = frozenset(
    {
        RunStop.MAX_TURNS,
        RunStop.TOKEN_BUDGET,
        RunStop.COST_BUDGET,
        RunStop.TOO_MANY_ERRORS,
        RunStop.LOOP_DETECTED,
        RunStop.TIMEOUT,
    }
)
_TERMINAL = {RunStop.FINAL_ANSWER: LoopState.DONE, RunStop.AWAITING_CONFIRMATION: LoopState.PAUSED}

CURRENT_RUN: ContextVar[object] = ContextVar("loopwright_current_run", default=None)
"""The run whose tools are executing, set by :meth:`RunEngine.act` around each batch (the
tasks a batch starts inherit it), or a strategy (``loop.agent.running_as_parent``): what
``Agent.as_tool`` reports to. Per batch, not per run: a run waiting for its model holds
no context token (three objects less per in-flight run for the garbage collector)."""

Source = Literal["input", "model", "tools", "steering", "follow_up", "observation"]
Emit = Callable[[RunEvent], None]


@dataclass(frozen=True, slots=True)
class Stop:
    """The run ends: ``reason`` becomes ``RunResult.stop``, ``detail`` its ``detail``."""

    reason: RunStop
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Observe:
    """Take queued steering messages into the history."""


@dataclass(frozen=True, slots=True)
class Think:
    """Call the model."""


@slot_init
@dataclass(frozen=True, slots=True)
class Act:
    """Run ``calls`` (the model's tool calls, or a paused state's pending ones with the
    ``decisions`` given on resume)."""

    calls: tuple[ToolCallPart, ...]
    decisions: Mapping[str, Confirmation] | None = None


@dataclass(frozen=True, slots=True)
class Reflect:
    """Account a turn that ran no tools: ``failed`` when the reply was empty. A turn
    that ran tools is accounted by :meth:`RunEngine.act` itself (it passes its calls
    and results to :meth:`RunEngine.reflect`)."""

    failed: bool = False


Step = Observe | Think | Act | Reflect | Stop
_OBSERVE, _THINK, _REFLECT, _FAILED = Observe(), Think(), Reflect(), Reflect(failed=True)
_FINAL_ANSWER = Stop(RunStop.FINAL_ANSWER)
_STATE_OF: dict[type, LoopState] = {
    Observe: LoopState.OBSERVE,
    Think: LoopState.THINK,
    Act: LoopState.ACT,
}


class _Batch:
    """The tool batch in flight: what ``resumption.repair`` needs if the run is cut
    off (which calls started; the results once the batch ended)."""

    __slots__ = ("calls", "results", "started")

    def __init__(self, calls: tuple[ToolCallPart, ...]) -> None:
        self.calls = calls
        self.started: set[str] = set()
        self.results: list[ToolResultPart] | None = None


class RunEngine:
    """Drives one run over one :class:`RunState`. Not reusable; not thread-safe.

    ``emit`` is ``None`` when nobody listens (no event is built then). ``view`` is
    the agent's :class:`~loopwright.loop.turn.AgentView`, shared by its runs."""

    # slots: a thousand concurrent runs mean a thousand engines (no per-engine __dict__)
    __slots__ = (
        "__weakref__",
        "base_cost",
        "base_tokens",
        "batch",
        "cancel_requested",
        "closer",
        "config",
        "detector",
        "dispatcher",
        "emit",
        "output",
        "requests",
        "resume",
        "running",
        "state",
        "turns",
    )

    def __init__(
        self,
        config: AgentConfig,
        state: RunState,
        dispatcher: Dispatcher,
        emit: Emit | None,
        resume: Resume | None = None,
        view: AgentView | None = None,
    ) -> None:
        self.config = config
        self.state = state
        self.dispatcher = dispatcher
        self.emit = emit
        self.resume = resume
        self.cancel_requested = False
        self.running = False
        self.closer: Callable[[BaseException | None], None] | None = None
        """Called once when ``drive`` ends (with the exception if it raises)."""
        limits = config.limits
        self.detector: RepetitionDetector | None = None
        if limits.repeat_limit is not None:
            self.detector = RepetitionDetector(
                limits.repeat_limit,
                cycles=limits.cycle_detection,
                max_period=limits.max_cycle_period,
            )
            if state.messages:
                self.detector.prime(state.messages)
        # ``view``: shared by the agent's runs (a view of its own otherwise)
        self.requests = Requests(config, state, AgentView(config) if view is None else view)
        self.turns = 0  # turns in this start()/resume; limits count these
        self.base_tokens = state.usage.total_tokens
        self.base_cost = state.usage.cost
        self.batch: _Batch | None = None
        self.output: object = None  # the validated structured answer (docs/loop.md)

    # ------------------------------------------------------------------ driving
    async def drive(self, input_message: Message | None) -> RunResult:
        """Run to a stop and return the result. Never raises for limits, model errors,
        timeouts or a cancel requested through :meth:`Run.cancel`; re-raises a foreign
        cancellation (after making the history well-formed) and subscriber exceptions.

        The flat loop is written here, not in a coroutine of its own: every waiting run
        holds its chain of coroutines (a thousand runs, a thousand of each for the GC)."""
        self.running = True
        timeout = self.config.limits.timeout
        # no ``async with``: it holds a bound ``__aexit__`` (a no-op one too) all run long
        deadline = None if timeout is None else asyncio.timeout(timeout)
        try:
            try:
                if self.cancel_requested:
                    stop = Stop(RunStop.CANCELLED, "cancelled before the run started")
                else:
                    if deadline is not None:
                        await deadline.__aenter__()
                    try:
                        # enter the step's state, run its phase, take the next step
                        step = self.begin(input_message)
                        state = self.state
                        while type(step) is not Stop:
                            if type(step) is Reflect:  # closes the turn, in its state
                                step = self.reflect(step.failed)  # type: ignore[union-attr]
                                continue
                            # entered here, not in a method: two calls less per step
                            # (benchmarks/notes/loop.md, round 9)
                            previous, state.status = state.status, _STATE_OF[type(step)]
                            if self.emit is not None and previous is not state.status:
                                self.emit(StateChanged(previous, state.status, state.turn))
                            if type(step) is Think:
                                step = await self.think()
                            elif type(step) is Act:
                                step = await self.act(step)  # type: ignore[arg-type]
                            else:
                                step = self.observe()
                    except BaseException as exc:  # the deadline's cancel -> TimeoutError
                        if deadline is not None:
                            await deadline.__aexit__(type(exc), exc, exc.__traceback__)
                        raise
                    if deadline is not None:
                        await deadline.__aexit__(None, None, None)
                    stop = step  # type: ignore[assignment]
            except TimeoutError:
                if deadline is None or not deadline.expired():
                    raise
                repair(self, "timeout")
                stop = Stop(RunStop.TIMEOUT, f"the run exceeded its {timeout}s timeout")
            except asyncio.CancelledError:
                if not self.cancel_requested:
                    raise
                repair(self, "cancelled")
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                stop = Stop(RunStop.CANCELLED, "cancelled by the caller")
            result = self.finish(stop)
        except BaseException as exc:
            self.emit = None  # a failing subscriber must not mask the original error
            repair(self, "cancelled" if isinstance(exc, asyncio.CancelledError) else "an error")
            if self.closer is not None:
                self.closer(exc)
            raise
        if self.closer is not None:
            self.closer(None)
        return result

    def begin(self, input_message: Message | None) -> Step:
        state = self.state
        if state.stop is not None:  # the state runs again: its last stop no longer holds
            state.stop, state.detail = None, ""
        if self.emit is not None:
            self.emit(RunStarted(state.session_id, input_message))
        if self.resume is not None:
            if input_message is not None:  # results first: a call must meet its result
                state.queue_steering(input_message)
            return Act(resumed_calls(state, self.resume), self.resume.decisions)
        if input_message is not None:
            self.append(input_message, "input")
        return _OBSERVE

    def append(self, message: Message, source: Source) -> None:
        self.state.messages.append(message)
        if self.emit is not None:
            self.emit(MessageAppended(self.state.turn, message, source))

    # ------------------------------------------------------------------ phases
    def observe(self) -> Step:
        """Take queued steering messages into the history, then think."""
        state = self.state
        if state.steering:
            queued, state.steering = state.steering, ()
            for message in queued:
                self.append(message, "steering")
        if self.cancel_requested:
            return Stop(RunStop.CANCELLED, "cancelled by the caller")
        return _THINK

    async def think(self) -> Step:
        """Count the turn, call the model (retrying transient errors) and decide what the
        reply means: tool calls to act on, an answer, or a stop. The model call runs in
        this coroutine, not one of its own (one coroutine less held while the run waits
        for the model; see :meth:`drive`)."""
        state = self.state
        state.turn += 1
        self.turns += 1
        request = self.requests.reuse()
        if request is None:
            try:
                request = await self.requests.build()
            except ContextFailure as failure:
                return Stop(RunStop.CONTEXT_ERROR, str(failure))
        model = self.config.model
        attempt = 0
        while True:
            attempt += 1
            # ``self.emit`` is read at each emission, never kept across an await: a
            # streamed run's feed switches it while its consumer waits (loop.agent)
            started = 0.0 if self.emit is None else self.call_started(request, attempt)
            final: ResponseDone | StreamError | None = None
            events = model.stream(request).__aiter__()
            while True:
                # the Model contract says a stream never raises; a custom model that does
                # gets a non-retryable model error (a subscriber's exception, raised by
                # emit() below, is not the model's and still propagates)
                try:
                    event = await events.__anext__()
                except StopAsyncIteration:
                    break
                except (Exception, GeneratorExit) as exc:
                    final = StreamError(ProviderError(f"the model's stream raised {describe(exc)}"))
                    break
                kind = type(event)
                if kind is ResponseDone or kind is StreamError:
                    final = event  # type: ignore[assignment]
                elif self.emit is not None:
                    self.emit(ModelStreamed(state.turn, event))  # type: ignore[arg-type]
            if type(final) is ResponseDone:
                self.call_finished(final, started)  # type: ignore[arg-type]
                return self.take_reply(final)  # type: ignore[arg-type]
            if final is None:
                final = StreamError(MalformedResponse("model stream ended without a final event"))
            why = await model_failed(self, final, attempt)  # type: ignore[arg-type]
            if why is not None:
                return Stop(RunStop.MODEL_ERROR, why)

    def take_reply(self, done: ResponseDone) -> Step:
        message = done.message
        parts = message.parts
        if message.role != "assistant" or ToolResultPart in map(type, parts):
            message = as_reply(message)
            parts = message.parts
        calls = message.tool_calls
        if calls:
            message, calls = unique_call_ids(message, calls)
            self.append(message, "model")
            if self.config.output is not None:
                for call in calls:
                    if call.name == FINAL_RESULT:
                        return self.output_checked(check_call(self, call, calls), False)
            return Act(calls)
        if not message.text and done.stop_reason not in (StopReason.MAX_TOKENS, StopReason.REFUSAL):
            empty_reply(self)
            return _FAILED
        self.append(message, "model")
        if self.config.output is not None and done.stop_reason not in _CUT_OFF:
            return self.output_checked(check_text(self, message.text), True)
        return self.answered(done.stop_reason)

    # ------------------------------------------------------------------ structured output
    def output_checked(self, invalid: str | None, tell: bool) -> Step:
        """The final answer was checked (``loop/final_answer.py``): a valid one ends the
        turn like any answer; an invalid one is re-asked (``tell``: in a user message,
        when no tool result says why already) or, the retries spent, stops the run."""
        state = self.state
        if invalid is None:
            state.output_retries_used = 0  # the next answer gets the full allowance
            return self.queued_or_final()
        state.log_error(ErrorRecord(state.turn, "reply", "output_invalid", invalid[:300]))
        output = self.config.output
        assert output is not None
        # counted in the state, not the engine: a run resumed from a checkpoint keeps
        # the re-asks it already used
        if state.output_retries_used >= output.retries:
            return Stop(RunStop.OUTPUT_INVALID, invalid)
        state.output_retries_used += 1
        if tell:
            self.append(Message("user", (TextPart(invalid),)), "observation")
        return _REFLECT

    async def act(self, step: Act) -> Step:
        """Run the batch; pause on deferred confirmations; append results in call order."""
        state = self.state
        calls = step.calls
        batch = self.batch = _Batch(calls)
        token = CURRENT_RUN.set(self)
        try:
            outcomes = await self.dispatcher.run_batch(
                calls,
                interrupted=self.steered,
                on_start=self.on_start,
                decisions=step.decisions,
                max_calls=self.config.limits.max_tool_calls_per_turn,
                taint=state.taint,
            )
        finally:
            CURRENT_RUN.reset(token)
        # kept before any event is emitted: a subscriber that raises cannot lose them
        results, failed, awaiting = self.account(calls, outcomes)
        batch.results = results
        if self.emit is not None:
            turn = state.turn
            for o in outcomes:
                f = ToolCallFinished(turn, o.call, o.result, o.duration_s, o.attempts, o.repairs)
                self.emit(f)
        self.batch = None
        if state.held_results:
            results = in_call_order(state.messages[-1].tool_calls, state.held_results, results)
        if awaiting:
            state.pending_calls = tuple(awaiting)
            state.held_results = tuple(r for r in results if r.error_kind != _AWAITING)
            detail = f"{len(awaiting)} tool call(s) await confirmation"
            if state.taint:
                detail += f"; {describe_taint(state.taint)}"
            return Stop(RunStop.AWAITING_CONFIRMATION, detail)
        if state.held_results:
            state.held_results = ()
        if state.pending_calls:
            state.pending_calls = ()
        parts = tuple(results)
        self.append(Message("tool", parts), "tools")
        # the turn closes right here, in ACT: a ``Reflect`` value per step would only
        # carry these three to the loop and back
        return self.reflect(failed, calls, parts)

    def reflect(
        self,
        failed: bool,
        calls: tuple[ToolCallPart, ...] = (),
        results: tuple[ToolResultPart, ...] = (),
    ) -> Step:
        """Account the turn and check every limit; continue or stop. ``failed``: every
        tool result was an error, or the reply was empty; ``calls`` ran with ``results``
        (in call order: repetition detection compares both)."""
        state = self.state
        limits = self.config.limits
        state.updated_at = time.time()
        if failed:
            state.consecutive_errors += 1
            cap = limits.max_consecutive_errors
            if cap is not None and state.consecutive_errors >= cap:
                return Stop(RunStop.TOO_MANY_ERRORS, f"{cap} turns in a row failed")
        else:
            state.consecutive_errors = 0
        if calls and self.detector is not None:
            found = self.detector.observe(calls, results)
            if found is not None:
                return Stop(RunStop.LOOP_DETECTED, found)
        usage = state.usage
        if limits.token_budget is not None:
            used = usage.input_tokens + usage.output_tokens - self.base_tokens
            if used >= limits.token_budget:
                return Stop(RunStop.TOKEN_BUDGET, f"used {used} of {limits.token_budget} tokens")
        if limits.cost_budget is not None and usage.cost - self.base_cost >= limits.cost_budget:
            return Stop(
                RunStop.COST_BUDGET,
                f"cost {usage.cost - self.base_cost:.6g} reached {limits.cost_budget}",
            )
        if limits.max_turns is not None and self.turns >= limits.max_turns:
            return Stop(RunStop.MAX_TURNS, f"reached max_turns={limits.max_turns}")
        # OBSERVE only when there is something to take in: an empty one was a state
        # change (an event for every subscriber) per step for nothing
        if state.steering or self.cancel_requested:
            return _OBSERVE
        return _THINK

    # ------------------------------------------------------------------ think helpers
    def call_started(self, request: ModelRequest, attempt: int) -> float:
        """Emit ``ModelCallStarted`` (someone listens); the call's start time."""
        assert self.emit is not None
        self.emit(
            ModelCallStarted(
                self.state.turn,
                self.config.model.name,
                len(request.messages),
                prompt_fingerprints=self.requests.fingerprints(),
                attempt=attempt,
            )
        )
        return time.perf_counter()

    def call_finished(self, final: ResponseDone, started: float) -> None:
        """Count the call's usage; emit ``ModelCallFinished`` when someone listens (the
        fingerprints are those of the start: nothing joined the history in between)."""
        state = self.state
        usage = final.usage
        if usage.input_tokens or usage.output_tokens or usage.cost or usage.cached_tokens:
            state.usage = state.usage + usage
        if self.emit is not None:
            self.emit(
                ModelCallFinished(
                    state.turn,
                    final.message,
                    final.stop_reason,
                    usage,
                    time.perf_counter() - started,
                    prompt_fingerprints=self.requests.fingerprints(),
                    response_model=final.model,
                )
            )

    def answered(self, stop_reason: StopReason) -> Step:
        """A reply without tool calls: stop, unless queued messages continue the run (a
        refused or cut reply too: a steer or follow-up sent meanwhile answers it, and
        was left stranded in the state when the run stopped)."""
        state = self.state
        if not (state.steering or state.follow_ups):
            if stop_reason is StopReason.REFUSAL:
                return Stop(RunStop.REFUSAL, "the model refused")
            if stop_reason is StopReason.MAX_TOKENS:
                return Stop(RunStop.MAX_TOKENS, "the reply was cut at settings.max_tokens")
        return self.queued_or_final()

    def queued_or_final(self) -> Step:
        """The model answered: queued messages continue the run, else it is done."""
        state = self.state
        if state.steering:
            return _REFLECT  # OBSERVE takes them in
        if state.follow_ups:
            self.append(state.next_follow_up(), "follow_up")
            return _REFLECT
        return _FINAL_ANSWER

    # ------------------------------------------------------------------ act helpers
    def steered(self) -> bool:
        return bool(self.state.steering) or self.cancel_requested

    def on_start(self, call: ToolCallPart) -> None:
        if self.batch is not None:
            self.batch.started.add(call.id)
        if self.emit is not None:
            self.emit(ToolCallStarted(self.state.turn, call))

    def account(
        self, calls: Sequence[ToolCallPart], outcomes: Sequence[DispatchOutcome]
    ) -> tuple[list[ToolResultPart], bool, list[ToolCallPart]]:
        """The batch's results in call order, whether the turn failed (errors and no
        success) and the calls deferred for confirmation, in one pass over the outcomes:
        tool errors go to the error log, untrusted content read to the run's taint
        (later side effects need a person). One loop, not a list comprehension (a
        function call of its own in 3.11) followed by two loops: part of 1,266 M ->
        1,253 M instructions for 1,000 runs x 6 calls (``benchmarks/notes/loop.md``,
        round 9; ``tests/loop/test_loop_step_budget.py``)."""
        state = self.state
        results: list[ToolResultPart] = []
        awaiting: list[ToolCallPart] = []
        ok = errors = 0
        for call, outcome in zip(calls, outcomes, strict=True):
            result = outcome.result
            results.append(result)
            if outcome.taint is not None:
                state.mark_tainted(outcome.taint)
            if not result.is_error:
                ok += 1
                continue
            kind = result.error_kind or ToolErrorKind.PERMANENT.value
            if kind == _AWAITING:
                awaiting.append(call)
            elif kind != _SKIPPED:
                errors += 1
                state.log_error(ErrorRecord(state.turn, "tool", kind, result.content[:300]))
        return results, errors > 0 and ok == 0, awaiting

    # ------------------------------------------------------------------ ending
    def final_result(self) -> RunResult:
        """The result of a final answer, with its ``output``: the validated value (and,
        when the answer came as a ``final_result`` call, that call's arguments as
        ``answer``), or the text. Built once (it copies the history)."""
        state = self.state
        if self.config.output is None:
            text = state.best_answer()
            return state.result(answer=text, output=text)
        messages = state.messages
        answer: str | None = None
        if len(messages) >= 2 and messages[-1].role == "tool" and messages[-2].role == "assistant":
            answer = final_answer_text(messages[-2])
        return state.result(answer=answer, output=self.output)

    def finish(self, stop: Stop) -> RunResult:
        state = self.state
        previous = state.status
        state.status = _TERMINAL.get(stop.reason, LoopState.ERROR)
        state.updated_at = time.time()
        emit = self.emit
        if emit is not None and stop.reason in _LIMIT_STOPS:
            emit(LimitReached(state.turn, stop.reason, stop.detail))
        state.stop = stop.reason
        state.detail = stop.detail
        result = state.result() if stop.reason is not RunStop.FINAL_ANSWER else self.final_result()
        if emit is not None:
            emit(StateChanged(previous, state.status, state.turn))
            emit(RunFinished(result))
        return result
