"""The writes of tasks that finished while their superstep still runs (LangGraph's
pending writes).

A task that finished has had its side effects: its writes are stored at once, so a
process killed before the superstep ends does not run it again on resume (the store's
record of a superstep's unfinished work, ``GraphSaver.aput_results``, is the one a
failed superstep leaves). The writes of one superstep are coalesced: one store write at
a time holding every task finished so far, the gaps between writes growing from 50 ms to
1 s (a superstep of many tasks finishing one by one costs a handful of records, not one
per task), and none once no task runs any more (the superstep's checkpoint, or its
failure record, follows at once).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from loopwright.graph.checkpoint import GraphSaver, PendingResult, Saved
from loopwright.graph.types import START

FIRST_GAP = 0.05
LAST_GAP = 1.0


class TaskView(Protocol):
    """What this module reads of a superstep's task."""

    id: str
    name: str
    done: bool
    error: BaseException | None
    interrupts: tuple[Any, ...]
    parent_command: Any
    writes: list[tuple[str, Any]]
    gotos: list[Any]


class PendingWrites:
    """Stores the finished tasks of one running superstep (module docstring).

    ``saved()`` is the checkpoint the superstep started from and ``settle()`` waits for
    that checkpoint's write: a record of its tasks must follow it in the store."""

    __slots__ = ("_again", "_pausing", "_writer", "saved", "saver", "settle", "tasks", "thread")

    def __init__(
        self,
        saver: GraphSaver,
        thread: str,
        tasks: Sequence[TaskView],
        saved: Callable[[], Saved | None],
        settle: Callable[[], Awaitable[None]],
    ) -> None:
        self.saver, self.thread, self.tasks = saver, thread, tasks
        self.saved, self.settle = saved, settle
        self._writer: asyncio.Future[None] | None = None
        self._again = False
        self._pausing = False

    def task_finished(self) -> None:
        self._again = True
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        gap = FIRST_GAP
        while self._again:
            self._again = False
            if not any(_running(t) for t in self.tasks):
                return
            await self.settle()
            finished = {
                t.id: PendingResult(writes=list(t.writes), gotos=list(t.gotos))
                for t in self.tasks
                if t.done and t.name != START
            }
            saved = self.saved()
            assert saved is not None
            await self.saver.aput_results(self.thread, saved, finished)
            self._pausing = True  # the end of the superstep may cancel this wait
            try:
                await asyncio.sleep(gap)
            finally:
                self._pausing = False
            gap = min(gap * 2, LAST_GAP)

    async def close(self) -> None:
        """The superstep is over: wait for a write in flight (the superstep's next record
        must come after it in the store), skip a wait between writes."""
        writer, self._writer = self._writer, None
        if writer is None:
            return
        if self._pausing:
            writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await writer


def _running(task: TaskView) -> bool:
    return not (
        task.done or task.error is not None or task.interrupts or task.parent_command is not None
    )
