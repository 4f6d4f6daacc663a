"""The progress line of a batch: done/total, rate, errors, retries and cost so far."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import IO


@dataclass(slots=True)
class Progress:
    """Counts, and the progress line written to ``stream``: on a terminal one line
    redrawn in place, otherwise a line at most every ``interval`` seconds and a last one
    when the batch is done. ``errors`` counts tasks that did not end with a final
    answer; ``retries`` counts attempts run again (a failed run, a lost worker)."""

    total: int
    stream: IO[str] | None
    interval: float = 1.0
    done: int = 0
    errors: int = 0
    retries: int = 0
    cost: float = 0.0
    started: float = field(default_factory=time.monotonic)
    _last: float = float("-inf")  # the first result always draws a line

    def add(self, ok: bool, cost: float) -> None:
        self.done += 1
        self.errors += 0 if ok else 1
        self.cost += cost
        self._maybe_draw()

    def retried(self) -> None:
        self.retries += 1

    def _maybe_draw(self) -> None:
        if self.stream is None:
            return
        now = time.monotonic()
        if self.done == self.total or now - self._last >= self.interval or self._tty():
            self._last = now
            self.draw(final=self.done == self.total)

    @property
    def elapsed(self) -> float:
        return max(time.monotonic() - self.started, 1e-9)

    def line(self) -> str:
        elapsed = self.elapsed
        rate = self.done / elapsed
        width = 20
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "." * (width - filled)
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        retries = f" retries {self.retries}" if self.retries else ""
        return (
            f"batch {self.done}/{self.total} [{bar}] {rate:.1f}/s errors {self.errors}"
            f"{retries} cost ${self.cost:.4f} elapsed {elapsed:.1f}s eta {left:.0f}s"
        )

    def draw(self, final: bool = False) -> None:
        if self.stream is None:
            return
        if self._tty():
            self.stream.write("\r" + self.line() + ("\n" if final else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def _tty(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())
