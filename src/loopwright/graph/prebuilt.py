"""Prebuilt nodes that put loopwright's runtime inside a graph.

* :func:`agent_node` -- a whole loopwright :class:`~loopwright.loop.Agent` run as one
  node (its tools, limits, hooks, retries); the messages it adds are returned for an
  ``add_messages`` key. Its run events appear in ``stream_mode="events"``.
* :func:`model_node`, :class:`ToolNode`, :func:`tools_condition` -- the pieces of an
  agent loop drawn as a graph (the model node's stream events, text deltas included,
  appear in ``stream_mode="events"``) (an LLM node and a tool node with a conditional edge
  between them), like LangGraph's ``ToolNode``/``tools_condition``. Tool calls go
  through loopwright's dispatcher: argument validation and repair, permissions,
  timeouts, typed error results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from loopwright.core.errors import UserError
from loopwright.core.events import ResponseDone, RunFinished
from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.protocols import Model, ModelRequest, ModelSettings, complete
from loopwright.core.run import RunResult, RunStop, TaintSource
from loopwright.durable import Durable
from loopwright.graph.messages import as_messages
from loopwright.graph.task import current_task_emit, task_session
from loopwright.graph.types import END, GraphError
from loopwright.loop import Agent
from loopwright.loop.intents import IntentRecorder
from loopwright.loop.recovery import in_call_order, plan_recovery
from loopwright.store import AsyncStore, SessionNotFound
from loopwright.tools import DispatchConfig, Dispatcher, Tool, ToolRegistry
from loopwright.tools.taint import taint_in

NodeFn = Callable[..., Any]


def _messages(state: Any, key: str) -> list[Message]:
    raw = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    if raw is None:
        raise UserError(f"the node needs the conversation in state[{key!r}]")
    return [m for m in as_messages(raw) if isinstance(m, Message)]


class AgentRunFailed(GraphError):
    """An :func:`agent_node`'s run ended without a final answer (a model error, a limit,
    calls waiting for approval ...): the node fails, the state keeps the conversation it
    had (a graph with a checkpointer re-runs the node on resume; a ``RetryPolicy``
    applies). ``result`` is the run's :class:`~loopwright.core.run.RunResult`, with the
    messages it added."""

    def __init__(self, result: RunResult) -> None:
        detail = f": {result.detail}" if result.detail else ""
        super().__init__(f"agent_node: the agent's run stopped with {result.stop.value}{detail}")
        self.result = result


def agent_node(agent: Agent, *, messages_key: str = "messages") -> NodeFn:
    """A node that runs ``agent`` on the conversation in ``state[messages_key]``.

    The conversation must end with the user's message; the node returns the messages
    the run added (assistant turns, tool results) for an ``add_messages`` key. A run
    that ends without a final answer raises :class:`AgentRunFailed` (its messages would
    leave the conversation without an answer, or with calls no result follows).

    With a checkpointer the agent's run is a durable run (:func:`_durably`): killed
    mid-node, the node resumes that run from its last checkpoint instead of starting it
    over (no model turn repeated, no side effect run twice).
    """

    async def run_agent(state: Any) -> dict[str, Any]:
        history = _messages(state, messages_key)
        if not history or history[-1].role != "user":
            raise UserError(
                f"agent_node: state[{messages_key!r}] must end with a user message to answer"
            )
        prompt, before = history[-1], history[:-1]
        emit = current_task_emit()
        where = await task_session()
        if where is not None:
            result = await _durably(
                agent if emit is None else _emitting(agent, emit), prompt, before, where
            )
        elif emit is None:
            result = await agent.arun(prompt, history=before)
        else:
            result = await _streamed(agent, prompt, before, emit)
        if result.stop is not RunStop.FINAL_ANSWER:
            raise AgentRunFailed(result)
        return {messages_key: list(result.messages[len(history) :])}

    run_agent.__name__ = "agent"
    return run_agent


async def _durably(
    agent: Agent, prompt: Message, history: list[Message], where: tuple[AsyncStore, str]
) -> RunResult:
    """The agent's run as a durable run in the task's session (docs/durable.md): each
    step checkpointed, intents recorded around non-idempotent calls. The session is the
    same when a resume runs the task again, so a run the process died in is continued
    from its checkpoint (calls cut short resolved as a durable resume does), and a run
    that finished before the superstep committed gives its stored result. A stored run
    that stopped otherwise (a limit, calls awaiting approval: the node failed) is
    dropped and run afresh, as the node ran before. The graph's thread lock makes this
    task the session's only runner, so a lock left by a dead process is broken."""
    store, session = where
    durable = Durable(agent, store)
    try:
        stored = await store.load(session)
    except SessionNotFound:
        stored = None
    if stored is not None and stored.stop in (None, RunStop.FINAL_ANSWER):
        return await durable.aresume(session, break_lock=True)
    if stored is not None:
        await store.delete(session)
    return await durable.arun(prompt, session_id=session, history=history, break_lock=True)


def _emitting(agent: Agent, emit: Callable[[Any], None]) -> Agent:
    """``agent`` whose run events also go to ``emit`` (the node's event stream)."""
    hooks = agent.config.hooks
    own = hooks.on_event

    def on_event(event: Any) -> None:
        emit(event)
        if own is not None:
            own(event)

    return Agent.from_config(replace(agent.config, hooks=replace(hooks, on_event=on_event)))


async def _streamed(
    agent: Agent, prompt: Message, history: list[Message], emit: Callable[[Any], None]
) -> RunResult:
    result: RunResult | None = None
    async for event in agent.stream(prompt, history=history):
        emit(event)
        if isinstance(event, RunFinished):
            result = event.result
    if result is None:  # a stream always ends with RunFinished
        raise UserError("agent_node: the agent's run ended without a result")
    return result


def model_node(
    model: Model,
    tools: Iterable[Tool | Callable[..., Any]] | ToolRegistry = (),
    *,
    system: str | None = None,
    settings: ModelSettings | None = None,
    messages_key: str = "messages",
) -> NodeFn:
    """A node that makes one model call on ``state[messages_key]`` (offering ``tools``)
    and returns the assistant's message. A failed call raises its provider error."""
    registry = _registry(tools)
    specs = tuple(registry.specs())
    settings = settings or ModelSettings()

    async def call_model(state: Any) -> dict[str, Any]:
        request = ModelRequest(_messages(state, messages_key), system, specs, settings)
        emit = current_task_emit()
        final = await complete(model, request, emit)
        if not isinstance(final, ResponseDone):
            raise final.error
        return {messages_key: [final.message]}

    call_model.__name__ = "llm"
    return call_model


class ToolNode:
    """A node that runs the tool calls of the last assistant message and returns one
    tool-results message (results in call order; failures are error results).

    Taint works as in the loop (docs/security.md, "Taint"): once the conversation holds
    an untrusted result (from a tool flagged ``untrusted_output``, or content delimited
    as untrusted data), a later call to a side-effect tool runs only with
    ``DispatchConfig.confirm_tainted``'s approval, else it is answered
    ``awaiting_confirmation`` without running. The conversation in the state is the
    run's record of what was read, so the taint survives checkpoints and resumes."""

    def __init__(
        self,
        tools: Iterable[Tool | Callable[..., Any]] | ToolRegistry,
        *,
        dispatch: DispatchConfig | None = None,
        messages_key: str = "messages",
        name: str = "tools",
    ) -> None:
        self.registry = _registry(tools)
        self.dispatcher = Dispatcher(self.registry, dispatch)
        self.messages_key = messages_key
        self.__name__ = name

    async def __call__(self, state: Any) -> dict[str, Any]:
        history = _messages(state, self.messages_key)
        calls = history[-1].tool_calls if history else ()
        if not calls:
            raise UserError("ToolNode: the last message has no tool calls to run")
        taint = taint_in(history[:-1], self.registry)
        where = await task_session()
        if where is None:
            results = await self.dispatcher.run_results(calls, taint=taint)
        else:
            results = await self._recorded(calls, taint, *where)
        return {self.messages_key: [Message.tool_results(results)]}

    async def _recorded(
        self,
        calls: Sequence[ToolCallPart],
        taint: Sequence[TaintSource],
        store: AsyncStore,
        session: str,
    ) -> list[ToolResultPart]:
        """Run ``calls`` with intent records, as a durable agent run does (loop/intents.py):
        when this task runs again after its process died, a call that finished gives its
        recorded result and one cut short is reported as of unknown outcome
        (loop/recovery.py), instead of running a side effect twice."""
        recovery = await plan_recovery(calls, store, session, self.registry)
        ran: list[ToolResultPart] = []
        if recovery.rerun:
            config = self.dispatcher.config
            recorder = IntentRecorder(
                store, session, self.registry, config.before_tool_call, config.after_tool_call
            )
            hooked = replace(
                config, before_tool_call=recorder.before, after_tool_call=recorder.after
            )
            dispatcher = Dispatcher(self.registry, hooked)
            ran = await dispatcher.run_results(
                recovery.rerun, taint=taint, decisions=recovery.decisions
            )
            await recorder.flush()
        return list(in_call_order(calls, [*recovery.known, *ran]))


def tools_condition(state: Any, messages_key: str = "messages") -> str:
    """Conditional edge: ``"tools"`` when the last message calls tools, else ``END``."""
    history = _messages(state, messages_key)
    return "tools" if history and history[-1].tool_calls else END


def _registry(tools: Iterable[Tool | Callable[..., Any]] | ToolRegistry) -> ToolRegistry:
    if isinstance(tools, ToolRegistry):
        return tools
    registry = ToolRegistry()
    for item in tools:
        registry.register(item)
    return registry


__all__: Sequence[str] = ("ToolNode", "agent_node", "model_node", "tools_condition")
