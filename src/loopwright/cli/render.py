"""Terminal rendering of run events for ``--stream``.

One line per step: model text as it streams, each tool call with its arguments, each
result (errors marked), limits reached, and the final answer. Everything goes through
:func:`loopwright.cli.output.say`, the one output path, so model text and tool results
reach the terminal with their control sequences neutralised; colours are dropped
automatically when the output is not a terminal.
"""

from __future__ import annotations

import json
from typing import IO

from loopwright.cli.output import Painted, Piece, say
from loopwright.cli.results import stop_line
from loopwright.core.events import (
    LimitReached,
    ModelCallFailed,
    ModelStreamed,
    ReasoningDelta,
    RunEvent,
    RunFinished,
    StrategyStep,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)

_MAX_SHOWN = 300


def _short(text: str, limit: int = _MAX_SHOWN) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class StreamRenderer:
    """Writes events to ``out`` as they arrive (``out`` is stdout, or stderr with --json)."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._in_text = False
        self._in_reasoning = False

    def _write(self, *pieces: Piece, nl: bool = True) -> None:
        say(*pieces, nl=nl, file=self._out)

    def _end_open_line(self) -> None:
        if self._in_text or self._in_reasoning:
            self._write("")
            self._in_text = self._in_reasoning = False

    def _line(self, *pieces: Piece) -> None:
        self._end_open_line()
        self._write(*pieces)

    def __call__(self, event: RunEvent) -> None:
        match event:
            case ModelStreamed(event=TextDelta(text=text)):
                if not self._in_text:
                    self._end_open_line()
                    self._write(Painted("model: ", fg="cyan"), nl=False)
                    self._in_text = True
                self._write(text, nl=False)
            case ModelStreamed(event=ReasoningDelta(text=text)):
                if not self._in_reasoning:
                    self._end_open_line()
                    self._in_reasoning = True
                self._write(Painted(text, dim=True), nl=False)
            case ToolCallStarted(call=call):
                args = json.dumps(dict(call.arguments), ensure_ascii=False, default=str)
                self._line(Painted(f"→ {call.name}", fg="yellow"), f" {_short(args)}")
            case ToolCallFinished(result=result, duration_s=duration):
                mark = Painted("✗", fg="red") if result.is_error else Painted("←", fg="green")
                kind = f" [{result.error_kind}]" if result.is_error else ""
                self._line(mark, f" {result.name}{kind} {_short(result.content)} ({duration:.2f}s)")
            case ModelCallFailed(error=error, will_retry=retry):
                note = "retrying" if retry else "giving up"
                self._line(Painted(f"! model error: {error} ({note})", fg="red"))
            case StrategyStep(strategy=name, kind=kind, detail=detail):
                shown = json.dumps(dict(detail), ensure_ascii=False, default=str)
                self._line(Painted(f"· {name} {kind}", fg="magenta"), f" {_short(shown)}")
            case LimitReached(stop=stop, detail=detail):
                self._line(Painted(f"! stopped: {stop_line(stop, detail)}", fg="red"))
            case RunFinished(result=result):
                if result.answer:
                    self._line(Painted("answer: ", fg="green", bold=True), result.answer)
            case _:
                pass
