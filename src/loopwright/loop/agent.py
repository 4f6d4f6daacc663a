"""The :class:`Agent` facade and the :class:`Run` handle.

An agent is configuration (model, tools, limits, hooks); a run is one execution of it
over one :class:`~loopwright.core.run.RunState`. Runs of the same agent are
independent and may run concurrently in one event loop.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, TypeAlias

from loopwright.core.errors import ToolError, ToolErrorKind, UserError
from loopwright.core.events import RunEvent, RunFinished, RunStarted
from loopwright.core.messages import Message
from loopwright.core.protocols import ContextPolicy, Model, ModelSettings
from loopwright.core.run import RunResult, RunState, new_session_id
from loopwright.loop.config import AgentConfig, Sleep
from loopwright.loop.hooks import Hooks
from loopwright.loop.limits import Limits
from loopwright.loop.steps import Resume, RunEngine
from loopwright.tools import (
    Confirmation,
    DispatchConfig,
    Dispatcher,
    IdempotencyLedger,
    Tool,
    ToolRegistry,
    tool,
)
from loopwright.tools.selection import ToolSelection

ToolLike: TypeAlias = Tool | Callable[..., Any]
# shared defaults (frozen, no mutable containers inside): an agent built without them
# allocates none of its own
_NO_HOOKS = Hooks()
_DEFAULT_LIMITS = Limits()
Prompt: TypeAlias = str | Message
# The run a tool is executing in (set around each run's engine; the tasks a run creates
# inherit it): what an agent called as a tool (Agent.as_tool) rolls its usage up into.
_CURRENT_RUN: ContextVar[RunEngine | None] = ContextVar("loopwright_current_run", default=None)


def _as_message(value: Prompt, what: str) -> Message:
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return Message.user(value)
    raise UserError(f"{what} must be a str or a Message, got {type(value).__name__}")


def _registry(tools: ToolRegistry | Iterable[ToolLike]) -> ToolRegistry:
    if isinstance(tools, ToolRegistry):
        return tools
    registry = ToolRegistry()
    for item in tools:
        registry.register(item)
    return registry


class _EventFeed:
    """Single-consumer buffer of run events: ``put`` never blocks the loop."""

    __slots__ = ("_closed", "_error", "_waiter", "items")

    def __init__(self) -> None:
        self.items: deque[RunEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._error: BaseException | None = None

    def put(self, event: RunEvent) -> None:
        self.items.append(event)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self, error: BaseException | None = None) -> None:
        self._closed = True
        self._error = error
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def refill(self) -> bool:
        """Wait until there are events (``True``) or the run ended without more
        (``False``; re-raises the run's exception if it failed)."""
        while not self.items:
            if self._closed:
                if self._error is not None:
                    raise self._error
                return False
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
            self._waiter = None
        return True


async def _drain(feed: _EventFeed) -> AsyncIterator[RunEvent]:
    """Every event of ``feed`` up to ``RunFinished``. Events already buffered are yielded
    without awaiting anything (one generator step per event)."""
    items = feed.items
    while await feed.refill():
        while items:
            event = items.popleft()
            yield event
            if type(event) is RunFinished:
                return


class Run:
    """Handle of one running (or finished) run.

    * ``async for event in run`` -- every run event in order, ending with
      :class:`~loopwright.core.events.RunFinished` (only when started with
      ``events=True``, the default of :meth:`Agent.start`). One consumer only.
    * ``await run.result()`` -- the :class:`~loopwright.core.run.RunResult`.
    * ``run.steer(text)`` -- a user message for the next turn; calls of the current tool
      batch that have not started yet are skipped (their result says so).
    * ``run.follow_up(text)`` -- a user message delivered after the model's next final
      answer; the run continues instead of stopping.
    * ``run.cancel()`` -- stop as soon as possible; the result's stop is ``cancelled``.
    * ``run.state`` -- the live :class:`RunState` (checkpoint it from an event callback).
    """

    def __init__(self, engine: RunEngine, feed: _EventFeed | None, task: asyncio.Task[RunResult]):
        self._engine = engine
        self._feed = feed
        self._task = task

    @property
    def state(self) -> RunState:
        return self._engine.state

    @property
    def session_id(self) -> str:
        return self._engine.state.session_id

    def done(self) -> bool:
        return self._task.done()

    def steer(self, message: Prompt) -> None:
        """Queue a user message seen at the next turn; skip the rest of the running batch."""
        self._check_open("steer")
        self._engine.state.steering.append(_as_message(message, "steer(message)"))

    def follow_up(self, message: Prompt) -> None:
        """Queue a user message delivered after the next final answer (one per answer)."""
        self._check_open("follow_up")
        self._engine.state.follow_ups.append(_as_message(message, "follow_up(message)"))

    def cancel(self) -> None:
        """Request a stop. The run ends with ``RunStop.CANCELLED`` and a well-formed history
        (a tool batch cut off gets results saying so). Idempotent; no effect once done.
        Call it from the event loop's thread (from another thread use
        ``loop.call_soon_threadsafe(run.cancel)``)."""
        if self._task.done():
            return
        engine = self._engine
        engine.cancel_requested = True
        # From inside the run's own task (a hook, an inline tool) cancelling the task would
        # end it CANCELLED without a result; the flag alone stops it at the next boundary.
        if engine.running and asyncio.current_task() is not self._task:
            self._task.cancel()

    async def result(self) -> RunResult:
        """Wait for the run to finish. Cancelling the waiter cancels the run too."""
        return await self._task

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        if self._feed is None:
            raise UserError(
                "this run was started with events=False; use agent.start(..., events=True) "
                "or agent.stream(...) to iterate its events"
            )
        return _drain(self._feed)

    def _check_open(self, what: str) -> None:
        if self._task.done():
            raise UserError(
                f"Run.{what}: the run has finished; start a new run with "
                "history=result.messages to continue the conversation"
            )


class Agent:
    """A model, its tools, and the rules of the loop that drives them.

    ``tools`` may be a :class:`~loopwright.tools.ToolRegistry`, or an iterable of
    :class:`~loopwright.tools.Tool` objects and plain functions (wrapped with ``@tool``).
    ``system`` is sent as the request's system prompt (it is not stored in the history).
    ``dispatch`` configures the tool dispatcher (permission level, confirmation handler,
    concurrency, tool retries); tool hooks may be set there or in ``hooks``, not both.
    ``context_policy(messages, budget)`` shapes what is sent before each model call (see
    :attr:`Limits.context_budget`). ``sleep`` is the backoff sleep (tests inject a fake).
    ``tool_selection(messages, specs, model)`` narrows the tools shown each turn
    (:mod:`loopwright.tools.selection`); the registry may also change between turns (an
    MCP server's ``list_changed``): the next request shows the current tools.
    """

    def __init__(
        self,
        model: Model,
        tools: ToolRegistry | Iterable[ToolLike] = (),
        *,
        system: str | None = None,
        limits: Limits | None = None,
        settings: ModelSettings | None = None,
        dispatch: DispatchConfig | None = None,
        hooks: Hooks | None = None,
        context_policy: ContextPolicy | None = None,
        ledger: IdempotencyLedger | None = None,
        sleep: Sleep | None = None,
        tool_selection: ToolSelection | None = None,
    ) -> None:
        if not hasattr(model, "stream"):
            raise UserError(
                f"Agent(model=...) needs a Model (an object with .stream(request)), got "
                f"{type(model).__name__}; build one from loopwright.providers"
            )
        hooks = hooks or _NO_HOOKS
        if hooks.on_event is not None and inspect.iscoroutinefunction(hooks.on_event):
            raise UserError(
                "Hooks.on_event must be a plain (synchronous) function; for async handling "
                "iterate the run instead: `async for event in agent.start(...)`"
            )
        dispatch = _merge_tool_hooks(dispatch or DispatchConfig(), hooks)
        self.config = AgentConfig(
            model=model,
            registry=_registry(tools),
            system=system,
            limits=limits or _DEFAULT_LIMITS,
            settings=settings or ModelSettings(),
            dispatch=dispatch,
            hooks=hooks,
            context_policy=context_policy,
            ledger=ledger,
            sleep=sleep or asyncio.sleep,
            tool_selection=tool_selection,
        )
        self._dispatcher = Dispatcher(self.config.registry, dispatch, ledger)

    @classmethod
    def from_config(cls, config: AgentConfig) -> Agent:
        agent = cls.__new__(cls)
        agent.config = config
        agent._dispatcher = Dispatcher(config.registry, config.dispatch, config.ledger)
        return agent

    @property
    def model(self) -> Model:
        return self.config.model

    @property
    def tools(self) -> ToolRegistry:
        return self.config.registry

    # ------------------------------------------------------------------ entry points
    def start(
        self,
        prompt: Prompt | None = None,
        *,
        history: Sequence[Message] | None = None,
        session_id: str | None = None,
        state: RunState | None = None,
        decisions: Mapping[str, Confirmation] | None = None,
        events: bool = True,
    ) -> Run:
        """Start a run in the running event loop and return its handle.

        Give a ``prompt`` (with an optional prior ``history``), or a ``state`` to continue
        (e.g. from a checkpoint); a paused state needs ``decisions`` for its pending calls
        (see :meth:`resume`). ``events=False`` skips building events unless
        ``hooks.on_event`` is set (what :meth:`arun` does).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise UserError(
                "Agent.start() needs a running event loop; call it from async code, or use "
                "agent.run(...) from synchronous code"
            ) from None
        feed = _EventFeed() if events else None
        engine, message = self._prepare(prompt, history, session_id, state, decisions, feed)
        if feed is not None:
            engine.closer = feed.close
        token = _CURRENT_RUN.set(engine)  # copied into the run's task, then restored here
        try:
            return Run(engine, feed, asyncio.create_task(engine.drive(message)))
        finally:
            _CURRENT_RUN.reset(token)

    def resume(
        self,
        state: RunState,
        decisions: Mapping[str, Confirmation],
        *,
        prompt: Prompt | None = None,
        events: bool = True,
    ) -> Run:
        """Continue a run paused with ``awaiting_confirmation``: each pending call is
        executed (``Confirmation.approve()``), refused with the reason the model sees
        (``.deny(reason)``), or left pending (``.later()`` / no decision: the run pauses
        again). A ``prompt`` is queued as steering, seen after the results."""
        return self.start(prompt, state=state, decisions=decisions, events=events)

    async def arun(
        self,
        prompt: Prompt | None = None,
        *,
        history: Sequence[Message] | None = None,
        session_id: str | None = None,
        state: RunState | None = None,
        decisions: Mapping[str, Confirmation] | None = None,
    ) -> RunResult:
        """Run to the end and return the result (no events unless ``hooks.on_event``).

        The run executes in the caller's task (no extra task): cancelling the caller
        cancels the run, and the cancellation propagates after the history was made
        well-formed."""
        engine, message = self._prepare(prompt, history, session_id, state, decisions, None)
        token = _CURRENT_RUN.set(engine)
        try:
            return await engine.drive(message)
        finally:
            _CURRENT_RUN.reset(token)

    def run(
        self,
        prompt: Prompt | None = None,
        *,
        history: Sequence[Message] | None = None,
        session_id: str | None = None,
        state: RunState | None = None,
        decisions: Mapping[str, Confirmation] | None = None,
    ) -> RunResult:
        """Synchronous :meth:`arun` (uses ``asyncio.run``). Inside async code use ``arun``."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                self.arun(
                    prompt,
                    history=history,
                    session_id=session_id,
                    state=state,
                    decisions=decisions,
                )
            )
        raise UserError(
            "Agent.run() was called inside a running event loop; use `await agent.arun(...)` "
            "(or agent.start(...) / agent.stream(...)) there"
        )

    async def stream(
        self,
        prompt: Prompt | None = None,
        *,
        history: Sequence[Message] | None = None,
        session_id: str | None = None,
        state: RunState | None = None,
        decisions: Mapping[str, Confirmation] | None = None,
    ) -> AsyncIterator[RunEvent]:
        """Yield every run event, ending with ``RunFinished``. Closing the iterator early
        cancels the run."""
        run = self.start(
            prompt, history=history, session_id=session_id, state=state, decisions=decisions
        )
        try:
            async for event in run:
                yield event
        finally:
            run.cancel()

    def as_tool(self, name: str, description: str) -> Tool:
        """This agent as a tool taking ``task: str``, for an orchestrator agent to call.

        Called from inside another agent's run, the child run's events (except its own
        ``RunStarted`` / ``RunFinished``) appear in the parent's stream, its usage is added
        to the parent's, and its token and cost budgets are capped by what the parent has
        left. A child run that does not end with a final answer is an error result.
        """

        async def run_agent(task: str) -> str:
            parent = _CURRENT_RUN.get()
            child = self if parent is None else self._under(parent)
            result = await child.arun(task)
            if parent is not None:
                parent.state.usage = parent.state.usage + result.usage
            if not result.ok:
                raise ToolError(
                    f"the {name} agent stopped with {result.stop.value}: {result.detail} "
                    f"(its best answer: {result.answer!r})",
                    kind=ToolErrorKind.PERMANENT,
                )
            return result.answer

        return tool(name=name, description=description, timeout=None)(run_agent)

    def _under(self, parent: RunEngine) -> Agent:
        """This agent configured to run inside ``parent`` (see :meth:`as_tool`)."""
        config = self.config
        forward = parent.emit
        on_event = config.hooks.on_event

        def both(event: RunEvent) -> None:
            if on_event is not None:
                on_event(event)
            if forward is not None and not isinstance(event, (RunStarted, RunFinished)):
                forward(event)

        limits, caps = config.limits, parent.config.limits
        used = parent.state.usage
        if caps.token_budget is not None:
            left = max(1, caps.token_budget - (used.total_tokens - parent.base_tokens))
            limits = replace(limits, token_budget=min(left, limits.token_budget or left))
        if caps.cost_budget is not None:
            left_cost = max(1e-9, caps.cost_budget - (used.cost - parent.base_cost))
            limits = replace(limits, cost_budget=min(left_cost, limits.cost_budget or left_cost))
        hooks = replace(config.hooks, on_event=both)
        return Agent.from_config(replace(config, hooks=hooks, limits=limits))

    # ------------------------------------------------------------------ helpers
    def _prepare(
        self,
        prompt: Prompt | None,
        history: Sequence[Message] | None,
        session_id: str | None,
        state: RunState | None,
        decisions: Mapping[str, Confirmation] | None,
        feed: _EventFeed | None,
    ) -> tuple[RunEngine, Message | None]:
        message = None if prompt is None else _as_message(prompt, "prompt")
        state, resume, message = self._initial_state(message, history, session_id, state, decisions)
        emit = _emitter(feed, self.config.hooks.on_event)
        return RunEngine(self.config, state, self._run_dispatcher(state), emit, resume), message

    def _run_dispatcher(self, state: RunState) -> Dispatcher:
        """The agent's dispatcher, or a per-run one whose ``ToolContext.session_id`` is the
        run's (only when a tool takes a ``ToolContext`` and none was configured)."""
        shared = self._dispatcher
        config = self.config
        if config.dispatch.session_id is not None:
            return shared
        if not config.registry.takes_context:
            return shared
        dispatch = replace(config.dispatch, session_id=state.session_id)
        return Dispatcher(config.registry, dispatch, shared.ledger)

    def _initial_state(
        self,
        message: Message | None,
        history: Sequence[Message] | None,
        session_id: str | None,
        state: RunState | None,
        decisions: Mapping[str, Confirmation] | None,
    ) -> tuple[RunState, Resume | None, Message | None]:
        if state is None:
            if message is None:
                raise UserError("give the run a prompt (or a state to continue)")
            if decisions is not None:
                raise UserError("decisions= resumes a paused state; pass state= as well")
            state = RunState(
                session_id=session_id or new_session_id(),
                messages=list(history) if history else [],
            )
            return state, None, message
        if history is not None:
            raise UserError("pass either state= or history=, not both (the state has its history)")
        if session_id is not None and session_id != state.session_id:
            raise UserError(
                f"session_id={session_id!r} differs from the state's {state.session_id!r}; "
                "a state keeps its session id"
            )
        if state.paused or state.pending_calls:
            return state, Resume(dict(decisions or {})), message
        if decisions:
            raise UserError("decisions= given, but the state is not paused on pending calls")
        if message is None and not state.steering and not state.follow_ups:
            # a restored state whose history ends with a user message or tool results
            # owes a model turn: continue without a prompt (resuming after a crash, see
            # docs/durable.md)
            if state.messages and state.messages[-1].role in ("user", "tool"):
                return state, None, None
            raise UserError("give the continued run a prompt (the state has nothing queued)")
        if message is None and not state.steering:  # continue with the next follow-up
            message = state.follow_ups.pop(0)
        return state, None, message


def _emitter(
    feed: _EventFeed | None, on_event: Callable[[RunEvent], object] | None
) -> Callable[[RunEvent], None] | None:
    if feed is None and on_event is None:
        return None
    if on_event is None:
        assert feed is not None
        return feed.put
    if feed is None:
        return on_event  # type: ignore[return-value]
    put = feed.put

    def both(event: RunEvent) -> None:
        on_event(event)
        put(event)

    return both


def _merge_tool_hooks(dispatch: DispatchConfig, hooks: Hooks) -> DispatchConfig:
    changes: dict[str, object] = {}
    for name in ("before_tool_call", "after_tool_call"):
        hook = getattr(hooks, name)
        if hook is None:
            continue
        if getattr(dispatch, name) is not None:
            raise UserError(f"{name} is set in both Hooks and DispatchConfig; set it in one place")
        changes[name] = hook
    return replace(dispatch, **changes) if changes else dispatch  # type: ignore[arg-type]
