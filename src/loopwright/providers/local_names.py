"""What a request names of a tool's parameters, for the embedded model's argument
grounding (``local_ground``): the enum values it names (whole, by a word's start, by a
telling word, by another word for the same action, by a name's first letters), a code
by its meaning, an example value a description lists, a flag, the number written next
to a parameter's name, a coordinate. Generic: it reads only the schema and the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loopwright.providers.local_numbers import HEMISPHERE, numbers_at

WORDS = re.compile(r"[a-z]+")


MIN_PREFIX_CHARS = 3


# Letters of any script: "año" of ``año_vehiculo`` is one word, not "a" and "o".
LETTERS = re.compile(r"[^\W\d_]+")


def name_words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()
    return [w for w in LETTERS.findall(spaced) if len(w) >= MIN_PREFIX_CHARS]


def named_values(values: Sequence[Any], request: str) -> list[Any]:
    """The enum ``values`` the request names: as a whole word or phrase, in any case
    ("Comfort" names "comfort"), or, for a word of three letters or more, as the start
    of a request word ("ascending" names "ASC"). Never inside a word: "could" does not
    name "CO"."""
    text = request.lower()
    words = set(WORDS.findall(text))
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
    split = [set(WORDS.findall(str(v).lower())) for v in values]
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
    asked = {w[:5] for w in WORDS.findall(request.lower())}
    best: list[int] = []
    most = 0.0
    for match in _CODE.finditer(str(schema.get("description", ""))):
        words = {w[:5] for w in WORDS.findall(match.group("meaning").lower()) if len(w) >= 3}
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


_LONGITUDE = frozenset({"longitude", "lon", "lng", "long"})


def coordinate(name: str, text: str) -> float | None:
    """The latitude (for a parameter named ``latitude``/``lat``) or longitude
    (``longitude``/``lon``/``lng``) of the one coordinate pair ``text`` writes with
    hemispheres ("37.8651 N, 119.5383 W"), signed; ``None`` otherwise."""
    words = set(name_words(name)) | set(re.findall(r"[a-z]+", name.lower()))
    axis = "NS" if words & {"latitude", "lat"} else "EW" if words & _LONGITUDE else None
    if axis is None:
        return None
    values = [
        v
        for _, end, v in numbers_at(text)
        if (m := HEMISPHERE.match(text, end)) is not None and m.group(1) in axis
    ]
    return values[0] if len(values) == 1 else None


def telling_words(name: str, skip: Iterable[str]) -> list[str]:
    """The words of parameter ``name`` that are not ``skip`` words (the tool's name,
    words other parameters share), matched by prefix: "mol" is ``mols``'s word."""
    skipped = list(skip)
    return [
        w for w in name_words(name) if not any(t.startswith(w) or w.startswith(t) for t in skipped)
    ]


def named_flag(name: str, request: str) -> bool | None:
    """A flag parameter's value when the request names it (a word of ``name``, by its
    first five letters: "detailed" names ``details``, "normalization" names
    ``normalize``): on, unless a negation comes just before ("without details");
    ``None`` when the request does not name it. The model wrote ``false`` for "Give me
    detail information" and "including main contributions"."""
    words = name_words(name)
    stems = {w[: MIN_PREFIX_CHARS + 2] for w in words}
    asked = set(WORDS.findall(request.lower()))
    if not any(a[: MIN_PREFIX_CHARS + 2] in stems for a in asked if len(a) >= MIN_PREFIX_CHARS):
        return None
    return not negated(words, request)


MAX_NAME_GAP_WORDS = 3  # "net income of $2,000,000", "the rating is at least 4.5"


def named_number(name: str, request: str, skip: Iterable[str] = ()) -> float | None:
    """The number the request writes right next to a word of parameter ``name``: after
    it with at most three words between ("net income of $2,000,000"), or just before it
    with at most one ("two nights", "4.5 star rating"); the closest wins. With several
    numbers in a request the model otherwise picks by position (``"net_income":
    200000``, the dividends' amount)."""
    stems = {w[: MIN_PREFIX_CHARS + 2] for w in telling_words(name, skip)}
    if not stems:
        return None
    numbers = numbers_at(request)
    best: tuple[int, int, float] | None = None
    for word in LETTERS.finditer(request.lower()):
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


MIN_STEM_CHARS = 6


def same_word(written: str, name_word: str) -> bool:
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
        found += [m.group(2) for m in _VALUE_FOR.finditer(text) if m.group(2) not in found]
    return found


# A value the description states with what it stands for: "'now' for current,
# 'weekend' for the coming weekend", "use 'C' for Celsius".
_VALUE_FOR = re.compile(r"(['\"`])([^'\"`\n]{1,30})\1\s+for\b")


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


def names_an_example(schema: Mapping[str, Any], request: str) -> bool:
    """Whether ``request`` names one of the example values the parameter's description
    gives (:func:`described_examples`), for a string or a list of strings."""
    kind = schema.get("type")
    items = schema.get("items")
    strings = kind == "string" or (
        kind == "array" and isinstance(items, Mapping) and items.get("type") == "string"
    )
    return strings and bool(named_values(described_examples(schema), request))


def negated(words: Sequence[str], request: str) -> bool:
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


def mentions(name: str, request: str, taken: Iterable[str] = ()) -> bool:
    """Whether the request uses a word of parameter ``name`` that is not one of the
    ``taken`` words (the tool's name, the required parameters' names): "light" of
    ``speed_of_light`` is ``light_travel_time``'s word."""
    words = set(LETTERS.findall(request.lower()))
    return any(w in words for w in telling_words(name, taken))


# Words of a parameter's name that say what kind of value it is, not which thing it
# names ("the user name" does not name a ``name``).
_KIND_WORDS = frozenset({"name", "type", "value", "data", "info", "number", "string", "text"})
# A span of one to four words before the parameter's word, written in lower case (the
# common noun, not part of a name: "New York City" gives no ``city``), none of them a
# function word ("the R vs Adams legal case", "a Card of rank").
_NAMED_SPAN = r"(?P<span>(?:(?!(?:the|an?)\s)[^\s,;]+\s+){{1,4}}?)(?-i:{word})s?\b"
_FUNCTION_WORDS = frozenset(
    [
        "of",
        "on",
        "in",
        "at",
        "by",
        "for",
        "with",
        "from",
        "to",
        "into",
        "between",
        "vs",
        "and",
        "or",
        "about",
        "as",
        "per",
        "than",
        "via",
        "over",
        "under",
        "after",
        "before",
    ]
)
# The span's last word is a name or a code: a capital, a digit or a sign ("echo %date%",
# "Network1", "start microsoft.windows.camera:"); a plain modifier ("the nearby city",
# "a regular Imaginative fiction movie") is not a value.
_NAME_LIKE = re.compile(r"[A-Z0-9]|[^\w\s]")


def named_span(name: str, schema: Mapping[str, Any], request: str) -> str | None:
    """The value a request writes between an article and a word of the parameter's
    name, for a free string parameter: "using the echo %date% command" gives
    ``command`` the value ``echo %date%``, "in pod 10 of the Network1 fabric" gives
    ``fabricName`` ``Network1``. Only a span of no function word ending in a name or a
    code (:data:`_NAME_LIKE`), before the parameter's word in lower case, and only when
    the request writes one such span for the parameter; else ``None``."""
    if schema.get("type") != "string" or any(k in schema for k in ("enum", "const", "pattern")):
        return None
    found: set[str] = set()
    for word in name_words(name):
        if word in _KIND_WORDS or len(word) <= MIN_PREFIX_CHARS:
            continue
        pattern = r"\b(?:the|an?)\s+" + _NAMED_SPAN.format(word=re.escape(word))
        for match in re.finditer(pattern, request, re.IGNORECASE):
            span = match.group("span").strip()
            words = span.lower().split()
            if _NAME_LIKE.search(span.split()[-1]) and not _FUNCTION_WORDS & set(words):
                found.add(span)
    return found.pop() if len(found) == 1 else None


# Words of a parameter's name that say it is the start of a change (``from_currency``,
# ``current_mode``): it takes the "from" side.
_FROM_SIDE = frozenset({"from", "source", "origin", "start", "old", "current", "previous"})
_SIDE = r"\b{cue}\s+(?:the\s+|an?\s+|my\s+)?{value}(?![a-z0-9])"


def changed_to(values: Sequence[Any], name: str, request: str) -> list[Any]:
    """Of several enum ``values`` a request names, the ones it changes to: "switch my
    order from pizza to a BURGER" names ``PIZZA`` and ``BURGER`` and asks for
    ``BURGER``. Unchanged unless some value follows "from" and another "to"/"into",
    or when the parameter's name says it is the start (``from_unit``)."""
    if len(values) < 2 or set(name_words(name)) & _FROM_SIDE:
        return list(values)
    text = request.lower()

    def after(cue: str, value: Any) -> bool:
        wanted = re.escape(str(value).lower())
        return re.search(_SIDE.format(cue=cue, value=wanted), text) is not None

    sources = [v for v in values if after("from", v)]
    targets = [v for v in values if after("(?:to|into)", v) and v not in sources]
    return targets if sources and targets else list(values)


__all__ = [
    "JOINED_EXAMPLE",
    "LETTERS",
    "MAX_NAME_GAP_WORDS",
    "MIN_PREFIX_CHARS",
    "MIN_STEM_CHARS",
    "MIN_TELLING_CHARS",
    "WORDS",
    "changed_to",
    "coded_value",
    "coordinate",
    "described_examples",
    "mentions",
    "name_words",
    "named_example",
    "named_flag",
    "named_number",
    "named_span",
    "named_values",
    "names_an_example",
    "negated",
    "same_word",
    "telling_words",
]
