"""The :class:`Agent` facade (its :class:`Run` handle: :mod:`loopwright.loop.handle`).

An agent is configuration (model, tools, limits, hooks); a run is one execution of it
over one :class:`~loopwright.core.run.RunState`. Runs of the same agent are
independent and may run concurrently in one event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncIterator,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Generic, Protocol, Self, TypeAlias, cast, overload

from loopwright.core.errors import ConfigError, ToolError, ToolErrorKind, UserError
from loopwright.core.events import RunEvent, RunFinished, RunStarted
from loopwright.core.messages import Message, TextPart, Usage
from loopwright.core.protocols import ContextPolicy, Model, ModelSettings
from loopwright.core.run import (
    RunResult,
    RunState,
    as_message,
    check_session_id,
    in_running_loop,
    new_session_id,
    run_sync,
)
from loopwright.loop.config import DEFAULT_OUTPUT_RETRIES, AgentConfig, Sleep
from loopwright.loop.handle import EventFeed, OutputT, Prompt, Run
from loopwright.loop.hooks import Hooks
from loopwright.loop.limits import Limits
from loopwright.loop.output import OutputMode, OutputSchema, check_output_mode
from loopwright.loop.resumption import Resume
from loopwright.loop.steps import CURRENT_RUN, RunEngine
from loopwright.loop.turn import AgentView
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
from loopwright.tools.taint import UNTRUSTED_OPEN, mark_input, taint_in

ToolLike: TypeAlias = Tool | Callable[..., Any]
# shared defaults (frozen, no mutable containers inside): an agent built without them
# allocates none of its own
_NO_HOOKS = Hooks()
_DEFAULT_LIMITS = Limits()


class ParentRun(Protocol):
    """A run that agents called as tools (:meth:`Agent.as_tool`) report to: an agent's
    own run (adapted to this shape), or a strategy run (``loopwright.strategies``)."""

    def forward(self, event: RunEvent) -> None:
        """Show a child run's event in this run's stream."""
        ...

    def add_usage(self, usage: Usage) -> None:
        """Count a child run's usage as this run's."""
        ...

    def budget_left(self) -> tuple[int | None, float | None]:
        """Tokens and cost this run may still spend (``None``: unbounded)."""
        ...


class _EngineParent:
    """An agent's run as a :class:`ParentRun`."""

    __slots__ = ("engine",)

    def __init__(self, engine: RunEngine) -> None:
        self.engine = engine

    def forward(self, event: RunEvent) -> None:
        if self.engine.emit is not None:
            self.engine.emit(event)

    def add_usage(self, usage: Usage) -> None:
        state = self.engine.state
        state.usage = state.usage + usage

    def budget_left(self) -> tuple[int | None, float | None]:
        engine = self.engine
        caps, used = engine.config.limits, engine.state.usage
        tokens = (
            None
            if caps.token_budget is None
            else caps.token_budget - (used.total_tokens - engine.base_tokens)
        )
        cost = (
            None if caps.cost_budget is None else caps.cost_budget - (used.cost - engine.base_cost)
        )
        return tokens, cost


@contextmanager
def running_as_parent(parent: ParentRun) -> Iterator[None]:
    """Within this block (and the tasks started in it), agents called as tools report to
    ``parent``: what a strategy uses so the agents its steps call count against it."""
    token = CURRENT_RUN.set(parent)
    try:
        yield
    finally:
        CURRENT_RUN.reset(token)


def _registry(tools: ToolRegistry | Iterable[ToolLike]) -> ToolRegistry:
    if isinstance(tools, ToolRegistry):
        return tools
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise ConfigError(
            f"Agent(tools=...) got {type(tools).__name__}; give a list of functions or "
            "Tool objects (tools=[get_weather]) or a ToolRegistry"
        )
    registry = ToolRegistry()
    for index, item in enumerate(tools):
        if not callable(item):
            raise ConfigError(
                f"Agent(tools=[...]): item {index} is {type(item).__name__}, not a tool; give "
                "a function (wrapped with @tool) or a Tool object"
            )
        try:
            registry.register(item)
        except ValueError as exc:  # two tools of one name; a function @tool cannot wrap
            raise ConfigError(f"Agent(tools=[...]): item {index}: {exc}") from None
    return registry


class Agent(Generic[OutputT]):
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
    ``output_type`` (a pydantic model, dataclass, TypedDict or any type pydantic can
    validate) makes the final answer structured: ``result.output`` is the validated value,
    and an invalid answer is re-asked with its validation errors at most
    ``output_retries`` times. ``output_mode`` picks how the answer is asked for: the
    provider's native structured-output mode (``"native"``), the ``final_result`` tool
    (``"tool"``), or native where the model has it (``"auto"``; see ``docs/loop.md``,
    "Structured output").

    Every argument is checked when the agent is built (here and in :meth:`from_config`
    alike): a bad value raises :class:`~loopwright.core.errors.ConfigError` naming the
    field and the fix.
    """

    # Overloads: a checker infers the output type from ``output_type`` only, never from
    # the assignment target (``a: Agent[Foo] = Agent(model)`` is an error).
    @overload
    def __init__(
        self: Agent[str],
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
        output_type: None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        output_mode: OutputMode = "auto",
    ) -> None: ...

    @overload
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
        output_type: type[OutputT],
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        output_mode: OutputMode = "auto",
    ) -> None: ...

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
        output_type: type[OutputT] | None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        output_mode: OutputMode = "auto",
    ) -> None:
        config = AgentConfig(
            model=model,
            registry=_registry(tools),
            system=system,
            limits=_DEFAULT_LIMITS if limits is None else limits,
            settings=ModelSettings() if settings is None else settings,
            dispatch=DispatchConfig() if dispatch is None else dispatch,
            hooks=_NO_HOOKS if hooks is None else hooks,
            context_policy=context_policy,
            ledger=ledger,
            sleep=asyncio.sleep if sleep is None else sleep,
            tool_selection=tool_selection,
            output=_output(output_type, output_retries, output_mode),
        )
        self._setup(config)

    @classmethod
    def from_config(cls, config: AgentConfig) -> Self:
        """An agent running with ``config`` (checked like the constructor's arguments)."""
        if not isinstance(config, AgentConfig):
            raise ConfigError(
                f"Agent.from_config(config=...) needs an AgentConfig, got "
                f"{type(config).__name__}; build one with AgentConfig(model=..., registry=...)"
            )
        agent = cls.__new__(cls)
        agent._setup(config)
        return agent

    def _setup(self, config: AgentConfig) -> None:
        """The one place an agent takes its configuration (both constructors end here):
        tool hooks set in ``hooks`` move into the dispatcher's configuration, and the
        structured-output mode is decided for the model."""
        dispatch = _merge_tool_hooks(config.dispatch, config.hooks)
        if dispatch is not config.dispatch:
            config = replace(config, dispatch=dispatch)
        output = config.output
        if output is not None:
            has_tools = bool(config.registry.specs(max_permission=config.dispatch.permission))
            must_call = config.settings.tool_choice not in ("auto", "none")
            resolved = output.resolve(config.model, has_tools, must_call)
            if resolved is not output:
                config = replace(config, output=resolved)
        self.config = config
        self._dispatcher = Dispatcher(config.registry, config.dispatch, config.ledger)
        self._view = AgentView(config)

    @property
    def model(self) -> Model:
        return self.config.model

    @property
    def tools(self) -> ToolRegistry:
        return self.config.registry

    # ------------------------------------------------------------------ starting
    def start(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] | None = None,
        session_id: str | None = None,
        events: bool = True,
        deps: object = None,
    ) -> Run[OutputT]:
        """Start a new run in the running event loop and return its handle.

        ``history`` is the conversation so far (e.g. ``result.messages`` of an earlier
        run); ``session_id`` names the run (a fresh id by default). To continue a saved or
        paused :class:`RunState`, use :meth:`resume`. ``events=False`` skips building
        events unless ``hooks.on_event`` is set (what :meth:`arun` does). ``deps`` reach
        the run's tools as ``ToolContext.deps`` (typed by ``ToolContext[Deps]``).
        """
        message = as_message(prompt, "prompt")
        state = self._new_state(session_id, history, message)
        return self._launch(state, None, message, events, deps)

    def _new_state(
        self, session_id: str | None, history: Sequence[Message] | None, prompt: Message
    ) -> RunState:
        """A fresh run's state. A run continued from a conversation inherits that
        conversation's taint: untrusted results read by an earlier run (a chat's previous
        turn, a graph's other nodes) still gate this run's side effects, and so does
        outside content placed in it or in ``prompt`` (an MCP resource: ``retrieved_in``)."""
        sid = new_session_id() if session_id is None else check_session_id(session_id)
        state = RunState(session_id=sid)
        if history:
            if isinstance(history, str) or not all(isinstance(m, Message) for m in history):
                raise UserError(
                    "history must be a list of Message (e.g. an earlier result.messages), "
                    f"got {type(history).__name__}"
                    + ("" if isinstance(history, str) else " holding other values")
                )
            state.messages = list(history)
            state.taint = tuple(taint_in(state.messages, self.config.registry))
        for part in prompt.parts:  # inline: a plain prompt costs no call (docs/loop.md)
            if type(part) is TextPart and UNTRUSTED_OPEN in part.text:
                mark_input(state, prompt)
                break
        return state

    def arun(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] | None = None,
        session_id: str | None = None,
        deps: object = None,
    ) -> Coroutine[object, object, RunResult[OutputT]]:
        """Run to the end and return the result (no events unless ``hooks.on_event``):
        ``result = await agent.arun(prompt)``.

        The run executes in the caller's task (no extra task): cancelling the caller
        cancels the run, and the cancellation propagates after the history was made
        well-formed. The prompt is checked when ``arun`` is called.

        Not an ``async def``: it returns the run's own coroutine (``RunEngine.drive``), so
        a run waiting on its model holds no coroutine of this method's: measured with
        1,000 concurrent runs, 37.3 -> 35.6 GC-tracked objects per waiting run (the
        objects every collection of a burst walks; ``benchmarks/notes/loop.md``, round
        6)."""
        message = as_message(prompt, "prompt")
        engine = self._engine(self._new_state(session_id, history, message), None, None, deps)
        return engine.drive(message)  # no typing.cast: a Python-level call per run

    def run(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] | None = None,
        session_id: str | None = None,
        deps: object = None,
    ) -> RunResult[OutputT]:
        """Synchronous :meth:`arun` (uses ``asyncio.run``). Inside async code use ``arun``.
        A run that pauses (``awaiting_confirmation``) continues from its result's state
        with :meth:`resume_sync`."""
        return run_sync(
            lambda: self.arun(prompt, history=history, session_id=session_id, deps=deps),
            "Agent.run()",
            "agent.arun(...)` (or agent.start(...) / agent.stream(...))",
        )

    async def stream(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] | None = None,
        session_id: str | None = None,
        deps: object = None,
    ) -> AsyncIterator[RunEvent]:
        """Yield every run event, ending with ``RunFinished``. Closing the iterator early
        cancels the run."""
        run = self.start(prompt, history=history, session_id=session_id, deps=deps)
        feed = run._feed
        assert feed is not None
        items = feed.items
        # the feed is read here directly, not through ``async for event in run``: a
        # second async generator in between cost 70-110 ns per event, ~1 us per step of
        # ~10 events (measured in isolation; benchmarks/loop.py "stream" is too noisy
        # on a loaded machine to show it alone)
        try:
            while await feed.refill():
                while items:
                    event = items.popleft()
                    yield event
                    if type(event) is RunFinished:
                        return
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
            current = CURRENT_RUN.get()
            parent = (
                _EngineParent(current)
                if isinstance(current, RunEngine)
                else cast("ParentRun | None", current)
            )
            child = self if parent is None else self._under(parent)
            result = await child.arun(task)
            if parent is not None:
                parent.add_usage(result.usage)
            if not result.ok:
                raise ToolError(
                    f"the {name} agent stopped with {result.stop.value}: {result.detail} "
                    f"(its best answer: {result.answer!r})",
                    kind=ToolErrorKind.PERMANENT,
                )
            return result.answer

        return tool(name=name, description=description, timeout=None)(run_agent)

    def _under(self, parent: ParentRun) -> Agent[OutputT]:
        """This agent configured to run inside ``parent`` (see :meth:`as_tool`)."""
        config = self.config
        forward = parent.forward
        on_event = config.hooks.on_event

        def both(event: RunEvent) -> None:
            if on_event is not None:
                on_event(event)
            if not isinstance(event, (RunStarted, RunFinished)):
                forward(event)

        limits = config.limits
        tokens, cost = parent.budget_left()
        if tokens is not None:
            left = max(1, tokens)
            limits = replace(limits, token_budget=min(left, limits.token_budget or left))
        if cost is not None:
            left_cost = max(1e-9, cost)
            limits = replace(limits, cost_budget=min(left_cost, limits.cost_budget or left_cost))
        hooks = replace(config.hooks, on_event=both)
        return type(self).from_config(replace(config, hooks=hooks, limits=limits))

    # ------------------------------------------------------------------ resuming
    def resume(
        self,
        state: RunState,
        decisions: Mapping[str, Confirmation] | None = None,
        *,
        prompt: Prompt | None = None,
        events: bool = True,
        deps: object = None,
    ) -> Run[OutputT]:
        """Continue ``state`` (a checkpoint, a paused run, a finished one) and return the
        run's handle.

        A state paused with ``awaiting_confirmation`` needs ``decisions`` for its pending
        calls: each is executed (``Confirmation.approve()``), refused with the reason the
        model sees (``.deny(reason)``), or left pending (``.later()`` / no decision: the
        run pauses again); a ``prompt`` is then queued as steering, seen after the results.
        Any other state continues with ``prompt`` (or with its queued messages, or with the
        model turn it owes when its history ends with a user message or tool results, as
        after a crash: see ``docs/durable.md``).
        """
        message = None if prompt is None else as_message(prompt, "prompt")
        resume, message = _continuation(state, decisions, message)
        return self._launch(state, resume, message, events, deps)

    def aresume(
        self,
        state: RunState,
        decisions: Mapping[str, Confirmation] | None = None,
        *,
        prompt: Prompt | None = None,
        deps: object = None,
    ) -> Coroutine[object, object, RunResult[OutputT]]:
        """:meth:`resume` to the end, in the caller's task: ``await agent.aresume(state,
        ...)`` is the run's result. Like :meth:`arun`, it returns the run's own coroutine
        (the arguments are checked when it is called)."""
        message = None if prompt is None else as_message(prompt, "prompt")
        resume, message = _continuation(state, decisions, message)
        engine = self._engine(state, resume, None, deps)
        return engine.drive(message)  # no typing.cast: a Python-level call per run

    def resume_sync(
        self,
        state: RunState,
        decisions: Mapping[str, Confirmation] | None = None,
        *,
        prompt: Prompt | None = None,
        deps: object = None,
    ) -> RunResult[OutputT]:
        """Synchronous :meth:`aresume` (uses ``asyncio.run``), the way to continue what
        :meth:`run` returned: ``agent.resume_sync(result.state, {call.id:
        Confirmation.approve()})`` for a run paused on confirmation. Inside async code use
        ``aresume``."""
        return run_sync(
            lambda: self.aresume(state, decisions, prompt=prompt, deps=deps),
            "Agent.resume_sync()",
            "agent.aresume(...)` (or agent.resume(...) for a handle)",
        )

    # ------------------------------------------------------------------ helpers
    def _launch(
        self,
        state: RunState,
        resume: Resume | None,
        message: Message | None,
        events: bool,
        deps: object = None,
    ) -> Run[OutputT]:
        if not in_running_loop():
            raise UserError(
                "Agent.start()/resume() need a running event loop; call them from async "
                "code, or use agent.run(...) from synchronous code"
            )
        feed = EventFeed() if events else None
        engine = self._engine(state, resume, feed, deps)
        if feed is not None:
            engine.closer = feed.close
            if self.config.hooks.on_event is None:
                feed.attach(engine)
        return Run(engine, feed, asyncio.create_task(engine.drive(message)))

    def _engine(
        self, state: RunState, resume: Resume | None, feed: EventFeed | None, deps: object
    ) -> RunEngine:
        emit = _emitter(feed, self.config.hooks.on_event)
        view = self._view.current()
        dispatcher = self._run_dispatcher(state, deps, view.takes_context)
        return RunEngine(self.config, state, dispatcher, emit, resume, view)

    def _run_dispatcher(self, state: RunState, deps: object, takes_context: bool) -> Dispatcher:
        """The agent's dispatcher, or a per-run one whose ``ToolContext`` carries the run's
        session id and ``deps`` (only when a tool takes a ``ToolContext``)."""
        shared = self._dispatcher
        config = self.config
        if not takes_context:
            return shared
        session_id = config.dispatch.session_id
        if session_id is not None and deps is None:
            return shared
        dispatch = replace(config.dispatch, session_id=session_id or state.session_id, deps=deps)
        return Dispatcher(config.registry, dispatch, shared.ledger)


def _continuation(
    state: RunState,
    decisions: Mapping[str, Confirmation] | None,
    message: Message | None,
) -> tuple[Resume | None, Message | None]:
    """How ``state`` continues: decisions for its pending calls, or the next input."""
    if not isinstance(state, RunState):
        raise UserError(
            f"Agent.resume(state=...) needs a RunState (run.state, or one loaded from a "
            f"store), got {type(state).__name__}; to start a new run use agent.start(prompt)"
        )
    _check_decisions(decisions)
    mark_input(state, message)
    if state.paused or state.pending_calls:
        return Resume(dict(decisions or {})), message
    if decisions:
        ended = f" (its run ended: {state.stop.value})" if state.stop is not None else ""
        raise UserError(
            f"decisions= given, but the state is not paused on pending calls{ended}; "
            "continue it with a prompt instead"
        )
    if message is None and not state.steering and not state.follow_ups:
        # a restored state whose history ends with a user message or tool results owes a
        # model turn: continue without a prompt (resuming after a crash, docs/durable.md)
        if state.messages and state.messages[-1].role in ("user", "tool"):
            return None, None
        raise UserError("give the continued run a prompt (the state has nothing queued)")
    if message is None and not state.steering:  # continue with the next follow-up
        message = state.next_follow_up()
    return None, message


def _check_decisions(decisions: object) -> None:
    """``{call_id: Confirmation}`` or ``None``: ``{id: True}`` was taken and the call
    answered "confirmation handler returned bool", and a list of ids was an
    AttributeError."""
    if decisions is None:
        return
    if not isinstance(decisions, Mapping):
        raise UserError(
            f"Agent.resume(decisions=...) takes a dict {{call_id: Confirmation}}, got "
            f"{type(decisions).__name__}"
        )
    bad = [k for k, v in decisions.items() if not isinstance(v, Confirmation)]
    if bad:
        raise UserError(
            f"Agent.resume: the decisions for {bad} are not Confirmation values; give "
            "Confirmation.approve(), Confirmation.deny(reason) or Confirmation.later()"
        )


def _output(
    output_type: type[OutputT] | None, retries: int, mode: OutputMode
) -> OutputSchema[OutputT] | None:
    if type(retries) is not int or retries < 0:
        raise ConfigError(
            f"Agent(output_retries={retries!r}): give a whole number >= 0 (how many invalid "
            "final answers are re-asked before the run stops with output_invalid)"
        )
    check_output_mode(mode)
    if output_type is None or output_type is str:
        return None  # text is the answer: no final-answer tool, ``output`` is the text
    return OutputSchema.build(output_type, retries, mode)


def _emitter(
    feed: EventFeed | None, on_event: Callable[[RunEvent], object] | None
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
    """``dispatch`` with the tool hooks set in ``hooks`` (the dispatcher runs them). A
    hook already there (an agent's config copied with ``replace``) is not a conflict."""
    changes: dict[str, object] = {}
    for name in ("before_tool_call", "after_tool_call"):
        hook = getattr(hooks, name)
        if hook is None:
            continue
        current = getattr(dispatch, name)
        if current is hook:
            continue
        if current is not None:
            raise ConfigError(
                f"{name} is set in both Hooks and DispatchConfig; set it in one place"
            )
        changes[name] = hook
    return replace(dispatch, **changes) if changes else dispatch  # type: ignore[arg-type]
