"""The values of the graph API: ``START``/``END``, :class:`Send`, :class:`Command`,
:class:`Interrupt`, :class:`StateSnapshot`, the stream events and the errors.

Names and semantics follow LangGraph's so a LangGraph program ports by changing its
imports (see ``docs/graph.md``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from loopwright.core.checks import check_count, check_seconds
from loopwright.core.errors import ConfigError, UserError
from loopwright.core.events import ModelEvent, RunEvent

START: Literal["__start__"] = "__start__"
"""The virtual first node: edges from it choose the first nodes to run."""
END: Literal["__end__"] = "__end__"
"""The virtual last node: a branch reaching it stops."""
INTERRUPT_KEY = "__interrupt__"
"""Key of the pending interrupts in a result (and of their ``updates`` stream chunk)."""

_N = TypeVar("_N")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Marks a state key that has no value yet."""


@dataclass(frozen=True, slots=True)
class Send:
    """Run ``node`` in the next superstep with ``arg`` as its whole input.

    Returned (in a list) by a conditional edge or in ``Command(goto=...)``; each Send is
    its own task, so one node can run many times in one superstep with different inputs
    (map-reduce). The workers' updates are merged through the state's reducers.
    """

    node: str
    arg: Any

    def __repr__(self) -> str:
        return f"Send(node={self.node!r}, arg={self.arg!r})"


@dataclass(frozen=True, slots=True)
class Command(Generic[_N]):
    """A node's combined state update and routing, or the input that resumes a graph.

    * returned from a node: ``update`` is applied like a returned dict, ``goto`` (a node
      name, a :class:`Send`, or a sequence of them) adds next tasks on top of the edges;
      ``graph=Command.PARENT`` sends the command to the graph that runs this one as a
      subgraph node.
    * passed to ``invoke``: ``resume`` answers pending :func:`interrupt` calls (one
      value, or ``{interrupt_id: value}`` when several are pending); ``update`` and
      ``goto`` act as if a node had returned them.

    Annotate a node ``-> Command[Literal["a", "b"]]`` to declare where it may go (used by
    :meth:`StateGraph.compile` validation and the diagram).
    """

    graph: str | None = None
    update: Any = None
    resume: Any = None
    goto: str | Send | Sequence[str | Send] = ()

    PARENT: ClassVar[str] = "__parent__"

    def update_items(self, where: str = "a Command") -> list[tuple[str, Any]]:
        """``update`` as ``(key, value)`` pairs (``where`` names who gave it in errors)."""
        update = self.update
        if update is None:
            return []
        if isinstance(update, Mapping):
            return list(update.items())
        if isinstance(update, (list, tuple)):
            for item in update:
                if not (isinstance(item, (list, tuple)) and len(item) == 2):
                    raise InvalidUpdateError(
                        f"{where}: Command(update=...) must be a dict or a list of (key, value) "
                        f"pairs, got the item {item!r:.60}"
                    )
            return [(k, v) for k, v in update]
        raise InvalidUpdateError(
            f"{where}: Command(update=...) must be a dict or a list of (key, value) pairs, "
            f"got {type(update).__name__}"
        )

    def goto_targets(self, where: str = "a Command") -> list[str | Send]:
        """``goto`` as a list (``where`` names who gave it in errors)."""
        goto = self.goto
        targets = (
            [goto] if isinstance(goto, (str, Send)) else list(goto) if _is_list(goto) else None
        )
        if targets is None or not all(isinstance(t, (str, Send)) for t in targets):
            raise InvalidUpdateError(
                f"{where}: Command(goto=...) must be a node name, a Send or a list of them, "
                f"got {goto!r:.80}"
            )
        return targets


def _is_list(value: object) -> bool:
    return isinstance(value, (list, tuple))


@dataclass(frozen=True, slots=True)
class Overwrite:
    """Write ``value`` to a reducer key *replacing* its value (the reducer is skipped)."""

    value: Any


@dataclass(frozen=True, slots=True)
class Interrupt:
    """A pause requested by :func:`~loopwright.graph.interrupt` inside a node.

    ``value`` is what the node asked (shown to the caller); ``id`` identifies it when
    several interrupts are pending (``Command(resume={id: answer, ...})``).
    """

    value: Any
    id: str


@dataclass(frozen=True, slots=True)
class GraphTask:
    """A task of a pending superstep, as :meth:`CompiledStateGraph.get_state` shows it.

    ``error`` is the exception text when the task failed; ``result`` its update when it
    finished while another task of the superstep failed or was interrupted.
    """

    id: str
    name: str
    path: tuple[Any, ...] = ()
    error: str | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    result: Any = None


@dataclass(frozen=True, slots=True)
class StateSnapshot:
    """One checkpoint of a thread: its values, the nodes that run next, and where it is.

    ``config`` holds the thread and ``checkpoint_id``; pass it back to ``invoke`` to
    replay from here, or to ``update_state`` to fork. ``metadata`` carries ``source``
    (``input``, ``loop``, ``update``, ``fork``) and ``step``.
    """

    values: dict[str, Any]
    next: tuple[str, ...]
    config: dict[str, Any]
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_config: dict[str, Any] | None
    tasks: tuple[GraphTask, ...] = ()
    interrupts: tuple[Interrupt, ...] = ()


_NOT_RETRIED: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    ArithmeticError,
    ImportError,
    LookupError,
    NameError,
    SyntaxError,
    RuntimeError,
    ReferenceError,
    StopIteration,
    StopAsyncIteration,
    OSError,
)


def default_retry_on(exc: BaseException) -> bool:
    """LangGraph's default: retry what may be transient (connection errors, a retryable
    loopwright provider error, anything unexpected), not programming errors."""
    if isinstance(exc, ConnectionError):
        return True
    retryable = getattr(exc, "retryable", None)
    if isinstance(retryable, bool):
        return retryable
    return not isinstance(exc, _NOT_RETRIED)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry a failing node (``add_node(..., retry_policy=RetryPolicy(...))``).

    Attempt ``n`` (counting failures) waits ``min(max_interval, initial_interval *
    backoff_factor ** (n - 1))`` seconds, plus up to one second of jitter. ``retry_on``
    is an exception class, a tuple of them, or a predicate.
    """

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: Any = default_retry_on

    def __post_init__(self) -> None:
        # checked when written: a bad value otherwise surfaced only when a node first
        # failed, as a TypeError from inside the retry loop (or retried nothing)
        check_count("RetryPolicy.max_attempts", self.max_attempts)
        check_seconds("RetryPolicy.initial_interval", self.initial_interval, zero=True)
        check_seconds("RetryPolicy.max_interval", self.max_interval, zero=True)
        factor = self.backoff_factor
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not factor > 0:
            raise ConfigError(f"RetryPolicy.backoff_factor must be a number > 0, got {factor!r}")
        if not isinstance(self.jitter, bool):
            raise ConfigError(f"RetryPolicy.jitter must be True or False, got {self.jitter!r}")
        retry_on = self.retry_on
        classes = retry_on if isinstance(retry_on, tuple | list) else (retry_on,)
        if not (
            all(isinstance(c, type) and issubclass(c, BaseException) for c in classes)
            or (callable(retry_on) and not isinstance(retry_on, type))
        ):
            raise ConfigError(
                "RetryPolicy.retry_on must be an exception class, a tuple of them or a "
                f"predicate (exception -> bool), got {retry_on!r}"
            )

    def matches(self, exc: BaseException) -> bool:
        retry_on = self.retry_on
        if isinstance(retry_on, type) and issubclass(retry_on, BaseException):
            return isinstance(exc, retry_on)
        if isinstance(retry_on, tuple | list):
            return isinstance(exc, tuple(retry_on))
        return bool(retry_on(exc))

    def delay(self, failures: int) -> float:
        interval = min(
            self.max_interval, self.initial_interval * self.backoff_factor ** (failures - 1)
        )
        return interval + random.uniform(0, 1) if self.jitter else interval


def retry_delay(policies: Sequence[RetryPolicy], exc: Exception, failures: int) -> float | None:
    """Seconds to wait before the next attempt, or ``None``: give up (no policy matches,
    attempts exhausted, or the failure is the graph's own control flow)."""
    if not policies or isinstance(exc, (GraphInterrupt, ParentCommand)):
        return None
    for policy in policies:
        if policy.matches(exc):
            return policy.delay(failures) if failures < policy.max_attempts else None
    return None


# ---------------------------------------------------------------- "events" stream mode


@dataclass(frozen=True, slots=True)
class TaskStarted:
    """A node task began (``stream_mode="events"``)."""

    step: int
    node: str
    task_id: str
    type: Literal["task_started"] = "task_started"


@dataclass(frozen=True, slots=True)
class TaskFinished:
    """A node task ended: its ``update``, or ``error`` (the exception text)."""

    step: int
    node: str
    task_id: str
    update: Any = None
    error: str | None = None
    type: Literal["task_finished"] = "task_finished"


@dataclass(frozen=True, slots=True)
class NodeRunEvent:
    """An event of loopwright's runtime inside a node: the run events of an agent node,
    or the model stream events (text deltas ...) of a model node (see
    :mod:`loopwright.graph.prebuilt`)."""

    step: int
    node: str
    event: RunEvent | ModelEvent
    type: Literal["node_run_event"] = "node_run_event"


@dataclass(frozen=True, slots=True)
class StepFinished:
    """A superstep was merged; ``next`` are the nodes of the following one."""

    step: int
    next: tuple[str, ...] = field(default_factory=tuple)
    type: Literal["step_finished"] = "step_finished"


GraphEvent = TaskStarted | TaskFinished | NodeRunEvent | StepFinished

# ---------------------------------------------------------------- errors


class GraphError(UserError):
    """Base of the graph's own errors."""


class InvalidUpdateError(GraphError):
    """A node's return value or a superstep's writes cannot be applied."""


def config_count(config: Mapping[str, Any], key: str) -> int | None:
    """``config[key]``, a whole number >= 1, or ``None`` when it is absent or ``None``.

    Anything else is a :class:`GraphError` naming the key: ``int("x")``'s own message names
    nothing, and ``max_concurrency=-1`` ran no task of a superstep at all (no lanes), so
    the superstep's writes were silently lost."""
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GraphError(
            f'config["{key}"] must be a whole number >= 1 (or left out), got {value!r}'
        )
    return value


def configurable_of(config: object) -> Mapping[str, Any]:
    """``config["configurable"]`` (``{}`` when absent) of a run's ``config``, which must be
    a dict -- a bare thread id passed as the config is the usual slip."""
    if not isinstance(config, Mapping):
        raise GraphError(
            f"config must be a dict, got {type(config).__name__} {config!r:.60}; pass "
            '{"configurable": {"thread_id": "..."}}'
        )
    inner = config.get("configurable")
    if inner is None:
        return {}
    if not isinstance(inner, Mapping):
        raise GraphError(
            f'config["configurable"] must be a dict, got {type(inner).__name__} '
            f'{inner!r:.60}; pass {{"configurable": {{"thread_id": "..."}}}}'
        )
    return inner


def checkpoint_number(thread: str, checkpoint_id: object) -> int:
    """The checkpoint ``config["configurable"]["checkpoint_id"]`` names: the ids a
    snapshot's ``config`` carries are whole numbers (``"5"``); anything else is a
    :class:`GraphError` naming it, not ``int()``'s "invalid literal" naming nothing."""
    text = str(checkpoint_id).strip()
    if isinstance(checkpoint_id, bool) or not text.isdigit():
        raise GraphError(
            f"checkpoint_id {checkpoint_id!r} of thread {thread!r} is not a checkpoint id; use "
            "the config of a snapshot from get_state(...) or get_state_history(...)"
        )
    return int(text)


class GraphRecursionError(GraphError):
    """The run took more supersteps than ``config["recursion_limit"]`` allows."""


class GraphBuildError(GraphError, ValueError):
    """The graph being built or compiled is invalid (unknown node, no entry point ...)."""


def refuse_options(where: str, options: Mapping[str, Any], harmless: Sequence[str] = ()) -> None:
    """Fail on a LangGraph option this runtime does not implement, instead of silently
    running without it (an option left at its "off" value is accepted)."""
    for key, value in options.items():
        if key in harmless or value is None or value is False or value == [] or value == ():
            continue
        raise GraphError(
            f"{where}({key}=...) is a LangGraph option loopwright.graph does not support; "
            "see the differences listed in docs/graph.md"
        )


class ThreadBusy(GraphError):
    """Another ``invoke``/``stream`` is running the thread (a thread runs one run at a
    time: two would interleave their checkpoints, each continuing its own idea of the
    thread's latest state)."""

    def __init__(self, thread: str, holder: str) -> None:
        self.thread = thread
        self.holder = holder
        super().__init__(
            f"thread_id {thread!r} is already running (held by {holder}): wait for that "
            "run to finish or use another thread_id; if the process running it died on "
            f"another host, break its lock with store.break_lock({thread!r})"
        )


class EmptyInputError(GraphError):
    """``invoke`` got no input and the thread has nothing to continue."""


class GraphInterrupt(Exception):
    """Raised by :func:`interrupt` to pause the current task; the engine catches it."""

    def __init__(self, interrupts: Sequence[Interrupt]) -> None:
        super().__init__(interrupts)
        self.interrupts = tuple(interrupts)


class ParentCommand(Exception):
    """Carries a ``Command(graph=Command.PARENT)`` out of a subgraph to its parent."""

    def __init__(self, command: Command[Any]) -> None:
        super().__init__(command)
        self.command = command


class GraphTracer(Protocol):
    """Spans around a graph run and its nodes, passed as ``config["tracer"]``
    (``loopwright.tracing.graph_spans.GraphSpans`` records OpenTelemetry spans).

    Each context manager is entered in the task or thread that runs the graph or the
    node, so the span it opens is the current one there: agent runs inside a node nest
    under the node's span."""

    def invocation(
        self, graph: str, thread: str
    ) -> AbstractContextManager[Callable[[BaseException], None]]:
        """Around one invocation (``invoke``/``stream``, or a subgraph node's run); call
        what it gives with the error when the run failed (a pause is not a failure)."""
        ...

    def node(
        self, name: str, step: int, task_id: str
    ) -> AbstractContextManager[Callable[[BaseException], None]]:
        """Around one task of superstep ``step``; call what it gives with the node's
        error when the node failed (an interrupt is not a failure)."""
        ...
