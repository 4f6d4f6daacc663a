"""Render a tool's return value as text and cut it to a character budget, JSON-aware.

Contract of :func:`truncate_result`: the returned string is never longer than
``max_chars``. Within budget the value is rendered unchanged (strings as-is, everything
else as compact JSON, falling back to ``str()`` for what JSON cannot encode). Over budget:

* text keeps its head and tail around a marker ``…[N chars truncated]…``;
* a JSON list becomes ``{"items": [first items], "total": N, "truncated": true}``;
* a JSON object keeps its first keys and records ``"__truncated_keys__": N``;
* long strings inside JSON keep head and tail with the marker.

The shrinking is tried with ever smaller item/string limits; if even the smallest
structured form does not fit, the rendered JSON text is cut head/tail like plain text.
"""

from __future__ import annotations

import dataclasses
import decimal
import enum
import json
import json.encoder
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_MAX_DEPTH = 32
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _no_default(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _make_fast_encode() -> Callable[[object], str]:
    """The same output as ``_ENCODE`` from one reusable C encoder.

    ``JSONEncoder.encode`` builds a new C encoder on every call; the standard library
    has no public way to keep one. Measured on 2 shared cores (``python -m timeit``,
    load 9): a 3-key dict 2.3 us here vs 4.5 us through ``JSONEncoder.encode`` (9.4 us
    through ``json.dumps``), a 5-int list 1.3 vs 4.6 us, a float 1.1 vs 2.8 us -- a
    third to a half of a whole tool dispatch (docs/tools.md). So this builds the encoder
    ``JSONEncoder.iterencode`` itself uses (``json.encoder.c_make_encoder``, with the
    arguments ``_ENCODE``'s settings give it) once, and checks it against ``_ENCODE``
    on a probe value: where the C encoder is missing or behaves differently, the public
    path is used. It keeps no circular-reference markers: a cycle ends in
    ``RecursionError``, which :func:`render_result` handles like any value JSON cannot
    encode."""
    make = getattr(json.encoder, "c_make_encoder", None)  # not in the type stubs
    if make is None:  # pragma: no cover - CPython ships the C accelerator
        return _ENCODE
    try:
        encoder = make(
            None, _no_default, json.encoder.encode_basestring, None, ":", ",", False, False, False
        )
        probe = {"a": [1, 2.5, None, True], "é": "x\n"}
        if "".join(encoder(probe, 0)) != _ENCODE(probe):
            return _ENCODE
    except Exception:  # pragma: no cover - a future signature: the public path
        return _ENCODE
    return lambda value: "".join(encoder(value, 0))


_FAST_ENCODE = _make_fast_encode()
TRUNCATED_KEYS = "__truncated_keys__"


def render_result(value: object) -> str:
    """Text the model sees for ``value`` (no budget): str as-is, else compact JSON."""
    if isinstance(value, str):
        return value
    try:
        if type(value) is int:  # the commonest non-text result; what json.dumps does
            return int.__repr__(value)
        return _FAST_ENCODE(value)
    except (TypeError, ValueError, RecursionError):
        pass
    data = to_jsonable(value)
    if isinstance(data, str):  # the value itself was not JSON: show its str()
        return data
    try:
        return _ENCODE(data)
    except (TypeError, ValueError, RecursionError):
        return _safe_str(value)


def truncate_result(value: object, max_chars: int) -> str:
    """Render ``value`` and cut it to at most ``max_chars`` characters (see module doc)."""
    if max_chars <= 0:
        return ""
    if type(value) is str:  # the commonest results, without the general path
        text = value
    elif type(value) is int and -(10**15) < value < 10**15:
        text = int.__repr__(value)
    else:
        text = render_result(value)
    if len(text) <= max_chars:
        return text
    if isinstance(value, str):
        return cut_text(value, max_chars)
    data = to_jsonable(value)
    if not isinstance(data, (list, dict)):
        return cut_text(text, max_chars)
    return _shrink_to_fit(data, text, max_chars)


def cut_text(text: str, max_chars: int) -> str:
    """Keep the head and tail of ``text`` around a marker; result <= ``max_chars``."""
    if len(text) <= max_chars:
        return text
    if max_chars <= 0:
        return ""
    removed = len(text) - max_chars
    # The marker length depends on the count it names; recompute until stable.
    for _ in range(3):
        marker = f"\n…[{removed} chars truncated]…\n"
        keep = max_chars - len(marker)
        if keep < 2:
            return text[:max_chars]
        new_removed = len(text) - keep
        if new_removed == removed:
            break
        removed = new_removed
    head = (keep + 1) // 2
    tail = keep - head
    return text[:head] + marker + (text[-tail:] if tail else "")


def _shrink_to_fit(data: list[Any] | dict[str, Any], text: str, max_chars: int) -> str:
    # Phase 1 halves the list and string limits together (objects keep every key);
    # phase 2, only if that is not enough, also halves the number of keys kept.
    longest = max(_longest_container(data, 0), 1)
    max_items, max_str = longest, max(_longest_string(data, 0), 16)
    max_keys: int | None = None
    for _ in range(200):
        if max_items > 0 or max_str > 16:
            max_items, max_str = max_items // 2, max(16, max_str // 2)
        elif max_keys is None or max_keys > 1:
            max_keys = max(1, (max_keys if max_keys is not None else longest) // 2)
        else:
            break
        shrunk = _shrink(data, _Limits(max_items, max_str, max_keys), 0)
        out = json.dumps(shrunk, ensure_ascii=False, separators=(",", ":"))
        if len(out) <= max_chars:
            return out
    return cut_text(text, max_chars)


@dataclass(frozen=True, slots=True)
class _Limits:
    items: int
    chars: int
    keys: int | None


def _shrink(value: Any, lim: _Limits, depth: int) -> Any:
    if isinstance(value, str):
        return cut_text(value, lim.chars) if len(value) > lim.chars else value
    if depth >= _MAX_DEPTH:
        return cut_text(json.dumps(value, ensure_ascii=False), lim.chars)
    if isinstance(value, list):
        items = [_shrink(v, lim, depth + 1) for v in value[: lim.items]]
        if len(value) <= lim.items:
            return items
        return {"items": items, "total": len(value), "truncated": True}
    if isinstance(value, dict):
        keys = list(value)
        limit = len(keys) if lim.keys is None else lim.keys
        out = {k: _shrink(value[k], lim, depth + 1) for k in keys[:limit]}
        if len(keys) > limit:
            out[TRUNCATED_KEYS] = len(keys) - limit
        return out
    return value


def _longest_container(value: Any, depth: int) -> int:
    if depth >= _MAX_DEPTH:
        return 0
    if isinstance(value, list):
        return max([len(value), *(_longest_container(v, depth + 1) for v in value)])
    if isinstance(value, dict):
        return max([len(value), *(_longest_container(v, depth + 1) for v in value.values())])
    return 0


def _longest_string(value: Any, depth: int) -> int:
    if isinstance(value, str):
        return len(value)
    if depth >= _MAX_DEPTH:
        return 0
    if isinstance(value, list):
        return max([0, *(_longest_string(v, depth + 1) for v in value)])
    if isinstance(value, dict):
        return max([0, *(_longest_string(v, depth + 1) for v in value.values())])
    return 0


def to_jsonable(value: object, depth: int = 0) -> Any:
    """A JSON-encodable copy of ``value``: dataclasses, pydantic models, enums, sets,
    tuples and mappings are converted; integers too long for ``str()`` become text (see
    :func:`int_text`); anything else becomes ``str(value)`` (never raises)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= _SAFE_INT_BITS else int_text(value)
    try:
        return _convert(value, depth)
    except Exception:  # a container whose iteration or accessors raise
        return _safe_str(value)


def _convert(value: object, depth: int) -> Any:
    if isinstance(value, float):
        return (
            value if value == value and value not in (float("inf"), float("-inf")) else str(value)
        )
    if depth >= _MAX_DEPTH:
        return _safe_str(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, depth + 1)
    if isinstance(value, Mapping):
        return {_key(k): to_jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_jsonable(getattr(value, f.name), depth + 1)
            for f in dataclasses.fields(value)
        }
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return to_jsonable(dump(mode="json"), depth + 1)
        except Exception:
            return _safe_str(value)
    return _safe_str(value)


# Integers up to this many bits (about 4,200 digits) always convert with ``str()``:
# CPython refuses more than ``sys.get_int_max_str_digits()`` (4,300) digits by default,
# and its conversion is quadratic, so longer ones are summarised, never converted whole.
_SAFE_INT_BITS = 14_000
_EXACT_INT_BITS = 60_000  # ~18,000 digits, ~5 ms: beyond that a result is cut anyway


def int_text(value: int) -> str:
    """Decimal text of ``value`` whatever its size: exact up to about 18,000 digits
    (through :mod:`decimal`, which the digit limit does not apply to), else a summary
    naming the digit count with the leading and trailing digits."""
    if value.bit_length() <= _EXACT_INT_BITS:
        return format(decimal.Decimal(value), "f")
    sign = "-" if value < 0 else ""
    magnitude = -value if value < 0 else value
    exponent = math.log10(magnitude)
    digits = int(exponent) + 1
    lead = f"{10 ** (exponent - int(exponent)):.15f}".replace(".", "")[:15]
    tail = f"{magnitude % 10**15:015d}"
    return f"{sign}{lead}…[{digits - 30} digits]…{tail} (an integer of {digits} digits)"


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, int) and not isinstance(key, bool):
        return str(to_jsonable(key))
    return _safe_str(key)


def _safe_str(value: object) -> str:
    """``str(value)``, else ``repr(value)``, else the default ``object`` repr: the text
    of a value whose own conversions raise (or recurse without end) still says what it
    is."""
    for convert in (str, repr):
        try:
            text = convert(value)
        except Exception:
            continue
        if isinstance(text, str):
            return text
    return object.__repr__(value)
