"""The asserted JSON Schema ``format`` values: their checks, parsers and examples.

``format`` is an annotation in Draft 2020-12; these formats are asserted instead, for every
tool (``@tool``, ``Tool.from_schema`` and MCP alike) and by both validators (the compiled
fast check of :mod:`loopwright.core.schemacheck` and ``jsonschema`` through
:func:`format_checker`), because ``@tool`` converts such strings to Python values
(``datetime.date``, ``uuid.UUID``, ``datetime.timedelta``...) and a value that cannot
convert must be refused with the pointer of its field, not fail inside the conversion.

Each check accepts exactly what the parser the conversion uses reads, with the leniency of
Python's own ISO parsers where a model may reasonably mean a value (seconds and the UTC
offset may be left out of a date-time or a time, a space may replace the ``T``):

* ``date`` -- ``YYYY-MM-DD`` naming a real day;
* ``date-time`` -- ISO 8601 as ``datetime.fromisoformat`` reads it;
* ``time`` -- ``HH:MM[:SS[.ffffff]][Z|+HH:MM]`` as ``time.fromisoformat`` reads it;
* ``duration`` -- ISO 8601 ``PnYnMnWnDTnHnMnS``, a fraction on the last component only
  (:func:`parse_duration`);
* ``uuid`` -- the hyphenated hexadecimal form ``8-4-4-4-12`` (either case);
* ``email``, ``idn-email`` -- a mailbox (RFC 5321 in ASCII; RFC 6531 in any script, but
  no part mixing scripts, the lookalike of a phishing address: :mod:`loopwright.core.emails`).
  They convert to nothing, but an address is where a side effect goes: a model's
  ``pаypal.com`` with a Cyrillic ``а`` must not pass as the real one.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING

from loopwright.core.emails import is_email, is_idn_email, lookalike

if TYPE_CHECKING:  # jsonschema is imported lazily: ~40 ms that most runs never need
    from jsonschema import FormatChecker

# re.ASCII: ``\d`` is 0-9 only (it matches every Unicode digit by default, and float()
# reads those: "P٠D" parsed as a duration that pydantic refuses)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
# RFC 3339 with the leniency of Python's own parser: seconds and the offset are optional
# (a naive local time is a time a model can mean), a space may replace the "T".
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?", re.ASCII
)
_TIME = re.compile(r"\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?", re.ASCII)
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_NUMBER = r"\d+(?:\.\d+)?"
_DURATION = re.compile(
    rf"(?P<sign>[-+])?P(?=\d|T\d)(?:(?P<years>{_NUMBER})Y)?(?:(?P<months>{_NUMBER})M)?"
    rf"(?:(?P<weeks>{_NUMBER})W)?(?:(?P<days>{_NUMBER})D)?"
    rf"(?:T(?=\d)(?:(?P<hours>{_NUMBER})H)?(?:(?P<minutes>{_NUMBER})M)?"
    rf"(?:(?P<seconds>{_NUMBER})S)?)?",
    re.ASCII,
)
# A timedelta has no calendar: a year is read as 365 days and a month as 30 (what pydantic
# does, so a duration means the same inside a pydantic model as in a parameter).
_DAYS_PER = {"years": 365.0, "months": 30.0, "weeks": 7.0, "days": 1.0}
_SECONDS_PER = {"hours": 3600.0, "minutes": 60.0, "seconds": 1.0}


def parse_duration(text: str) -> datetime.timedelta:
    """The ``timedelta`` of an ISO 8601 duration (``P1DT2H30M``, ``PT0.5S``, ``-PT1H``,
    ``P2W``); a year is 365 days and a month 30. Raises ``ValueError`` naming the form
    for anything else (``"90 minutes"``, ``"01:30:00"``, ``"P"``, ``"PT"``)."""
    match = _DURATION.fullmatch(text) if isinstance(text, str) else None
    given = [v for k, v in match.groupdict().items() if v and k != "sign"] if match else []
    # ISO 8601: only the last (smallest) component may have a fraction ("PT1.5H", not
    # "P1.5DT1H"), as pydantic reads it too
    if match is None or match.group().endswith("T") or any("." in v for v in given[:-1]):
        raise ValueError(
            f"{text!r:.60} is not an ISO 8601 duration; write it like PT1H30M (1 hour 30 "
            "minutes), P2D (2 days) or P1DT12H"
        )
    parts = {k: float(v) for k, v in match.groupdict().items() if v and k != "sign"}
    days = sum(parts.get(k, 0.0) * n for k, n in _DAYS_PER.items())
    seconds = sum(parts.get(k, 0.0) * n for k, n in _SECONDS_PER.items())
    try:
        value = datetime.timedelta(days=days, seconds=seconds)
    except OverflowError:
        raise ValueError(f"{text!r:.60} is a longer duration than Python can hold") from None
    return -value if match.group("sign") == "-" else value


def _iso_check(shape: re.Pattern[str], parse: Callable[[str], object]) -> Callable[[object], bool]:
    """A format check: a string of ``shape`` that ``parse`` accepts (non-strings pass:
    ``type`` decides those)."""

    def check(value: object) -> bool:
        if not isinstance(value, str):
            return True
        if shape.fullmatch(value) is None:
            return False
        try:
            parse(value)
        except ValueError:
            return False
        return True

    return check


is_date = _iso_check(_DATE, datetime.date.fromisoformat)
"""``YYYY-MM-DD`` naming a real day."""
is_date_time = _iso_check(_DATE_TIME, datetime.datetime.fromisoformat)
"""An ISO 8601 date and time ``datetime.fromisoformat`` reads."""
is_time = _iso_check(_TIME, datetime.time.fromisoformat)
"""An ISO 8601 time of day ``time.fromisoformat`` reads."""
is_duration = _iso_check(_DURATION, parse_duration)
"""An ISO 8601 duration :func:`parse_duration` reads."""
is_uuid = _iso_check(_UUID, str)
"""A UUID in its hyphenated form."""


FORMATS: Mapping[str, Callable[[object], bool]] = {
    "date": is_date,
    "date-time": is_date_time,
    "time": is_time,
    "duration": is_duration,
    "uuid": is_uuid,
    "email": is_email,
    "idn-email": is_idn_email,
}
"""The asserted ``format`` values and their checks; every other format is an annotation."""
FORMAT_EXAMPLES: Mapping[str, str] = {
    "date": "2024-05-31",
    "date-time": "2024-05-31T14:30:00+02:00",
    "time": "14:30:00 or 14:30:00+02:00",
    "duration": "PT1H30M; ISO 8601: P2D is 2 days, PT45S 45 seconds",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "email": "ana@example.com; ASCII only (idn-email takes other scripts)",
    "idn-email": "ana@example.com or иван@пример.рф; the letters of each part in one script",
}
"""A valid value of each asserted format, for error messages a model can act on."""


@cache
def format_checker() -> FormatChecker:
    """The ``jsonschema`` side of :data:`FORMATS`: every full validator that may see an
    asserted format takes this checker, so the slow path asserts exactly what the fast
    check asserts. ``jsonschema``'s own set would also assert ``email``, ``uri``... which
    Draft 2020-12 treats as annotations, and would refuse values the fast check accepts;
    without any checker a bad date would pass the slow path."""
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    for name, check in FORMATS.items():
        checker.checks(name)(check)
    return checker


def format_hint(fmt: object, value: object = None) -> str:
    """`` (write it like 2024-05-31)`` for an asserted format, ``""`` otherwise: appended to
    a format violation so a model (or a person) sees a value that would pass. An address
    refused as a lookalike (``value``) says why first."""
    example = FORMAT_EXAMPLES.get(fmt) if isinstance(fmt, str) else None
    if not example:
        return ""
    why = lookalike(value) if fmt in ("email", "idn-email") and isinstance(value, str) else None
    return f" ({why}; write it like {example})" if why else f" (write it like {example})"
