"""Grounded answers for the embedded model: the answer grammar.

A 270M base model, asked to answer after a tool result, tends to echo the question
("45 * 12"), invent numbers ("72 degrees" when the result said 23), or repeat one
clause until the token cap. The runtime cannot make it understand the result, but it
can narrow what it may write, generically (nothing here knows what a tool does):

* **numbers come from the context**: every number in the answer is one that appears in
  a tool result since the last user message or in that user message, written exactly
  as it appears there (digits can only be written through that list);
* **a result value is quoted**: the first sentence must contain a number of the latest
  tool result or one of its words the question does not use (a label such as "cloudy",
  a name such as "Oslo"), so the answer cannot be a bare echo of the question;
* **plain characters**: letters, spaces and common punctuation; "°" only right after a
  number. A model kept away from a digit it wanted otherwise writes look-alikes
  ("° °", "ÿ", "⅕");
* **a sentence budget**: one or two sentences, each ending in ``.`` or ``!`` and at
  most :data:`MAX_SENTENCE_ITEMS` characters long; the string closes after them.

What the first sentence must state is narrowed to what the question points at (the
rows it names, a count, a list item) by ``local_rows``.

Rules that depend on the words decoded so far are the sampler's veto
(``local_veto``); repetition inside a sentence is handled by the sampler
(``local_sampler`` no-repeat n-grams), and whether the result is *stated correctly* is checked after decoding by
the answer-checking wrapper (``loopwright.strategies.grounded``), which falls back to
showing the tool result.

The output is the JSON object the prompt's examples use (``{"answer": "..."}``), with
the one leading space every grammar here starts with (see ``local.spaced_root``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from loopwright.core.grounding import (
    STOPWORDS,
    item_numbers,
    result_labels,
    result_texts,
    row_values,
    table_rows,
    unstated_words,
)
from loopwright.core.messages import Message
from loopwright.core.polarity import AUXILIARIES, verdict, yes_no
from loopwright.core.untrusted import unwrap_untrusted
from loopwright.providers.local_rows import (
    KEY_WORD,
    MIN_FIELD_WORD,
    WORD,
    Focus,
    focus,
    mentions,
    named_rows,
    names_key,
    numbers_in,
    other_fields,
    other_rows,
    short,
    subject_name,
    unique,
)

MAX_SENTENCE_ITEMS = 80
MAX_CLAIM_ITEMS = 40
MAX_TAIL_ITEMS = 48
MAX_LABELS = 48

# GBNF character classes: a free character of an answer and the first character of a
# sentence. Printable ASCII without digits (numbers come from ``num``), sentence ends,
# JSON escapes, markup, "_" or "°" (allowed only after a number): kept from digits, a
# small model otherwise writes look-alikes in their place ("⁵", "⅕", "° °", "____").
# Letters and words outside ASCII reach an answer through ``rval`` (the result's words).
_SIGNS = r"\x23-\x2D\x2F\x3A\x3B\x3D\x41-\x5A\x61-\x7A"
_FREE = f"[\\x20{_SIGNS}]"
# A character after a word: anything free but a letter.
_NOT_LETTER = "[\\x20\\x23-\\x2D\\x2F\\x3A\\x3B\\x3D]"
_ENDINGS = '("s" | "es" | "y" | "ing" | "ed" | "d")'
# A sentence does not start with the word "I": an answer about a result says what the
# result states, and a small model's "I renewed the passport." for the to-do item "Renew
# the passport" claims an act. "It", "Is", "In", "If" stay, as whole words; any other
# letter after "I", or after those two letters, let the model write the claim glued
# ("Ibought milk", "Ithink you buy milk", "Ishould be able to ..."); "Its" is left out
# too (the model wrote "Its not rain" for "It's not raining").
_LEAD = (
    r"([\x23-\x2D\x2F\x3A\x3B\x3D\x41-\x48\x4A-\x5A\x61-\x7A]"
    r' | "I" [fnst] [\x20\x27\x2C])'
)


@dataclass(frozen=True, slots=True)
class Record:
    """One object of a result (a table's row): its text values, lower-cased, and its
    numeric fields as (key word, number) pairs. ``("chair",)`` and ``(("price", "85"),
    ("stock", "12"))`` for the row ``["chair", 85, 12]`` of columns name, price, stock."""

    names: tuple[str, ...]
    fields: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Grounding:
    """Numbers an answer may use: from the tool results since the last user message,
    and from that user message (written as they appear there). ``fields`` pairs the
    words of a JSON result's keys with the number they hold (``humidity_pct: 35`` gives
    ``("humidity", "35")`` and ``("pct", "35")``), for :class:`FieldBinder`."""

    results: tuple[str, ...] = ()
    question: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()
    latest: tuple[str, ...] = ()  # numbers of the most recent tool message's results
    labels: tuple[str, ...] = ()  # words of the most recent results the question lacks
    formulas: tuple[str, ...] = ()  # formula-like string arguments of the calls made
    units: tuple[tuple[str, str], ...] = ()  # a key's leading word -> its last word
    records: tuple[Record, ...] = ()  # the latest results' objects / table rows
    unstated: tuple[str, ...] = ()  # words of the question no result states
    claims: tuple[str, ...] = ()  # unstated words of a yes/no question (see AnswerVeto)
    others: tuple[str, ...] = ()  # words only of rows the question does not name
    known: tuple[str, ...] = ()  # with claims: the words of the question and results
    pairs: tuple[tuple[str, str], ...] = ()  # (word, number) written "3 minutes" in a text
    equations: bool = True  # whether a call or the question holds a formula
    subject: str = ""  # the one named row's name, as the question writes it (see AnswerVeto)
    by_label: bool = False  # the first sentence states a label, not a number (a named row's)
    names: tuple[str, ...] = ()  # with subject: the question's and results' words
    positions: tuple[str, ...] = ()  # numbers opening a listed result's items ("1. ")
    verdict: str = ""  # "Yes"/"No" the results give a yes/no question (core.polarity)
    percent: bool = True  # whether the question or a result speaks of percentages

    @property
    def allowed(self) -> tuple[str, ...]:
        return unique([*self.results, *self.question])


def grounding(messages: Sequence[Message]) -> Grounding:
    """The :class:`Grounding` of the turn that answers the last user message."""
    results: list[str] = []
    question: list[str] = []
    fields: list[tuple[str, str]] = []
    records: list[Record] | None = None
    latest: list[str] | None = None
    words: list[str] | None = None  # the most recent results' texts
    formulas: list[str] = []
    units: list[tuple[str, str]] = []
    pairs: list[tuple[str, str]] = []
    every: list[str] = []  # every result's text
    asked = ""
    for message in reversed(messages):
        if message.role == "user":
            question = numbers_in(message.text)
            asked = message.text
            break
        formulas[:0] = [f for c in message.tool_calls for f in _formulas(c.arguments)]
        quoted = message.provider_meta.get(REQUEST_FORMULA_KEY)
        if isinstance(quoted, str) and len(quoted) <= MAX_FORMULA_CHARS:
            formulas[:0] = [quoted]
        found: list[str] = []
        texts: list[str] = []
        for part in message.tool_results_parts:
            if not part.is_error:
                content = unwrap_untrusted(part.content) or part.content
                found += numbers_in(content)
                fields[:0] = _fields(content)
                units += _units(content)
                pairs += _text_pairs(content)
                texts.append(content)
        every += texts
        results[:0] = found
        if latest is None and found:
            latest = found
            records = [r for t in texts for r in _records(t)]
        if words is None and texts:
            words = texts
    keep = short(results)
    allowed = set(keep)
    bound = tuple(dict.fromkeys((w, v) for w, v in fields if v in allowed))
    labels = result_labels(words or (), asked)
    rows = [row for t in words or () for row in row_values(t, 1)]
    named = named_rows(rows, asked)
    # What a "Yes" would claim: the words of the yes/no question itself when the
    # message asks one ("Is the lamp in stock? Use the products table." claims
    # nothing about "products"), else of the whole message.
    asked_yes_no = yes_no(asked)
    unstated = tuple(unstated_words(asked_yes_no or asked, every)) if every else ()
    # A yes/no question's claims: not its auxiliary, nor a file name or a word saying
    # where to look ("according to status.txt"): the call read that, it claims nothing.
    claims = (
        tuple(w for w in unstated if w not in AUXILIARIES | _SOURCE_WORDS and "." not in w)
        if asked_yes_no
        else ()
    )
    # The results answer the yes/no question plainly ("Did the build pass?" over
    # "Build 512 passed."): the answer opens with that word, and a "Yes" claims nothing
    # unstated (the words left are the question's framing: "according to status.txt").
    given = verdict(asked_yes_no, words or ()) if asked_yes_no else ""
    if given == "Yes":
        unstated, claims = (), ()
    subject = subject_name(named, asked)
    base = Focus(keep, tuple(labels), tuple(latest or ()))
    focused = focus(base, rows, words or (), pairs, asked)
    return Grounding(
        focused.keep,
        # The formulas the calls computed are the runtime's own: their numbers may be
        # quoted ("144 ** (1 / 2) = 12" for "the square root of 144").
        short([*question, *(n for f in formulas for n in numbers_in(f))]),
        bound,
        short(focused.latest),
        focused.labels[:MAX_LABELS],
        unique(formulas),
        tuple(dict.fromkeys(units)),
        tuple(records or ())[:MAX_RECORDS],
        unstated,
        claims,
        other_rows(rows, named, asked) + other_fields(bound, asked),
        unique(w.lower() for t in (asked, *every) for w in KEY_WORD.findall(t)) if claims else (),
        tuple(dict.fromkeys(pairs)),
        bool(formulas) or _FORMULA.search(asked) is not None,
        subject,
        focused.by_label,
        unique(w.lower() for t in (asked, *every) for w in KEY_WORD.findall(t)) if subject else (),
        tuple(n for n in item_numbers(words or ()) if n in focused.keep),
        given,
        any(_PERCENT.search(t) for t in (asked, *every)),
    )


_PERCENT = re.compile(r"%|percent|per cent|pct", re.IGNORECASE)
_SOURCE_WORDS = frozenset(["according", "file", "check", "see", "look"])
_FORMULA = re.compile(r"\d\s*[-+*/^%]\s*[\d(]|\d\s*\*\*")
# A formula a strategy found the calls compute, on the calls' message (the embedded
# strategy's ``strategies.embedded.formula.REQUEST_FORMULA_KEY``): the plan's steps carry
# no formula argument to quote when the request wrote it in words.
REQUEST_FORMULA_KEY = "request_formula"
MAX_FORMULA_CHARS = 60


def _formulas(arguments: object) -> list[str]:
    """String arguments that read as formulas (a number, an operator, a number)."""
    if not isinstance(arguments, dict):
        return []
    return [
        v.strip()
        for v in arguments.values()
        if isinstance(v, str) and len(v.strip()) <= MAX_FORMULA_CHARS and _FORMULA.search(v)
    ]


def key_words(key: str) -> list[str]:
    """The words of a JSON key (``humidity_pct`` -> humidity, pct; ``windSpeed`` ->
    wind, speed), lower-cased, of at least :data:`MIN_FIELD_WORD` letters."""
    return [w.lower() for w in KEY_WORD.findall(key) if len(w) >= MIN_FIELD_WORD]


MAX_RECORDS = 50


def _records(content: str) -> list[Record]:
    """The objects of a JSON result that hold both text and numbers (see :class:`Record`)."""
    try:
        data = json.loads(content)
    except ValueError:
        return []
    found: list[Record] = []
    _walk_records(data, found, 0)
    return found


def _walk_records(data: object, found: list[Record], depth: int) -> None:
    if depth > 4 or len(found) >= MAX_RECORDS:
        return
    if isinstance(data, dict):
        data = table_rows(data)
        names = tuple(v.lower() for v in data.values() if isinstance(v, str) and v.strip())
        numbers: list[tuple[str, str]] = []
        _walk({k: v for k, v in data.items() if not isinstance(v, dict | list)}, numbers, 0)
        if names and numbers:
            found.append(Record(names, tuple(numbers)))
        for value in data.values():
            if isinstance(value, dict | list):
                _walk_records(value, found, depth + 1)
    elif isinstance(data, list):
        for item in data[:MAX_RECORDS]:
            _walk_records(item, found, depth + 1)


def _fields(content: str) -> list[tuple[str, str]]:
    """(key word, number) pairs of a JSON result's numeric leaves; a table given as
    ``{"columns": [...], "rows": [[...], ...]}`` pairs each column with its cells."""
    try:
        data = json.loads(content)
    except ValueError:
        return []
    found: list[tuple[str, str]] = []
    _walk(data, found, 0)
    return found


# A number and the one or two words right after it, in a text: "3 minutes per side".
_NUMBER_WORDS = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)\s+([A-Za-z]+)(?:\s+([A-Za-z]+))?")


def _text_pairs(content: str) -> list[tuple[str, str]]:
    """(word, number) for each number of a result's text values followed by a word
    (and the word after that: "200 g flour", "3 minutes per"), skipping function
    words: what a number counts in the text. A file saying "2 eggs ... 3 minutes per
    side" was answered "2 minutes per side"."""
    found = []
    for text in result_texts(content):
        for match in _NUMBER_WORDS.finditer(text):
            for word in match.groups()[1:]:
                if word and len(word) >= MIN_FIELD_WORD and word.lower() not in STOPWORDS:
                    found.append((word.lower(), match.group(1)))
    return found


_UNIT_KEY = re.compile(r'"([A-Za-z]+_[A-Za-z]+)"\s*:\s*-?\d')


def _units(content: str) -> list[tuple[str, str]]:
    """(first word, last word) of a result's numeric keys written ``word_unit``
    (``"wind_kph": 22`` -> ``("wind", "kph")``): the unit a bare number is read in."""
    found = []
    for match in _UNIT_KEY.finditer(content):
        words = key_words(match.group(1))
        if len(words) == 2:
            found.append((words[0], words[1]))
    return found


def _walk(data: object, found: list[tuple[str, str]], depth: int) -> None:
    if depth > 4:
        return
    if isinstance(data, dict):
        data = table_rows(data)
        for key, value in data.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                words = key_words(str(key))
                found.extend((word, json.dumps(value)) for word in words)
            else:
                _walk(value, found, depth + 1)
    elif isinstance(data, list):
        for item in data[:50]:
            _walk(item, found, depth + 1)


# Words that ask rather than state an operation ("What is 45 * 12?").
_ASKING = frozenset(["what", "how", "much", "many", "which", "is", "are", "does", "do"])
_LISTING = re.compile(r"[:,]\s*$")
_TOKEN = re.compile(r"[a-z]+|\d+(?:\.\d+)?")
_ANSWER_HEAD = re.compile(r'\{\s*"answer"\s*:\s*"')
# A word and the number the question writes right after it ("order 5", "customer 3").
_PAIRED = re.compile(r"\b([a-z]{3,})\s+#?(\d+(?:\.\d+)?)(?![\d.])")


@dataclass(frozen=True, slots=True)
class FieldBinder:
    """The number an answer must write next, if it just named a field of the result.

    A tiny model names the right field ("The humidity in Mumbai is") and then writes
    the number of another one (the temperature). Called with the text decoded so far
    when the model starts a number: if the words since the previous number name
    exactly one numeric field (a word starting with a key word: "windy" names
    ``wind_kph``), that field's value is returned and the sampler writes it. The
    answer's first number, when the answer has named no field yet ("It is 6 ..."),
    takes the field the ``question`` names ("How windy is it in Oslo?"). Nothing here
    knows what the fields mean. A field whose key is ``word_unit`` is written with
    that unit (``22 kph``). When the word names a column of several rows, the one row
    the answer (else the question) names by a text value takes it ("How many chairs are
    in stock?": the ``chair`` row's stock, not the first row's). A word the question
    numbers ("order 5") takes that number again ("the total of order 5")."""

    fields: tuple[tuple[str, str], ...]
    question: str = ""
    units: tuple[tuple[str, str], ...] = ()
    records: tuple[Record, ...] = ()

    def __call__(self, text: str) -> str | None:
        head = _ANSWER_HEAD.search(text)
        answer = text[head.end() :] if head else text
        words = WORD.findall(answer.lower())
        paired = dict(_PAIRED.findall(self.question.lower()))
        if words and words[-1] in paired and answer.endswith(" "):
            # the question numbers this word ("order 5"): the same number follows it
            # ("The total of order 50.0 is 5." wrote the total's value after "order")
            return paired[words[-1]]
        parts = re.split(r"\d", answer)
        row = self._row(answer) or self._row(self.question)
        found = self._named(parts[-1], row)
        if found is None and len(parts) == 1:
            # The answer named no field ("It is ..."): the question's field.
            found = self._named(self.question, row)
        return found or None

    def listed(self, text: str, first: str, bound: str | None = None) -> str | None:
        """A number started right after ": " or ", " with no field named before it
        ("The weather there is now: 25, 72."): the numbers of a result holding several
        numeric fields, one number each, are listed with their field's word and unit:
        the field not yet stated whose value starts as the model's number does, else the
        next one ("humidity 72 pct"). ``None`` when a word names several numbers (a
        table's column) or the words since the last number name a field not yet stated
        (``bound``: what :meth:`__call__` returned for ``text``, the binder's to write)."""
        head = _ANSWER_HEAD.search(text)
        answer = text[head.end() :] if head else text
        if not _LISTING.search(answer):
            return None
        if bound == "" or (bound and bound.split()[0] not in numbers_in(answer)):
            return None
        if self._named(self.question) is not None:
            return None  # the question asks one field: the others are not its answer
        by_word = dict(self.fields)
        if len(by_word) != len(set(self.fields)):
            return None  # a word holding several numbers (a table's column)
        fields = list({v: (w, v) for w, v in reversed(self.fields)}.values())[::-1]
        stated = set(numbers_in(answer))
        if len(fields) < 2:
            return None
        left = [(w, v) for w, v in fields if v not in stated]
        pick = next((f for f in left if f[1].startswith(first.strip())), None)
        pick = pick or (left[0] if left else None)
        if pick is None:
            return None
        unit = dict(self.units).get(pick[0], "")
        return f"{pick[0]} {pick[1]} {unit}".rstrip()

    def _row(self, text: str) -> Record | None:
        """The one record (table row) whose text value ``text`` names ("chairs" names
        the row ``chair``), if exactly one is named."""
        words = set(WORD.findall(text.lower()))
        named = [r for r in self.records if any(mentions(words, n) for n in r.names)]
        return named[0] if len(named) == 1 else None

    def _named(self, text: str, row: Record | None = None) -> str | None:
        """The value of the one field the last field-naming word of ``text`` names
        (within ``row`` when the word names several numbers and a row is named); ``""``
        when that word names several; ``None`` when no word names a field."""
        for word in reversed(WORD.findall(text.lower())):
            named = {w: v for w, v in self.fields if names_key(word, w)}
            values = {v for w, v in self.fields if names_key(word, w)}
            if len(values) > 1 and row is not None:
                values = {v for w, v in row.fields if names_key(word, w)} or values
            if len(values) == 1:
                value = values.pop()
                # With the key's unit: a bare number is read in another one ("22
                # degrees" for wind_kph, "34 mph").
                unit = next((u for w, u in self.units if w in named), "")
                return f"{value} {unit}" if unit else value
            if values:
                return ""  # the word names several numbers: let the model choose
        return None


@dataclass(frozen=True, slots=True)
class FormulaQuoter:
    """The formula an answer must write, when it starts restating one a tool received.

    Asked "What is (3 + 5) * 8?", the calculator got ``(3 + 5) * 8`` and returned 64,
    and the model answered "3 + 5 * 8 = 64.": the right number after a wrong
    expression. Called with the text decoded so far when the model starts a number:
    if no formula was written yet and a formula argument of the calls begins with that
    number (after its opening parentheses), or else holds a number starting with it,
    the whole formula is returned and the sampler writes it verbatim. Nothing here evaluates or knows arithmetic.

    Not after the ``question``'s own words for that number: an answer restating the
    question's phrase ("Half of ", "If I split ") has stated the operation in words,
    and the formula after it states it again ("Half of 346 / 2 = 173." reads as half
    of 173)."""

    formulas: tuple[str, ...]
    question: str = ""

    def __call__(self, text: str, first: str) -> str | None:
        head = _ANSWER_HEAD.search(text)
        answer = text[head.end() :] if head else text
        if any(f in answer for f in self.formulas):
            return None
        if self._restates_question(answer, first):
            return None
        for formula in self.formulas:
            if formula.lstrip("( ").startswith(first):
                return formula
        # A number of the formula started elsewhere: the model restating the request's
        # order ("Deduct 30 from 95." -> "30 - 95 - 30 = 65" after ``95 - 30``).
        for formula in self.formulas:
            if first.strip() and any(n.startswith(first.strip()) for n in numbers_in(formula)):
                return formula
        return None

    def _restates_question(self, answer: str, first: str) -> bool:
        """Whether the words of the sentence being written, before the number it starts
        (``first``), are the question's words before one of its numbers starting so: the
        last two of them, at least one not a function word."""
        sentence = re.split(r"[.!?]\s", answer)[-1]
        before = WORD.findall(sentence.lower())[-2:]
        if not first.strip() or all(w in STOPWORDS or w in _ASKING for w in before):
            return False
        asked = " ".join(_TOKEN.findall(self.question.lower()))
        lead = " ".join(before)
        return any(
            n.startswith(first.strip())
            and re.search(rf"\b{re.escape(lead)} {re.escape(n)}\b", asked)
            for n in numbers_in(self.question)
        )


@dataclass(frozen=True, slots=True)
class AnswerGuide:
    """What the sampler writes when an answer starts a number: a call's formula
    (:class:`FormulaQuoter`); right after an equals sign, the latest result when it is
    one number (``equals``: "(10 + 6) / 4 = 16." stated the first step's result after
    a two-step chain; an equation's value is what the tools returned, whatever the
    left side says); else the value of the field just named (:class:`FieldBinder`), or
    a number listed with no field named, labelled (:meth:`FieldBinder.listed`)."""

    binder: FieldBinder
    quoter: FormulaQuoter
    equals: str = ""

    def __call__(self, text: str, first: str) -> str | None:
        quoted = self.quoter(text, first)
        if quoted:
            return quoted
        if self.equals and text.rstrip(" ").endswith("="):
            return self.equals
        bound = self.binder(text)
        return self.binder.listed(text, first, bound) or bound


def answer_guide(ground: Grounding, question: str) -> AnswerGuide | None:
    """The guide of an answer turn, or ``None`` when there is nothing to guide."""
    equals = ground.latest[0] if len(ground.latest) == 1 else ""
    if not ground.fields and not ground.formulas and not equals:
        return None
    binder = FieldBinder(ground.fields, question, ground.units, ground.records)
    return AnswerGuide(binder, FormulaQuoter(ground.formulas, question), equals)


def _alternatives(values: Sequence[str]) -> str:
    # Longest first: the grammar is a set, but a readable rule helps debugging.
    return " | ".join(json.dumps(v) for v in sorted(values, key=len, reverse=True))


def answer_grammar(ground: Grounding, *, max_sentences: int = 1) -> str:
    """GBNF of one grounded answer object (see the module docstring)."""
    allowed = ground.allowed
    # c: a character of the answer other than a digit, a sentence end or a JSON
    # escape; digits only appear through ``num`` so every number is an allowed one.
    rules = [
        f"c ::= {_FREE}",
        "end ::= [.!]",
    ]
    if allowed:
        rules += [
            f"num ::= {_alternatives(allowed)}",
            # A number is followed by a non-digit (its own digits end there; "°" only
            # here) and ends a sentence only with "." (not ".5": another number).
            # "1. Buy milk": a list item's number may also end in ". " inside a
            # sentence; no other number may ("The product costs 85. The price is 85
            # and the row chair ..." ran one sentence on to the label it had to state).
            'x ::= c | num "°"? c' + (' | pos ". "' if ground.positions else ""),
            f'lead ::= {_LEAD} | num "°"? c',
            'stop ::= end | num "°"? "."?',
        ]
        if ground.positions:
            rules.append(f"pos ::= {_alternatives(ground.positions)}")
    else:
        rules += ["x ::= c", f"lead ::= {_LEAD}", "stop ::= end"]
    body = f"x{{0,{MAX_SENTENCE_ITEMS}}}"
    rules.append(f"s ::= lead {body} stop")
    if ground.latest or ground.results or ground.labels:
        rules += _first_sentence(ground)
    else:
        rules.append("first ::= s")
    more = '(" " s)?' * (max_sentences - 1)
    root = f'root ::= " {{\\"answer\\": \\"" first {more} "\\"}}"'
    return "\n".join([root, *rules]) + "\n"


def _first_sentence(ground: Grounding) -> list[str]:
    """Rules of a first sentence that states a value of the latest result: one of its
    numbers, or one of its words the question does not already use (a label such as
    "cloudy" or a name such as "Oslo"). Any allowed number may appear before and after
    it. Without this rule a small model echoes the question ("12 squared is 12
    squared.") or, after a chain, states the first step's result instead of the last."""
    numbers = list(ground.latest or ground.results)
    budget = MAX_SENTENCE_ITEMS
    if ground.by_label and ground.labels:
        # The question names a row or a list item: a word of it, not a number of the
        # result (another row's id, another item's position).
        numbers = []
    elif ground.claims and ground.labels:
        # A yes/no question whose claim no result states ("Is it raining?", sunny):
        # the first clause says what the result states instead, a word of it. Left
        # the whole sentence, the model goes on to invent one ("it is not raining,
        # it is snowing").
        numbers, budget = [], MAX_CLAIM_ITEMS
    # A result that is one number and no words (a count), with no formula to
    # restate: the sentence writes that number once and no other ("There are 1,
    # respectively 1, and 1, customers in Paris.").
    single = len(set(numbers)) == 1 and not ground.equations and not ground.labels
    # ... but the question's own numbers stay writable ("12 squared is 144.")
    asked = [n for n in ground.question if n not in numbers]
    item = ("qx" if asked else "c") if single else "x"
    start = f"({_LEAD} | qnum c)" if asked else _LEAD
    pre = f"({start} {item}{{0,{budget}}})?" if single else f"(lead x{{0,{budget}}})?"
    if ground.verdict:
        # the answer the results give a yes/no question, then what they state
        pre = f'"{ground.verdict}, " ({item}{{0,{budget}}})?'

    tail = f"x{{0,{MAX_TAIL_ITEMS}}} stop"
    # After a number the sentence may go on past ". " ("1. Buy milk, 2. ..."); after a
    # word that would start a second sentence, which is where a small model contradicts
    # the first ("It is windy. The wind is 19.").
    options = []
    if numbers:
        after = f"{item}{{0,{MAX_TAIL_ITEMS}}} end" if single else tail
        options.append(f'rnum "°"? (end | (c | ". ") {after})')
    if ground.labels:
        # a whole word, or one of its endings ("rainy", "raining"): "real" at the start
        # of "really nice" stated no value of "not a real forecast"
        options.append(f"rlabel {_ENDINGS}? (end | {_NOT_LETTER} {tail})")
    rules = [f"first ::= {pre} ({' | '.join(options)})"]
    if single and asked:
        rules += [f"qnum ::= {_alternatives(asked)}", 'qx ::= c | qnum "°"? c']
    if numbers:
        rules.append(f"rnum ::= {_alternatives(numbers)}")
    if ground.labels:
        rules.append(f"rlabel ::= {_alternatives(ground.labels)}")
    return rules


__all__ = [
    "KEY_WORD",
    "MIN_FIELD_WORD",
    "AnswerGuide",
    "Record",
    "FieldBinder",
    "FormulaQuoter",
    "answer_guide",
    "Grounding",
    "answer_grammar",
    "grounding",
    "key_words",
    "numbers_in",
]
