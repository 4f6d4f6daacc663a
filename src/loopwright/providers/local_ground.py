"""What the embedded model's tool arguments are grounded in: the schema of each
parameter narrowed, before it becomes the call grammar, to what the request (or a tool
result) visibly gives.

A small model invents what a parameter's schema leaves open. So a parameter whose value
the request gives is held to it: an enum value the request names, a number the request
or a result contains (the one next to the parameter's name when there is one), a list
no longer than the request's, a date written in the parameter's format, a flag the
request names; an optional parameter is offered only when the request gives it, and
becomes required when the request gives a definite value for it. Generic: it reads
only the schema and the text. The decode-time guards are in ``local_args``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.core.messages import Message
from loopwright.core.tools import ToolSpec
from loopwright.core.untrusted import unwrap_untrusted
from loopwright.providers.local_dates import grounded_date, takes_date
from loopwright.providers.local_units import unit_numbers


def request_context(messages: Sequence[Message]) -> str:
    """The last user message and the tool results after it."""
    texts: list[str] = []
    for message in reversed(messages):
        for part in message.tool_results_parts:
            texts.append(unwrap_untrusted(part.content) or part.content)
        if message.role == "user":
            texts.append(message.text)
            break
    return "\n".join(reversed(texts))


# A number as people write it: "600", "-2.5", "85,000" (thousands separators), not the
# "04" of "2023-04-25" as a negative number, nor the digits of a Latin-script word
# ("network222"); scripts without spaces write numbers right after a word ("买10个").
_GROUND_NUMBER = re.compile(
    r"(?<![A-Za-z\u00c0-\u024f0-9_.])-?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?!\d)"
)
_WORDS = re.compile(r"[a-z]+")
MIN_PREFIX_CHARS = 3


@dataclass(frozen=True, slots=True)
class Grounding:
    """What a call's arguments are grounded in: the user's latest request, and the
    numbers of the tool results since it."""

    request: str
    result_numbers: tuple[float, ...] = ()

    @classmethod
    def of(cls, messages: Sequence[Message]) -> Grounding:
        request = next((m.text for m in reversed(messages) if m.role == "user"), "")
        results = request_context(messages)[len(request) :]  # the request comes first
        return cls(request, numbers_in(results))

    @property
    def numbers(self) -> tuple[float, ...]:
        """The request's numbers, then the results' (in order, repeats kept)."""
        return numbers_in(self.request) + self.result_numbers


_NUMBER_WORDS = {
    w: float(i)
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
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
    return tuple(value for _, _, value in _numbers_at(text))


# Letters of any script: "año" of ``año_vehiculo`` is one word, not "a" and "o".
_LETTERS = re.compile(r"[^\W\d_]+")


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
    return {v for _, end, v in _numbers_at(text) if _PERCENT.match(text, end)}


def _shares(schema: Mapping[str, Any], request: str, numbers: Iterable[float]) -> list[float]:
    """``numbers`` with each one the request writes as a percentage turned into a
    fraction when the parameter takes fractions (:func:`takes_fraction`): "a down
    payment of 20%" is ``0.2`` there, not ``20``."""
    if not takes_fraction(schema):
        return list(numbers)
    percents = percents_in(request)
    return [round(v / 100, 6) if v in percents else v for v in numbers]


def _name_words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()
    return [w for w in _LETTERS.findall(spaced) if len(w) >= MIN_PREFIX_CHARS]


def named_values(values: Sequence[Any], request: str) -> list[Any]:
    """The enum ``values`` the request names: as a whole word or phrase, in any case
    ("Comfort" names "comfort"), or, for a word of three letters or more, as the start
    of a request word ("ascending" names "ASC"). Never inside a word: "could" does not
    name "CO"."""
    text = request.lower()
    words = set(_WORDS.findall(text))
    named = []
    for value in values:
        wanted = str(value).lower().strip()
        if not wanted:
            continue
        whole = re.search(rf"(?<![a-z0-9]){re.escape(wanted)}(?![a-z0-9])", text)
        prefix = (
            len(wanted) >= MIN_PREFIX_CHARS
            and wanted.isalpha()
            and any(w.startswith(wanted) for w in words)
        )
        if whole or prefix:
            named.append(value)
    return (
        named
        or _partly_named(values, words)
        or _named_by_action(values, words)
        or _abbreviated(values, request)
    )


_CAPITALIZED = re.compile(r"(?<=[^\s.!?]) +([A-Z][a-z]{3,})")


def _abbreviated(values: Sequence[Any], request: str) -> list[Any]:
    """The two-letter values (codes: ``en``, ``fr``, ``CA``) that a name the request
    writes mid-sentence starts with ("from English to French" names ``en`` and
    ``fr``; "Could" at a sentence's start names no ``co``)."""
    names = {m.group(1).lower() for m in _CAPITALIZED.finditer(request)}
    return [
        v
        for v in values
        if isinstance(v, str)
        and len(v) == 2
        and v.isalpha()
        and any(n.startswith(v.lower()) for n in names)
    ]


# Words a request uses for the common actions an enum of operations lists: "create a
# todo" asks for ``add``, "remove the item" for ``delete``.
_ACTIONS: Mapping[str, frozenset[str]] = {
    "add": frozenset({"create", "new", "insert", "append", "remember"}),
    "create": frozenset({"add", "new", "make"}),
    "delete": frozenset({"remove", "erase", "drop", "cancel"}),
    "remove": frozenset({"delete", "erase", "drop"}),
    "update": frozenset({"change", "modify", "edit", "rename"}),
    "complete": frozenset({"finish", "finished", "done", "completed"}),
}


def _named_by_action(values: Sequence[Any], words: set[str]) -> list[Any]:
    """The action values (:data:`_ACTIONS`) the request asks for by another word for
    the same action, when exactly one value is asked for that way."""
    named = [v for v in values if _ACTIONS.get(str(v).lower(), frozenset()) & words]
    return named if len(named) == 1 else []


MIN_TELLING_CHARS = 6


def _partly_named(values: Sequence[Any], words: set[str]) -> list[Any]:
    """The values of several words that the request names by one telling word of their
    own (six letters or more, used by no other value): "backstage access" names
    "Backstage Pass". Used only when no value is named whole."""
    split = [set(_WORDS.findall(str(v).lower())) for v in values]
    named = []
    for value, own in zip(values, split, strict=True):
        others = set().union(*(o for o in split if o is not own))
        telling = {w for w in own - others if len(w) >= MIN_TELLING_CHARS}
        if len(own) > 1 and telling & words:
            named.append(value)
    return named


_CODE = re.compile(
    r"""['"]?(?P<code>\d+)['"]?\s+(?:for|represents|means|is|=|:)\s+['"]?"""
    r"(?P<meaning>[A-Za-z][A-Za-z ]{1,40}?)['\"]?(?=[,.;)]|\s+(?:and|or)\b|$)"
)


def coded_value(schema: Mapping[str, Any], request: str) -> list[int]:
    """The codes of an integer parameter whose description says what each stands for
    ("1 for cleaning service, 2 for ironing service", "'1' for Bangkok") that the
    request asks for by meaning: the codes whose meanings the request's words match
    best (each word used counts one, each missing one half: "cleaning" picks
    "cleaning service" over "big cleaning service"); none when no meaning is used."""
    if schema.get("type") != "integer":
        return []
    asked = {w[:5] for w in _WORDS.findall(request.lower())}
    best: list[int] = []
    most = 0.0
    for match in _CODE.finditer(str(schema.get("description", ""))):
        words = {w[:5] for w in _WORDS.findall(match.group("meaning").lower()) if len(w) >= 3}
        words -= {"the", "and"}
        used = len(words & asked)
        score = used - 0.5 * (len(words) - used)  # "cleaning": "cleaning service" > "big ..."
        code = int(match.group("code"))
        if not used or score <= 0 or code in best:
            continue
        if score > most:
            best, most = [code], score
        elif score == most:
            best.append(code)
    return best


_LIST_GAP = re.compile(r"\s*(?:,|;|and)?\s*$")
# Between two numbers of one list of counted items: the first item's words, then a
# separator ("five burgers and six chicken wings", "10个汉堡，50杯可乐").
_ITEM_GAP = re.compile(
    r"\s*['\"]?[^\W\d_][^\W\d]*(?:[ '-][^\W\d]+){0,4}['\"]?\s*(?:,|;|，|、|\band\b)\s*$"
)


# A coordinate written with its hemisphere: "37.8651 N", "119.5383° W".
_HEMISPHERE = re.compile(r"\s*°?\s*([NSEW])\b")


def coordinate(name: str, text: str) -> float | None:
    """The latitude (for a parameter named ``latitude``/``lat``) or longitude
    (``longitude``/``lon``/``lng``) of the one coordinate pair ``text`` writes with
    hemispheres ("37.8651 N, 119.5383 W"), signed; ``None`` otherwise."""
    words = set(_name_words(name)) | set(re.findall(r"[a-z]+", name.lower()))
    axis = "NS" if words & {"latitude", "lat"} else "EW" if words & _LONGITUDE else None
    if axis is None:
        return None
    values = [
        v
        for _, end, v in _numbers_at(text)
        if (m := _HEMISPHERE.match(text, end)) is not None and m.group(1) in axis
    ]
    return values[0] if len(values) == 1 else None


_LONGITUDE = frozenset({"longitude", "lon", "lng", "long"})


def _numbers_at(text: str) -> list[tuple[int, int, float]]:
    """(start, end, value) of each number ``text`` writes (see :func:`numbers_in`). In a
    coordinate pair written with hemispheres ("37.8651 N, 119.5383 W") a south or west
    coordinate is negative, as signed latitude and longitude parameters take it."""
    found = [
        (m.start(), m.end(), float(m.group(0).replace(",", "")))
        for m in _GROUND_NUMBER.finditer(text)
    ]
    sides = [_HEMISPHERE.match(text, end) for _, end, _ in found]
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
    for start, stop, _ in _numbers_at(text):
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


def _fitting(kind: object, numbers: Iterable[float]) -> list[Any]:
    """``numbers`` a parameter of JSON type ``kind`` can take, without repeats."""
    if kind == "integer":
        values: list[Any] = [int(v) for v in numbers if v.is_integer()]
    else:
        values = [int(v) if v.is_integer() else v for v in numbers]
    return list(dict.fromkeys(values))


def grounded_required(
    schema: Mapping[str, Any],
    ground: Grounding,
    name: str = "",
    skip: Sequence[str] = (),
    unit: float | None = None,
) -> dict[str, Any]:
    """A required parameter's schema held to what the request gives, else unchanged:
    an enum to the values the request names (:func:`named_values`); a code to the
    one the request asks for by meaning (:func:`coded_value`); a number to the
    numbers of the request and the results (the model otherwise writes a look-alike:
    ``"time": 190`` for "I can wait up to 600 seconds"), or to the one number written
    next to the parameter's ``name`` (:func:`named_number`), else to ``unit``, the number
    written with a unit only this parameter names (``local_units``); a flag the request names
    to on unless negated (:func:`named_flag`); a list of numbers to those numbers, no
    longer than the request's longest list (:func:`longest_number_list`); a list of
    strings no longer than the request's longest list in words
    (:func:`longest_word_list`); a date in a format the description names to the
    request's dates in that format (``local_dates.grounded_date``)."""
    kind = schema.get("type")
    if isinstance(schema.get("enum"), list):
        # codes listed as an enum ([1, 2]) are named by what the description says
        # they stand for ("'2' represents ironing service")
        named = named_values(schema["enum"], ground.request) or [
            c for c in coded_value(schema, ground.request) if c in schema["enum"]
        ]
        return {**schema, "enum": named} if named else dict(schema)
    if (dated := grounded_date(schema, ground.request)) is not None:
        return dated
    if coded := coded_value(schema, ground.request):
        return {"type": kind, "enum": coded}
    if kind == "boolean" and (flag := named_flag(name, ground.request)) is not None:
        return {"type": "boolean", "enum": [flag]}
    if (example := named_example(schema, ground.request)) is not None:
        return example
    if kind in ("number", "integer"):
        values = _fitting(kind, _shares(schema, ground.request, ground.numbers))
        n = coordinate(name, ground.request)
        n = named_number(name, ground.request, skip) if n is None else n
        n = unit if n is None else n
        near = _fitting(kind, _shares(schema, ground.request, [n] if n is not None else []))
        return {"type": kind, "enum": near or values} if values else dict(schema)
    return _grounded_list(schema, ground)


def _grounded_list(schema: Mapping[str, Any], ground: Grounding) -> dict[str, Any]:
    items = schema.get("items")
    if schema.get("type") != "array" or not isinstance(items, Mapping):
        return dict(schema)
    if items.get("type") in ("number", "integer"):
        values = _fitting(items["type"], _shares(schema, ground.request, ground.numbers))
        longest = longest_number_list(ground.request)
        if values and longest:
            return {**schema, "items": {"enum": values}, "maxItems": longest}
        return dict(schema)
    if isinstance(items.get("enum"), list):
        named = named_values(items["enum"], ground.request)
        if named:
            return {**schema, "items": {**items, "enum": named}, "maxItems": len(named)}
        return dict(schema)
    if items.get("type") == "string":
        return {**schema, "maxItems": longest_word_list(ground.request)}
    return dict(schema)


def _telling_words(name: str, skip: Iterable[str]) -> list[str]:
    """The words of parameter ``name`` that are not ``skip`` words (the tool's name,
    words other parameters share), matched by prefix: "mol" is ``mols``'s word."""
    skipped = list(skip)
    return [
        w for w in _name_words(name) if not any(t.startswith(w) or w.startswith(t) for t in skipped)
    ]


def named_flag(name: str, request: str) -> bool | None:
    """A flag parameter's value when the request names it (a word of ``name``, by its
    first five letters: "detailed" names ``details``, "normalization" names
    ``normalize``): on, unless a negation comes just before ("without details");
    ``None`` when the request does not name it. The model wrote ``false`` for "Give me
    detail information" and "including main contributions"."""
    words = _name_words(name)
    stems = {w[: MIN_PREFIX_CHARS + 2] for w in words}
    asked = set(_WORDS.findall(request.lower()))
    if not any(a[: MIN_PREFIX_CHARS + 2] in stems for a in asked if len(a) >= MIN_PREFIX_CHARS):
        return None
    return not _negated(words, request)


MAX_NAME_GAP_WORDS = 3  # "net income of $2,000,000", "the rating is at least 4.5"


def named_number(name: str, request: str, skip: Iterable[str] = ()) -> float | None:
    """The number the request writes right next to a word of parameter ``name``: after
    it with at most three words between ("net income of $2,000,000"), or just before it
    with at most one ("two nights", "4.5 star rating"); the closest wins. With several
    numbers in a request the model otherwise picks by position (``"net_income":
    200000``, the dividends' amount)."""
    stems = {w[: MIN_PREFIX_CHARS + 2] for w in _telling_words(name, skip)}
    if not stems:
        return None
    numbers = _numbers_at(request)
    best: tuple[int, int, float] | None = None
    for word in _LETTERS.finditer(request.lower()):
        if len(word.group(0)) < MIN_PREFIX_CHARS or word.group(0)[:5] not in stems:
            continue
        for start, stop, value in numbers:
            if start >= word.end():
                gap, limit, side = request[word.end() : start], MAX_NAME_GAP_WORDS, 0
            elif stop <= word.start():
                # a unit written onto the number ("440Hz frequency") is no word between
                glued = re.match(r"[^\W\d_]*", request[stop:]).end()  # type: ignore[union-attr]
                gap, limit, side = request[stop + glued : word.start()], 1, 1
            else:
                continue
            between = len(re.findall(r"[^\W\d_]+", gap))
            # No other number, and no list or clause break (", shareholder's equity"
            # does not name the number before the comma).
            close = between <= limit and not re.search(r"[\d,;:.!?]", gap.rstrip(" $:"))
            if close and (best is None or (between, side) < best[:2]):
                best = (between, side, value)
    return best[2] if best is not None else None


def grounded_optional(
    schema: Mapping[str, Any], name: str, request: str, tool_words: Iterable[str] = ()
) -> dict[str, Any] | None:
    """An optional parameter's schema narrowed to what ``request`` gives, or ``None``
    to leave the parameter out.

    A small model fills every optional parameter it is offered, with invented values
    ("abv_min": 10.0, "device_id": "100000000000"). So an optional parameter is offered
    only when the request gives it: an enum (or a list of enum items) keeps the values
    the request names; a number takes one of the request's numbers; a date in a known
    format one of the request's dates, when the name's other words (``return`` of
    ``return_time``) are the request's too; a string whose
    description gives examples, when the request names one ("Type of the lawsuit,
    e.g., 'IPR', 'Patent'" for "patent lawsuits"); anything else is offered when the
    request uses a word of the parameter's name ("aligned", "unit") that the tool's
    own name and required parameters (``tool_words``) do not use: "movies" in "list
    movies in Mumbai" is about ``get_movies``, not its ``movie_date``; "title" is the
    required ``Title``'s word, not ``MetaTitle``'s."""
    words = set(_WORDS.findall(request.lower()))
    if isinstance(schema.get("enum"), list):
        named = named_values(schema["enum"], request)
        return {**schema, "enum": named} if named else None
    kind = schema.get("type")
    if coded := coded_value(schema, request):
        return {"type": kind, "enum": coded}
    if kind in ("number", "integer"):
        values = _fitting(kind, _shares(schema, request, numbers_in(request)))
        return {"enum": values} if values else None
    own = {w[: MIN_PREFIX_CHARS + 2] for w in tool_words}
    telling = [w for w in _name_words(name) if w[: MIN_PREFIX_CHARS + 2] not in own]
    mentioned = any(any(_same_word(x, w) for x in words) for w in telling)
    if takes_date(schema):
        # a date the request gives is this parameter's unless the name says which
        # date it is and the request does not use that word ("return_time")
        which = [w for w in telling if w not in _DATE_WORDS]
        asked = not which or any(_same_word(x, w) for x in words for w in which)
        return grounded_date(schema, request) if asked else None
    items = schema.get("items")
    if kind == "array" and isinstance(items, Mapping) and isinstance(items.get("enum"), list):
        return (
            _grounded_list(schema, Grounding(request))
            if named_values(items["enum"], request)
            else None
        )
    if _names_an_example(schema, request):
        return named_example(schema, request) or _grounded_list(schema, Grounding(request))
    if not mentioned:
        return None
    if kind == "boolean":
        # The request names the option, so it asks for it, unless it says it does not
        # ("including human impact" gave ``false``; "without details" is false).
        return {"type": "boolean", "enum": [not _negated(telling, request)]}
    return _grounded_list(schema, Grounding(request))


MIN_STEM_CHARS = 6
# Words of a date parameter's name that say only that it is a date.
_DATE_WORDS = frozenset({"date", "time", "datetime", "day", "when", "new"})


def _same_word(written: str, name_word: str) -> bool:
    """Whether a request word is a parameter name's word: the same, a longer form of
    it ("units" of ``unit``), or one sharing all but its last two letters
    ("standardization" of ``standardize``)."""
    if written.startswith(name_word):
        return True
    shared = next(
        (i for i, (a, b) in enumerate(zip(written, name_word, strict=False)) if a != b),
        min(len(written), len(name_word)),
    )
    return shared >= max(MIN_STEM_CHARS, len(name_word) - 2)


_DESCRIBED_EXAMPLE = re.compile(
    # a period inside a value ("'https://api.example.com/v1/data'") does not end it
    r"\b(?:e\.g\.|eg\.|for example|for instance|such as)[,:]?\s*(?P<list>(?:[^.)]|\.(?=\w))*)",
    re.IGNORECASE,
)


def described_examples(schema: Mapping[str, Any]) -> list[str]:
    """The example values a parameter's description lists after "e.g." / "such as"
    ("Special dietary requirements, e.g. vegan, gluten-free." gives ``vegan`` and
    ``gluten-free``), quotes stripped; a quoted example is the quoted text alone
    ("such as 'CA' for California" gives ``CA``, not ``CA' for California``); for a
    list, its items' description too."""
    texts = [str(schema.get("description", ""))]
    items = schema.get("items")
    if isinstance(items, Mapping):
        texts.append(str(items.get("description", "")))
    found: list[str] = []
    for text in texts:
        for match in _DESCRIBED_EXAMPLE.finditer(text):
            for part in re.split(r",|\bor\b|\band\b", match.group("list")):
                quoted = _QUOTED_EXAMPLE.match(part.strip())
                value = quoted.group(2) if quoted else part.strip().strip("'\"` ")
                if value and value.lower() not in ("etc", "etc."):
                    found.append(value)
    return found


_QUOTED_EXAMPLE = re.compile(r"(['\"`])(.+?)\1(?=\s|$)")
# A parameter description showing a place written with its region: "e.g. Seattle, WA",
# "'City, State'", "in the format of 'City, Country'".
JOINED_EXAMPLE = re.compile(r"\b[A-Z][\w.]*(?: [A-Z][\w.]*)*, ?[A-Z][A-Za-z]")


def named_example(schema: Mapping[str, Any], request: str) -> dict[str, Any] | None:
    """A string parameter held to the example values its description lists that the
    request names ("Date of the concert, e.g. this weekend, today, tomorrow" for
    "a concert this weekend": ``this weekend``; the model wrote
    ``<i>201</i> <i>0</i> ...``), or ``None``. Not for a description joining a name
    to its region ("e.g. Seattle, WA"): "Seattle" would cut the value short."""
    if schema.get("type") != "string" or JOINED_EXAMPLE.search(str(schema.get("description"))):
        return None
    examples = described_examples(schema)
    # one written only inside a URL or address ("https" of 'https://api.x.com/groups')
    # is not named; the whole address is
    whole = {m.group(0).strip("'\"`.,;:!?()").lower() for m in _ADDRESS.finditer(request)}
    named = named_values(examples, _ADDRESS.sub(" ", request))
    named += [e for e in examples if e.lower() in whole]
    return {"type": "string", "enum": list(dict.fromkeys(named))} if named else None


# A URL or an email address. Anchored at the start of a run of non-spaces: the match
# starts there anyway, and unanchored, each position of a long run without "://" was
# tried to the run's end (a 1 MB prompt took minutes).
_ADDRESS = re.compile(r"(?<!\S)(?:\S*://\S*|\S+@\S+)")


def _names_an_example(schema: Mapping[str, Any], request: str) -> bool:
    """Whether ``request`` names one of the example values the parameter's description
    gives (:func:`described_examples`), for a string or a list of strings."""
    kind = schema.get("type")
    items = schema.get("items")
    strings = kind == "string" or (
        kind == "array" and isinstance(items, Mapping) and items.get("type") == "string"
    )
    return strings and bool(named_values(described_examples(schema), request))


def _negated(words: Sequence[str], request: str) -> bool:
    """Whether a negation comes within three words before the request's first use of
    one of ``words``."""
    text = request.lower()
    for word in words:
        found = re.search(rf"\b{re.escape(word[: MIN_PREFIX_CHARS + 2])}", text)
        if found is not None:
            before = text[: found.start()].split()[-3:]
            return bool(_NEGATION.search(" ".join(before)))
    return False


_NEGATION = re.compile(r"\b(?:no|not|without|exclude|excluding|don't|dont|never|skip)\b")


def gives_required(spec: ToolSpec, request: str) -> bool:
    """Whether ``request`` gives what ``spec``'s required parameters need that can be
    checked from text: a number for each numeric one, a named value for each enum.
    "I have to make a payment" talks about ``make_payment`` but gives no amount: a
    call would invent one. Strings are not checked (their values are free text)."""
    props = spec.parameters.get("properties") or {}
    for key in spec.parameters.get("required") or ():
        schema = props.get(key)
        if not isinstance(schema, Mapping):
            continue
        if isinstance(schema.get("enum"), list):
            # codes listed as an enum are named by meaning, as grounded_required reads them
            coded = [c for c in coded_value(schema, request) if c in schema["enum"]]
            if not named_values(schema["enum"], request) and not coded:
                return False
        elif (
            schema.get("type") in ("number", "integer")
            and not numbers_in(request)
            and not coded_value(schema, request)
        ):
            return False
    return True


def grounded_arguments(spec: ToolSpec, ground: Grounding | None) -> Mapping[str, Any]:
    """``spec``'s parameters with each parameter grounded in ``ground``
    (:func:`grounded_required`, :func:`grounded_optional`), nested objects' properties
    too (:func:`_grounded_object`); unchanged when ``ground`` is ``None``. An optional
    parameter the request gives a definite value for (a named enum value or flag, a
    date, a number next to the parameter's name) becomes required: offered but
    optional, the model closed the object without it (``"rating"`` for "at least a 4.5
    star rating")."""
    schema = spec.parameters
    if ground is None or not isinstance(schema.get("properties"), Mapping):
        return schema
    return _grounded_object(schema, ground, _name_words(spec.name), nested=False)


MAX_GROUNDED_DEPTH = 3


def _is_object(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object" and isinstance(schema.get("properties"), Mapping)


def _grounded_object(
    schema: Mapping[str, Any],
    ground: Grounding,
    own: list[str],
    *,
    nested: bool,
    depth: int = 0,
) -> dict[str, Any]:
    """An object schema's properties grounded one by one (see
    :func:`grounded_arguments`); ``own`` are the words of the tool's (or the nested
    object's) name. A nested object is grounded the same way (a settings ``body``'s
    ``"airConJobMode"`` enum, a ``profile_data``'s ``"age"``): the model otherwise
    filled every property of it with invented values (``"bio": "I need to update
    ..."``, ``"targetTemperature": 100``). A nested object that marks nothing
    required takes the properties the request gives as required (its author did not
    say which are optional), and an optional nested object is kept, and required,
    when the request gives one of its properties a definite value."""
    props = schema["properties"]
    required = [k for k in schema.get("required") or () if k in props]
    taken = own + [w for k in required for w in _name_words(k)]
    # Words several parameters' names share ("value" of initial_value and final_value)
    # and the tool's own words ("temperature" of calculate_final_temperature) do not
    # tell which parameter a number next to them belongs to.
    counts = Counter(w for k in props for w in set(_name_words(k)))
    shared = own + [w for w, c in counts.items() if c > 1]
    spare = _spare_numbers(props, set(required), ground.request)
    units = unit_numbers(props, ground.request, _numbers_at(ground.request))
    kept: dict[str, Any] = {}
    given: list[str] = []
    for key, sub in props.items():
        if not isinstance(sub, Mapping):
            kept[key] = sub
        elif _is_object(sub) and depth < MAX_GROUNDED_DEPTH:
            inner = _grounded_object(sub, ground, _name_words(key), nested=True, depth=depth + 1)
            if key in required or inner["required"]:
                kept[key] = inner
                given += [] if key in required else [key]
            elif grounded_optional(sub, key, ground.request, taken) is not None:
                kept[key] = inner  # named ("with these params"), nothing definite in it
        elif key in required:
            kept[key] = grounded_required(sub, ground, key, shared, units.get(key))
        elif (narrowed := grounded_optional(sub, key, ground.request, taken)) is not None:
            numeric = sub.get("type") in ("number", "integer")
            named = _mentions(key, ground.request, taken) or key in units
            if numeric and "enum" in narrowed and not spare and not named:
                continue
            near = named_number(key, ground.request, shared) if numeric and named else None
            near = units.get(key) if near is None and numeric else near
            if near is not None:
                near_share = _shares(sub, ground.request, [near])
                narrowed = {"enum": _fitting(sub.get("type"), near_share) or narrowed["enum"]}
                given.append(key)
            elif (
                (_definite(narrowed) and not numeric)
                or _names_an_example(sub, ground.request)
                or (nested and not required)
            ):
                given.append(key)
            kept[key] = narrowed
    return {**schema, "properties": kept, "required": required + given}


def _mentions(name: str, request: str, taken: Iterable[str] = ()) -> bool:
    """Whether the request uses a word of parameter ``name`` that is not one of the
    ``taken`` words (the tool's name, the required parameters' names): "light" of
    ``speed_of_light`` is ``light_travel_time``'s word."""
    words = set(_LETTERS.findall(request.lower()))
    return any(w in words for w in _telling_words(name, taken))


def _definite(schema: Mapping[str, Any]) -> bool:
    """Whether a narrowed schema holds a value the request gives: an enum (named
    values, a flag, a date) or a list of named enum items."""
    items = schema.get("items")
    return "enum" in schema or (isinstance(items, Mapping) and "enum" in items)


def _spare_numbers(props: Mapping[str, Any], required: set[str], request: str) -> bool:
    """Whether the request has more numbers than the required parameters take: an
    optional number otherwise takes one of theirs ("the 2021 season" gave
    ``"top": 2021``) unless the request names it ("the top 3"). Numbers inside quotes
    belong to a quoted name ("'JBL Flip 4'"), not to a parameter."""
    takers = [props[k] for k in required if isinstance(props.get(k), Mapping)]
    if any(t.get("type") == "array" for t in takers):
        return False  # a list of numbers takes them all
    wanted = sum(t.get("type") in ("number", "integer") for t in takers)
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", " ", request)
    return len(set(numbers_in(unquoted))) > wanted


__all__ = [
    "Grounding",
    "coded_value",
    "described_examples",
    "gives_required",
    "grounded_arguments",
    "grounded_optional",
    "grounded_required",
    "longest_number_list",
    "longest_word_list",
    "named_example",
    "named_flag",
    "named_number",
    "named_values",
    "numbers_in",
    "says_a_number",
    "percents_in",
    "request_context",
    "takes_fraction",
]
