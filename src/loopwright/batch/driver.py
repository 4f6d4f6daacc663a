"""The batch driver: one code path for every engine.

It keeps ``engine.slots`` chunks of tasks in flight, settles each task that comes back --
recorded in the results sink, or queued again while it has retries left -- and keeps the
progress line current. Tasks already recorded in the sink (a results file written by an
earlier, interrupted batch) are not run again. See ``docs/batch.md``.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from loopwright.batch.engine import AgentSource, BatchConfig, Engine, LocalEngine, WorkLost
from loopwright.batch.progress import Progress
from loopwright.batch.sink import ResultSink
from loopwright.batch.tasks import (
    INTERNAL_ERROR,
    WORKER_LOST,
    BatchTask,
    TaskOutcome,
    failure_record,
)
from loopwright.core.run import run_sync


@dataclass(frozen=True, slots=True)
class BatchSummary:
    """What a batch did. ``skipped`` tasks were recorded before it started (not run);
    ``failures`` holds, in input order, the stop reason of every task run now that did
    not end with a final answer; ``cost`` sums every attempt, retried ones included;
    ``duplicates`` counts results dropped because their task was already recorded."""

    total: int
    skipped: int
    done: int
    retries: int
    duplicates: int
    cost: float
    elapsed: float
    failures: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass(frozen=True, slots=True)
class _Attempt:
    """A chunk in flight and what came of it (``lost`` when its worker died)."""

    tasks: tuple[BatchTask, ...]
    outcomes: Sequence[TaskOutcome]
    lost: str | None = None


class _Driver:
    def __init__(
        self, engine: Engine, sink: ResultSink, config: BatchConfig, progress: Progress
    ) -> None:
        self.engine, self.sink, self.config, self.progress = engine, sink, config, progress
        self.queue: deque[BatchTask] = deque()
        self.attempts: dict[str, int] = {}
        self.failures: dict[int, str] = {}

    async def drive(self, tasks: Sequence[BatchTask]) -> None:
        self.queue.extend(tasks)
        running: set[asyncio.Future[_Attempt]] = set()
        try:
            while self.queue or running:
                while self.queue and len(running) < max(1, self.engine.slots):
                    running.add(asyncio.ensure_future(self._attempt(self._next_chunk())))
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    self._settle_chunk(future.result())
        finally:
            for future in running:
                future.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    def _next_chunk(self) -> tuple[BatchTask, ...]:
        size = max(1, self.engine.chunk_size)
        chunk = tuple(self.queue.popleft() for _ in range(min(size, len(self.queue))))
        for task in chunk:
            self.attempts[task.key] = self.attempts.get(task.key, 0) + 1
        return chunk

    async def _attempt(self, chunk: tuple[BatchTask, ...]) -> _Attempt:
        tries = max(self.attempts[task.key] for task in chunk)
        if tries > 1 and self.config.retry_delay:
            await asyncio.sleep(self.config.retry_delay * 2 ** (tries - 2))
        try:
            return _Attempt(chunk, await self.engine.run(chunk))
        except WorkLost as exc:
            return _Attempt(chunk, (), str(exc) or "the worker died")

    def _settle_chunk(self, attempt: _Attempt) -> None:
        by_key = {outcome.task.key: outcome for outcome in attempt.outcomes}
        for task in attempt.tasks:
            outcome = by_key.get(task.key)
            if outcome is None:
                lost = attempt.lost or "the engine returned no outcome for the task"
                self._settle(task, None, lost)
            else:
                self._settle(task, outcome, None)

    def _settle(self, task: BatchTask, outcome: TaskOutcome | None, lost: str | None) -> None:
        if task.key in self.sink:  # delivered again after it was recorded: drop it
            self.sink.duplicates += 1
            return
        if outcome is not None:
            self.progress.cost += outcome.cost
        failed = outcome is None or outcome.error is not None
        retryable = failed or (outcome is not None and outcome.stop in self.config.retry_on)
        tries = self.attempts[task.key]
        if retryable and tries <= self.config.retries:
            self.queue.appendleft(task)
            self.progress.retried()
            return
        if outcome is None:
            record, stop = failure_record(task, WORKER_LOST, lost or ""), WORKER_LOST
        elif outcome.error is not None:
            record, stop = failure_record(task, INTERNAL_ERROR, outcome.error), INTERNAL_ERROR
        else:
            record, stop = dict(outcome.record or {}), outcome.stop
        record["attempts"] = tries
        if self.sink.write(record):
            ok = stop == "final_answer"
            if not ok:
                self.failures[task.index] = stop
            self.progress.add(ok, 0.0)


async def arun_batch(
    agent: AgentSource,
    tasks: Iterable[BatchTask],
    out: ResultSink | Path | str | IO[str],
    *,
    engine: Engine | None = None,
    config: BatchConfig | None = None,
    progress: IO[str] | None = None,
) -> BatchSummary:
    """Run every task not yet recorded in ``out`` and record its result line there.

    ``out`` is a results file (appended to, resumable: tasks it already records are
    skipped; locked while the batch runs), an open text stream (e.g. ``sys.stdout``) or
    a :class:`ResultSink`. ``engine`` defaults to :class:`LocalEngine`. ``progress``
    receives the progress line (e.g. ``sys.stderr``). See ``docs/batch.md``."""
    config = config or BatchConfig()
    engine = engine or LocalEngine()
    sink = _sink(out)
    try:
        all_tasks = list(tasks)
        pending = [task for task in all_tasks if task.key not in sink]
        meter = Progress(len(pending), progress)
        driver = _Driver(engine, sink, config, meter)
        if pending:
            try:  # closed even when start fails half-way (Ray started, the source unpicklable)
                await engine.start(agent, config)
                meter.started = time.monotonic()  # the rate is of runs, not of starting Ray
                await driver.drive(pending)
            finally:
                await engine.close()
        return BatchSummary(
            total=len(all_tasks),
            skipped=len(all_tasks) - len(pending),
            done=meter.done,
            retries=meter.retries,
            duplicates=sink.duplicates,
            cost=meter.cost,
            elapsed=meter.elapsed,
            failures=tuple(driver.failures[index] for index in sorted(driver.failures)),
        )
    finally:
        if sink is not out:
            sink.close()


def run_batch(
    agent: AgentSource,
    tasks: Iterable[BatchTask],
    out: ResultSink | Path | str | IO[str],
    *,
    engine: Engine | None = None,
    config: BatchConfig | None = None,
    progress: IO[str] | None = None,
) -> BatchSummary:
    """Synchronous :func:`arun_batch` (uses ``asyncio.run``)."""
    return run_sync(
        lambda: arun_batch(agent, tasks, out, engine=engine, config=config, progress=progress),
        "run_batch()",
        "arun_batch(...)",
    )


def _sink(out: ResultSink | Path | str | IO[str]) -> ResultSink:
    if isinstance(out, ResultSink):
        return out
    if isinstance(out, Path | str):
        return ResultSink.open(Path(out))
    return ResultSink.to_stream(out)
