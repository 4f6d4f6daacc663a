"""Python value types a model writes as JSON strings (or numbers): their JSON Schema, the
converter from the validated JSON value, and the JSON form of a default.

| Python | JSON Schema | the function receives |
|---|---|---|
| ``datetime.datetime`` | ``string``, ``format: date-time`` | ``datetime.fromisoformat(value)`` |
| ``datetime.date`` | ``string``, ``format: date`` | ``date.fromisoformat(value)`` |
| ``datetime.time`` | ``string``, ``format: time`` | ``time.fromisoformat(value)`` |
| ``datetime.timedelta`` | ``string``, ``format: duration`` (ISO 8601) | :func:`~loopwright.core.formats.parse_duration` |
| ``uuid.UUID`` | ``string``, ``format: uuid`` | ``UUID(value)`` |
| ``decimal.Decimal`` | ``number`` or ``string`` | :func:`to_decimal` |
| ``pathlib.Path`` (any ``PurePath``) | ``string``, ``format: path`` | ``Path(value)`` |

The schemas are pydantic's (so a type means the same at the top level of a tool and inside
a pydantic model). The formats ``date``, ``date-time``, ``time``, ``duration`` and ``uuid``
are asserted by the argument validator (:mod:`loopwright.core.formats`), so a bad value
is refused at its field with an example before the function is called; the converters
only ever see values they read. ``path`` is an annotation (any string names a path).
A ``Decimal`` takes a number or a string: a string keeps every digit (``"0.10"`` stays
``Decimal("0.10")``); a number is read through its shortest repr (``0.1`` is
``Decimal("0.1")``, not the binary float's 55 digits), so digits beyond a float's ~17 are
lost: ask for strings in the parameter's description when they matter.
"""

from __future__ import annotations

import datetime
import decimal
import pathlib
import uuid
from collections.abc import Callable
from typing import Any

from loopwright.core.formats import parse_duration

Converter = Callable[[Any], Any]
_DECIMAL_FORM = 'write it like 12.50 or "12.50"'


def to_decimal(value: object) -> decimal.Decimal:
    """``value`` (a JSON number or string) as a finite ``Decimal`` (module doc); raises
    ``ValueError`` naming the expected form."""
    if isinstance(value, str):
        try:
            out = decimal.Decimal(value)
        except decimal.InvalidOperation:
            raise ValueError(f"{value!r:.60} is not a decimal number; {_DECIMAL_FORM}") from None
    elif isinstance(value, float):
        out = decimal.Decimal(repr(value))
    elif isinstance(value, int) and not isinstance(value, bool):
        out = decimal.Decimal(value)
    else:
        raise ValueError(f"{value!r:.60} is not a decimal number; {_DECIMAL_FORM}")
    if not out.is_finite():
        raise ValueError(f"{value!r:.60} is not a finite decimal number; {_DECIMAL_FORM}")
    return out


def format_duration(value: datetime.timedelta) -> str:
    """The ISO 8601 duration :func:`~loopwright.core.formats.parse_duration` reads back
    as ``value`` (``PT1H30M``, ``P2DT0.5S``, ``-PT1H``; ``PT0S`` for zero)."""
    sign = "-" if value < datetime.timedelta(0) else ""
    value = abs(value)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    micro = value.microseconds
    second = f"{seconds}.{micro:06d}".rstrip("0") if micro else str(seconds)
    parts = ((str(hours), "H"), (str(minutes), "M"), (second, "S"))
    clock = "".join(f"{n}{unit}" for n, unit in parts if n != "0")
    date = f"{value.days}D" if value.days else ""
    if not date and not clock:
        return "PT0S"
    return f"{sign}P{date}" + (f"T{clock}" if clock else "")


_DATE_TIME = {"type": "string", "format": "date-time"}
# ``datetime`` first: it is a subclass of ``date`` (the table is looked up by exact type).
_TABLE: dict[Any, tuple[dict[str, Any], Converter]] = {
    datetime.datetime: (_DATE_TIME, datetime.datetime.fromisoformat),
    datetime.date: ({"type": "string", "format": "date"}, datetime.date.fromisoformat),
    datetime.time: ({"type": "string", "format": "time"}, datetime.time.fromisoformat),
    datetime.timedelta: ({"type": "string", "format": "duration"}, parse_duration),
    uuid.UUID: ({"type": "string", "format": "uuid"}, uuid.UUID),
    decimal.Decimal: ({"anyOf": [{"type": "number"}, {"type": "string"}]}, to_decimal),
}
_PATH = {"type": "string", "format": "path"}


def _is_path(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, pathlib.PurePath)


def value_schema(tp: Any) -> dict[str, Any] | None:
    """The JSON Schema of the value type ``tp`` (a fresh dict), ``None`` if it is none."""
    found = _TABLE.get(tp)
    if found is not None:
        return _copy(found[0])
    return dict(_PATH) if _is_path(tp) else None


def value_converter(tp: Any) -> Converter | None:
    """The converter of the value type ``tp`` (module doc), ``None`` if it is none."""
    found = _TABLE.get(tp)
    if found is not None:
        return found[1]
    return tp if _is_path(tp) else None


def json_value(value: object) -> object:
    """The JSON form of a value of one of these types (a parameter default the schema
    advertises), else ``value`` unchanged."""
    if isinstance(value, datetime.timedelta):
        return format_duration(value)
    if isinstance(value, (datetime.date, datetime.time)):  # and datetime
        return value.isoformat()
    if isinstance(value, (uuid.UUID, decimal.Decimal, pathlib.PurePath)):
        if isinstance(value, decimal.Decimal) and not value.is_finite():
            return value  # no JSON form: the default is not advertised
        return str(value)
    return value


def _copy(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: [dict(o) for o in v] if k == "anyOf" else v for k, v in schema.items()}


__all__ = [
    "Converter",
    "format_duration",
    "json_value",
    "to_decimal",
    "value_converter",
    "value_schema",
]
