"""What the embedded model's tool arguments may be, and guards on them while they decode.

**Grounding** (:func:`grounded_arguments`, applied to the schema before it becomes the
call grammar): a small model invents what a parameter's schema leaves open. So a
parameter whose value the request (or a tool result) visibly gives is held to it: an
enum value the request names, a number the request or a result contains, a list of
those numbers no longer than the request's; an optional parameter is offered only
when the request gives it. Generic: it reads only the schema and the text.

**Guards**:

A 270M model fills a parameter it cannot read from the request with what the prompt
showed it: the worked example's value (``read_file(path="notes/todo.txt")`` for "What
does notes.txt say?"), or it runs one digit after another inside a string
(``LIMIT 1000000000``). :class:`ArgumentGuard` refuses, token by token, the moves
that start those failures (generic; it reads only the prompt's examples and the
conversation):

* **leaving the request for an example**: a string argument that so far copies the
  request's text may not turn into the start of a value the prompt's worked examples
  show (and the request does not hold): ``notes`` is fine (the request says
  ``notes.txt``), ``notes/`` (of the example ``notes/todo.txt``) is not, and the model
  goes on with ``.txt``;
* **cutting a copied word**: a string value copying the request may not end, or
  turn into other text, in the middle of one of the request's words (``"f"`` of
  "fahrenheit", ``netwlan`` of "netsh wlan");
* **inventing long numbers**: a run of more than :data:`MAX_FREE_DIGITS` digits must
  be (the start of) a number the request or a tool result contains;
* **inventing words**: each word of a string argument (letters, digits and ``_``; words
  of digits only are left to the number rule, words of capital letters only are
  keywords such as ``WHERE``) must be a word of the prompt (the
  system text, the tools' descriptions and worked examples) or of the request and the
  results since it, matched without case. A word being written must be the start of
  one. ``sql_query`` cannot query a ``product_id`` column no text shows, a file name
  is spelled from the request, not made up.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.core.messages import Message
from loopwright.core.tools import ToolSpec
from loopwright.core.untrusted import unwrap_untrusted

MAX_FREE_DIGITS = 3
MIN_COPY_CHARS = 2
_CALL_LINE = re.compile(r'^Assistant: (\{"tool": .*\})$', re.MULTILINE)
_DIGITS = re.compile(r"\d+$")
_NUMBER = re.compile(r"\d+")
_WORD = re.compile(r"[a-z0-9_]+", re.IGNORECASE)
_TAIL_WORD = re.compile(r"[a-z0-9_]+$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ArgumentGuard:
    """Called by the sampler with the text decoded so far and a candidate token's text;
    ``True`` refuses the candidate (see the module docstring)."""

    examples: tuple[str, ...]  # example values the request does not hold, lower-cased
    context: str  # the request and the results since it, lower-cased
    numbers: tuple[str, ...]  # digit runs of the request and the results
    words: tuple[str, ...] = ()  # the words a string argument may use, sorted
    source: str = ""  # ``context`` as written (capitals tell names and sentences)
    joined: tuple[str, ...] = ()  # parameters whose examples join names with a comma
    shaped: tuple[str, ...] = ()  # parameters the grammar holds to their examples' shape

    def __call__(self, text: str, piece: str) -> bool:
        inside, value = _open_string(text)
        if inside:
            head = piece.split('"', 1)[0]
            grown = value + head
            so_far, longer = value.lstrip(" ").lower(), grown.lstrip(" ").lower()
            if self._leaves_for_example(so_far, longer):
                return True
            if self._span_refuses(text, so_far, head, closes='"' in piece):
                return True
            if head and self._starts_inside_word(longer):
                return True
            raw = (value.lstrip(" "), grown.lstrip(" "))
            free = _current_key(text) in self.shaped
            if self.words and not free and self._invents_word(*raw, closes='"' in piece):
                return True
            if '"' in piece and self._cut_word(longer):
                return True
            if head and longer not in self.context and self._cut_word(so_far):
                return True
        else:
            grown = text + piece
        run = _DIGITS.search(grown)
        if run is None or not piece[-1:].isdigit():
            return False
        # A string value that begins with a number the request does not hold is made
        # up (``"date": "202"`` for "this weekend"); later numbers in a formula or a
        # query are the notation's own, free up to a few digits.
        leading = inside and not grown[: run.start()].strip()
        if len(run.group(0)) <= MAX_FREE_DIGITS and not leading:
            return False
        return not any(n.startswith(run.group(0)) for n in self.numbers)

    def _span_refuses(self, text: str, value: str, head: str, closes: bool) -> bool:
        """A string copying a span of the request ends where the request's text does
        (:func:`span_ends`): it may not go on past a clause or sentence break ("2020
        Addison Street, Berkeley, CA, USA" ends before ", and I can wait"), nor stop
        inside a run of capitalized words ("Gibson" of "Gibson Les Paul") or, for a
        parameter whose examples join names with a comma ("e.g. Seattle, WA"), before
        the comma-joined rest of a place ("Paris" of "Paris, France")."""
        if len(value) < MIN_COPY_CHARS or not self.source:
            return False
        comma = _current_key(text) in self.joined
        ends = span_ends(self.source, self.context, value, comma=comma)
        if ends is None:
            return False
        must_end, may_end = ends
        if head and must_end:
            return True
        return closes and not head and not may_end

    def _starts_inside_word(self, value: str) -> bool:
        """``value`` copies the request but starts inside a word there: every place
        the request has it, a letter or digit comes just before (``"123456"`` of
        "U123456")."""
        if len(value) < MIN_COPY_CHARS or not value[0].isalnum():
            return False
        starts = [m.start() for m in re.finditer(re.escape(value), self.context)]
        return bool(starts) and all(i > 0 and self.context[i - 1].isalnum() for i in starts)

    def _invents_word(self, value: str, grown: str, closes: bool) -> bool:
        """A word the candidate touches (the one it goes on with and those it adds) is
        not a known word, or, while still being written, not the start of one. A word
        in capitals is free: it is a keyword of the notation the value is written in
        (SQL's ``WHERE``) or an abbreviation, not a name the model makes up; a name
        in capitals (``ATM_ACCOUNT_PIN``) is not."""
        tail = _TAIL_WORD.search(value)
        start = tail.start() if tail is not None else len(value)
        for match in _WORD.finditer(grown, start):
            word = match.group(0).lower()
            if word.isdigit() or (word.isalpha() and match.group(0).isupper()):
                continue
            at = bisect_left(self.words, word)
            if match.end() == len(grown) and not closes:
                if not (at < len(self.words) and self.words[at].startswith(word)):
                    return True
            elif not (at < len(self.words) and self.words[at] == word):
                return True
        return False

    def _cut_word(self, value: str) -> bool:
        """``value`` copies the request but stops inside a word there: every place the
        request has it from the start of a word, a letter or digit follows ("f" of "fahrenheit", "net" of
        "netsh"). Such a value may neither end nor go on with anything but the rest
        of that text (the model wrote ``"location": "f"`` and ``"netwlan"``)."""
        if not value or not value[-1].isalnum():
            return False
        start = r"(?<![a-z0-9])" if value[0].isalnum() else ""
        ends = [m.end() for m in re.finditer(start + re.escape(value), self.context)]
        return bool(ends) and all(
            end < len(self.context) and self.context[end].isalnum() for end in ends
        )

    def _leaves_for_example(self, value: str, grown: str) -> bool:
        """The value so far is text of the request, and the candidate turns it into
        the start of an example value instead (``notes`` -> ``notes/``). An example
        used as a form (``SELECT ...``) is not refused: its start is not the
        request's text."""
        if len(value) < MIN_COPY_CHARS or value not in self.context or grown in self.context:
            return False
        return any(example.startswith(grown) for example in self.examples)


def argument_guard(
    prefix: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()
) -> ArgumentGuard:
    """The guard for a call turn: ``prefix`` is the rendered prompt before the
    conversation (its worked examples), ``messages`` the conversation, ``tools`` the
    callable tools (their whole descriptions and parameter schemas, of which the
    prompt shows only a part, give words too)."""
    source = _context(messages)
    context = source.lower()
    shown = {v.strip().lower() for v in _example_values(prefix)}
    examples = tuple(sorted(v for v in shown if len(v) >= MIN_COPY_CHARS and v not in context))
    # A date the request writes may be written in a parameter's format ("06-01-2023"
    # for "June01 2023"): its zero-padded parts count as the request's numbers.
    padded = [f"{p:02d}" for date in dates_in(source) for p in date]
    numbers = tuple(dict.fromkeys(_NUMBER.findall(context) + padded))
    described = " ".join(f"{t.description} {json.dumps(t.parameters)}" for t in tools)
    words = known_words(prefix.lower(), described.lower(), context)
    joined = joined_parameters(tools)
    return ArgumentGuard(
        examples, context, numbers, words, source, joined, shaped_parameters(tools)
    )


def shaped_parameters(tools: Sequence[ToolSpec]) -> tuple[str, ...]:
    """The names of the top-level parameters whose values the grammar holds to the
    shape their examples share (``local_prompt.example_pattern``: ``Area/City`` for
    "e.g., 'America/New_York', 'Europe/London'"). Their words are free of the word
    rule: such a value names something from a vocabulary the model knows and no text
    spells out (``Asia/Tokyo``), in a form the grammar already fixes."""
    from loopwright.providers import local_prompt  # imports this module: import late

    found = set()
    for spec in tools:
        for key, sub in (spec.parameters.get("properties") or {}).items():
            shape = isinstance(sub, Mapping) and local_prompt.example_pattern(
                local_prompt.schema_examples(sub)
            )
            if shape:
                found.add(key)
    return tuple(sorted(found))


# What follows a span that ends a value: a clause ("…, USA, and I can wait"), or a
# sentence ("…shopping. Then"); a name of capitals goes on ("Gibson Les Paul").
_CLAUSE_BREAK = re.compile(
    r",?\s+(?:and|but|so|which|while|then|because|if|when)\s+(?:i|we|you|it|they|he|she|my|please)\b"
    r"|,\s+(?:and|or|but|so|which|while|then|because|if|when|i|we|please)\b"
    r"|[.!?](?:\s|$)"
)
# A capitalized word that starts the next clause, not more of a name ("Riga, Latvia,
# Can you tell me ...", "in New York City, I would like ...").
_CLAUSE_START = (
    r"(?!(?:I|I'm|Im|Can|Could|Would|Will|What|When|Where|Which|Who|Why|How|Please|Is|"
    r"Are|Do|Does|Did|Tell|Show|Give|Find|Get|And|But|So|Then|Also|It|We|You|My|The|"
    r"This|That|There|Let|Make|Set)\b)"
)
_NAME_GOES_ON = re.compile(r" " + _CLAUSE_START + r"[A-Z][\w&.'-]*")
_COMMA_NAME_GOES_ON = re.compile(r", ?" + _CLAUSE_START + r"[A-Z][\w&.'-]*")


def span_ends(
    source: str, context: str, value: str, *, comma: bool = False
) -> tuple[bool, bool] | None:
    """Where a value copying the request (``value``, lower-cased, found in
    ``context``, the lower-cased ``source``) may end: ``(must_end, may_end)``, or
    ``None`` when the value is not a span of the request that starts at a word. Every
    place the request has the span counts: it must end when each is followed by a
    clause or sentence break and the span has several words; it may not end when
    each is followed by more of a name
    (a capitalized word after a capitalized one; with ``comma``, a capitalized word
    after a comma: "Paris, France", "Berkeley, CA")."""
    if len(source) != len(context) or not value[-1:].isalnum():
        return None
    start = r"(?<![a-z0-9])" if value[0].isalnum() else ""
    ends = [m.end() for m in re.finditer(start + re.escape(value), context)]
    if not ends:
        return None
    # Only a span of several words: a formula or query reuses single words of the
    # request ("1024" of "Subtract 199 from 1024.") and goes on with its own text.
    several = " " in value.strip()
    must = several and all(_CLAUSE_BREAK.match(context, end) for end in ends)
    names = [_NAME_GOES_ON] + ([_COMMA_NAME_GOES_ON] if comma else [])
    goes_on = all(
        _capitalized_before(source, end) and any(p.match(source, end) for p in names)
        for end in ends
    )
    return must, not goes_on


_TAIL_LETTERS = re.compile(r"[^\W_]+$")


def _capitalized_before(source: str, end: int) -> bool:
    """Whether the word ending at ``end`` (any script: "Divinópolis") starts with a
    capital or is a number."""
    word = _TAIL_LETTERS.search(source[:end])
    return word is not None and (word.group(0)[0].isupper() or word.group(0)[0].isdigit())


def _current_key(text: str) -> str | None:
    """The object key whose value ``text`` (partial JSON) is writing."""
    keys = re.findall(r'"((?:[^"\\]|\\.)*)"\s*:', text)
    return keys[-1] if keys else None


# A parameter description showing a place written with its region: "e.g. Seattle, WA",
# "'City, State'", "in the format of 'City, Country'".
_JOINED_EXAMPLE = re.compile(r"\b[A-Z][\w.]*(?: [A-Z][\w.]*)*, ?[A-Z][A-Za-z]")


def joined_parameters(tools: Sequence[ToolSpec]) -> tuple[str, ...]:
    """The names of the string parameters (top level) whose description writes a name
    joined to its region with a comma (see ``_JOINED_EXAMPLE``)."""
    found = []
    for spec in tools:
        for key, sub in (spec.parameters.get("properties") or {}).items():
            if isinstance(sub, Mapping) and _JOINED_EXAMPLE.search(str(sub.get("description", ""))):
                found.append(key)
    return tuple(sorted(set(found)))


def known_words(*texts: str) -> tuple[str, ...]:
    """The words of ``texts`` (already lower-cased), sorted: each word of letters,
    digits and ``_``, and each ``_``-separated part of one (``product`` of
    ``product_name``)."""
    found: set[str] = set()
    for text in texts:
        for word in _WORD.findall(text):
            found.add(word)
            found.update(p for p in word.split("_") if p)
    return tuple(sorted(found))


def _context(messages: Sequence[Message]) -> str:
    """The last user message and the tool results after it."""
    texts: list[str] = []
    for message in reversed(messages):
        for part in message.tool_results_parts:
            texts.append(unwrap_untrusted(part.content) or part.content)
        if message.role == "user":
            texts.append(message.text)
            break
    return "\n".join(reversed(texts))


def _example_values(prefix: str) -> list[str]:
    found: list[str] = []
    for match in _CALL_LINE.finditer(prefix):
        try:
            call = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(call, dict):
            found += _strings(call.get("arguments"))
    return found


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _open_string(text: str) -> tuple[bool, str]:
    """Whether ``text`` (partial JSON) ends inside a string, and that string so far."""
    inside, escaped, start = False, False, 0
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            inside = not inside
            start = i + 1
    return inside, text[start:] if inside else ""


# ------------------------------------------------------------------ grounding

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
        results = _context(messages)[len(request) :]  # the request comes first
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
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)


def numbers_in(text: str) -> tuple[float, ...]:
    """The numbers ``text`` writes, as floats, in order: digits, and the words
    "two" to "twelve" ("for two nights")."""
    return tuple(value for _, _, value in _numbers_at(text))


def _name_words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()
    return [w for w in _WORDS.findall(spaced) if len(w) >= MIN_PREFIX_CHARS]


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
    return named or _partly_named(values, words)


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
    re.compile(rf"\b{_MONTH}\s*{_DAY}\b{_YEAR}"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?![a-z]){_YEAR}"),
)
_YEAR_ALONE = re.compile(r"\b(?:19|20)\d\d\b")
# A date format a description names: "in the format of 'YYYY-MM-DD'", "MM/DD/YYYY".
_DATE_FORMAT = re.compile(
    r"(?<![A-Za-z])(YYYY|DD|MM)([-/.])(YYYY|DD|MM)\2(YYYY|DD|MM)(?![A-Za-z0-9:]|T\w)",
    re.IGNORECASE,
)


def dates_in(text: str) -> list[tuple[int, int, int]]:
    """The calendar dates ``text`` writes, as (year, month, day), in order: ISO
    ``2023-04-25``, ``April 25th 2023``, ``25 April, 2023``, ``the 4th of march``. A
    date without a year takes the year the text names elsewhere (one year only),
    "from April 3rd to April 5th 2023" gives two dates in 2023; without any year it
    is left out (the runtime does not guess today's year)."""
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
    return list(dict.fromkeys((y, m, d) for _, y, m, d in sorted(found)))


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


def _grounded_date(schema: Mapping[str, Any], request: str) -> dict[str, Any] | None:
    """A date parameter held to the request's dates written in its format (the model
    cannot be trusted to turn "April 25th 2023" into "2023-04-25"); ``None`` when it
    takes no date in a known format or the request gives none."""
    form = date_format(schema)
    if form is None:
        return None
    written = [_strftime(form, d) for d in dates_in(request)]
    return {"type": "string", "enum": written} if written else None


def _strftime(form: str, date: tuple[int, int, int]) -> str:
    year, month, day = date
    return (
        form.replace("%Y", f"{year:04d}").replace("%m", f"{month:02d}").replace("%d", f"{day:02d}")
    )


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
_ITEM_GAP = re.compile(r"\s*[^\W\d_][^\W\d]*(?:[ '-][^\W\d]+){0,4}\s*(?:,|;|，|、|\band\b)\s*$")


def _numbers_at(text: str) -> list[tuple[int, int, float]]:
    """(start, end, value) of each number ``text`` writes (see :func:`numbers_in`)."""
    found = [
        (m.start(), m.end(), float(m.group(0).replace(",", "")))
        for m in _GROUND_NUMBER.finditer(text)
    ]
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
    schema: Mapping[str, Any], ground: Grounding, name: str = "", skip: Sequence[str] = ()
) -> dict[str, Any]:
    """A required parameter's schema held to what the request gives, else unchanged:
    an enum to the values the request names (:func:`named_values`); a code to the
    one the request asks for by meaning (:func:`coded_value`); a number to the
    numbers of the request and the results (the model otherwise writes a look-alike:
    ``"time": 190`` for "I can wait up to 600 seconds"), or to the one number written
    next to the parameter's ``name`` (:func:`named_number`); a flag the request names
    to on unless negated (:func:`named_flag`); a list of numbers to those numbers, no
    longer than the request's longest list (:func:`longest_number_list`); a list of
    strings no longer than the request's longest list in words
    (:func:`longest_word_list`); a date in a format the description names to the
    request's dates in that format (:func:`date_format`)."""
    kind = schema.get("type")
    if isinstance(schema.get("enum"), list):
        # codes listed as an enum ([1, 2]) are named by what the description says
        # they stand for ("'2' represents ironing service")
        named = named_values(schema["enum"], ground.request) or [
            c for c in coded_value(schema, ground.request) if c in schema["enum"]
        ]
        return {**schema, "enum": named} if named else dict(schema)
    if (dated := _grounded_date(schema, ground.request)) is not None:
        return dated
    if coded := coded_value(schema, ground.request):
        return {"type": kind, "enum": coded}
    if kind == "boolean" and (flag := named_flag(name, ground.request)) is not None:
        return {"type": "boolean", "enum": [flag]}
    if kind in ("number", "integer"):
        values = _fitting(kind, ground.numbers)
        n = named_number(name, ground.request, skip)
        near = _fitting(kind, [n] if n is not None else [])
        return {"type": kind, "enum": near or values} if values else dict(schema)
    return _grounded_list(schema, ground)


def _grounded_list(schema: Mapping[str, Any], ground: Grounding) -> dict[str, Any]:
    items = schema.get("items")
    if schema.get("type") != "array" or not isinstance(items, Mapping):
        return dict(schema)
    if items.get("type") in ("number", "integer"):
        values = _fitting(items["type"], ground.numbers)
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
    for word in re.finditer(r"[a-z]+", request.lower()):
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
    format one of the request's dates (:func:`date_format`); a string whose
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
        values = _fitting(kind, numbers_in(request))
        return {"enum": values} if values else None
    if date_format(schema) is not None:
        return _grounded_date(schema, request)
    items = schema.get("items")
    if kind == "array" and isinstance(items, Mapping) and isinstance(items.get("enum"), list):
        return (
            _grounded_list(schema, Grounding(request))
            if named_values(items["enum"], request)
            else None
        )
    if _names_an_example(schema, request):
        return _grounded_list(schema, Grounding(request))
    own = {w[: MIN_PREFIX_CHARS + 2] for w in tool_words}
    telling = [w for w in _name_words(name) if w[: MIN_PREFIX_CHARS + 2] not in own]
    mentioned = any(w in words or any(x.startswith(w) for x in words) for w in telling)
    if not mentioned:
        return None
    if kind == "boolean":
        # The request names the option, so it asks for it, unless it says it does not
        # ("including human impact" gave ``false``; "without details" is false).
        return {"type": "boolean", "enum": [not _negated(telling, request)]}
    return _grounded_list(schema, Grounding(request))


_DESCRIBED_EXAMPLE = re.compile(
    r"\b(?:e\.g\.|eg\.|for example|for instance|such as)[,:]?\s*(?P<list>[^.)]*)", re.IGNORECASE
)


def described_examples(schema: Mapping[str, Any]) -> list[str]:
    """The example values a parameter's description lists after "e.g." / "such as"
    ("Special dietary requirements, e.g. vegan, gluten-free." gives ``vegan`` and
    ``gluten-free``), quotes stripped; for a list, its items' description too."""
    texts = [str(schema.get("description", ""))]
    items = schema.get("items")
    if isinstance(items, Mapping):
        texts.append(str(items.get("description", "")))
    found: list[str] = []
    for text in texts:
        for match in _DESCRIBED_EXAMPLE.finditer(text):
            for part in re.split(r",|\bor\b|\band\b", match.group("list")):
                value = part.strip().strip("'\"` ")
                if value and value.lower() not in ("etc", "etc."):
                    found.append(value)
    return found


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
            if not named_values(schema["enum"], request):
                return False
        elif (
            schema.get("type") in ("number", "integer")
            and not numbers_in(request)
            and not coded_value(schema, request)
        ):
            return False
    return True


def grounded_arguments(spec: ToolSpec, ground: Grounding | None) -> Mapping[str, Any]:
    """``spec``'s parameters with each top-level parameter grounded in ``ground``
    (:func:`grounded_required`, :func:`grounded_optional`); unchanged when ``ground``
    is ``None``. An optional parameter the request gives a definite value for (a named
    enum value or flag, a date, a number next to the parameter's name) becomes
    required: offered but optional, the model closed the object without it
    (``"rating"`` for "at least a 4.5 star rating")."""
    schema = spec.parameters
    props = schema.get("properties")
    if ground is None or not isinstance(props, Mapping):
        return schema
    required = [k for k in schema.get("required") or () if k in props]
    own = _name_words(spec.name)
    taken = own + [w for k in required for w in _name_words(k)]
    # Words several parameters' names share ("value" of initial_value and final_value)
    # and the tool's own words ("temperature" of calculate_final_temperature) do not
    # tell which parameter a number next to them belongs to.
    counts = Counter(w for k in props for w in set(_name_words(k)))
    shared = own + [w for w, c in counts.items() if c > 1]
    spare = _spare_numbers(props, set(required), ground.request)
    kept: dict[str, Any] = {}
    given: list[str] = []
    for key, sub in props.items():
        if not isinstance(sub, Mapping):
            kept[key] = sub
        elif key in required:
            kept[key] = grounded_required(sub, ground, key, shared)
        elif (narrowed := grounded_optional(sub, key, ground.request, taken)) is not None:
            numeric = sub.get("type") in ("number", "integer")
            named = _mentions(key, ground.request, taken)
            if numeric and "enum" in narrowed and not spare and not named:
                continue
            near = named_number(key, ground.request, shared) if numeric and named else None
            if near is not None:
                narrowed = {"enum": _fitting(sub.get("type"), [near]) or narrowed["enum"]}
                given.append(key)
            elif (_definite(narrowed) and not numeric) or _names_an_example(sub, ground.request):
                given.append(key)
            kept[key] = narrowed
    return {**schema, "properties": kept, "required": required + given}


def _mentions(name: str, request: str, taken: Iterable[str] = ()) -> bool:
    """Whether the request uses a word of parameter ``name`` that is not one of the
    ``taken`` words (the tool's name, the required parameters' names): "light" of
    ``speed_of_light`` is ``light_travel_time``'s word."""
    words = set(_WORDS.findall(request.lower()))
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
    "MAX_FREE_DIGITS",
    "ArgumentGuard",
    "Grounding",
    "argument_guard",
    "coded_value",
    "date_format",
    "dates_in",
    "gives_required",
    "grounded_arguments",
    "grounded_optional",
    "grounded_required",
    "longest_number_list",
    "named_values",
    "numbers_in",
]
