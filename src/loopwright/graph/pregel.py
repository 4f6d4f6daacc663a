"""The superstep loop that runs a compiled graph.

One superstep: every task scheduled for it runs concurrently (``async`` nodes as
coroutines, plain ``def`` nodes placed like sync tools: on worker threads until they
prove short and non-blocking); their writes are
merged through the reducers in a deterministic order -- tasks reached by edges sorted by
node name, then :class:`Send` tasks in the order they were sent, as LangGraph does --
and only then are the next tasks chosen (edges, joins, conditional edges, ``Command``
gotos, Sends). A superstep whose task failed or was interrupted changes nothing: the
state stays as the last completed superstep left it; with a checkpointer, what the other
tasks produced is kept so a resume re-runs only the unfinished ones.

Step numbers and the recursion limit follow LangGraph: a fresh input is checkpoint
``-1``, applying it is superstep ``0`` (the ``START`` task), nodes run from superstep
``1``; a resumed run continues at the saved step + 1. With ``first`` the run's first
step (``-1`` for a fresh input, the saved step + 1 on resume), reaching a step above
``first + recursion_limit + 1`` raises :class:`GraphRecursionError` -- checked before
each superstep and before noticing that none is left, so a fresh run whose nodes need
``k`` supersteps needs ``recursion_limit >= k + 1``.

This module holds the superstep loop, the choice of the next tasks and the checkpoint
writes; beside it: a task and what its node reaches while it runs (``graph/task.py``:
``interrupt()``, the stream writer), running one superstep's tasks
(``graph/execute.py``) and continuing a thread from its checkpoint (``graph/resume.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loopwright.graph.checkpoint import Change, GraphSaver, Saved, now
from loopwright.graph.execute import execute
from loopwright.graph.pending import PendingWrites
from loopwright.graph.resume import pending_results, resume
from loopwright.graph.task import Task, ignore
from loopwright.graph.thread_lock import ThreadLock
from loopwright.graph.types import (
    END,
    START,
    Command,
    GraphError,
    GraphInterrupt,
    GraphRecursionError,
    GraphTracer,
    Interrupt,
    InvalidUpdateError,
    ParentCommand,
    Send,
    StepFinished,
    checkpoint_number,
    config_count,
    configurable_of,
)
from loopwright.graph.writes import chain_changes, merge_writes

if TYPE_CHECKING:
    from loopwright.graph.engine import CompiledStateGraph

Emit = Callable[[str, Any], None]


class Next:
    """The tasks chosen for the next superstep: nodes reached by edges (each once, run
    in name order) and Sends (in the order sent)."""

    __slots__ = ("pulls", "pushes")

    def __init__(self) -> None:
        self.pulls: dict[str, None] = {}
        self.pushes: list[Send] = []

    def pending(self) -> list[str | Send]:
        return [*sorted(self.pulls), *self.pushes]


class _Run:
    """One invocation of a compiled graph (one call of invoke/stream)."""

    def __init__(
        self,
        graph: CompiledStateGraph,
        config: Mapping[str, Any],
        emit: Emit | None = None,
        modes: frozenset[str] = frozenset(),
        parent: Task | None = None,
        drain: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.graph = graph
        self.config = config
        configurable = configurable_of(config)
        self.thread = str(configurable.get("thread_id", ""))
        """The thread this run checkpoints under (a subgraph's: its namespace)."""
        self.conversation: str = self.thread if parent is None else parent.run.conversation
        """The top-level thread id: the conversation a trace names."""
        self.checkpoint_id = configurable.get("checkpoint_id")
        # a subgraph checkpoints in the parent's store, under its own namespace
        self.saver: GraphSaver | None = (
            graph.saver if parent is None else graph.nested_saver(parent.run.saver)
        )
        if self.saver is not None and not self.thread:
            raise GraphError(
                "this graph has a checkpointer: pass a thread id, e.g. "
                'graph.invoke(input, {"configurable": {"thread_id": "1"}})'
            )
        # a top-level run holds its thread (thread_lock.py); a subgraph runs under its parent's
        self.thread_lock = (
            ThreadLock(self.saver.aio, self.thread) if self.saver and not parent else None
        )
        self.limit = config_count(config, "recursion_limit") or graph.recursion_limit
        self.workers = config_count(config, "max_concurrency")
        """Tasks of one superstep running at once; ``None``: no bound (plain nodes still
        share the worker pool of ``tools/execution.py``)."""
        self.tracer: GraphTracer | None = config.get("tracer")
        self.sink = emit
        """Where the chunks of the streamed modes go (``None``: nobody streams)."""
        self._drain = drain
        self.modes = modes
        self.parent = parent
        self.namespace_path: tuple[str, ...] = ()
        """``("node:task", ...)`` from the top-level graph down to this run (``()`` there)."""
        self.subgraph_feed: Emit | None = None
        """Where subgraph runs send their chunks (``stream(..., subgraphs=True)``), or
        ``None``: a subgraph's own chunks are not streamed."""
        self.saved: Saved | None = None
        self.values: dict[str, Any] = {}
        self.barriers: dict[str, set[str]] = {}
        self.step = -1
        self.stop = 0
        self.interrupts: list[Interrupt] = []
        self.pending_changes: dict[str, Change] | None = None
        self._inflight: asyncio.Future[Saved] | None = None
        self.write_behind = True
        """Write a superstep's checkpoint while the next one runs (``durability="async"``)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self.pending_writes: PendingWrites | None = None
        """Stores the tasks of the superstep running now as each one finishes (a
        superstep of several tasks with a checkpointer), else ``None``."""

    def wants(self, mode: str) -> bool:
        return self.sink is not None and mode in self.modes

    def emit(self, mode: str, chunk: Any) -> None:
        if self.sink is not None and mode in self.modes:
            loop = self._loop
            if loop is not None and threading.get_ident() != self._loop_thread:
                loop.call_soon_threadsafe(self.sink, mode, chunk)
            else:
                self.sink(mode, chunk)

    # ------------------------------------------------------------------ main loop
    async def run(self, input: Any) -> dict[str, Any]:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        span = (
            contextlib.nullcontext(ignore)
            if self.tracer is None
            else self.tracer.invocation(self.graph.name, self.conversation)
        )
        lock = self.thread_lock
        with span as failed:
            try:
                if lock is not None:
                    await lock.claim()
                return await self._supersteps(input)
            except (GraphInterrupt, ParentCommand):
                raise  # a subgraph pausing or handing a command to its parent: no failure
            except BaseException as exc:
                failed(exc)
                raise
            finally:
                try:
                    await self.settle()  # the last checkpoint is stored before returning
                finally:
                    if lock is not None:
                        await lock.release()

    async def _supersteps(self, input: Any) -> dict[str, Any]:
        tasks = await self._start(input)
        # a resumed run does not stop again before the superstep it stopped before
        resumed = input is None or isinstance(input, Command)
        while True:
            if self.step > self.stop:
                running = ", ".join(sorted({repr(t.name) for t in tasks}))  # the loop's nodes
                raise GraphRecursionError(
                    f"Recursion limit of {self.limit} reached without hitting a stop "
                    f"condition (next: {running}). You can increase the limit by setting the "
                    "`recursion_limit` config key."
                )
            if not tasks:
                return self.values
            if not resumed and self._stops_at(tasks, self.graph.interrupt_before):
                return self.values
            resumed = False
            await execute(self, tasks)
            if await self._unfinished(tasks):
                return self.values
            ran = tasks
            tasks = await self._commit(tasks)
            if self._stops_at(ran, self.graph.interrupt_after):
                return self.values
            if self._drain is not None:
                await self._drain()

    def _stops_at(self, tasks: list[Task], nodes: frozenset[str]) -> bool:
        """A static interrupt (``interrupt_before``/``_after``): stop the run here, the
        checkpoint says what runs next. Subgraph runs do not stop on their own."""
        if not nodes or self.parent is not None or not any(t.name in nodes for t in tasks):
            return False
        self.emit("updates", {"__interrupt__": ()})
        return True

    async def _unfinished(self, tasks: list[Task]) -> bool:
        """Handle a superstep with failed or interrupted tasks (True: stop here)."""
        failed = [t for t in tasks if t.error is not None]
        paused = [t for t in tasks if t.interrupts]
        lifted = [t for t in tasks if t.parent_command is not None]
        if not failed and not paused and not lifted:
            return False
        if self.saver is not None and self.saved is not None:
            await self.settle()
            await self.saver.aput_results(self.thread, self.saved, pending_results(tasks))
        if failed:
            raise failed[0].error  # type: ignore[misc]
        if lifted and self.parent is not None:
            raise ParentCommand(lifted[0].parent_command)  # type: ignore[arg-type]
        if lifted:
            raise InvalidUpdateError("Command(graph=Command.PARENT) used outside a subgraph")
        self.interrupts = [i for t in paused for i in t.interrupts]
        if self.parent is not None:
            raise GraphInterrupt(self.interrupts)
        self.emit("updates", {"__interrupt__": tuple(self.interrupts)})
        if self.wants("values"):
            self.emit("values", {**self.values, "__interrupt__": tuple(self.interrupts)})
        return True

    # ------------------------------------------------------------------ starting
    async def _start(self, input: Any) -> list[Task]:
        saved = await self._load()
        if input is None or isinstance(input, Command):
            return await resume(self, saved, input)
        if saved is not None and self.parent is not None:
            # this subgraph run started before under the same parent task and was
            # interrupted or failed: continue it, its finished tasks are not run again
            cursor = self.parent.cursor
            answers = dict(cursor.answers) if cursor is not None else {}
            return await resume(self, saved, Command(resume=answers) if answers else None)
        if saved is not None:  # a new input on a thread: its pending tasks are dropped
            self.saved = saved
            self.values = dict(saved.values)
            self.barriers = {k: set(v) for k, v in saved.barriers.items()}
            self.step = saved.step + 1
        else:
            self.values = dict(self.graph.initial)
            self.step = -1
        self.stop = self.step + self.limit + 1
        start = Task(self, f"{self.step + 1}:0", START, None)
        start.writes = self.graph.input_writes(input)
        start.done = True
        await self.save("input", [START], {}, inputs=start.writes)
        self.step += 1
        return [start]

    async def _load(self) -> Saved | None:
        if self.saver is None:
            return None
        if self.checkpoint_id is not None:
            return await self.saver.aat(
                self.thread, checkpoint_number(self.thread, self.checkpoint_id)
            )
        return await self.saver.alatest(self.thread)

    # ------------------------------------------------------------------ tasks
    def tasks(self, pending: Sequence[str | Send]) -> list[Task]:
        return [
            self.task(i, p.node if isinstance(p, Send) else p, p if isinstance(p, Send) else None)
            for i, p in enumerate(pending)
        ]

    def task(self, index: int, name: str, send: Send | None) -> Task:
        task = Task(self, f"{self.step}:{index}", name, send)
        if task.spec is None and name != START:
            raise InvalidUpdateError(f"unknown node {name!r} scheduled")
        return task

    def namespace(self, task: Task) -> str:
        """The thread a subgraph run inside ``task`` checkpoints under: this run's
        thread, the node and the task, and the checkpoint the superstep started from
        (a fork or a new input starts the subgraph afresh; a resume finds it again)."""
        number = None if self.saved is None else self.saved.number
        return subgraph_thread(self.thread, task.name, task.id, number)

    # ------------------------------------------------------------------ merging
    async def _commit(self, tasks: list[Task]) -> list[Task]:
        new = dict(self.values)
        changes = self.merge(new, tasks)
        if self.pending_changes and changes is not None:
            changes = chain_changes(self.pending_changes, changes)
        self.pending_changes = None
        barriers = (
            {k: set(v) for k, v in self.barriers.items()} if self.graph.joins else self.barriers
        )
        chosen = Next()
        single = len(tasks) == 1
        for task in tasks:
            await self.route(task, new, single, barriers, chosen)
        for key, (sources, target) in self.graph.joins.items():
            if barriers.get(key, set()) >= sources:
                chosen.pulls[target] = None
                barriers[key] = set()
        self.values, self.barriers = new, barriers
        pending_next = chosen.pending()
        await self.save("loop", pending_next, changes)
        self.emit("values", dict(new))
        if self.wants("events"):
            names = tuple(p.node if isinstance(p, Send) else p for p in pending_next)
            self.emit("events", StepFinished(self.step, names))
        self.step += 1
        return self.tasks(pending_next)

    def merge(self, values: dict[str, Any], tasks: Sequence[Task]) -> dict[str, Change] | None:
        return merge_writes(self.graph, values, [t.writes for t in tasks], self.saver is not None)

    async def route(
        self,
        task: Task,
        new: dict[str, Any],
        single: bool,
        barriers: dict[str, set[str]],
        chosen: Next,
    ) -> None:
        """Choose what follows ``task`` (its gotos, edges, joins and conditional edges)."""
        graph = self.graph
        for goto in task.gotos:
            if isinstance(goto, Send):
                chosen.pushes.append(goto)
            elif goto != END:
                graph.check_node(goto)
                chosen.pulls[goto] = None
        for target in graph.edges.get(task.name, ()):
            chosen.pulls[target] = None
        for key in graph.joins_from.get(task.name, ()):
            barriers.setdefault(key, set()).add(task.name)
        branches = graph.branches.get(task.name)
        if not branches:
            return
        if single:
            view = new
        else:
            view = dict(self.values)
            self._merge_view(view, task)
        for branch in branches:
            await graph.follow_branch(branch, task.name, view, self.config, chosen)

    def _merge_view(self, view: dict[str, Any], task: Task) -> None:
        merge_writes(self.graph, view, [task.writes], False)

    # ------------------------------------------------------------------ checkpoints
    async def save(
        self,
        source: str,
        pending: list[str | Send],
        changes: dict[str, Change] | None,
        step: int | None = None,
        inputs: list[tuple[str, Any]] | None = None,
    ) -> None:
        if self.saver is None:
            return
        barriers = {k: sorted(v) for k, v in self.barriers.items() if v}
        new = Saved(
            number=0,
            step=self.step if step is None else step,
            source=source,
            values=self.values,
            next=pending,
            barriers=barriers,
            parent=None,
            created_at=now(),
            inputs=inputs,
        )
        saver = self.saver
        await self.settle()  # its number is the new checkpoint's parent
        if not saver.store.blocking or not self.write_behind:
            self.saved = await saver.aput(self.thread, self.saved, new, changes)
            return
        # write-behind: the store writes this checkpoint while the next superstep runs
        # (at most one write in flight; the run waits for it before the next one, before
        # recording unfinished work and before returning)
        state = saver.checkpoint_state(self.thread, self.saved, new, changes)
        self._inflight = asyncio.ensure_future(saver.awrite(self.thread, new, state))
        self.saved = new
        await asyncio.sleep(0)  # hand the write to the store's worker thread now

    async def settle(self) -> None:
        inflight = self._inflight
        if inflight is not None:
            # shielded: cancelling the run (a stream consumer that stops early) must not
            # cancel the write of a checkpoint already taken; the run's last settle
            # (in run's finally) waits for it
            try:
                await asyncio.shield(inflight)
            except asyncio.CancelledError:
                raise  # the write goes on: the run's last settle waits for it
            except BaseException:
                self._inflight = None
                raise
            self._inflight = None


def subgraph_thread(thread: str, node: str, task_id: str, checkpoint: int | None) -> str:
    """The thread a subgraph run checkpoints under (LangGraph's ``checkpoint_ns``)."""
    where = f"{thread}|{node}:{task_id}"
    return where if checkpoint is None else f"{where}#{checkpoint}"
