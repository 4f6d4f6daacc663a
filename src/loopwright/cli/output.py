"""The command line's one output path: every line for a human, every JSON object.

* :func:`say` writes text for a person. Each piece goes through
  :func:`loopwright.core.text.for_terminal` first, so model text, tool results, session
  ids read from a store and error messages can never carry a control sequence to the
  terminal (clear-screen, clipboard writes, hyperlinks, cursor moves). Colour is added
  *after* that, only by this module, from :class:`Painted` pieces.
* :func:`emit_json` writes one JSON object for a program: valid UTF-8 JSON, never
  ``NaN`` (:func:`loopwright.core.text.to_json`); text in it is exact, not neutralised.
* :class:`CliError` is how a command fails: one line naming the fix (and, with
  ``--json``, one JSON error object), then the documented exit code.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import IO

import click

from loopwright.cli.exit_codes import FAILURE_KINDS, STOP_CODES, USAGE_ERROR
from loopwright.core.text import for_terminal, to_json


@dataclass(frozen=True, slots=True)
class Painted:
    """A piece of output with a style (``fg`` is a click colour name)."""

    text: str
    fg: str | None = None
    bold: bool = False
    dim: bool = False


Piece = str | Painted


def render(*pieces: Piece) -> str:
    """The pieces as one terminal-safe string (styles applied after neutralising)."""
    out = []
    for piece in pieces:
        if isinstance(piece, Painted):
            text = for_terminal(piece.text)
            out.append(
                click.style(text, fg=piece.fg, bold=piece.bold or None, dim=piece.dim or None)
            )
        else:
            out.append(for_terminal(piece))
    return "".join(out)


def say(*pieces: Piece, err: bool = False, nl: bool = True, file: IO[str] | None = None) -> None:
    """Write ``pieces`` for a human (stdout, or stderr with ``err``, or ``file``)."""
    click.echo(render(*pieces), file=file, err=err, nl=nl)


def emit_json(data: object) -> None:
    """Write one JSON object on stdout (objects JSON cannot hold are written as text)."""
    click.echo(to_json(data, default=str))


def error_object(message: str, code: int, session_id: str | None = None) -> dict[str, object]:
    """The ``--json`` object of a command that failed (the keys of a run's result, plus
    ``error``), so a script reads one shape whatever happened."""
    return {
        "answer": "",
        "stop_reason": _stop_reason(code),
        "error": message,
        "exit_code": code,
        "turns": 0,
        "usage": {},
        "messages": [],
        "session_id": session_id,
        "detail": message,
        "pending_calls": [],
    }


def _stop_reason(code: int) -> str:
    """``usage_error``/``store_error``/``internal_error``, or the stop a run's exit code
    stands for (Ctrl-C exits 16: ``cancelled``, not a generic ``error``)."""
    if code in FAILURE_KINDS:
        return FAILURE_KINDS[code]
    return next((stop.value for stop, c in STOP_CODES.items() if c == code), "error")


def one_line(message: str) -> str:
    return " ".join(str(message).split()) or "error"


def report_failure(
    message: str, code: int, *, as_json: bool, session_id: str | None = None
) -> None:
    """One ``error: ...`` line on stderr; with ``as_json`` also the error object on stdout.
    A message made of lines (a list: every bad line of a batch file) keeps them, each
    on its own indented line after the first."""
    line = one_line(message)
    if as_json:
        emit_json(error_object(line, code, session_id))
    head, *rest = [one_line(part) for part in str(message).splitlines() if part.strip()] or [line]
    say("error: ", head, err=True)
    for part in rest:
        say("  ", part, err=True)


class CliError(click.ClickException):
    """A command failed in a way the user can fix: ``message`` names the fix."""

    def __init__(
        self,
        message: str,
        code: int = USAGE_ERROR,
        *,
        as_json: bool = False,
        session_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.exit_code = code  # type: ignore[misc]  # click declares it per class
        self.as_json = as_json
        self.session_id = session_id

    def show(self, file: IO[str] | None = None) -> None:
        report_failure(
            self.message, self.exit_code, as_json=self.as_json, session_id=self.session_id
        )


def tolerant_streams() -> None:
    """Let stdout/stderr degrade (``?``) instead of raising when the terminal's encoding
    cannot show a character (a Latin-1 locale): output must never end a command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors="replace")
