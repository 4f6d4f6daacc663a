"""Turn a model's tool-call arguments into a JSON object, repairing common faults.

:func:`repair_arguments` never raises. It accepts a mapping (used as-is) or a string and
tries, in order: strict JSON; the text inside a Markdown code fence; the first balanced
``{...}`` inside surrounding prose; then a lexical repair pass that fixes single-quoted
strings, Python ``True``/``False``/``None``, bare (unquoted) keys, trailing commas and
unclosed brackets at the end of a cut-off reply. Every step that changed something is
named in ``RepairResult.repairs`` so callers can log or count model faults.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopwright.core.messages import ToolCallPart

_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*[ \t]*\r?\n?(.*?)(?:```|$)", re.DOTALL)
_PY_WORDS = {"True": "true", "False": "false", "None": "null"}
_JSON_WORDS = frozenset({"true", "false", "null"})
_MAX_INPUT = 1_000_000


@dataclass(frozen=True, slots=True)
class RepairResult:
    """``arguments`` is the parsed object, or ``None`` with ``error`` saying why not."""

    arguments: dict[str, Any] | None
    repairs: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.arguments is not None


def repair_arguments(raw: str | Mapping[str, Any]) -> RepairResult:
    """Parse ``raw`` into a JSON object (see module doc). Never raises."""
    try:
        return _repair(raw)
    except Exception as exc:  # the contract is "never raises": report instead
        return RepairResult(None, (), f"could not parse arguments ({type(exc).__name__}: {exc})")


def _repair(raw: str | Mapping[str, Any]) -> RepairResult:
    if isinstance(raw, dict):
        return RepairResult(raw)
    if isinstance(raw, Mapping):
        return RepairResult(dict(raw))
    if not isinstance(raw, str):
        return RepairResult(
            None, (), f"arguments must be a JSON object string, got {type(raw).__name__}"
        )
    text = raw.strip()
    if not text:
        return RepairResult({}, ("empty arguments read as {}",))
    if len(text) > _MAX_INPUT:
        return RepairResult(None, (), f"arguments are too long ({len(text)} chars)")
    repairs: list[str] = []
    parsed, err = _loads_object(text, repairs)
    if parsed is not None:
        return RepairResult(parsed, tuple(repairs))
    first_error = err
    fenced = _FENCE.search(text)
    if fenced is not None:
        repairs.append("removed code fence")
        text = fenced.group(1).strip()
        parsed, err = _loads_object(text, repairs)
        if parsed is not None:
            return RepairResult(parsed, tuple(repairs))
    start = text.find("{")
    if start >= 0:
        block = _balanced_block(text, start)
        if block != text:
            repairs.append("extracted JSON object from surrounding text")
            text = block
            parsed, err = _loads_object(text, repairs)
            if parsed is not None:
                return RepairResult(parsed, tuple(repairs))
    fixed, lexical = _lexical_repair(text)
    if lexical:
        parsed, err = _loads_object(fixed, repairs)
        if parsed is not None:
            return RepairResult(parsed, (*repairs, *lexical))
    return RepairResult(None, tuple(repairs), first_error or err)


def _loads_object(text: str, repairs: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
    if isinstance(value, str):
        # Some models double-encode: the arguments are a JSON string holding the object.
        try:
            inner = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            inner = None
        if isinstance(inner, dict):
            repairs.append("decoded double-encoded JSON string")
            return inner, None
    if isinstance(value, dict):
        return value, None
    return None, f"arguments must be a JSON object, got {_json_type(value)}"


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


def _balanced_block(text: str, start: int) -> str:
    """The ``{...}`` block starting at ``start`` (to the end of text if never closed)."""
    depth = 0
    quote = ""
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
        i += 1
    return text[start:]


def _lexical_repair(text: str) -> tuple[str, tuple[str, ...]]:
    """One pass over ``text`` outside strings; returns fixed text and what was fixed."""
    out: list[str] = []
    done: dict[str, None] = {}
    stack: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"' or ch == "'":
            i = _copy_string(text, i, out, done)
            continue
        if ch.isalpha() or ch == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word in _PY_WORDS:
                out.append(_PY_WORDS[word])
                done["replaced Python literal with JSON literal"] = None
            elif word not in _JSON_WORDS and _next_nonspace(text, j) == ":":
                out.append(json.dumps(word))
                done["quoted bare key"] = None
            else:
                out.append(word)
            i = j
            continue
        if ch == ",":
            nxt = _next_nonspace(text, i + 1)
            if nxt in ("}", "]", ""):
                done["removed trailing comma"] = None
                i += 1
                continue
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
        out.append(ch)
        i += 1
    if stack:
        out.extend(reversed(stack))
        done["closed unbalanced brackets"] = None
    return "".join(out), tuple(done)


def _copy_string(text: str, i: int, out: list[str], done: dict[str, None]) -> int:
    """Copy the string literal at ``i`` as a JSON string; return the index after it."""
    quote = text[i]
    j = i + 1
    n = len(text)
    chars: list[str] = []
    while j < n:
        ch = text[j]
        if ch == "\\" and j + 1 < n:
            nxt = text[j + 1]
            if quote == "'" and nxt == "'":
                chars.append("'")
            else:
                chars.append(ch + nxt)
            j += 2
            continue
        if ch == quote:
            break
        if quote == "'" and ch == '"':
            chars.append('\\"')
        elif ch == "\n":
            chars.append("\\n")
            done["escaped newline in string"] = None
        else:
            chars.append(ch)
        j += 1
    else:
        done["closed unterminated string"] = None
    if quote == "'":
        done["converted single-quoted strings"] = None
    out.append('"' + "".join(chars) + '"')
    return j + 1


def _next_nonspace(text: str, i: int) -> str:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return text[i] if i < n else ""


def call_arguments(call: ToolCallPart) -> tuple[dict[str, Any], tuple[str, ...], str | None]:
    """The arguments of ``call`` as a dict, the repairs applied to its raw text, and the
    problem when none could be read (the message the model is shown)."""
    args = call.arguments
    if args:
        return (args if type(args) is dict else dict(args)), (), None
    raw = call.raw_arguments
    if not raw:
        return {}, (), None
    repaired = repair_arguments(raw)
    if repaired.arguments is None:
        return (
            {},
            repaired.repairs,
            (
                f"could not read the arguments as a JSON object ({repaired.error}); "
                "send one JSON object matching the tool's parameters"
            ),
        )
    return repaired.arguments, repaired.repairs, None
