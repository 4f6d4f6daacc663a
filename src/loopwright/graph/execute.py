"""Running the tasks of one superstep: concurrently (``max_concurrency`` bounds how many
at once), each node attempt retried by its ``RetryPolicy``; a node that pauses
(``interrupt()``), fails or hands a ``Command`` to its parent graph leaves that on its
task for the superstep loop (``graph/pregel.py``) to handle. ``async`` nodes run as
coroutines, plain ``def`` nodes are placed like sync tools: on worker threads until they
prove short and non-blocking.

With a checkpointer, a superstep of several tasks stores each task's writes as it
finishes (``graph/pending.py``), so a resume re-runs only the unfinished ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from loopwright.graph.pending import PendingWrites
from loopwright.graph.task import CURRENT_TASK, Task, ignore
from loopwright.graph.types import (
    GraphError,
    GraphInterrupt,
    ParentCommand,
    TaskFinished,
    TaskStarted,
    retry_delay,
)
from loopwright.tools.execution import call_sync

if TYPE_CHECKING:
    from loopwright.graph.builder import NodeSpec
    from loopwright.graph.pregel import _Run


async def execute(run: _Run, tasks: list[Task]) -> None:
    todo = [t for t in tasks if not t.done]
    if not todo:
        return
    for task in todo:
        task.input = _input_of(run, task)
        task.interrupts = ()
    if run.saver is not None and any(t.spec and t.spec.subgraph for t in todo):
        await run.settle()  # a subgraph's namespace names the stored checkpoint
    if len(todo) == 1:
        await _run_task(run, todo[0])
        return
    if run.saver is not None and run.saved is not None:
        run.pending_writes = PendingWrites(
            run.saver, run.thread, tasks, lambda: run.saved, run.settle
        )
    try:
        await _run_all(run, todo)
    except BaseException:
        with contextlib.suppress(Exception):  # the run's own exception goes on
            await _end_pending(run)
        raise
    await _end_pending(run)


async def _end_pending(run: _Run) -> None:
    pending, run.pending_writes = run.pending_writes, None
    if pending is not None:
        await pending.close()


async def _run_all(run: _Run, todo: list[Task]) -> None:
    lanes = run.workers
    if lanes is None or len(todo) <= lanes:
        await asyncio.gather(*(_run_task(run, t) for t in todo))
        return
    queue = iter(todo)

    async def lane() -> None:
        for task in queue:  # the shared iterator hands each task to one lane
            await _run_task(run, task)

    await asyncio.gather(*(lane() for _ in range(lanes)))


def _input_of(run: _Run, task: Task) -> Any:
    if task.send is not None:
        return task.send.arg
    spec = task.spec
    assert spec is not None
    if spec.subgraph is not None:
        return dict(run.values)
    return (spec.input or run.graph.schema).coerce(run.values)


def _node_span(run: _Run, task: Task) -> contextlib.AbstractContextManager[Any]:
    if run.tracer is None:
        return contextlib.nullcontext(ignore)
    return run.tracer.node(task.name, run.step, task.id)


async def _run_task(run: _Run, task: Task) -> None:
    with _node_span(run, task) as failed:
        await _call(run, task)
        if task.error is not None:
            failed(task.error)
    if run.pending_writes is not None and task.done:
        run.pending_writes.task_finished()


async def _call(run: _Run, task: Task) -> None:
    token = CURRENT_TASK.set(task)
    _started(run, task)
    spec = task.spec
    assert spec is not None
    failures = 0
    try:
        while True:
            if task.cursor is not None:
                task.cursor.used = 0  # each attempt runs from the start: answers again
            try:
                out = await _call_node(run, spec, task)
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
        _absorb(run, task, out)
    except BaseException as exc:
        _failed(run, task, exc)
    finally:
        CURRENT_TASK.reset(token)


def _call_node(run: _Run, spec: NodeSpec, task: Task) -> Awaitable[Any]:
    """One attempt of the node: a coroutine for ``async`` nodes and subgraphs; a
    plain ``def`` node placed like a sync tool (``tools/execution.py``): on a worker
    thread until it has proved short and non-blocking, so a node may block or call
    a synchronous API that runs its own event loop (``agent.run``)."""
    if spec.subgraph is not None:
        return cast(Awaitable[Any], spec.subgraph.run_nested(task.input, run.config, task))
    args = {"config": run.config} if spec.takes_config else {}
    if spec.is_async:
        return cast(Awaitable[Any], spec.fn(task.input, **args))
    return call_sync(
        functools.partial(spec.fn, task.input),
        args,
        (spec.inline, spec.profile),
        owner=spec.profile,
    )


def _started(run: _Run, task: Task) -> None:
    if run.wants("events"):
        run.emit("events", TaskStarted(run.step, task.name, task.id))


def _failed(run: _Run, task: Task, exc: BaseException) -> None:
    if isinstance(exc, GraphInterrupt):
        task.interrupts = exc.interrupts
    elif isinstance(exc, ParentCommand):
        if task.spec is not None and task.spec.subgraph is not None:
            try:
                _absorb(run, task, replace(exc.command, graph=None))
            except Exception as inner:
                task.error = inner
            return
        task.parent_command = exc.command
    elif isinstance(exc, (KeyboardInterrupt, SystemExit, asyncio.CancelledError)):
        raise exc
    else:
        task.error = exc
    if run.wants("events"):
        error = None if task.error is None else repr(task.error)
        run.emit("events", TaskFinished(run.step, task.name, task.id, None, error))


def _absorb(run: _Run, task: Task, out: Any) -> None:
    writes, gotos = run.graph.output_writes(task.name, out)
    task.writes, task.gotos, task.done = writes, gotos, True
    if run.sink is not None:
        update = _update_view(writes, out)
        run.emit("updates", {task.name: update})
        if "events" in run.modes:
            run.emit("events", TaskFinished(run.step, task.name, task.id, update))


def _update_view(writes: list[tuple[str, Any]], out: Any) -> Any:
    if not writes:
        return None
    return dict(writes)
