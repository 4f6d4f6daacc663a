"""Unit conversions the calculator reads as arithmetic: "15 minutes in seconds",
"how many hours are in 3 days", "convert 3.5 kilograms to grams".

Each becomes the number times (or divided by) the exact ratio of the two units
(``(15) * 60``, ``(84) / 7``), so the expression a user or a model sees states the
computation. Only units of one kind convert (time, mass, length, volume), only units
with a fixed size (no months or years), and only the full names plus a few
unambiguous abbreviations ("km", "kg"; not "m", which is minutes as often as metres).
"""

from __future__ import annotations

import re
from fractions import Fraction

# name -> (kind, size in the kind's base unit)
_SIZES: dict[str, tuple[str, Fraction]] = {}


def _add(kind: str, size: Fraction | int, *names: str) -> None:
    for name in names:
        _SIZES[name] = (kind, Fraction(size))


_add("time", 1, "second", "seconds", "sec", "secs")
_add("time", 60, "minute", "minutes", "min", "mins")
_add("time", 3600, "hour", "hours", "hr", "hrs")
_add("time", 86400, "day", "days")
_add("time", 604800, "week", "weeks")
_add("mass", Fraction(1, 1000), "milligram", "milligrams", "mg")
_add("mass", 1, "gram", "grams")
_add("mass", 1000, "kilogram", "kilograms", "kg", "kgs", "kilo", "kilos")
_add("mass", 1_000_000, "tonne", "tonnes")
_add("mass", Fraction("453.59237"), "pound", "pounds", "lb", "lbs")
_add("mass", Fraction("28.349523125"), "ounce", "ounces", "oz")
for _metre in ("metre", "meter"):
    _add("length", Fraction(1, 1000), f"milli{_metre}", f"milli{_metre}s")
    _add("length", Fraction(1, 100), f"centi{_metre}", f"centi{_metre}s")
    _add("length", 1, _metre, f"{_metre}s")
    _add("length", 1000, f"kilo{_metre}", f"kilo{_metre}s")
_add("length", Fraction(1, 1000), "mm")
_add("length", Fraction(1, 100), "cm")
_add("length", 1000, "km", "kms")
_add("length", Fraction("0.0254"), "inch", "inches")
_add("length", Fraction("0.3048"), "foot", "feet")
_add("length", Fraction("0.9144"), "yard", "yards")
_add("length", Fraction("1609.344"), "mile", "miles")
_add("volume", Fraction(1, 1000), "millilitre", "millilitres", "milliliter", "milliliters", "ml")
_add("volume", 1, "litre", "litres", "liter", "liters")

_UNIT = "(" + "|".join(sorted(map(re.escape, _SIZES), key=len, reverse=True)) + ")"
_AMOUNT = r"(-?\d+(?:\.\d+)?|an?|one)"
# "15 minutes in seconds", "convert 3.5 kg to grams", "2 hours into minutes"
_FORWARD = re.compile(
    rf"\b(?:convert |change )?{_AMOUNT} {_UNIT} (?:in|into|to|as|in terms of) {_UNIT}\b"
)
# "how many seconds are in 15 minutes", "seconds in a day", "how many hours does 3 days have"
_BACKWARD = re.compile(
    rf"\b(?:how many |the number of )?{_UNIT} (?:are |is )?(?:there )?in {_AMOUNT} {_UNIT}\b"
)


def _decimal(value: Fraction) -> str:
    """``value`` written exactly: a whole number, a finite decimal, or ``a / b``."""
    if value.denominator == 1:
        return str(value.numerator)
    d = value.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d == 1:
        return f"{float(value):.12g}"
    return f"{value.numerator} / {value.denominator}"


def _converted(amount: str, source: str, target: str) -> str | None:
    kind, size = _SIZES[source]
    other, into = _SIZES[target]
    if kind != other or source == target:
        return None
    number = "1" if amount in ("a", "an", "one") else amount
    ratio = size / into
    if ratio.numerator == 1 and ratio.denominator > 1:
        return f"({number}) / {ratio.denominator}"
    return f"({number}) * {_decimal(ratio)}"


def conversions(text: str) -> tuple[str, int]:
    """``text`` (lower case) with its unit conversions in symbols, and how many there
    were. A pair of units of different kinds ("3 days in grams") is left as written."""
    found = 0

    def forward(m: re.Match[str]) -> str:
        nonlocal found
        out = _converted(m.group(1), m.group(2), m.group(3))
        found += out is not None
        return out or m.group(0)

    def backward(m: re.Match[str]) -> str:
        nonlocal found
        out = _converted(m.group(2), m.group(3), m.group(1))
        found += out is not None
        return out or m.group(0)

    text = _FORWARD.sub(forward, text)
    return _BACKWARD.sub(backward, text), found


__all__ = ["conversions"]
