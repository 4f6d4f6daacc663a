"""Calendar dates in a request, for the embedded model's date arguments: the dates it
writes (``April 25th 2023``, ``2023-04-25``, ``20230929``), the days it names relative
to a today it gives ("the upcoming Wednesday, today is Monday April 25th 2023"), and
a date parameter held to them in the format its description names. A 270M model
cannot turn "April 25th 2023" into ``2023-04-25`` reliably, nor count days; the runtime
can. Used by ``local_ground`` (grounding) and ``local_args`` (guards)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

_DAY_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH = r"(?P<m>jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DAY = r"(?P<d>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<y>(?:19|20)\d\d)\b)?"
_DATES = (
    re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<n>[01]?\d)-(?P<d>[0-3]?\d)\b"),
    re.compile(r"\b(?P<y>(?:19|20)\d\d)(?P<n>[01]\d)(?P<d>[0-3]\d)\b"),
    re.compile(rf"\b{_MONTH}\s*{_DAY}\b{_YEAR}"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?![a-z]){_YEAR}"),
)
_YEAR_ALONE = re.compile(r"\b(?:19|20)\d\d\b")
# A date format a description names: "in the format of 'YYYY-MM-DD'", "MM/DD/YYYY".
_DATE_FORMAT = re.compile(
    r"(?<![A-Za-z])(YYYY|DD|MM)([-/.])(YYYY|DD|MM)\2(YYYY|DD|MM)(?![A-Za-z0-9:]|T\w|\s+HH)",
    re.IGNORECASE,
)


def dates_in(text: str) -> list[tuple[int, int, int]]:
    """The calendar dates ``text`` writes, as (year, month, day), in order: ISO
    ``2023-04-25``, ``April 25th 2023``, ``25 April, 2023``, ``the 4th of march``,
    ``20230929``. A date without a year takes the year the text names elsewhere (one
    year only), "from April 3rd to April 5th 2023" gives two dates in 2023; without
    any year it is left out (the runtime does not guess today's year). When the text
    says which day today is, the days it names relative to it take that date's place
    (:func:`relative_dates`)."""
    found = _written_dates(text)
    relative = relative_dates(text, found)
    if relative is not None:
        return relative
    return list(dict.fromkeys((y, m, d) for _, y, m, d in found))


def _written_dates(text: str) -> list[tuple[int, int, int, int]]:
    """(start, year, month, day) of each date ``text`` writes, in order."""
    years = set(_YEAR_ALONE.findall(text))
    found: list[tuple[int, int, int, int]] = []
    for pattern in _DATES:
        for match in pattern.finditer(text.lower()):
            parts = match.groupdict()
            month = int(parts["n"]) if parts.get("n") else _month(parts["m"])
            year = parts.get("y") or (next(iter(years)) if len(years) == 1 else None)
            day = int(parts["d"])
            if year is not None and 1 <= month <= 12 and 1 <= day <= 31:
                found.append((match.start(), int(year), month, day))
    return sorted(found)


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# "today is Monday April 25th 2023", "today's date is 20230929", "current date: ..."
_TODAY_IS = re.compile(
    r"\b(?:today\s+is|today's\s+date\s+is|today\s+being|(?:the\s+)?current\s+date\s+is"
    r"|(?:the\s+)?date\s+today\s+is|current\s+date:?)\s+(?:(?:a\s+)?(?P<weekday>[a-z]+day),?\s+)?",
)
_RELATIVE_DAY = re.compile(
    r"\b(?P<after>(?:the\s+)?day\s+after\s+tomorrow)|\b(?P<tomorrow>tomorrow)"
    r"|\b(?P<yesterday>yesterday)|\b(?P<today>today)(?!'s|\s+is|\s+being)"
    r"|\bin\s+(?P<n>\d+|two|three|four|five|six|seven)\s+days?\b"
    r"|\b(?P<nextweek>next\s+week)\b"
    r"|\b(?:upcoming|next|this\s+coming|coming|this|on)\s+(?P<weekday>"
    + "|".join(_WEEKDAYS)
    + r")\b"
)


def relative_dates(
    text: str, found: Sequence[tuple[int, int, int, int]] | None = None
) -> list[tuple[int, int, int]] | None:
    """The days ``text`` names relative to the date it says today is ("the upcoming
    Wednesday, today is Monday April 25th 2023" gives 2023-04-27; "tomorrow, today is
    20230929" gives 2023-09-30), in order; ``None`` when it says no such thing or
    names no relative day. The model copied today's date instead: it cannot count
    days, the runtime can."""
    lowered = text.lower()
    written = _written_dates(text) if found is None else found
    anchor = next(
        (
            (today.group("weekday"), (y, m, d))
            for today in _TODAY_IS.finditer(lowered)
            for start, y, m, d in written
            if start == today.end()
        ),
        None,
    )
    if anchor is None:
        return None
    try:
        base = dt.date(*anchor[1])
    except ValueError:
        return None
    # The weekday the text says today is counts, even when the calendar disagrees:
    # "the upcoming Wednesday, today is Monday" is two days on.
    weekday = _WEEKDAYS.index(anchor[0]) if anchor[0] in _WEEKDAYS else base.weekday()
    days: list[tuple[int, int, int]] = []
    for match in _RELATIVE_DAY.finditer(lowered):
        groups = match.groupdict()
        if groups["after"]:
            shift = 2
        elif groups["tomorrow"]:
            shift = 1
        elif groups["yesterday"]:
            shift = -1
        elif groups["today"]:
            shift = 0
        elif groups["n"]:
            shift = int(groups["n"]) if groups["n"].isdigit() else _DAY_COUNTS[groups["n"]]
        elif groups["nextweek"]:
            shift = 7
        else:
            wanted = _WEEKDAYS.index(groups["weekday"])
            shift = (wanted - weekday) % 7 or 7
        day = base + dt.timedelta(days=shift)
        days.append((day.year, day.month, day.day))
    return list(dict.fromkeys(days)) or None


# A month named in full or by its usual abbreviation ("Dec", "Sept."), not "may" the verb
# unless capitalized.
_MONTH_NAME = re.compile(
    r"\b(?:(?P<full>january|february|march|april|june|july|august|september|october"
    r"|november|december)|(?P<short>jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b\.?)(?![a-z])"
    r"|\b(?P<may>May)\b",
    re.IGNORECASE,
)


def months_in(text: str) -> list[str]:
    """The months ``text`` names, in full and lower case, in order and once each:
    "in December" and "from Dec. to Jan" give ``december``, ``january``. "may" counts
    only capitalized ("in May"), not as the verb."""
    found: list[str] = []
    for match in _MONTH_NAME.finditer(text):
        if match.group("may") is not None and match.group("may") != "May":
            continue
        word = (match.group("full") or match.group("short") or "may").lower()
        found.append(_MONTHS[_month(word) - 1])
    return list(dict.fromkeys(found))


def _month(prefix: str) -> int:
    return next(i for i, name in enumerate(_MONTHS, 1) if name.startswith(prefix[:3]))


def date_format(schema: Mapping[str, Any]) -> str | None:
    """The ``strftime`` format of a string parameter that takes a calendar date, from
    its description ("in the format of 'YYYY-MM-DD'") or from an ISO example
    ("such as '2023-04-01'"); ``None`` otherwise (a date *and time* format too)."""
    if schema.get("type") != "string":
        return None
    text = str(schema.get("description", ""))
    match = _DATE_FORMAT.search(text)
    fields = [match.group(i).upper() for i in (1, 3, 4)] if match is not None else []
    if match is not None and len(set(fields)) == 3:
        codes = {"YYYY": "%Y", "MM": "%m", "DD": "%d"}
        return match.group(2).join(codes[field] for field in fields)
    if re.search(r"'(?:19|20)\d\d-\d\d-\d\d'", text):
        return "%Y-%m-%d"
    return None


# A date and time format a description names: 'YYYY-MM-DDTHH:MM:SS', 'YYYY-MM-DD
# HH:mm:ss', 'dd/mm/yyyy HH:MM'; or an ISO example: '2023-04-15T13:45:00Z'.
_DATETIME_FORMAT = re.compile(
    r"(?<![A-Za-z])(YYYY|DD|MM)([-/.])(YYYY|DD|MM)\2(YYYY|DD|MM)([T ])HH:MM(:SS)?(Z?)",
    re.IGNORECASE,
)
_DATETIME_EXAMPLE = re.compile(r"'(?:19|20)\d\d-\d\d-\d\d([T ])\d\d:\d\d(:\d\d)?(Z?)'")
# A time of day alone: "in 24-hour format, such as '18:45'", "in the format 'HH:MM'".
_TIME_FORMAT = re.compile(r"'(?:[01]\d|2[0-3]):[0-5]\d'|\bHH:MM\b")
# A time the request writes: "10pm", "4:30 PM", "16:00", "3 in the afternoon", "noon".
_CLOCK = re.compile(
    r"\b(?P<h>[01]?\d|2[0-3])(?::(?P<m>[0-5]\d))?\s*(?P<ap>[ap])\.?m\b\.?"
    r"|\b(?P<h24>[01]?\d|2[0-3]):(?P<m24>[0-5]\d)\b"
    r"|\b(?P<hd>1[0-2]|0?[1-9])(?::(?P<md>[0-5]\d))?\s+in\s+the\s+(?P<part>morning|afternoon|evening)"
    r"|\b(?P<noon>noon|midnight)\b",
    re.IGNORECASE,
)


def times_in(text: str) -> list[tuple[int, int]]:
    """The times of day ``text`` writes, as (hour, minute) on a 24-hour clock, in
    order: "10pm" (22, 0), "4:30 PM" (16, 30), "16:00", "3 in the afternoon" (15, 0),
    "noon"."""
    found: list[tuple[int, int]] = []
    for match in _CLOCK.finditer(text):
        g = match.groupdict()
        if g["noon"]:
            found.append((12, 0) if g["noon"].lower() == "noon" else (0, 0))
        elif g["h24"]:
            found.append((int(g["h24"]), int(g["m24"])))
        else:
            hour, minute = (g["h"], g["m"]) if g["h"] else (g["hd"], g["md"])
            later = (g["ap"] or "").lower() == "p" or (g["part"] or "").lower() in (
                "afternoon",
                "evening",
            )
            if int(hour) <= 12:
                found.append((int(hour) % 12 + (12 if later else 0), int(minute or 0)))
    return list(dict.fromkeys(found))


def datetime_format(schema: Mapping[str, Any]) -> str | None:
    """The ``strftime`` format of a string parameter that takes a date and a time (see
    :data:`_DATETIME_FORMAT`), or a time alone (``"%H:%M"``); ``None`` otherwise."""
    if schema.get("type") != "string" or date_format(schema) is not None:
        return None
    text = str(schema.get("description", ""))
    codes = {"YYYY": "%Y", "MM": "%m", "DD": "%d"}
    if (match := _DATETIME_FORMAT.search(text)) is not None:
        fields = [match.group(i).upper() for i in (1, 3, 4)]
        if len(set(fields)) == 3:
            day = match.group(2).join(codes[field] for field in fields)
            return f"{day}{match.group(5)}%H:%M{':%S' if match.group(6) else ''}{match.group(7)}"
    if (example := _DATETIME_EXAMPLE.search(text)) is not None:
        seconds = ":%S" if example.group(2) else ""
        return f"%Y-%m-%d{example.group(1)}%H:%M{seconds}{example.group(3)}"
    if _TIME_FORMAT.search(text) and not re.search(r"\bdate\b", text, re.IGNORECASE):
        return "%H:%M"
    return None


def takes_date(schema: Mapping[str, Any]) -> bool:
    """Whether a parameter takes a date, a date and time or a time in a known format."""
    return date_format(schema) is not None or datetime_format(schema) is not None


def grounded_date(schema: Mapping[str, Any], request: str) -> dict[str, Any] | None:
    """A date parameter held to the request's dates written in its format (the model
    cannot be trusted to turn "April 25th 2023" into "2023-04-25"), a date and time
    parameter to each of the request's dates at each of its times ("November 1, 2023
    at 10pm" is ``2023-11-01T22:00:00``), a time parameter to its times; ``None`` when
    it takes none of these in a known format or the request gives none."""
    form = date_format(schema) or datetime_format(schema)
    if form is None:
        return None
    days: list[tuple[int, int, int] | None] = list(dates_in(request))
    if "%d" not in form:
        days = [None]
    times: list[tuple[int, int] | None] = list(times_in(request)) if "%H" in form else [None]
    written = [_strftime(form, d, t) for d in days for t in times]
    return {"type": "string", "enum": written} if written else None


def _strftime(
    form: str, date: tuple[int, int, int] | None, time: tuple[int, int] | None = None
) -> str:
    if date is not None:
        year, month, day = date
        form = form.replace("%Y", f"{year:04d}").replace("%m", f"{month:02d}")
        form = form.replace("%d", f"{day:02d}")
    if time is not None:
        form = form.replace("%H", f"{time[0]:02d}").replace("%M", f"{time[1]:02d}")
        form = form.replace("%S", "00")
    return form


__all__ = [
    "date_format",
    "dates_in",
    "datetime_format",
    "grounded_date",
    "months_in",
    "relative_dates",
    "takes_date",
    "times_in",
]
