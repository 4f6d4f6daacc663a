"""Call or answer: whether the embedded model's first turn after a request calls a tool,
from the request's words (see ``LocalConfig.call_overlap``).

At 270M the model's own log-probabilities carry next to no signal for this choice on
tools the prompt only describes (benchmarks/README.md, "Embedded model: useful answers
and unseen tools"), so a turn calls a tool only when the request both *talks about* one
(shares enough of its content words with it, ``local_prompt.tool_overlaps``) and
*gives what its required parameters need*: a call that has to invent a required value
is the most common wrong call on requests no offered tool fits ("I want to find a
train" with ``find_trains(_from, to, date)``; "Can I get a report for 10.10.0.0" with
``get_current_weather(location)``).

What a required parameter needs is read from its name alone, by its head noun (the last
word, or the word before "of": ``date_of_journey`` is a date), and only for kinds that
text can show (:data:`KIND_WORDS`); any other string is free text and needs nothing.
The rules are deliberately loose (any value of the kind anywhere in the request), so
they refuse only requests that cannot fill the parameter at all. Two more kinds of
evidence are checked (:func:`fits`): a tool without required parameters gets no evidence
from them, so one shared word is not enough ("I want to watch a movie" with a
parameterless movie search); and an address the request hands over (a URL, an IP
address, an email) must have a parameter that can take it ("a report for 10.10.0.0
using my API key" with a weather tool whose only string is a place).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from loopwright.core.protocols import NamedTool, ToolChoice
from loopwright.core.tools import ToolSpec
from loopwright.providers import local_ground as lgr
from loopwright.providers import local_prompt as lp

# The head nouns of a parameter name that say which kind of value it takes.
KIND_WORDS: Mapping[str, frozenset[str]] = {
    "url": frozenset({"url", "urls", "uri", "endpoint", "link"}),
    "email": frozenset({"email", "mail"}),
    "id": frozenset({"id", "ids", "uuid", "identifier"}),
    "place": frozenset(
        {"location", "city", "place", "address", "destination", "origin", "country"}
        | {"state", "region", "airport", "loc", "from", "to"}
    ),
    "date": frozenset({"date", "day", "birthday"}),
    "time": frozenset({"time"}),
    "name": frozenset({"name", "username", "title"}),
}

_URL = re.compile(
    r"://|\bwww\.|\b\d{1,3}(?:\.\d{1,3}){3}\b"  # a scheme, www., an IPv4 address
    r"|\b[\w-]+\.(?:com|org|net|io|gov|edu|co|ai|dev|app|info)\b"  # a domain
    r"|(?:^|\s)/[\w{}-]+/",  # a path
    re.IGNORECASE,
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.\w")
_QUOTED = re.compile(r"['\"‘’“”`«][^'\"‘’“”`»]{1,80}['\"‘’“”`»]")
# an identifier-like token: with a digit, inner capitals (AB1010CD) or joined by _ or -
_CODE = re.compile(r"\b(?=[\w-]*\d)[\w-]+\b|\b[A-Z][\w-]*[A-Z0-9][\w-]*\b|\b\w+[_-]\w+\b")
# month and weekday names, whole or abbreviated
_CALENDAR_NAME = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|mon(?:day)?"
    r"|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:rs(?:day)?)?|fri(?:day)?|sat(?:urday)?"
    r"|sun(?:day)?"
)
# a day or month named, a numeric date (3/8, 2024-03-08), an ordinal day or a year: a
# lone number is not a date ("1 train ticket")
_DATE = re.compile(
    rf"\b(?:{_CALENDAR_NAME}|today|tomorrow|tonight|yesterday|weekend)s?\b"
    r"|\b\d{1,4}[-/.]\d{1,2}\b|\b\d{1,2}(?:st|nd|rd|th)\b|\b(?:19|20)\d\d\b",
    re.IGNORECASE,
)
# capitalized, but not a name: "The return date is March 8th" names no place
_NOT_A_NAME = re.compile(rf"(?:{_CALENDAR_NAME})\.?", re.IGNORECASE)
_TIME = re.compile(r"\d|\b(?:noon|midnight|morning|afternoon|evening|night|now)\b", re.IGNORECASE)
_TOKEN = re.compile(r"[^\W\d_][\w'.-]*")
_SELF = frozenset({"I", "I'm", "I'd", "I'll", "I've"})
# a short run of capitalized words: an example that is a proper name
_NAME_EXAMPLE = re.compile(r"[A-Z][\w'.-]*(?:[ ,]+[A-Z][\w'.-]*){0,3}")
_CASELESS = 0x24F  # past Latin Extended-B: scripts without capitals (CJK, Thai, ...)
# Shared words a tool without required parameters needs when the request gives none of
# its optional values (see :func:`fits`).
MIN_SHARED_WORDS = 2


def turn_mode(choice: ToolChoice, tools: Sequence[ToolSpec]) -> lp.Mode:
    """What a turn may be, from ``tool_choice`` alone."""
    if not tools or choice == "none":
        return "answer"
    if choice == "required" or isinstance(choice, NamedTool):
        return "tools"
    return "both"


def first_turn_kind(tools: Sequence[ToolSpec], request: str, call_overlap: float) -> lp.Mode | None:
    """A first turn's kind from the request's words alone, or ``None`` to leave it to
    the model's answer-or-call score. A call needs a tool the request talks about (a
    share of at least ``call_overlap`` of its content words) and whose required
    parameters it gives (:func:`gives_required`). With tools whose worked examples show
    example values (:func:`shows_values`) any other request the model scores, if some
    tool's required parameters are given at all: the examples let it map requests
    that share no word with a tool ("Is it sunny in Sydney?" to ``get_weather``).
    Otherwise any other request is answered: without such examples the score carries
    no signal (it called a tool for every BFCL request left to it, "Whopper" with a
    food-order tool whose only parameter is an enum; benchmarks/README.md, "Embedded
    model")."""
    shares = lp.tool_overlaps(tools, request, notes=True)
    given = [gives_required(spec, request) for spec in tools]
    if any(
        s >= call_overlap and g and fits(spec, request)
        for spec, s, g in zip(tools, shares, given, strict=True)
    ):
        return "tools"
    shown = any(shows_values(t) for t in tools)
    return None if shown and any(given) else "answer"


def word_candidates(tools: Sequence[ToolSpec], request: str) -> list[ToolSpec]:
    """The tools left to choose among by name log-probability: when the tool sharing
    most of the request's content words shares at least :data:`MIN_SHARED_WORDS`, the
    tools sharing fewer than half as many are out. The name's log-probability favours
    short names and ones the model has seen: "Find me the detailed profile of
    basketball player Lebron James" called ``get_traffic_info`` (no shared word) over
    ``sports_db.find_athlete`` (two) despite the words' weight in the score. On BFCL's
    ``multiple`` pool this never drops the expected tool."""
    counts = [len(lp.shared_words(spec, request)) for spec in tools]
    best = max(counts, default=0)
    if best < MIN_SHARED_WORDS:
        return list(tools)
    return [spec for spec, n in zip(tools, counts, strict=True) if 2 * n >= best]


def fits(spec: ToolSpec, request: str) -> bool:
    """Whether a request that talks about ``spec`` and gives its required values
    (:func:`gives_required`, checked first) is evidence enough for a call. An address
    the request hands over (a URL, IP address, domain or email) must have a parameter
    that can take it (:func:`takes_addresses`). One shared word is weak evidence: with
    a tool without required parameters it needs a value for an optional one
    (:func:`gives_optional`; "movie" in "I want to watch a movie" is otherwise all
    there is), and a word only the tool's description uses ("about") needs a value for
    a required one (:func:`gives_a_value`)."""
    if not takes_addresses(spec, request):
        return False
    shared = lp.shared_words(spec, request, notes=True)
    if len(shared) >= MIN_SHARED_WORDS:
        return True
    if not spec.parameters.get("required"):
        return gives_optional(spec, request)
    named = lp.shared_words(spec, request, name_only=True)
    return bool(shared & named) or gives_a_value(spec, request)


def gives_a_value(spec: ToolSpec, request: str) -> bool:
    """Whether ``request`` shows a value for one of ``spec``'s required parameters. For
    numbers, enums and strings of a known kind :func:`gives_required` has checked it; a
    free-text string takes what the request says (a query or a command is written from
    its words: "Count the users in the users table"); a list or an object needs
    something text can show as a value: a proper name, a quoted span, a code or a
    number ("Tell me something about the scene in this image" gives no boxes)."""
    props = spec.parameters.get("properties") or {}
    shown = shows_kind("name", request) or bool(lgr.numbers_in(request))
    for key in spec.parameters.get("required") or ():
        schema = props.get(key)
        if not isinstance(schema, Mapping):
            continue
        kind = schema.get("type")
        if "enum" in schema or kind in ("number", "integer"):
            return True
        if kind == "string":
            return True
        if kind in ("array", "object") and shown:
            return True
    return False


def takes_addresses(spec: ToolSpec, request: str) -> bool:
    """Whether ``spec`` has a parameter for the address ``request`` hands over, if it
    hands over one (a URL, IP address, domain or email): a string parameter that is free
    text or of the kind url, id, email or name. "A report for 10.10.0.0 using my API key"
    is about something else than a tool whose only string is a place."""
    if not (_URL.search(request) or _EMAIL.search(request)):
        return True
    for key, schema in (spec.parameters.get("properties") or {}).items():
        if not isinstance(schema, Mapping) or "enum" in schema:
            continue
        if schema.get("type") in ("string", "array", "object", None) and value_kind(key) in (
            None,
            "url",
            "id",
            "email",
            "name",
        ):
            return True
    return False


def gives_optional(spec: ToolSpec, request: str) -> bool:
    """Whether ``request`` gives a value one of ``spec``'s parameters takes, by what
    text can show (:func:`gives_required`'s evidence): a named enum value, a number for
    a numeric one, a value of a string's kind, or a proper name for a free string."""
    for key, schema in (spec.parameters.get("properties") or {}).items():
        if not isinstance(schema, Mapping):
            continue
        if isinstance(schema.get("enum"), list):
            if lgr.named_values(schema["enum"], request):
                return True
        elif schema.get("type") in ("number", "integer"):
            if lgr.numbers_in(request):
                return True
        elif schema.get("type") == "string":
            kind = value_kind(key)
            if shows_kind(kind, request) if kind is not None else names_something(request):
                return True
    return False


def shows_values(spec: ToolSpec) -> bool:
    """Whether the prompt's worked examples for ``spec`` show example values its schema
    gives (``examples`` on a parameter), not only enum members or no arguments."""
    props = spec.parameters.get("properties") or {}
    return lp.has_examples(spec.parameters) and any(
        isinstance(p, Mapping) and "examples" in p for p in props.values()
    )


def gives_required(spec: ToolSpec, request: str) -> bool:
    """Whether ``request`` gives a value for each of ``spec``'s required parameters
    that text can show: numbers and enum values (``local_ground.gives_required``), and
    strings of a known kind, from the parameter's name (:func:`value_kind`) or its
    examples (:func:`example_kind`; see :func:`shows_kind`)."""
    if not lgr.gives_required(spec, request):
        return False
    props = spec.parameters.get("properties") or {}
    for key in spec.parameters.get("required") or ():
        schema = props.get(key)
        if not isinstance(schema, Mapping) or schema.get("type") != "string" or "enum" in schema:
            continue
        kind = address_kind(schema) or value_kind(key) or example_kind(schema)
        if kind is not None and not shows_kind(kind, request):
            return False
    return True


def address_kind(schema: Mapping[str, object]) -> str | None:
    """``"email"`` when every example value of the parameter is an email address: the
    examples say more than its name (an email's ``to`` is an address, not a place)."""
    examples = [e.strip() for e in lp.schema_examples(schema) if isinstance(e, str)]
    if not examples or any(not e or " " in e for e in examples):
        return None
    return "email" if all(_EMAIL.match(e) for e in examples) else None


def example_kind(schema: Mapping[str, object]) -> str | None:
    """The kind of value a free-text parameter takes, read from its example values when
    every example shows it: ``"number"`` when each holds a digit (a calculator's
    ``expression``: "(2 + 3) * 4"), ``"name"`` when each is a short run of capitalized
    words ("Paris", "New York"); ``None`` otherwise. A request with no number cannot
    fill the first ("Hello, who are you?"), one that names nothing cannot fill the
    second. A sentence with a number in it ("The meeting is now at 3 pm.", an email
    body) is prose, not a number kind: numbers must be at least half as many as words."""
    examples = [e for e in lp.schema_examples(schema) if isinstance(e, str)]
    if not examples:
        return None
    if all(_mostly_numbers(e) for e in examples):
        return "number"
    if all(_NAME_EXAMPLE.fullmatch(e) for e in examples):
        return "name"
    return None


_NUMBER_TOKEN = re.compile(r"\d")
_WORD_TOKEN = re.compile(r"[^\W\d_]+")


def _mostly_numbers(example: str) -> bool:
    """Whether ``example`` is led or carried by numbers ("(2 + 3) * 4", "20% of 50 plus 2
    to the power of 3", "123 Main St, Springfield"): it starts with a token holding a
    digit, or such tokens are at least half as many as the words of letters. "The
    meeting is now at 3 pm." is a sentence with a number in it, not a number."""
    tokens = example.split()
    if not tokens:
        return False
    numbers = sum(1 for t in tokens if _NUMBER_TOKEN.search(t))
    words = sum(1 for t in tokens if not _NUMBER_TOKEN.search(t) and _WORD_TOKEN.search(t))
    return numbers > 0 and (bool(_NUMBER_TOKEN.search(tokens[0])) or 2 * numbers >= words)


def codes_in(text: str) -> list[str]:
    """The identifiers ``text`` gives, in order and once each: quoted spans (their
    text) and code-like tokens (with a digit, inner capitals or joined by ``_``/``-``:
    ``AB1010CD``, ``ef903ac-893-f00``, ``'Bob-123'``)."""
    found = [m.group(0)[1:-1].strip() for m in _QUOTED.finditer(text)]
    found += [m.group(0) for m in _CODE.finditer(text)]
    return [c for c in dict.fromkeys(found) if c]


def value_kind(key: str) -> str | None:
    """The kind of value a parameter named ``key`` takes (a key of :data:`KIND_WORDS`),
    from its head noun: ``origin_airport`` a place, ``UrlName`` a name, ``user_id`` an
    id; ``None`` for free text."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key).lower().replace("-", "_")
    parts = [w for w in words.replace(" ", "_").split("_") if w]
    if "of" in parts[1:]:
        parts = parts[: parts.index("of", 1)]
    head = parts[-1] if parts else ""
    return next((kind for kind, heads in KIND_WORDS.items() if head in heads), None)


def shows_kind(kind: str, request: str) -> bool:
    """Whether ``request`` holds any value of ``kind`` (see :func:`value_kind`)."""
    if kind == "url":
        return bool(_URL.search(request))
    if kind == "email":
        return "@" in request
    if kind == "id":
        return bool(_CODE.search(request) or _QUOTED.search(request))
    if kind == "place":
        # a quoted phrase is text, not a place ("Translate 'thank you'"); a quoted
        # place name is still a capitalized word
        return names_something(request, quoted=False)
    if kind == "date":
        return bool(_DATE.search(request))
    if kind == "time":
        return bool(_TIME.search(request))
    if kind == "number":
        return lgr.says_a_number(request)
    return names_something(request) or bool(_CODE.search(request))


def names_something(text: str, *, quoted: bool = True) -> bool:
    """Whether ``text`` holds a proper name or a quoted value: a capitalized word that
    does not start a sentence (not "I", not a month or weekday), an all-capitals word
    ("NYC"), a quoted span (unless not ``quoted``), or a word in a script without
    capitals (where case says nothing)."""
    if quoted and _QUOTED.search(text):
        return True
    for match in _TOKEN.finditer(text):
        word = match.group(0)
        if any(ord(ch) > _CASELESS for ch in word):
            return True
        if not word[0].isupper() or word in _SELF or _NOT_A_NAME.fullmatch(word):
            continue
        before = text[: match.start()].rstrip()
        if (before and before[-1] not in ".!?:\n") or (len(word) > 1 and word.isupper()):
            return True
    return False
