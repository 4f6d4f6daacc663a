"""A task of a superstep and what its node can reach while it runs.

:class:`Task` is one scheduled node (a pull by an edge or a :class:`Send`), with the
writes, gotos, error or interrupts its run left. While a node runs its task is
:data:`CURRENT_TASK`; :func:`interrupt`, :func:`get_stream_writer` (public, from
``loopwright.graph``), :func:`current_task_emit` and :func:`task_session` (for the
prebuilt nodes) read it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from loopwright.graph.types import (
    Command,
    GraphError,
    GraphInterrupt,
    Interrupt,
    NodeRunEvent,
    Send,
)
from loopwright.store import AsyncStore

if TYPE_CHECKING:
    from loopwright.graph.builder import NodeSpec
    from loopwright.graph.pregel import _Run

CURRENT_TASK: ContextVar[Task | None] = ContextVar("loopwright_graph_task", default=None)
"""The task whose node is running (set around each attempt)."""


class Cursor:
    """Resume answers of one task: ``resume`` for its own ``interrupt()`` calls, in
    order; ``answers`` (interrupt id -> answer) for a subgraph task, handed to the
    subgraph run, which routes each to its own waiting task."""

    __slots__ = ("answers", "key", "resume", "used")

    def __init__(self, key: str, resume: list[Any]) -> None:
        self.key = key
        self.resume = resume
        self.answers: dict[str, Any] = {}
        self.used = 0


class Task:
    """One scheduled node of a superstep: its input, and what its run left (writes and
    gotos, an error, interrupts, or a ``Command`` for the parent graph)."""

    __slots__ = (
        "cursor",
        "done",
        "error",
        "gotos",
        "id",
        "input",
        "interrupts",
        "name",
        "parent_command",
        "run",
        "send",
        "spec",
        "writes",
    )

    def __init__(self, run: _Run, task_id: str, name: str, send: Send | None) -> None:
        self.run = run
        self.id = task_id
        self.name = name
        self.send = send
        self.spec: NodeSpec | None = run.graph.nodes.get(name)
        self.input: Any = None
        self.writes: list[tuple[str, Any]] = []
        self.gotos: list[str | Send] = []
        self.done = False
        self.error: BaseException | None = None
        self.interrupts: tuple[Interrupt, ...] = ()
        self.parent_command: Command[Any] | None = None
        self.cursor: Cursor | None = None


def interrupt(value: Any) -> Any:
    """Pause the graph inside a node and show ``value`` to the caller.

    The first call raises (the run returns ``{"__interrupt__": [Interrupt(value, id)]}``
    and, with a checkpointer, the thread waits). ``invoke(Command(resume=answer), config)``
    runs the node again *from its start*; this call then returns ``answer``. Several
    calls in one node are matched to answers by their order.
    """
    task = CURRENT_TASK.get()
    if task is None:
        raise GraphError("interrupt() can only be called while a graph node runs")
    cursor = task.cursor
    if cursor is None:
        cursor = task.cursor = Cursor(f"{task.run.thread}:{task.id}", [])
    index = cursor.used
    cursor.used += 1
    if index < len(cursor.resume):
        return cursor.resume[index]
    digest = hashlib.blake2b(f"{cursor.key}:{index}".encode(), digest_size=16).hexdigest()
    raise GraphInterrupt([Interrupt(value, digest)])


def get_stream_writer() -> Callable[[Any], None]:
    """Inside a node: a function that sends any value to ``stream_mode="custom"``
    (progress, partial results). It does nothing when nobody streams ``custom``."""
    task = CURRENT_TASK.get()
    if task is None or not task.run.wants("custom"):
        return ignore
    run = task.run
    return lambda chunk: run.emit("custom", chunk)


def ignore(chunk: Any) -> None:
    return None


def current_task_emit() -> Callable[[Any], None] | None:
    """For nodes that produce their own events (the agent node): where to send them, or
    ``None`` when nobody streams ``events``."""
    task = CURRENT_TASK.get()
    if task is None or not task.run.wants("events"):
        return None
    run, step, name = task.run, task.run.step, task.name
    return lambda event: run.emit("events", NodeRunEvent(step, name, event))


async def task_session() -> tuple[AsyncStore, str] | None:
    """For nodes that keep their own records (the tool node's intents): the store and a
    session id of the running task, the same when a resume runs the task again and new
    for a fork; ``None`` without a checkpointer. Its checkpoint is stored first."""
    task = CURRENT_TASK.get()
    if task is None or task.run.saver is None:
        return None
    await task.run.settle()  # the session names the checkpoint the superstep started from
    return task.run.saver.aio, task.run.namespace(task)
