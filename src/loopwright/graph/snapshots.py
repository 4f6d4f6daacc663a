"""A thread's state read and written through its checkpoints: the snapshot
``get_state`` returns (with the pending superstep's tasks, and with ``subgraphs`` the
state of each started subgraph run), the history, and the new checkpoint
``update_state`` writes. ``CompiledStateGraph`` (``graph/engine.py``) holds the public
methods; a config may point into a subgraph run (``checkpoint_ns``), whose graph and
saver :func:`where` finds.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from loopwright.graph.checkpoint import GraphSaver, Saved, now
from loopwright.graph.pregel import Next, _Run, subgraph_thread
from loopwright.graph.run_sync import run_sync
from loopwright.graph.task import Task
from loopwright.graph.types import (
    END,
    START,
    GraphError,
    GraphTask,
    Send,
    StateSnapshot,
    checkpoint_number,
    configurable_of,
)
from loopwright.graph.writes import merge_writes

if TYPE_CHECKING:
    from loopwright.graph.engine import CompiledStateGraph, Config


def where(
    top: CompiledStateGraph, config: Config
) -> tuple[CompiledStateGraph, GraphSaver, str, str | None, str]:
    """``(graph, saver, thread, checkpoint_id, namespace)`` a config points at: this
    graph's thread, or with a ``checkpoint_ns`` the namespace of a subgraph run (its
    path of ``NODE:TASK#CHECKPOINT`` segments, the end of its thread id)."""
    if top.saver is None:
        raise GraphError("this graph has no checkpointer: compile(checkpointer=MemoryStore())")
    configurable = configurable_of(config)
    thread = configurable.get("thread_id")
    if not thread:
        raise GraphError('pass the thread: {"configurable": {"thread_id": "..."}}')
    thread = str(thread)
    ns = str(configurable.get("checkpoint_ns") or "")
    graph: CompiledStateGraph = top
    saver: GraphSaver = top.saver
    if ns:
        if not thread.endswith(f"|{ns}"):
            raise GraphError(
                f"checkpoint_ns {ns!r} is not a namespace of thread {thread!r}: pass the "
                "config of a snapshot from get_state(config, subgraphs=True)"
            )
        for segment in ns.split("|"):
            node = segment.split(":", 1)[0]
            spec = graph.nodes.get(node)
            inner = spec.subgraph if spec is not None else None
            nested = inner.nested_saver(saver) if inner is not None else None
            if inner is None or nested is None:
                raise GraphError(f"checkpoint_ns {ns!r}: {node!r} is not a subgraph node here")
            graph, saver = inner, nested
    return graph, saver, thread, configurable.get("checkpoint_id"), ns


def snapshot_of(
    graph: CompiledStateGraph, thread: str, saved: Saved, *, apply_pending: bool, ns: str = ""
) -> StateSnapshot:
    values = dict(saved.values)
    tasks: list[GraphTask] = []
    waiting: list[str] = []
    finished: list[list[tuple[str, Any]]] = []
    for i, pending in enumerate(saved.next):
        name = pending.node if isinstance(pending, Send) else pending
        task_id = f"{saved.step + 1}:{i}"
        result = saved.results.get(task_id)
        done = result is not None and result.writes is not None
        if done and result is not None and result.writes is not None:
            finished.append(result.writes)
        if not (apply_pending and done):
            waiting.append(name)
        tasks.append(
            GraphTask(
                id=task_id,
                name=name,
                path=("__pregel_push", i) if isinstance(pending, Send) else ("__pregel_pull", name),
                error=result.error if result else None,
                interrupts=tuple(result.interrupts) if result else (),
                result=dict(result.writes)
                if done and result and result.writes is not None
                else None,
            )
        )
    if apply_pending and finished:
        merge_writes(graph, values, finished, False)
    interrupts = tuple(i for t in tasks for i in t.interrupts)
    return StateSnapshot(
        values=graph.output(values),
        next=tuple(waiting),
        config=checkpoint_config(thread, saved.number, ns),
        metadata={"source": saved.source, "step": saved.step, "parents": {}},
        created_at=datetime.fromtimestamp(saved.created_at, UTC).isoformat(),
        parent_config=None if saved.parent is None else checkpoint_config(thread, saved.parent, ns),
        tasks=tuple(tasks),
        interrupts=interrupts,
    )


def with_subgraphs(
    graph: CompiledStateGraph,
    snapshot: StateSnapshot,
    saver: GraphSaver,
    thread: str,
    number: int,
    ns: str,
) -> StateSnapshot:
    tasks = []
    for task in snapshot.tasks:
        spec = graph.nodes.get(task.name)
        inner = spec.subgraph if spec is not None else None
        nested = inner.nested_saver(saver) if inner is not None else None
        if inner is not None and nested is not None:
            where = subgraph_thread(thread, task.name, task.id, number)
            saved = nested.latest(where)
            if saved is not None:
                segment = where[len(thread) + 1 :]
                inner_ns = f"{ns}|{segment}" if ns else segment
                state = snapshot_of(inner, where, saved, apply_pending=True, ns=inner_ns)
                state = with_subgraphs(inner, state, nested, where, saved.number, inner_ns)
                task = replace(task, state=state)
        tasks.append(task)
    return replace(snapshot, tasks=tuple(tasks))


def checkpoint_config(thread: str, number: int, ns: str = "") -> dict[str, Any]:
    return {
        "configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": str(number)}
    }


def update(
    graph: CompiledStateGraph,
    saver: GraphSaver,
    thread: str,
    checkpoint_id: str | None,
    ns: str,
    values: Any,
    as_node: str | None,
) -> dict[str, Any]:
    saved = (
        saver.at(thread, checkpoint_number(thread, checkpoint_id))
        if checkpoint_id
        else saver.latest(thread)
    )
    if as_node is not None and as_node not in graph.nodes and as_node not in (START, END):
        raise GraphError(f"update_state(as_node={as_node!r}): no such node")
    if as_node is None and saved is None:
        as_node = START  # as in LangGraph: the first update of a thread acts as its input
    run = _Run(graph, {"configurable": {"thread_id": thread}})
    base = dict(saved.values) if saved is not None else dict(graph.initial)
    writes, gotos = graph.output_writes(as_node or "update_state", values)
    new = dict(base)
    changes = merge_writes(graph, new, [writes], True)
    pending: list[str | Send] = list(saved.next) if saved is not None else []
    barriers = dict(saved.barriers) if saved is not None else {}
    if as_node is not None:
        pending = run_sync(_next_after(graph, run, as_node, writes, gotos, new))
    record = Saved(
        number=0,
        step=(saved.step + 1) if saved is not None else -1,
        source="update",
        values=new,
        next=pending,
        barriers=barriers,
        parent=None,
        created_at=now(),
    )
    stored = saver.put(thread, saved, record, changes if saved is not None else None)
    return checkpoint_config(thread, stored.number, ns)


async def _next_after(
    graph: CompiledStateGraph,
    run: _Run,
    node: str,
    writes: list[tuple[str, Any]],
    gotos: list[str | Send],
    values: dict[str, Any],
) -> list[str | Send]:
    task = Task(run, "update", node, None)
    task.writes, task.gotos = writes, gotos
    run.values = values
    chosen = Next()
    await run.route(task, values, True, {}, chosen)
    return chosen.pending()
