"""Which numeric parameter a number of the request belongs to, by the unit written after
it ("within 5 seconds", "10 miles") and the parameter's own description of its unit
("The time in seconds", "Maximum distance (in miles)").

A request with several numbers gives the model a choice it makes by position: ``"time":
10`` for "initial velocity of 10 and acceleration of 9.8 within 5 seconds", and an
optional ``max_distance`` left out for "within 10 miles" (nothing in its name is in the
request). The unit word right after a number is what a person reads it by; when exactly
one numeric parameter names that unit (in its description or its name), the number is
that parameter's. Generic: it reads only the schemas and the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from loopwright.core.grounding import STOPWORDS

# The word written right after a number: "5 seconds", "440Hz", "10-mile" (a hyphen
# joins a unit to its number).
_UNIT_AFTER = re.compile(r"[ \t]?-?[ \t]?([^\W\d_]+)")
_LETTERS = re.compile(r"[^\W\d_]+")
MIN_UNIT_CHARS = 3


def _stem(word: str) -> str:
    """A unit word without its plural ending: "miles" and "mile" read alike."""
    word = word.lower()
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > MIN_UNIT_CHARS:
        return word[:-1]
    return word


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).replace("_", " ")
    return {
        _stem(w)
        for w in _LETTERS.findall(spaced)
        if len(w) >= MIN_UNIT_CHARS and w.lower() not in STOPWORDS
    }


def _admits(schema: Mapping[str, Any], value: float) -> bool:
    """Whether ``schema`` takes ``value``: one of its ``enum`` when it lists them (a year
    written before "Bangkok" is no ``province_id`` of ``[1, 2, 3, 4, 5]``, though its
    description says "1 for Bangkok"), a whole number for an integer."""
    if schema.get("type") == "integer" and value != int(value):
        return False
    enum = schema.get("enum")
    return not isinstance(enum, list) or value in enum


def unit_numbers(
    props: Mapping[str, Any], request: str, numbers: Iterable[tuple[int, int, float]]
) -> dict[str, float]:
    """For each numeric parameter of ``props``, the one number of ``request`` written
    with a unit only that parameter names (in its description or its name); parameters
    no number or several different numbers point to are left out. ``numbers`` are the
    (start, end, value) of the request's numbers (``local_ground._numbers_at``)."""
    numeric = {
        key: _words(f"{key} {schema.get('description', '')}")
        for key, schema in props.items()
        if isinstance(schema, Mapping) and schema.get("type") in ("number", "integer")
    }
    found: dict[str, set[float]] = {}
    for _, end, value in numbers:
        unit = _UNIT_AFTER.match(request, end)
        if unit is None or len(unit.group(1)) < MIN_UNIT_CHARS:
            continue
        word = unit.group(1).lower()
        if word in STOPWORDS:
            continue
        owners = [key for key, words in numeric.items() if _stem(word) in words]
        if len(owners) == 1 and _admits(props[owners[0]], value):
            found.setdefault(owners[0], set()).add(value)
    return {key: next(iter(values)) for key, values in found.items() if len(values) == 1}


__all__ = ["unit_numbers"]
