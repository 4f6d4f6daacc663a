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
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from loopwright.graph.checkpoint import Change, GraphSaver, PendingResult, Saved, now
from loopwright.graph.pending import PendingWrites
from loopwright.graph.thread_lock import ThreadLock
from loopwright.graph.types import (
    END,
    START,
    Command,
    EmptyInputError,
    GraphError,
    GraphInterrupt,
    GraphRecursionError,
    GraphTracer,
    Interrupt,
    InvalidUpdateError,
    NodeRunEvent,
    ParentCommand,
    Send,
    StepFinished,
    TaskFinished,
    TaskStarted,
    checkpoint_number,
    config_count,
    configurable_of,
    retry_delay,
)
from loopwright.graph.writes import chain_changes, merge_writes
from loopwright.store import AsyncStore
from loopwright.tools.execution import call_sync

if TYPE_CHECKING:
    from loopwright.graph.builder import NodeSpec
    from loopwright.graph.engine import CompiledStateGraph

Emit = Callable[[str, Any], None]
_CURRENT: ContextVar[_Task | None] = ContextVar("loopwright_graph_task", default=None)


class _Cursor:
    """Resume answers of one task: ``resume`` for its own ``interrupt()`` calls, in
    order; ``answers`` (interrupt id -> answer) for a subgraph task, handed to the
    subgraph run, which routes each to its own waiting task."""

    __slots__ = ("answers", "key", "resume", "used")

    def __init__(self, key: str, resume: list[Any]) -> None:
        self.key = key
        self.resume = resume
        self.answers: dict[str, Any] = {}
        self.used = 0


class Next:
    """The tasks chosen for the next superstep: nodes reached by edges (each once, run
    in name order) and Sends (in the order sent)."""

    __slots__ = ("pulls", "pushes")

    def __init__(self) -> None:
        self.pulls: dict[str, None] = {}
        self.pushes: list[Send] = []

    def pending(self) -> list[str | Send]:
        return [*sorted(self.pulls), *self.pushes]


class _Task:
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
        self.cursor: _Cursor | None = None


def interrupt(value: Any) -> Any:
    """Pause the graph inside a node and show ``value`` to the caller.

    The first call raises (the run returns ``{"__interrupt__": [Interrupt(value, id)]}``
    and, with a checkpointer, the thread waits). ``invoke(Command(resume=answer), config)``
    runs the node again *from its start*; this call then returns ``answer``. Several
    calls in one node are matched to answers by their order.
    """
    task = _CURRENT.get()
    if task is None:
        raise GraphError("interrupt() can only be called while a graph node runs")
    cursor = task.cursor
    if cursor is None:
        cursor = task.cursor = _Cursor(f"{task.run.thread}:{task.id}", [])
    index = cursor.used
    cursor.used += 1
    if index < len(cursor.resume):
        return cursor.resume[index]
    digest = hashlib.blake2b(f"{cursor.key}:{index}".encode(), digest_size=16).hexdigest()
    raise GraphInterrupt([Interrupt(value, digest)])


def get_stream_writer() -> Callable[[Any], None]:
    """Inside a node: a function that sends any value to ``stream_mode="custom"``
    (progress, partial results). It does nothing when nobody streams ``custom``."""
    task = _CURRENT.get()
    if task is None or not task.run.wants("custom"):
        return _ignore
    run = task.run
    return lambda chunk: run.emit("custom", chunk)


def _ignore(chunk: Any) -> None:
    return None


def current_task_emit() -> Callable[[Any], None] | None:
    """For nodes that produce their own events (the agent node): where to send them, or
    ``None`` when nobody streams ``events``."""
    task = _CURRENT.get()
    if task is None or not task.run.wants("events"):
        return None
    run, step, name = task.run, task.run.step, task.name
    return lambda event: run.emit("events", NodeRunEvent(step, name, event))


async def task_session() -> tuple[AsyncStore, str] | None:
    """For nodes that keep their own records (the tool node's intents): the store and a
    session id of the running task, the same when a resume runs the task again and new
    for a fork; ``None`` without a checkpointer. Its checkpoint is stored first."""
    task = _CURRENT.get()
    if task is None or task.run.saver is None:
        return None
    await task.run._settle()  # the session names the checkpoint the superstep started from
    return task.run.saver.aio, task.run.namespace(task)


class _Run:
    """One invocation of a compiled graph (one call of invoke/stream)."""

    def __init__(
        self,
        graph: CompiledStateGraph,
        config: Mapping[str, Any],
        emit: Emit | None = None,
        modes: frozenset[str] = frozenset(),
        parent: _Task | None = None,
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
        self._emit = emit
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
        self._pending_changes: dict[str, Change] | None = None
        self._inflight: asyncio.Future[Saved] | None = None
        self.write_behind = True
        """Write a superstep's checkpoint while the next one runs (``durability="async"``)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._pending: PendingWrites | None = None
        """Stores the tasks of the superstep running now as each one finishes (a
        superstep of several tasks with a checkpointer), else ``None``."""

    def wants(self, mode: str) -> bool:
        return self._emit is not None and mode in self.modes

    def emit(self, mode: str, chunk: Any) -> None:
        if self._emit is not None and mode in self.modes:
            loop = self._loop
            if loop is not None and threading.get_ident() != self._loop_thread:
                loop.call_soon_threadsafe(self._emit, mode, chunk)
            else:
                self._emit(mode, chunk)

    # ------------------------------------------------------------------ main loop
    async def run(self, input: Any) -> dict[str, Any]:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        span = (
            contextlib.nullcontext(_ignore)
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
                    await self._settle()  # the last checkpoint is stored before returning
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
            await self._execute(tasks)
            if await self._unfinished(tasks):
                return self.values
            ran = tasks
            tasks = await self._commit(tasks)
            if self._stops_at(ran, self.graph.interrupt_after):
                return self.values
            if self._drain is not None:
                await self._drain()

    def _stops_at(self, tasks: list[_Task], nodes: frozenset[str]) -> bool:
        """A static interrupt (``interrupt_before``/``_after``): stop the run here, the
        checkpoint says what runs next. Subgraph runs do not stop on their own."""
        if not nodes or self.parent is not None or not any(t.name in nodes for t in tasks):
            return False
        self.emit("updates", {"__interrupt__": ()})
        return True

    async def _unfinished(self, tasks: list[_Task]) -> bool:
        """Handle a superstep with failed or interrupted tasks (True: stop here)."""
        failed = [t for t in tasks if t.error is not None]
        paused = [t for t in tasks if t.interrupts]
        lifted = [t for t in tasks if t.parent_command is not None]
        if not failed and not paused and not lifted:
            return False
        if self.saver is not None and self.saved is not None:
            await self._settle()
            await self.saver.aput_results(self.thread, self.saved, self._results(tasks))
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

    def _results(self, tasks: list[_Task]) -> dict[str, PendingResult]:
        out: dict[str, PendingResult] = {}
        for t in tasks:
            if t.name == START:
                continue
            ok = t.error is None and not t.interrupts and t.parent_command is None
            out[t.id] = PendingResult(
                writes=list(t.writes) if ok else None,
                gotos=list(t.gotos) if ok else [],
                error=None if t.error is None else repr(t.error),
                resume=list(t.cursor.resume) if t.cursor is not None else [],
                interrupts=list(t.interrupts),
            )
        return out

    # ------------------------------------------------------------------ starting
    async def _start(self, input: Any) -> list[_Task]:
        saved = await self._load()
        if input is None or isinstance(input, Command):
            return await self._resume(saved, input)
        if saved is not None and self.parent is not None:
            # this subgraph run started before under the same parent task and was
            # interrupted or failed: continue it, its finished tasks are not run again
            cursor = self.parent.cursor
            answers = dict(cursor.answers) if cursor is not None else {}
            return await self._resume(saved, Command(resume=answers) if answers else None)
        if saved is not None:  # a new input on a thread: its pending tasks are dropped
            self.saved = saved
            self.values = dict(saved.values)
            self.barriers = {k: set(v) for k, v in saved.barriers.items()}
            self.step = saved.step + 1
        else:
            self.values = dict(self.graph.initial)
            self.step = -1
        self.stop = self.step + self.limit + 1
        start = _Task(self, f"{self.step + 1}:0", START, None)
        start.writes = self.graph.input_writes(input)
        start.done = True
        await self._save("input", [START], {}, inputs=start.writes)
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

    async def _resume(self, saved: Saved | None, command: Command[Any] | None) -> list[_Task]:
        if command is not None and command.resume is not None and self.saver is None:
            raise GraphError("Cannot use Command(resume=...) without a checkpointer")
        if saved is None:
            raise EmptyInputError(
                "the graph got no input and the thread has no checkpoint to continue; "
                "pass an input (or a thread id that has state)"
            )
        self.values = dict(saved.values)
        self.barriers = {k: set(v) for k, v in saved.barriers.items()}
        self.saved = saved
        self.step = saved.step + 1
        self.stop = self.step + self.limit + 1
        results = saved.results
        if self.checkpoint_id is not None and (command is None or command.resume is None):
            results = {}  # time travel: the pending superstep runs again from scratch
            await self._save("fork", list(saved.next), {}, step=saved.step)
            self.step = saved.step + 1
        self._check_pending(saved)
        tasks = self._tasks(list(saved.next))
        for task in tasks:
            if task.name == START:  # stopped before its input was applied: apply it now
                if saved.inputs is None:
                    raise GraphError(
                        f"checkpoint {saved.number} of thread {self.thread!r} is a run's "
                        "input, stored without it: invoke the graph with that input again"
                    )
                task.writes, task.done = list(saved.inputs), True
                continue
            self._restore(task, results.get(task.id))
        if command is not None:
            self._apply_command(command, tasks)
        self.emit("values", dict(self.values))
        return tasks

    def _check_pending(self, saved: Saved) -> None:
        nodes = self.graph.nodes
        for pending in saved.next:
            name = pending.node if isinstance(pending, Send) else pending
            if name != START and name not in nodes:  # the graph changed since
                raise GraphError(
                    f"checkpoint {saved.number} of thread {self.thread!r} runs node {name!r} "
                    "next, which this graph does not have: add the node back, or choose what "
                    "runs next with update_state(config, values, as_node=...)"
                )

    def _restore(self, task: _Task, result: PendingResult | None) -> None:
        if result is None:
            return
        if result.writes is not None:
            task.writes, task.gotos, task.done = list(result.writes), list(result.gotos), True
        else:
            task.cursor = _Cursor(f"{self.thread}:{task.id}", list(result.resume))
            task.interrupts = tuple(result.interrupts)

    def _apply_command(self, command: Command[Any], tasks: list[_Task]) -> None:
        if command.resume is not None:
            self._give_answers(command.resume, tasks)
        for task in tasks:
            task.interrupts = ()
        writes = self.graph.filter_writes(command.update_items("the input"))
        if writes:
            null = _Task(self, "update", "__input__", None)
            null.writes = writes
            values = dict(self.values)
            self._pending_changes = self._merge(values, [null])
            self.values = values
        for goto in command.goto_targets("the input"):
            if isinstance(goto, Send):
                tasks.append(self._task(len(tasks), goto.node, goto))
            elif goto != END and all(t.name != goto or t.send for t in tasks):
                self.graph.check_node(goto)
                tasks.append(self._task(len(tasks), goto, None))

    def _give_answers(self, resume: Any, tasks: list[_Task]) -> None:
        waiting = [t for t in tasks if t.interrupts]
        by_id = {i.id: t for t in waiting for i in t.interrupts}
        if isinstance(resume, Mapping) and resume and all(k in by_id for k in resume):
            answers = [(by_id[k], k, v) for k, v in resume.items()]
        elif len(waiting) > 1 or (waiting and len(waiting[0].interrupts) > 1):
            unknown = [repr(k) for k in resume if k not in by_id] if _is_id_map(resume) else []
            problem = (
                f"unknown interrupt id(s) {', '.join(unknown)}"
                if unknown
                else "several interrupts are pending"
            )
            raise GraphError(
                f"{problem}: resume with Command(resume={{interrupt_id: answer, ...}}); "
                f"pending ids: {', '.join(by_id)}"
            )
        elif not waiting:
            raise GraphError("Command(resume=...) given, but no interrupt is pending")
        else:
            answers = [(waiting[0], waiting[0].interrupts[0].id, resume)]
        for task, interrupt_id, answer in answers:
            if task.cursor is None:
                task.cursor = _Cursor(f"{self.thread}:{task.id}", [])
            if task.spec is not None and task.spec.subgraph is not None:
                task.cursor.answers[interrupt_id] = answer  # for the subgraph's own task
            else:
                task.cursor.resume.append(answer)

    # ------------------------------------------------------------------ tasks
    def _tasks(self, pending: Sequence[str | Send]) -> list[_Task]:
        return [
            self._task(i, p.node if isinstance(p, Send) else p, p if isinstance(p, Send) else None)
            for i, p in enumerate(pending)
        ]

    def _task(self, index: int, name: str, send: Send | None) -> _Task:
        task = _Task(self, f"{self.step}:{index}", name, send)
        if task.spec is None and name != START:
            raise InvalidUpdateError(f"unknown node {name!r} scheduled")
        return task

    def namespace(self, task: _Task) -> str:
        """The thread a subgraph run inside ``task`` checkpoints under: this run's
        thread, the node and the task, and the checkpoint the superstep started from
        (a fork or a new input starts the subgraph afresh; a resume finds it again)."""
        number = None if self.saved is None else self.saved.number
        return subgraph_thread(self.thread, task.name, task.id, number)

    async def _execute(self, tasks: list[_Task]) -> None:
        todo = [t for t in tasks if not t.done]
        if not todo:
            return
        for task in todo:
            task.input = self._input_of(task)
            task.interrupts = ()
        if self.saver is not None and any(t.spec and t.spec.subgraph for t in todo):
            await self._settle()  # a subgraph's namespace names the stored checkpoint
        if len(todo) == 1:
            await self._run_task(todo[0])
            return
        if self.saver is not None and self.saved is not None:
            self._pending = PendingWrites(
                self.saver, self.thread, tasks, lambda: self.saved, self._settle
            )
        try:
            await self._run_all(todo)
        except BaseException:
            with contextlib.suppress(Exception):  # the run's own exception goes on
                await self._end_pending()
            raise
        await self._end_pending()

    async def _end_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            await pending.close()

    async def _run_all(self, todo: list[_Task]) -> None:
        lanes = self.workers
        if lanes is None or len(todo) <= lanes:
            await asyncio.gather(*(self._run_task(t) for t in todo))
            return
        queue = iter(todo)

        async def lane() -> None:
            for task in queue:  # the shared iterator hands each task to one lane
                await self._run_task(task)

        await asyncio.gather(*(lane() for _ in range(lanes)))

    def _input_of(self, task: _Task) -> Any:
        if task.send is not None:
            return task.send.arg
        spec = task.spec
        assert spec is not None
        if spec.subgraph is not None:
            return dict(self.values)
        return (spec.input or self.graph.schema).coerce(self.values)

    def _node_span(self, task: _Task) -> contextlib.AbstractContextManager[Any]:
        if self.tracer is None:
            return contextlib.nullcontext(_ignore)
        return self.tracer.node(task.name, self.step, task.id)

    async def _run_task(self, task: _Task) -> None:
        with self._node_span(task) as failed:
            await self._call(task)
            if task.error is not None:
                failed(task.error)
        if self._pending is not None and task.done:
            self._pending.task_finished()

    async def _call(self, task: _Task) -> None:
        token = _CURRENT.set(task)
        self._started(task)
        spec = task.spec
        assert spec is not None
        failures = 0
        try:
            while True:
                if task.cursor is not None:
                    task.cursor.used = 0  # each attempt runs from the start: answers again
                try:
                    out = await self._call_node(spec, task)
                    break
                except Exception as exc:
                    failures += 1
                    wait = retry_delay(spec.retry, exc, failures)
                    if wait is None:
                        raise
                    await asyncio.sleep(wait)
            if task.cursor is not None and task.cursor.used > len(task.cursor.resume):
                raise GraphError(  # it pauses by raising: the node caught it and went on
                    f"node {task.name!r} caught the exception by which interrupt() pauses the "
                    "run (an `except Exception:` around it): call interrupt() outside the try"
                )
            self._absorb(task, out)
        except BaseException as exc:
            self._failed(task, exc)
        finally:
            _CURRENT.reset(token)

    def _call_node(self, spec: NodeSpec, task: _Task) -> Awaitable[Any]:
        """One attempt of the node: a coroutine for ``async`` nodes and subgraphs; a
        plain ``def`` node placed like a sync tool (``tools/execution.py``): on a worker
        thread until it has proved short and non-blocking, so a node may block or call
        a synchronous API that runs its own event loop (``agent.run``)."""
        if spec.subgraph is not None:
            return cast(Awaitable[Any], spec.subgraph.run_nested(task.input, self.config, task))
        args = {"config": self.config} if spec.takes_config else {}
        if spec.is_async:
            return cast(Awaitable[Any], spec.fn(task.input, **args))
        return call_sync(
            functools.partial(spec.fn, task.input),
            args,
            (spec.inline, spec.profile),
            owner=spec.profile,
        )

    def _started(self, task: _Task) -> None:
        if self.wants("events"):
            self.emit("events", TaskStarted(self.step, task.name, task.id))

    def _failed(self, task: _Task, exc: BaseException) -> None:
        if isinstance(exc, GraphInterrupt):
            task.interrupts = exc.interrupts
        elif isinstance(exc, ParentCommand):
            if task.spec is not None and task.spec.subgraph is not None:
                try:
                    self._absorb(task, replace(exc.command, graph=None))
                except Exception as inner:
                    task.error = inner
                return
            task.parent_command = exc.command
        elif isinstance(exc, (KeyboardInterrupt, SystemExit, asyncio.CancelledError)):
            raise exc
        else:
            task.error = exc
        if self.wants("events"):
            error = None if task.error is None else repr(task.error)
            self.emit("events", TaskFinished(self.step, task.name, task.id, None, error))

    def _absorb(self, task: _Task, out: Any) -> None:
        writes, gotos = self.graph.output_writes(task.name, out)
        task.writes, task.gotos, task.done = writes, gotos, True
        if self._emit is not None:
            update = _update_view(writes, out)
            self.emit("updates", {task.name: update})
            if "events" in self.modes:
                self.emit("events", TaskFinished(self.step, task.name, task.id, update))

    # ------------------------------------------------------------------ merging
    async def _commit(self, tasks: list[_Task]) -> list[_Task]:
        new = dict(self.values)
        changes = self._merge(new, tasks)
        if self._pending_changes and changes is not None:
            changes = chain_changes(self._pending_changes, changes)
        self._pending_changes = None
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
        await self._save("loop", pending_next, changes)
        self.emit("values", dict(new))
        if self.wants("events"):
            names = tuple(p.node if isinstance(p, Send) else p for p in pending_next)
            self.emit("events", StepFinished(self.step, names))
        self.step += 1
        return self._tasks(pending_next)

    def _merge(self, values: dict[str, Any], tasks: Sequence[_Task]) -> dict[str, Change] | None:
        return merge_writes(self.graph, values, [t.writes for t in tasks], self.saver is not None)

    async def route(
        self,
        task: _Task,
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

    def _merge_view(self, view: dict[str, Any], task: _Task) -> None:
        merge_writes(self.graph, view, [task.writes], False)

    # ------------------------------------------------------------------ checkpoints
    async def _save(
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
        await self._settle()  # its number is the new checkpoint's parent
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

    async def _settle(self) -> None:
        inflight = self._inflight
        if inflight is not None:
            # shielded: cancelling the run (a stream consumer that stops early) must not
            # cancel the write of a checkpoint already taken; the run's last _settle
            # (in run's finally) waits for it
            try:
                await asyncio.shield(inflight)
            except asyncio.CancelledError:
                raise  # the write goes on: the run's last _settle waits for it
            except BaseException:
                self._inflight = None
                raise
            self._inflight = None


def _is_id_map(resume: Any) -> bool:
    """A resume value meant as answers by interrupt id (a dict with string keys)."""
    return isinstance(resume, Mapping) and bool(resume) and all(isinstance(k, str) for k in resume)


def subgraph_thread(thread: str, node: str, task_id: str, checkpoint: int | None) -> str:
    """The thread a subgraph run checkpoints under (LangGraph's ``checkpoint_ns``)."""
    where = f"{thread}|{node}:{task_id}"
    return where if checkpoint is None else f"{where}#{checkpoint}"


def _update_view(writes: list[tuple[str, Any]], out: Any) -> Any:
    if not writes:
        return None
    return dict(writes)
