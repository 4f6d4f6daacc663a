"""Text leaving the runtime: the one place that makes it safe to write.

A Python ``str`` can hold what no byte encoding accepts. A lone UTF-16 surrogate
(``"\\ud800"``) arrives whenever a JSON document escapes half of a pair -- a model, a
server or a tool can send ``"\\ud83d"`` -- and when Python decodes a non-UTF-8 command
line with ``surrogateescape``. Written as UTF-8 it raises ``UnicodeEncodeError``; in a
terminal, text can also carry control sequences that clear the screen, write the
clipboard (OSC 52) or forge hyperlinks (OSC 8).

Where the repair happens: the canonical history keeps exactly what the model and the
tools produced, and every *writer* that turns text into bytes for someone else goes
through this module:

* :func:`to_json` -- every JSON document written out (``--json`` output, checkpoint
  store rows). Always encodable as UTF-8; ``strict`` output is also valid JSON
  (no ``NaN``/``Infinity`` tokens).
* :func:`for_terminal` -- every line the command line shows a human.

The writers are few and known (terminal, JSON, store); the sources of text are many
(every adapter, every tool, every prompt, every error detail), so repairing at the
writers is the one place that cannot be bypassed by a new source. Repairs are lossless
for valid text: a string without lone surrogates comes back unchanged (and a surrogate
pair split into two code points is joined into its character).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from typing import Final

REPLACEMENT: Final = "\ufffd"


# C0 controls except tab and newline, DEL, C1 controls (0x9b is an 8-bit CSI, 0x9d an
# 8-bit OSC), and the bidirectional overrides/isolates that reorder what a reader sees.
_CONTROL: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def scrub(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (valid pairs joined).

    The result always encodes as UTF-8; valid text is returned unchanged (same object).
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Through UTF-16, two adjacent halves become one character again and a half
        # without its partner decodes to U+FFFD.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def lone_surrogate(text: str) -> int | None:
    """The offset of the first lone surrogate in ``text`` (``None``: it encodes as
    UTF-8). Text a tool cannot pass on to a file name, a database or a hash."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: str) -> str:
    """``text`` as a terminal may show it: encodable, control sequences made visible.

    Every control character except tab and newline (ESC, CR, BEL, C1 controls) and every
    bidirectional override becomes a visible escape such as ``\\x1b``, so nothing a model
    or a tool writes can move the cursor, clear the screen, set the clipboard, forge a
    hyperlink or reorder a line. ``\\r\\n`` becomes ``\\n``.
    """
    text = scrub(text)
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_escape, text)


def _finite(value: object) -> object:
    """``value`` with non-finite floats as ``None`` (JavaScript's ``JSON.stringify`` rule)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


@functools.lru_cache(maxsize=32)
def _encoder(
    strict: bool, indent: int | None, default: Callable[[object], object] | None
) -> json.JSONEncoder:
    return json.JSONEncoder(
        ensure_ascii=False,
        allow_nan=not strict,
        indent=indent,
        separators=None if indent is not None else (",", ":"),
        default=default,
    )


def to_json(
    value: object,
    *,
    strict: bool = True,
    indent: int | None = None,
    default: Callable[[object], object] | None = None,
) -> str:
    """``value`` as JSON text that always encodes as UTF-8 (lone surrogates -> U+FFFD).

    ``strict`` (for output others parse): ``NaN``/``Infinity`` become ``null``. Not strict
    (a store reading its own rows back with Python): they are kept as Python writes them.
    ``default`` converts objects JSON cannot hold (as in :func:`json.dumps`).
    """
    encoder = _encoder(strict, indent, default)
    try:
        text = encoder.encode(value)
    except ValueError as exc:
        if not strict or "Out of range float" not in str(exc):
            raise
        text = encoder.encode(_finite(value))  # non-finite floats: the rare path
    return scrub(text)
