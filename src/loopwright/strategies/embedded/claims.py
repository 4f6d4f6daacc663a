"""What an answer claims beyond quoting a value of the results: which field a number is,
what things exist, how often a value is said, what was done.

An answer can quote only numbers and words of the results and still misstate them. A
270M model wrote, each time with every number taken from the result:

* "The chair cost is $12. The price is $85 and the stock is 12." (12 is the chair's
  stock) and "17% of the wind speed, 17 kph, and a source of 17": a number glued to a
  label that is not its field (:func:`mislabeled_number`);
* "Paris is in the 2nd floor of the building." for a customers table: things no result
  and no question names (:func:`unstated_thing`);
* "Manila is 63 pct, 63% humidity, 63 pct is 63": one value said over and over
  (:func:`restated_value`, :func:`first_statement` keeps its first statement);
* "I renewed the passport." for the to-do item "Renew the passport": something done,
  which the result does not say (:func:`unstated_action`).

Generic: fields are read from the result's own keys (a JSON object's keys, a table's
columns) and matched with the answer's words by their letters; nothing here knows a
tool, a topic or a unit beyond the percent sign.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loopwright.core.grounding import (
    MIN_STEM,
    STOPWORDS,
    asked_item,
    canonical_number,
    cell_text,
    is_number,
    table_rows,
)
from loopwright.strategies.embedded.tables import named_columns

_KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
MIN_KEY_WORD = 3
# A number as an answer writes it, with what follows it: "63 pct", "30%", "$85".
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\d])")
_TOKEN = re.compile(r"%|[a-z][a-z']*")
# A clause ends at a comma, semicolon, colon or a sentence end (not a decimal point).
_CLAUSE_BREAK = re.compile(r"[,;:!?]|\.(?!\d)")
# Words a number is read through ("the humidity is 35", "the wind speed of 22"): the
# label of a number is the nearest field-naming word within this many words of it.
MAX_LABEL_DISTANCE = 6
# The percent sign written after a number names a key word of these letters.
_PERCENT_KEYS = ("pct", "percent", "percentage")


@dataclass(frozen=True, slots=True)
class Record:
    """One object of a result (a table's row, a JSON object): each key's words and the
    value's text (:func:`~loopwright.core.grounding.cell_text`); ``table`` when it is a
    row of a table result."""

    fields: tuple[tuple[tuple[str, ...], str], ...]
    table: bool = False

    def texts(self) -> list[str]:
        return [v for _, v in self.fields if v and not is_number(v)]


def key_words(key: str) -> tuple[str, ...]:
    """The words of a key (``humidity_pct`` -> humidity, pct; ``windSpeed`` -> wind,
    speed), lower-cased, of at least :data:`MIN_KEY_WORD` letters."""
    words = tuple(w.lower() for w in _KEY_WORD.findall(key) if len(w) >= MIN_KEY_WORD)
    return words or ((key.strip().lower(),) if key.strip() else ())  # "id" is a field too


def records(contents: Iterable[str]) -> list[Record]:
    """The objects of the JSON results (a table's rows as objects), flat values only."""
    found: list[Record] = []
    for content in contents:
        try:
            data = json.loads(content)
        except ValueError:
            continue
        _walk(data, found, 0, table=False)
    return found


def _walk(data: object, found: list[Record], depth: int, *, table: bool) -> None:
    if depth > 4 or len(found) >= 200:
        return
    if isinstance(data, dict):
        is_table = isinstance(data.get("columns"), list) and isinstance(data.get("rows"), list)
        data = table_rows(data)
        flat = [(key_words(str(k)), cell_text(v)) for k, v in data.items()]
        fields = tuple((k, v) for k, v in flat if k and v)
        if fields and any(not isinstance(v, dict | list) for v in data.values()):
            found.append(Record(fields, table))
        for value in data.values():
            if isinstance(value, dict | list):
                _walk(value, found, depth + 1, table=is_table)
    elif isinstance(data, list):
        for item in data[:200]:
            _walk(item, found, depth + 1, table=table)


def names_key(word: str, key: str) -> bool:
    """Whether ``word`` names the key word ``key``: it starts with it ("windy" names
    ``wind``), or is a start of it of at least :data:`MIN_STEM` letters ("humid" names
    ``humidity``)."""
    if word == "%":
        return key in _PERCENT_KEYS
    return word.startswith(key) or (len(word) >= MIN_STEM and key.startswith(word))


def _named_fields(word: str, record: Record) -> list[str]:
    """The values of the fields of ``record`` that ``word`` names."""
    return [v for keys, v in record.fields if any(names_key(word, k) for k in keys)]


def _words(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _mentions(words: set[str], value: str) -> bool:
    """Whether ``words`` name the text value ``value``: each of its words, as written or
    plural ("chairs" for "chair")."""
    parts = re.findall(r"[a-z]+", value)
    if not parts or len(value) < MIN_KEY_WORD or len(parts) > 3:
        return False
    return all(p in words or f"{p}s" in words or f"{p}es" in words for p in parts)


@dataclass(frozen=True, slots=True)
class Stated:
    """A number of an answer and the words around it inside its clause: ``before``
    (nearest first) back to the previous number, ``after`` up to the next one."""

    number: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    sentence: str


def stated_numbers(answer: str) -> list[Stated]:
    """Each number of ``answer`` with the words of its clause around it."""
    found: list[Stated] = []
    matches = list(_NUMBER.finditer(answer))
    for i, match in enumerate(matches):
        start = matches[i - 1].end() if i else 0
        end = matches[i + 1].start() if i + 1 < len(matches) else len(answer)
        head = _CLAUSE_BREAK.split(answer[start : match.start()])[-1]
        tail = _CLAUSE_BREAK.split(answer[match.end() : end])[0]
        sentence = re.split(r"[.!?](?!\d)", answer[: match.start()])[-1]
        sentence += re.split(r"[.!?](?!\d)", answer[match.end() :])[0]
        found.append(
            Stated(
                canonical_number(match.group(0)),
                tuple(reversed(_words(head)))[:MAX_LABEL_DISTANCE],
                tuple(_words(tail))[:MAX_LABEL_DISTANCE],
                sentence.lower(),
            )
        )
    return found


def _sentence_row(stated: Stated, kept: list[Record]) -> Record | None:
    """The one table row the number's sentence names by a text value, if exactly one."""
    words = set(re.findall(r"[a-z]+", stated.sentence))
    named = [r for r in kept if r.table and any(_mentions(words, v) for v in r.texts())]
    return named[0] if len(named) == 1 else None


def _candidates(stated: Stated, kept: list[Record], answer: str, question: str) -> list[Record]:
    """The records a number is about: those its sentence names by a text value, else
    those the whole answer names, else those the question names, else all."""
    for text in (stated.sentence, answer.lower(), question.lower()):
        words = set(re.findall(r"[a-z]+", text))
        named = [r for r in kept if any(_mentions(words, v) for v in r.texts())]
        if named:
            return named
    return kept


def mislabeled_number(
    answer: str, question: str, contents: Sequence[str], context: Sequence[str] = ()
) -> str | None:
    """A number of ``answer`` glued to a label that is not its field, or ``None``.

    The label of a number is the nearest word before it in its clause that names a
    field of the results (:func:`names_key`: "humidity" names ``humidity_pct``, "stock"
    the column ``stock``), else the nearest after it; a unit right after it ("%" names
    ``humidity_pct``, "kph" ``wind_kph``) is one too. The number must be that field's
    value in a record the answer is about (the row its sentence, else the answer, else
    the question names). A field of text is a label only right before the number ("a
    source of 17"). A word of the question that names no field ("cost" over the
    columns price and stock) as the only word before a number of a table row holding
    several numbers cannot say which of them it is: refused too. The question's own
    numbers ("order 5") are restated, not labelled; words the calls or the tools'
    descriptions (``context``) use name what was searched ("the products table"), not a
    field. A number stated in a sentence naming one table row is a value of that row
    ("The lamp is 12." when the lamp's price is 40 and its stock 3)."""
    kept = records(contents)
    if not kept:
        return None
    searched = {w for text in context for w in _words(_split_keys(text))}
    asked = {
        w
        for w in _words(question)
        if len(w) >= MIN_KEY_WORD
        and w not in STOPWORDS
        and not any(_same_stem(w, x) for x in searched)
    }
    protected = {canonical_number(n) for n in _NUMBER.findall(question)}
    # what the question numbers ("order 5"): the answer may not give that word another
    paired = {w: canonical_number(n) for w, n in _PAIRED.findall(question.lower())}
    for stated in stated_numbers(answer):
        if stated.number in protected:
            continue
        word = stated.before[0] if stated.before else ""
        if paired.get(word, stated.number) != stated.number:
            return f"{word} {stated.number} where the question says {word} {paired[word]}"
        rows = _candidates(stated, kept, answer, question)
        own = _sentence_row(stated, kept)
        if own is not None and stated.number not in (v for _, v in own.fields):
            return f"{stated.number} is no value of the row its sentence names"
        labels = _labels(stated, rows)
        for word, values in labels:
            if stated.number not in values:
                return f"{stated.number} is not the {word!r} of the result"
        if labels:
            continue
        unresolved = _unresolved_word(stated, rows, asked)
        if unresolved:
            return f"{stated.number} is one of several fields; {unresolved!r} names none"
    return None


_PAIRED = re.compile(r"\b([a-z]{3,})\s+#?(-?\d+(?:\.\d+)?)(?![\d.])")
# Words that start another statement inside a clause ("the price is 85 and the stock
# is 12"): a label is looked for up to them.
_CONNECTORS = frozenset(["and", "or", "but", "while", "whereas", "with", "plus"])
MAX_TEXT_LABEL_DISTANCE = 2


def _labels(stated: Stated, rows: list[Record]) -> list[tuple[str, list[str]]]:
    """The labels of a stated number (see :func:`mislabeled_number`), each with the
    values of the fields it names in ``rows``."""
    found: list[tuple[str, list[str]]] = []
    if stated.after:
        unit = [v for r in rows for v in _named_fields(stated.after[0], r)]
        if any(is_number(v) for v in unit):
            found.append((stated.after[0], unit))
    near = _nearest_label(stated.before, rows, text=True) or _nearest_label(
        stated.after, rows, text=False
    )
    if near is not None and near[0] not in (w for w, _ in found):
        found.append(near)
    return found


def _nearest_label(
    words: Sequence[str], rows: list[Record], *, text: bool
) -> tuple[str, list[str]] | None:
    """The nearest of ``words`` (up to a connector) that names a field of ``rows``, with
    the fields' values; a field of text only with ``text`` and within
    :data:`MAX_TEXT_LABEL_DISTANCE` words."""
    kept = _until_connector(words)
    for distance, word in enumerate(kept, start=1):
        named = [v for r in rows for v in _named_fields(word, r)]
        if not named:
            continue
        if len(word) < MIN_KEY_WORD and distance < len(kept):
            # a short key word read with the word before it: "customer id" names the
            # column customer_id (its key words are "customer"), not the column id
            wider = [v for r in rows for v in _named_fields(kept[distance], r)]
            if any(is_number(v) for v in wider):
                return f"{kept[distance]} {word}", wider
        if not any(is_number(v) for v in named) and (
            not text or distance > MAX_TEXT_LABEL_DISTANCE
        ):
            continue
        return word, named
    return None


def _until_connector(words: Sequence[str]) -> list[str]:
    kept = []
    for word in words:
        if word in _CONNECTORS:
            break
        kept.append(word)
    return kept


def _unresolved_word(stated: Stated, rows: list[Record], asked: set[str]) -> str | None:
    """The question's word a number is stated right after (within its clause) when it
    names no field of a table row holding that number among several numeric fields."""
    holding = [r for r in rows if r.table and stated.number in (v for _, v in r.fields)]
    if not holding:
        return None
    numeric = {keys for r in holding for keys, v in r.fields if is_number(v)}
    if len(numeric) < 2:
        return None
    values = {w for r in holding for v in r.texts() for w in re.findall(r"[a-z]+", v)}
    for word in stated.before:
        if word in values or any(word.startswith(v) for v in values if len(v) >= MIN_KEY_WORD):
            continue  # the row's own name ("the chairs")
        if any(_same_stem(word, a) for a in asked):
            # a word for a kind of column names it ("cost" the price: tables.named_columns)
            kinds = [
                v
                for r in holding
                for keys, v in r.fields
                if is_number(v) and named_columns(word, ["_".join(keys)])
            ]
            if kinds and stated.number in kinds:
                return None
            return word
    return None


def _same_stem(a: str, b: str) -> bool:
    need = min(len(a), len(b), MIN_STEM)
    return len(a) >= MIN_KEY_WORD and len(b) >= MIN_KEY_WORD and a[:need] == b[:need]


def restated_value(answer: str, protected: set[str]) -> str | None:
    """A number ``answer`` states more than once ("63 pct, 63% humidity, 63 pct is
    63"), other than the ``protected`` ones (the question's and the calls' numbers: a
    formula restated with its result, "3 + 5 = 8, 8 * 8 = 64"); ``None`` when none."""
    seen: set[str] = set()
    for match in _NUMBER.finditer(answer):
        number = canonical_number(match.group(0))
        if number in seen and number not in protected:
            return number
        seen.add(number)
    return None


_CONNECTOR_END = re.compile(r"(?:[\s,;:]+|\b(?:and|or|is|are|was|of|at|with|the|a|an)\b)+$")


def first_statement(answer: str, number: str) -> str | None:
    """``answer`` cut before the clause that states ``number`` a second time, closed with
    a period ("Manila is 63 pct, 63% humidity." -> "Manila is 63 pct."); ``None`` when
    nothing of at least one word is left before it."""
    count = 0
    for match in _NUMBER.finditer(answer):
        if canonical_number(match.group(0)) != number:
            continue
        count += 1
        if count == 2:
            head = answer[: match.start()]
            breaks = [m.start() for m in _CLAUSE_BREAK.finditer(head)]
            first_at = next(
                m.end() for m in _NUMBER.finditer(answer) if canonical_number(m.group(0)) == number
            )
            cut = [b for b in breaks if b >= first_at]
            head = head[: cut[0]] if cut else head
            head = _CONNECTOR_END.sub("", head.rstrip(" $€£¥")).rstrip()
            return head + "." if re.search(r"[A-Za-z]", head) else None
    return None


# Pronouns by which an answer speaks of itself or the user as doing something.
_PERSONAL = frozenset(["i", "i'm", "i've", "i'd", "i'll", "we", "we've", "we're", "my", "our"])
# Subjects of an act done ("they renewed"); a past form after another word is read as
# a state ("the port used", "is renewed"), at the answer's start as an act.
_SUBJECTS = frozenset(["he", "she", "they", "you", "someone", "somebody", "user"])


def unstated_action(answer: str, question: str, contents: Sequence[str]) -> str | None:
    """An act the answer claims that no result states, or ``None``: a first-person
    pronoun neither the question nor a result uses ("I renewed the passport."), or a
    result's verb turned into the past ("renewed" where the result writes "Renew") at
    the answer's start or after a subject ("they renewed"), not as a state ("is
    renewed", "the port used")."""
    source = " ".join([question, *contents]).lower()
    known = set(re.findall(r"[a-z][a-z']*", source))
    words = re.findall(r"[a-z][a-z']*", answer.lower())
    for word in words:
        if word in _PERSONAL and word not in known:
            return word
    for i, word in enumerate(words):
        if word in known or not word.endswith("ed"):
            continue
        if i and words[i - 1] not in _SUBJECTS:
            continue  # "the port used", "is renewed": a state, not an act claimed
        for base in (word[:-2], word[:-1], word[:-3] if word[-3:-2] == word[-4:-3] else ""):
            if len(base) >= MIN_KEY_WORD and base in known:
                return word
    return None


_ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def other_position(answer: str, question: str, contents: Sequence[str]) -> str | None:
    """An ordinal word ("third") of ``answer`` other than the one the question names a
    list item by ("What is the second item?" -> "The third is call the plumber."),
    when the question names one and a result is such a list; else ``None``."""
    if asked_item(question, contents) is None:
        return None
    asked = set(re.findall(r"[a-z]+", question.lower()))
    said = re.findall(r"[a-z]+", answer.lower())
    for word in said:
        if (word in _ORDINAL_WORDS or word in ("last", "final")) and word not in asked:
            if word in ("last", "final") and asked & {"last", "final"}:
                continue
            return word
    return None


# Words after which an answer names a thing: determiners, and a number or ordinal
# ("the building", "2nd floor").
_DETERMINERS = frozenset(["the", "a", "an", "its", "their"])
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$")
MAX_THING_WORDS = 3
# Words an answer about a result may use of the result itself.
_RESULT_WORDS = frozenset(
    [
        "answer",
        "result",
        "results",
        "value",
        "values",
        "number",
        "count",
        "total",
        "row",
        "rows",
        "table",
        "list",
        "item",
        "items",
        "entry",
        "entries",
        "record",
        "records",
        "data",
        "query",
        "database",
        "column",
        "columns",
        "file",
        "line",
    ]
)


def unstated_thing(answer: str, question: str, sources: Sequence[str]) -> str | None:
    """A thing ``answer`` names (a word right after a determiner, a number or an
    ordinal) that neither the question nor ``sources`` (the results, the calls and the
    tools' descriptions) name in any form ("the 2nd floor of the building" for a
    customers table), or ``None``."""
    known = {
        _base(w)
        for text in (question, *sources)
        for w in re.findall(r"[a-z]+", _split_keys(text).lower())
    }
    tokens = re.findall(r"[A-Za-z]+|\d+(?:st|nd|rd|th)?|[^\sA-Za-z\d]", answer)
    for i, before in enumerate(tokens):
        if not (before.lower() in _DETERMINERS or _ORDINAL.match(before)):
            continue
        # the words of the named thing: up to a function word or a sign ("the only
        # customer": a word the sources name ends it well)
        phrase = []
        for word in tokens[i + 1 : i + 1 + MAX_THING_WORDS]:
            low = word.lower()
            if low == "-":
                continue  # "a 12-inch chair"
            if not low.isalpha() or low in STOPWORDS or low in _DETERMINERS:
                break
            # a name in capitals stays as written ("the US"), to tell it from a word
            phrase.append(word if word.isupper() and len(word) > 1 else low)
        if not phrase or any(_base(w.lower()) in known or w in _RESULT_WORDS for w in phrase):
            continue  # a word of it is named: "the only customer", "the desk costs"
        head = next((w for w in phrase if len(w) >= MIN_KEY_WORD or w.isupper()), None)
        if head is not None:
            return head.lower()
    return None


# A clause that says what something is: "violets are blue", "the meeting is on Tuesday".
_COPULA = re.compile(r"^(?P<left>.*?)\b(?:is|are|was|were)\s+(?P<right>.+)$", re.IGNORECASE)
_CLAUSES = re.compile(r"[,;:!?\n]|\.(?!\d)")
_WORD = re.compile(r"[a-z]+|\d+(?:\.\d+)?")


def _copulas(text: str) -> list[tuple[list[str], list[str]]]:
    """The (subject words, predicate words) of each clause of ``text`` that says what
    something is, lower-cased, function words left out."""
    found = []
    for clause in _CLAUSES.split(text):
        m = _COPULA.match(clause.strip())
        if m:
            left = [w for w in _WORD.findall(m["left"].lower()) if w not in STOPWORDS]
            right = [w for w in _WORD.findall(m["right"].lower()) if w not in STOPWORDS]
            if left and right:
                found.append((left, right))
    return found


def other_subject(answer: str, question: str, contents: Sequence[str]) -> str | None:
    """A value a plain text states of one thing, said of another, or ``None``: over
    "Roses are red, violets are blue." the answer "The poem is blue." (asked what the
    poem says violets are). An answer's clause "X is V" where V is what a text's clause
    says its subject S is must name S before the verb, unless nothing it names there is
    a word of the question or the texts ("It is blue.")."""
    texts = [c for c in contents if not _is_json(c)]
    said = [(left[-1], set(right)) for t in texts for left, right in _copulas(t)]
    if not said:
        return None
    known = {_base(w) for t in (question, *texts) for w in _WORD.findall(t.lower())}
    for left, right in _copulas(answer):
        bases = {_base(w) for w in left}
        for subject, values in said:
            if not values & set(right) or _base(subject) in bases:
                continue
            other = next((w for w in left if _base(w) in known), None)
            if other is not None:
                return f"{other!r} where the text says {subject!r}"
    return None


# A text's "key = value" or "key: value" line (a configuration, a header).
_KEY_VALUE = re.compile(r"^\s*([A-Za-z][\w ]{0,30}?)\s*[=:]\s*(\S[^\n]*?)\s*$", re.MULTILINE)


def cut_value(answer: str, contents: Sequence[str]) -> str | None:
    """A text's one-word value the answer states cut short after its key, or ``None``:
    over "host = example.internal" the answer "host: example." (a part of the value,
    which names another host)."""
    for text in contents:
        if _is_json(text):
            continue
        for key, value in _KEY_VALUE.findall(text):
            if " " in value:
                continue  # a phrase ("Pancakes: 200 g flour, ..."), not one value
            said = re.search(
                rf"\b{re.escape(key.strip())}\b\s*(?:[:=]|is)\s*([^\s,;]+)", answer, re.IGNORECASE
            )
            if said is None:
                continue
            token = said.group(1).rstrip(".!?").lower()
            if token and token != value.lower() and value.lower().startswith(token):
                return f"{key.strip()} {token!r} where the result gives {value!r}"
    return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _split_keys(text: str) -> str:
    """``text`` with its keys' words apart (``humidity_pct`` -> ``humidity pct``,
    ``customerId`` -> ``customer Id``)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])|_", " ", text)


def _base(word: str) -> str:
    """A word without a plural or verb ending ("chairs", "lives", "lived" -> "chair",
    "liv", "liv"), for matching forms of one word."""
    for ending in ("ies", "es", "s", "ed", "ing", "e"):
        if len(word) > len(ending) + 2 and word.endswith(ending):
            return word[: -len(ending)]
    return word


__all__ = [
    "Record",
    "cut_value",
    "first_statement",
    "key_words",
    "mislabeled_number",
    "other_position",
    "other_subject",
    "records",
    "restated_value",
    "stated_numbers",
    "unstated_action",
    "unstated_thing",
]
