"""How the embedded model's argument grounding reads numbers in a request: digits as
people write them ("85,000", "-2.5"), the number words "two" to "twelve" and words for a
count ("a decade"), percentages, coordinates written with hemispheres, and how long the
lists a request writes are. Used by ``local_ground`` to narrow a parameter's schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from loopwright.core.grounding import NUMBER_WORDS

# A number as people write it: "600", "-2.5", "85,000" (thousands separators), not the
# "04" of "2023-04-25" as a negative number, nor the digits of a Latin-script word
# ("network222"); scripts without spaces write numbers right after a word ("买10个").
_GROUND_NUMBER = re.compile(
    r"(?<![A-Za-z\u00c0-\u024f0-9_.])-?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?!\d)"
)


_NUMBER_WORDS = {
    w: float(i)
    for i, w in enumerate(NUMBER_WORDS[:13])
    if i >= 2  # "one" is as often a pronoun ("the one with ...") as a number
}


# Words that stand for a count ("over the past decade" is 10 years; the model wrote 100).
_NUMBER_WORDS.update({"dozen": 12.0, "decade": 10.0, "fortnight": 14.0})


_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)


# Number words ``numbers_in`` does not read as values, which still say a number is there.
_OTHER_NUMBER_WORD = re.compile(
    r"\b(?:zero|one|(?:thir|four|fif|six|seven|eigh|nine)teen|(?:twen|thir|for|fif|six|seven"
    r"|eigh|nine)ty|hundred|thousand|million|billion|half)s?\b",
    re.IGNORECASE,
)


def says_a_number(text: str) -> bool:
    """Whether ``text`` writes any number: one :func:`numbers_in` reads, or a number
    word it leaves out ("one", "twenty", "a hundred")."""
    return bool(numbers_in(text) or _OTHER_NUMBER_WORD.search(text))


def numbers_in(text: str) -> tuple[float, ...]:
    """The numbers ``text`` writes, as floats, in order: digits, the words "two" to
    "twelve" ("for two nights") and words for a count ("a decade", "a dozen")."""
    return tuple(value for _, _, value in numbers_at(text))


_FRACTION_HINT = re.compile(
    r"\b(?:decimal|fraction)\b|\bbetween 0(?:\.0)? and 1\b|\b0(?:\.0)? to 1(?:\.0)?\b"
    r"|\b0\.\d+\b[^.%]{0,40}\d%",
    re.IGNORECASE,
)


_PERCENT = re.compile(r"\s?(?:%|percent\b|per cent\b)", re.IGNORECASE)


def takes_fraction(schema: Mapping[str, Any]) -> bool:
    """Whether a numeric parameter's description says it takes a share as a fraction
    ("as a decimal", "between 0 and 1", "Ejemplo: 0.1 para un enganche del 10%")."""
    text = str(schema.get("description", ""))
    items = schema.get("items")
    if isinstance(items, Mapping):
        text += " " + str(items.get("description", ""))
    return bool(_FRACTION_HINT.search(text))


def percents_in(text: str) -> set[float]:
    """The numbers ``text`` writes as percentages ("20%", "5 percent")."""
    return {v for _, end, v in numbers_at(text) if _PERCENT.match(text, end)}


def shares(schema: Mapping[str, Any], request: str, numbers: Iterable[float]) -> list[float]:
    """``numbers`` with each one the request writes as a percentage turned into a
    fraction when the parameter takes fractions (:func:`takes_fraction`): "a down
    payment of 20%" is ``0.2`` there, not ``20``."""
    if not takes_fraction(schema):
        return list(numbers)
    percents = percents_in(request)
    return [round(v / 100, 6) if v in percents else v for v in numbers]


_LIST_GAP = re.compile(r"\s*(?:,|;|and)?\s*$")


# Between two numbers of one list of counted items: the first item's words, then a
# separator ("five burgers and six chicken wings", "10个汉堡，50杯可乐").
_ITEM_GAP = re.compile(
    r"\s*['\"]?[^\W\d_][^\W\d]*(?:[ '-][^\W\d]+){0,4}['\"]?\s*(?:,|;|，|、|\band\b)\s*$"
)


# A coordinate written with its hemisphere: "37.8651 N", "119.5383° W".
HEMISPHERE = re.compile(r"\s*°?\s*([NSEW])\b")


def numbers_at(text: str) -> list[tuple[int, int, float]]:
    """(start, end, value) of each number ``text`` writes (see :func:`numbers_in`). In a
    coordinate pair written with hemispheres ("37.8651 N, 119.5383 W") a south or west
    coordinate is negative, as signed latitude and longitude parameters take it."""
    found = [
        (m.start(), m.end(), float(m.group(0).replace(",", "")))
        for m in _GROUND_NUMBER.finditer(text)
    ]
    sides = [HEMISPHERE.match(text, end) for _, end, _ in found]
    for i in range(len(found) - 1):
        lat, lon = sides[i], sides[i + 1]
        if lat is None or lon is None or lat.group(1) not in "NS" or lon.group(1) not in "EW":
            continue
        if text[lat.end() : found[i + 1][0]].strip(" ,;/"):
            continue  # not written as one pair
        for j, side in ((i, lat), (i + 1, lon)):
            start, end, value = found[j]
            found[j] = (start, end, -abs(value) if side.group(1) in "SW" else value)
    found += [
        (m.start(), m.end(), _NUMBER_WORDS[m.group(0).lower()]) for m in _NUMBER_WORD.finditer(text)
    ]
    return sorted(found)


def longest_number_list(text: str) -> int:
    """How many numbers the longest list in ``text`` holds: numbers written one after
    another with only a comma, ``;``, "and" or spaces between them ("A(3,4) and
    B(1,2)" holds two lists of two), or each after its item's words ("five burgers and
    six chicken wings" holds two). A list argument is no longer than that: the model
    otherwise runs on, repeating the request's numbers ("pointB": [1, 2, 3, 4, 1])."""
    longest = run = 0
    end = None
    for start, stop, _ in numbers_at(text):
        gap = text[end:start] if end is not None else None
        joined = gap is not None and (_LIST_GAP.match(gap) or _ITEM_GAP.match(gap))
        run = run + 1 if joined else 1
        longest = max(longest, run)
        end = stop
    return longest


# A separator between the items of a list written in words: "a, b and c", "a or b".
_ITEM_SEPARATOR = re.compile(r",\s*(?:and|or)\s+|\s*[,;，、]\s*|\s+(?:and|or|&)\s+")


_SENTENCES = re.compile(r"[.?!\n]+(?:\s|$)")


def longest_word_list(text: str) -> int:
    """An upper bound on the items of the longest list ``text`` writes in words: one
    more than the most item separators (commas, "and", "or") in one sentence ("the S&P
    500 and the Dow Jones" holds at most two). A list of strings is held to it: the
    model otherwise fills the list to the grammar's cap with made-up items."""
    return 1 + max((len(_ITEM_SEPARATOR.findall(s)) for s in _SENTENCES.split(text)), default=0)


def fitting(kind: object, numbers: Iterable[float]) -> list[Any]:
    """``numbers`` a parameter of JSON type ``kind`` can take, without repeats."""
    if kind == "integer":
        values: list[Any] = [int(v) for v in numbers if v.is_integer()]
    else:
        values = [int(v) if v.is_integer() else v for v in numbers]
    return list(dict.fromkeys(values))


__all__ = [
    "HEMISPHERE",
    "fitting",
    "longest_number_list",
    "longest_word_list",
    "numbers_at",
    "numbers_in",
    "percents_in",
    "says_a_number",
    "shares",
    "takes_fraction",
]
