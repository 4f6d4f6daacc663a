"""Best-effort parsing of streamed tool-call arguments.

Streams deliver a call's JSON arguments in fragments. :func:`parse_partial` returns the
object the fragment received so far *implies* (incomplete strings kept, incomplete
numbers/literals and dangling keys dropped), or ``None`` when nothing useful parses yet.
It uses ``jiter``'s partial mode when installed (it ships with the openai and anthropic
SDKs) and a small stdlib completer otherwise; both are property-tested to agree with
``json.loads`` on complete documents and never to raise.

:func:`parse_final` is the strict parse of a finished call: ``""`` means no arguments.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

_CLOSERS = {"{": "}", "[": "]"}
_MAX_CUTS = 8


def _scan(text: str) -> tuple[list[str], bool, list[int]]:
    """Open-bracket stack, whether we end inside a string, and structural cut points."""
    stack: list[str] = []
    in_string = False
    escaped = False
    cuts: list[int] = []
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
            cuts.append(i + 1)
        elif ch in "}]":
            if stack:
                stack.pop()
            cuts.append(i + 1)
        elif ch == ",":
            cuts.append(i)
    return stack, in_string, cuts


def _close(prefix: str) -> str | None:
    stack, in_string, _ = _scan(prefix)
    text = prefix
    if in_string:
        if text.endswith("\\") and not text.endswith("\\\\"):
            text = text[:-1]
        text += '"'
    text = text.rstrip()
    while text.endswith(","):
        text = text[:-1].rstrip()
    if text.endswith(":"):
        return None
    return text + "".join(_CLOSERS[b] for b in reversed(stack))


def complete_partial(text: str) -> Any:
    """Stdlib completer: close the fragment at the latest point where it parses."""
    if not text.strip():
        return None
    _, _, cuts = _scan(text)
    candidates = [len(text), *reversed(cuts[-_MAX_CUTS:])]
    for end in candidates:
        closed = _close(text[:end])
        if closed is None:
            continue
        try:
            return _STRICT.decode(closed)
        except ValueError:
            continue
    return None


def _jiter_parser() -> Callable[[str], Any] | None:
    try:
        import jiter
    except ImportError:
        return None

    from_json = jiter.from_json

    def parse(text: str) -> Any:
        return from_json(text.encode(), partial_mode="trailing-strings", allow_inf_nan=False)

    return parse


_PARSER: list[Callable[[str], Any] | None] = []
"""The jiter parser (or ``None`` without jiter), resolved on first use: importing this
module must stay cheap (``import loopwright`` loads no extension it does not need)."""


def _parser() -> Callable[[str], Any] | None:
    if not _PARSER:
        _PARSER.append(_jiter_parser())
    return _PARSER[0]


MAX_DEPTH = 64
"""Deepest nesting of containers accepted in tool arguments. Real tool schemas nest a few
levels; a model (or server) sending ``[[[[...`` a thousand deep made ``json.loads`` and
everything that later walks the value (validation, hashing, JSON output) raise
``RecursionError``. Deeper arguments are rejected here, as data."""


def _too_deep(raw: str, value: Any) -> bool:
    """Whether ``value`` (parsed from ``raw``) nests deeper than :data:`MAX_DEPTH`. Counting
    brackets in C first makes the common case free; the walk is iterative."""
    if raw.count("[") + raw.count("{") <= MAX_DEPTH:
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if type(item) is dict:
            stack.extend((v, depth + 1) for v in item.values() if type(v) in (dict, list))
        elif type(item) is list:
            stack.extend((v, depth + 1) for v in item if type(v) in (dict, list))
    return False


def parse_partial(text: str) -> dict[str, Any] | None:
    """The arguments object implied by a fragment, or ``None``. Never raises."""
    if not text.strip():
        return None
    value: Any = None
    parser = _PARSER[0] if _PARSER else _parser()
    try:
        if parser is not None:
            try:
                value = parser(text)
            except ValueError:
                value = complete_partial(text)
        else:
            value = complete_partial(text)
        if len(text) > MAX_DEPTH and isinstance(value, dict) and _too_deep(text, value):
            return None  # (shorter text cannot hold MAX_DEPTH + 1 brackets)
    except (RecursionError, MemoryError, ValueError):  # hostile input: no preview, no crash
        return None
    return value if isinstance(value, dict) else None


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # "1e999": JSON has no infinity, and it breaks JSON output later
        raise ValueError(f"number {text[:40]!r} is out of range")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity / -Infinity


_STRICT = json.JSONDecoder(parse_float=_finite_float, parse_constant=_no_constant)
"""Strict JSON (no NaN / Infinity / overflowing numbers), built once: ``json.loads`` with
hooks would build a decoder per call."""


class ArgumentsError(ValueError):
    """Finished tool-call arguments are not one JSON object."""


def parse_final(raw: str) -> dict[str, Any]:
    """Strictly parse complete arguments. ``""`` (a no-argument call) is ``{}``.

    Raises :class:`ArgumentsError` (never ``RecursionError``) for anything but one strict
    JSON object nested at most :data:`MAX_DEPTH` deep (``NaN``, ``Infinity`` and numbers
    that overflow to infinity are not JSON: they would make later JSON output invalid)."""
    if not raw.strip():
        return {}
    try:
        value = _STRICT.decode(raw)
    except ValueError as exc:
        raise ArgumentsError(f"arguments are not valid JSON ({exc})") from exc
    except RecursionError:
        raise ArgumentsError(f"arguments nest deeper than {MAX_DEPTH} levels") from None
    if not isinstance(value, dict):
        raise ArgumentsError(f"arguments must be a JSON object, got {type(value).__name__}")
    if len(raw) > MAX_DEPTH and _too_deep(raw, value):
        raise ArgumentsError(f"arguments nest deeper than {MAX_DEPTH} levels")
    return value


def is_arguments_json(raw: str) -> bool:
    """Whether ``raw`` is what :func:`parse_final` accepts (a JSON object, or blank).

    Echoing a call's arguments re-parses them once per run (the adapters' encode cache
    keeps the encoded message): 1.4 us for ``{"a": 2, "b": 3}``, 8 us for 2 KB."""
    try:
        parse_final(raw)
    except ArgumentsError:
        return False
    return True
