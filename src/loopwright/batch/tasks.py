"""Batch tasks: what one line of a prompts file asks for, and running one in a process.

A task is a prompt with an optional ``id`` and optional per-task limits. Its **key** --
the ``id`` as text, or ``#N`` (its position, from 0) when the line has no ``id`` -- is
what makes a batch idempotent: the results sink records each key at most once, and a
key already recorded is not run again (see :mod:`loopwright.batch.sink`).

:func:`execute` runs one task on an agent (or on a strategy over it) and never raises:
an exception becomes a failed :class:`TaskOutcome` that the driver may retry. Both
engines run tasks through it, in the driver's process (``local``) or in Ray workers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from loopwright.core.errors import UserError
from loopwright.core.messages import JSONValue
from loopwright.core.run import RunResult, RunStop
from loopwright.loop import Agent, Limits
from loopwright.tracing.serialize import result_to_dict

MAX_LINE_BYTES: Final = 4_000_000

LIMIT_FIELDS: Final = ("max_turns", "token_budget", "cost_budget", "timeout")
"""The :class:`~loopwright.loop.Limits` fields a task line may set for itself."""

INTERNAL_ERROR: Final = "internal_error"
"""``stop_reason`` of a task whose run raised on every attempt."""
WORKER_LOST: Final = "worker_lost"
"""``stop_reason`` of a task whose worker (process or node) died on every attempt."""


@dataclass(frozen=True, slots=True)
class BatchTask:
    """One prompt of a batch. ``index`` is its position (from 0); ``limits`` are
    ``(field, value)`` pairs laid over the batch's limits for this task only."""

    index: int
    prompt: str
    id: str | int | None = None
    limits: tuple[tuple[str, int | float], ...] = ()

    @property
    def key(self) -> str:
        """The task's identity in the results: its ``id`` as text, else ``#index``."""
        return f"#{self.index}" if self.id is None else str(self.id)


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """What running a task gave: the result ``record`` (JSON-ready), or an ``error``
    (the run raised) with an empty record. ``stop`` is the stop reason's value."""

    task: BatchTask
    stop: str
    cost: float = 0.0
    record: Mapping[str, JSONValue] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.stop == RunStop.FINAL_ANSWER.value


# ------------------------------------------------------------------ reading tasks
MAX_LISTED_ERRORS: Final = 50
"""How many bad lines one error lists (the count of the rest follows)."""


@dataclass(frozen=True, slots=True)
class _Unreadable:
    """A line that is not JSON (or too long): its error, reported with the others."""

    message: str


def read_tasks(path: Path) -> list[BatchTask]:
    """The tasks of a prompts file (JSONL). Every bad line is found before anything
    runs: one :class:`UserError` lists them all, each as ``path:LINE: what is wrong``.

    Each line is a JSON string (the prompt) or an object ``{"prompt": ..., "id": ...,
    "limits": {...}}`` (``id`` and ``limits`` optional). Blank lines are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read it as UTF-8 text ({exc})") from None
    records: list[tuple[str, object]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        if len(line) > MAX_LINE_BYTES:
            records.append(
                (where, _Unreadable(f"{where}: the line is longer than {MAX_LINE_BYTES} bytes"))
            )
            continue
        try:
            records.append((where, json.loads(line)))
        except ValueError:
            records.append(
                (
                    where,
                    _Unreadable(
                        f'{where}: not JSON; write one JSON string or {{"prompt": ...}} per line'
                    ),
                )
            )
    if not records:
        raise UserError(f"{path}: no prompts in the file")
    return _tasks(records, str(path))


def make_tasks(prompts: Iterable[str | Mapping[str, object]]) -> list[BatchTask]:
    """Tasks from Python values: prompt strings or mappings shaped like a file's lines
    (every bad one is listed in one :class:`UserError`, as ``prompt N: ...``)."""
    return _tasks([(f"prompt {i}", value) for i, value in enumerate(prompts)], "prompts")


def _tasks(records: list[tuple[str, object]], source: str) -> list[BatchTask]:
    tasks: list[BatchTask] = []
    errors: list[str] = []
    seen: dict[str, str] = {}
    for index, (where, value) in enumerate(records):
        if isinstance(value, _Unreadable):
            errors.append(value.message)
            continue
        try:
            task = _task(index, value, where)
        except UserError as exc:
            errors.append(str(exc))
            continue
        if task.key in seen:
            errors.append(
                f"{where}: task id {task.key!r} repeats {seen[task.key]}; every task needs "
                "its own id (results are recorded once per id)"
            )
            continue
        seen[task.key] = where
        tasks.append(task)
    if errors:
        raise UserError(_bad_lines(source, errors))
    return tasks


def _bad_lines(source: str, errors: list[str]) -> str:
    """One error for every bad line: a whole file can be fixed in one pass."""
    if len(errors) == 1:
        return errors[0]
    listed = errors[:MAX_LISTED_ERRORS]
    more = len(errors) - len(listed)
    tail = [f"  ... and {more} more"] if more else []
    head = f"{source}: {len(errors)} bad lines, nothing was run:"
    return "\n".join([head, *(f"  {e}" for e in listed), *tail])


def _task(index: int, data: object, where: str) -> BatchTask:
    ident: object = None
    limits: tuple[tuple[str, int | float], ...] = ()
    if isinstance(data, Mapping):
        unknown = sorted(set(data) - {"prompt", "id", "limits"})
        if unknown:
            raise UserError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}")
        ident = data.get("id")
        if ident is not None and (not isinstance(ident, str | int) or isinstance(ident, bool)):
            raise UserError(f"{where}: 'id' must be a string or an integer")
        if isinstance(ident, str) and not ident.strip():
            # a blank id is no identity to record results under; leaving 'id' out is
            # what gives a task its position as id
            raise UserError(
                f"{where}: 'id' is empty; give the task a non-empty id, or leave 'id' out "
                "(the task id is then its position, #N)"
            )
        limits = _limits_of(data.get("limits"), where)
        data = data.get("prompt")
    if not isinstance(data, str) or not data.strip() or "\x00" in data:
        raise UserError(f"{where}: needs a non-empty text prompt")
    return BatchTask(index, data, ident, limits)  # type: ignore[arg-type]


def _limits_of(value: object, where: str) -> tuple[tuple[str, int | float], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise UserError(f"{where}: 'limits' must be an object, e.g. {{\"max_turns\": 3}}")
    pairs: list[tuple[str, int | float]] = []
    for name, number in value.items():
        if name not in LIMIT_FIELDS:
            raise UserError(
                f"{where}: limits.{name} is not a per-task limit; use {', '.join(LIMIT_FIELDS)}"
            )
        if not isinstance(number, int | float) or isinstance(number, bool):
            raise UserError(f"{where}: limits.{name} must be a number")
        if isinstance(number, float) and not math.isfinite(number):
            raise UserError(f"{where}: limits.{name} must be finite")
        pairs.append((name, number))
    try:
        replace(Limits(), **dict(pairs))  # type: ignore[arg-type]  # checked here, not mid-batch
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: {exc}") from None
    return tuple(pairs)


# ------------------------------------------------------------------ running a task
def task_limits(base: Limits, task: BatchTask) -> Limits:
    """The limits ``task`` runs under: ``base`` with the task's own fields on top."""
    return replace(base, **dict(task.limits)) if task.limits else base  # type: ignore[arg-type]


def with_limits(agent: Agent, limits: Limits) -> Agent:
    """``agent`` running under ``limits`` (``agent`` itself when they are its own)."""
    if agent.config.limits == limits:
        return agent
    return Agent.from_config(replace(agent.config, limits=limits))


async def execute(agent: Agent, task: BatchTask, strategy: str | None) -> TaskOutcome:
    """Run ``task`` on ``agent`` (under the task's limits), or on the strategy named
    ``strategy`` over it. Never raises (but lets cancellation through): an exception
    becomes an outcome with ``error`` set."""
    try:
        runner = with_limits(agent, task_limits(agent.config.limits, task))
        if strategy is None:
            result: RunResult = await runner.arun(task.prompt)
        else:
            from loopwright.strategies.catalog import for_agent

            outcome = await for_agent(strategy, runner).arun(
                task.prompt, on_event=runner.config.hooks.on_event
            )
            result = outcome.run_result()
    except Exception as exc:  # one failing run must not end the batch; the driver retries
        return TaskOutcome(task, INTERNAL_ERROR, error=f"{type(exc).__name__}: {exc}")
    return TaskOutcome(task, result.stop.value, result.usage.cost, result_record(task, result))


def result_record(task: BatchTask, result: RunResult) -> dict[str, JSONValue]:
    """The result line of a finished run (the driver adds ``attempts``): the task's keys,
    then the run's fields as every JSON writer of a result spells them."""
    return {"task": task.key, "index": task.index, "id": task.id, **result_to_dict(result)}


def failure_record(task: BatchTask, stop: str, error: str) -> dict[str, JSONValue]:
    """The result line of a task that failed on every attempt (``stop`` is
    :data:`INTERNAL_ERROR` or :data:`WORKER_LOST`)."""
    return {
        "task": task.key,
        "index": task.index,
        "id": task.id,
        "answer": "",
        "stop_reason": stop,
        "error": error,
    }
