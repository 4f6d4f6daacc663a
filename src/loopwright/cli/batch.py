"""``loopwright run --batch prompts.jsonl --concurrency N``: many prompts, one agent.

Each input line is a JSON string (the prompt) or an object ``{"prompt": ..., "id": ...}``
(``id`` is optional and echoed back). Runs execute concurrently in one event loop, at most
N at a time. stdout gets one JSON line per finished run, in completion order::

    {"index": 3, "id": "q4", "answer": "...", "stop_reason": "final_answer",
     "exit_code": 0, "turns": 2, "usage": {...}, "session_id": "...", "detail": ""}

A run that fails with an exception gets ``"stop_reason": "internal_error"`` and an
``"error"``; the batch goes on. stderr shows progress: done/total, rate, errors (runs that
did not end with a final answer) and cost so far; on a terminal one line redrawn in
place, otherwise a line at most every ``interval`` seconds and a last one at the end.
The command exits 0 when every run ended with a final answer, else with the exit code of
the first (in input order) run that did not (see ``loopwright run --help``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from loopwright.cli.agents import ConfirmHandler, build_agent
from loopwright.cli.exit_codes import INTERNAL_ERROR, exit_code
from loopwright.cli.observe import instrument
from loopwright.cli.output import CliError
from loopwright.cli.recipe import AgentRecipe
from loopwright.core.errors import UserError
from loopwright.core.run import RunResult, RunStop
from loopwright.core.text import to_json
from loopwright.loop import Agent

MAX_LINE_BYTES = 4_000_000


@dataclass(frozen=True, slots=True)
class BatchItem:
    index: int
    prompt: str
    id: str | int | None = None


def read_batch(path: Path) -> list[BatchItem]:
    """Parse a prompts file; bad lines raise :class:`UserError` naming the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--batch {path}: cannot read it as UTF-8 text ({exc})") from None
    items: list[BatchItem] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"--batch {path}:{number}"
        if len(line) > MAX_LINE_BYTES:
            raise UserError(f"{where}: the line is longer than {MAX_LINE_BYTES} bytes")
        try:
            data = json.loads(line)
        except ValueError:
            raise UserError(
                f'{where}: not JSON; write one JSON string or {{"prompt": ...}} per line'
            ) from None
        prompt, ident = _prompt_of(data, where)
        items.append(BatchItem(len(items), prompt, ident))
    if not items:
        raise UserError(f"--batch {path}: no prompts in the file")
    return items


def _prompt_of(data: object, where: str) -> tuple[str, str | int | None]:
    ident: str | int | None = None
    if isinstance(data, dict):
        ident = data.get("id")
        if ident is not None and not isinstance(ident, (str, int)):
            raise UserError(f"{where}: 'id' must be a string or an integer")
        data = data.get("prompt")
    if not isinstance(data, str) or not data.strip() or "\x00" in data:
        raise UserError(f"{where}: needs a non-empty text prompt")
    return data, ident


@dataclass(slots=True)
class Progress:
    """Counts and the progress line (written to ``stream``)."""

    total: int
    stream: IO[str]
    interval: float = 1.0
    done: int = 0
    errors: int = 0
    cost: float = 0.0
    started: float = field(default_factory=time.monotonic)
    _last: float = float("-inf")  # the first result always draws a line

    def add(self, ok: bool, cost: float) -> None:
        self.done += 1
        self.errors += 0 if ok else 1
        self.cost += cost
        now = time.monotonic()
        if self.done == self.total or now - self._last >= self.interval or self._tty():
            self._last = now
            self.draw(final=self.done == self.total)

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        width = 20
        filled = int(width * self.done / self.total)
        bar = "#" * filled + "." * (width - filled)
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        return (
            f"batch {self.done}/{self.total} [{bar}] {rate:.1f}/s errors {self.errors} "
            f"cost ${self.cost:.4f} elapsed {elapsed:.1f}s eta {left:.0f}s"
        )

    def draw(self, final: bool = False) -> None:
        if self._tty():
            self.stream.write("\r" + self.line() + ("\n" if final else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def _tty(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())


def result_line(item: BatchItem, result: RunResult) -> dict[str, Any]:
    return {
        "index": item.index,
        "id": item.id,
        "answer": result.answer,
        "stop_reason": result.stop.value,
        "exit_code": exit_code(result.stop),
        "turns": result.turns,
        "usage": result.usage.to_dict(),
        "session_id": result.session_id,
        "detail": result.detail,
    }


def error_line(item: BatchItem, exc: BaseException) -> dict[str, Any]:
    return {
        "index": item.index,
        "id": item.id,
        "answer": "",
        "stop_reason": "internal_error",
        "exit_code": INTERNAL_ERROR,
        "error": f"{type(exc).__name__}: {exc}",
    }


async def run_batch(
    agent: Agent,
    items: list[BatchItem],
    concurrency: int,
    out: IO[str],
    progress: Progress,
) -> list[int]:
    """Run every item; write result lines to ``out``. Returns each run's exit code, in
    input order."""
    gate = asyncio.Semaphore(max(1, concurrency))
    codes = [0] * len(items)

    async def one(item: BatchItem) -> None:
        async with gate:
            try:
                result = await agent.arun(item.prompt)
            except Exception as exc:  # one failing run must not end the batch
                line, ok, cost = error_line(item, exc), False, 0.0
            else:
                line = result_line(item, result)
                ok, cost = result.stop is RunStop.FINAL_ANSWER, result.usage.cost
        codes[item.index] = int(line["exit_code"])
        out.write(to_json(line, default=str) + "\n")
        out.flush()
        progress.add(ok, cost)

    await asyncio.gather(*(one(item) for item in items))
    return codes


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """``--batch FILE --concurrency N`` with the run's tracing flags."""

    path: Path
    concurrency: int
    trace_dir: Path | None = None
    otel: bool = False


def batch_main(
    prompt: str | None, recipe: AgentRecipe, confirm: ConfirmHandler, options: BatchOptions
) -> int:
    """``loopwright run --batch``: build the agent as ``run`` does, run every prompt and
    return the exit code (see the module docstring). Bad input raises a CliError (exit 2)."""
    if prompt is not None:
        raise CliError("give either PROMPT or --batch FILE, not both")
    items = read_batch(options.path)
    closers: list[Callable[[], object]] = []
    agent = build_agent(recipe, confirm)
    agent = instrument(agent, options.trace_dir, options.otel, closers=closers)
    progress = Progress(len(items), sys.stderr)
    try:
        codes = asyncio.run(run_batch(agent, items, options.concurrency, sys.stdout, progress))
    finally:
        for close in closers:
            close()
    return next((code for code in codes if code != 0), 0)
