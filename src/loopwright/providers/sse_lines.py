"""Server-sent-event lines some SDK decoders cannot take, removed before they see them.

The SSE format allows more than ``data: ...`` lines: comments (``: keep-alive``, sent by
proxies and gateways to hold a connection open), ``event:``, ``id:`` and ``retry:``
fields, and ``data:`` without the space. The SDKs' own decoders are stricter than the
format:

* google-genai reads only lines starting with exactly ``data: ``; any other line is taken
  for part of a JSON error body, so one keep-alive comment, an ``event:`` line or a
  ``data:{...}`` line ended the call as "Failed to parse response as JSON";
* the openai SDK dispatches an event holding only ``id:`` or ``retry:`` (no data), which
  the format says to skip, and fails to parse its empty data.

:class:`SSELines` rewrites an event-stream body line by line (a line split across
network chunks is held until its end arrives): it drops comment, ``id:`` and ``retry:``
lines, and ``event:`` lines when ``keep_events`` is false, and writes ``data:`` with its
space. Data lines, blank lines (event boundaries) and anything else pass unchanged. The
bounded transport (:mod:`loopwright.providers.transport`) applies it to
``text/event-stream`` responses of the adapters that ask for it.
"""

from __future__ import annotations

import re

_DROPPED = re.compile(rb"^(?::|id:|retry:)[^\n]*\n", re.MULTILINE)
_DROPPED_WITH_EVENTS = re.compile(rb"^(?::|id:|retry:|event:)[^\n]*\n", re.MULTILINE)
_DATA_WITHOUT_SPACE = re.compile(rb"^data:(?![ \r\n])", re.MULTILINE)


class SSELines:
    """A stateful rewriter of one event-stream body (see module docstring)."""

    __slots__ = ("_carry", "_dropped")

    def __init__(self, keep_events: bool = True) -> None:
        self._carry = b""
        self._dropped = _DROPPED if keep_events else _DROPPED_WITH_EVENTS

    def feed(self, chunk: bytes) -> bytes:
        """The complete lines of what arrived so far, rewritten; an unfinished last line
        is kept for the next chunk."""
        data = self._carry + chunk if self._carry else chunk
        end = data.rfind(b"\n") + 1
        self._carry = data[end:]
        return self._clean(data[:end]) if end else b""

    def finish(self) -> bytes:
        """The last line when the body did not end with a line break."""
        rest, self._carry = self._carry, b""
        return self._clean(rest + b"\n")[:-1] if rest else b""

    def _clean(self, lines: bytes) -> bytes:
        lines = self._dropped.sub(b"", lines)
        return _DATA_WITHOUT_SPACE.sub(b"data: ", lines)


__all__ = ["SSELines"]
