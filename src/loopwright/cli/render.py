"""Terminal rendering of run events for ``loopwright run --stream``.

One line per step: model text as it streams, each tool call with its arguments, each
result (errors marked), limits reached, and the final answer. Colours come from
``click.style`` and are dropped automatically when the output is not a terminal.
"""

from __future__ import annotations

import json
from typing import IO

import click

from loopwright.core.events import (
    LimitReached,
    ModelCallFailed,
    ModelStreamed,
    ReasoningDelta,
    RunEvent,
    RunFinished,
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

    def _end_open_line(self) -> None:
        if self._in_text or self._in_reasoning:
            click.echo("", file=self._out)
            self._in_text = self._in_reasoning = False

    def _line(self, text: str) -> None:
        self._end_open_line()
        click.echo(text, file=self._out)

    def __call__(self, event: RunEvent) -> None:
        match event:
            case ModelStreamed(event=TextDelta(text=text)):
                if not self._in_text:
                    self._end_open_line()
                    click.echo(click.style("model: ", fg="cyan"), nl=False, file=self._out)
                    self._in_text = True
                click.echo(text, nl=False, file=self._out)
            case ModelStreamed(event=ReasoningDelta(text=text)):
                if not self._in_reasoning:
                    self._end_open_line()
                    self._in_reasoning = True
                click.echo(click.style(text, dim=True), nl=False, file=self._out)
            case ToolCallStarted(call=call):
                args = json.dumps(dict(call.arguments), ensure_ascii=False)
                self._line(click.style(f"→ {call.name}", fg="yellow") + f" {_short(args)}")
            case ToolCallFinished(result=result, duration_s=duration):
                mark = (
                    click.style("✗", fg="red") if result.is_error else click.style("←", fg="green")
                )
                kind = f" [{result.error_kind}]" if result.is_error else ""
                self._line(f"{mark} {result.name}{kind} {_short(result.content)} ({duration:.2f}s)")
            case ModelCallFailed(error=error, will_retry=retry):
                note = "retrying" if retry else "giving up"
                self._line(click.style(f"! model error: {error} ({note})", fg="red"))
            case LimitReached(stop=stop, detail=detail):
                self._line(click.style(f"! stopped: {stop.value} {detail}".rstrip(), fg="red"))
            case RunFinished(result=result):
                if result.answer:
                    self._line(click.style("answer: ", fg="green", bold=True) + result.answer)
            case _:
                pass
