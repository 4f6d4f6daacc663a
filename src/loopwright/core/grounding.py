"""The values a tool result states, for checking that an answer states one of them.

Shared by the embedded model's answer grammar (``providers.local_answer``: the words an
answer may quote) and the answer check of ``strategies.embedded`` (whether it quoted
one), so both read a result the same way. Generic: nothing here knows what a tool does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

MIN_LABEL_CHARS = 3
# Two words share a stem when their first letters agree this far ("raining", "rain").
MIN_STEM = 4

# Number words from zero to nineteen (index = value) and the tens from twenty: what the
# readers of numbers written as words share (local_numbers' values in requests,
# formula's request read in digits).
NUMBER_WORDS = (
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
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
TENS_WORDS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")

# A word; a dot inside it stays ("example.internal" is one name, "Oslo." is "Oslo").
_LABEL = re.compile(r"[^\W\d_](?:[\w'-]|\.(?=\w))*")
# Words too common to show that an answer used a result (it would start with them).
STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "this",
        "that",
        "with",
        "from",
        "has",
        "have",
        "had",
        "not",
        "but",
        "you",
        "your",
        "its",
        "there",
        "their",
        "they",
        "them",
        "then",
        "than",
        "what",
        "which",
        "who",
        "how",
        "when",
        "where",
        "will",
        "would",
        "can",
        "all",
        "any",
        "each",
        "one",
        "our",
        "out",
        "his",
        "her",
        "she",
        "him",
        "been",
        "being",
        "into",
        "onto",
        "over",
        "under",
    ]
)


# Common English irregular verbs: past forms -> the base form (a question asks "What
# needs to be bought?" of a list that writes "Buy milk").
_IRREGULAR = {
    form: base
    for base, forms in {
        "buy": "bought",
        "bring": "brought",
        "think": "thought",
        "teach": "taught",
        "catch": "caught",
        "seek": "sought",
        "fight": "fought",
        "sell": "sold",
        "tell": "told",
        "pay": "paid",
        "make": "made",
        "send": "sent",
        "spend": "spent",
        "build": "built",
        "lend": "lent",
        "write": "wrote written",
        "do": "did done",
        "give": "gave given",
        "take": "took taken",
        "find": "found",
        "keep": "kept",
        "leave": "left",
        "meet": "met",
        "eat": "ate eaten",
        "drink": "drank drunk",
        "see": "saw seen",
        "go": "went gone",
        "get": "got gotten",
        "win": "won",
        "lose": "lost",
        "hold": "held",
        "run": "ran",
        "choose": "chose chosen",
        "draw": "drew drawn",
        "drive": "drove driven",
        "fly": "flew flown",
        "forget": "forgot forgotten",
        "grow": "grew grown",
        "know": "knew known",
        "show": "showed shown",
        "speak": "spoke spoken",
        "steal": "stole stolen",
        "wear": "wore worn",
        "break": "broke broken",
        "begin": "began begun",
        "sing": "sang sung",
        "feed": "fed",
        "lead": "led",
        "sleep": "slept",
        "feel": "felt",
        "hear": "heard",
        "say": "said",
        "stand": "stood",
        "understand": "understood",
        "sit": "sat",
        "hang": "hung",
        "freeze": "froze frozen",
        "wake": "woke woken",
    }.items()
    for form in forms.split()
}


def base_form(word: str) -> str:
    """The base form of a common irregular English verb's past form ("bought" -> "buy",
    "written" -> "write"), lower-cased; any other word lower-cased as it is."""
    low = word.lower()
    return _IRREGULAR.get(low, low)


def label_words(text: str) -> list[str]:
    """Words of ``text`` an answer may quote as a result's value (letters first, at
    least :data:`MIN_LABEL_CHARS` long, no digits, not a common function word; a
    dotted name such as ``example.internal`` is one word)."""
    found = []
    for match in _LABEL.finditer(text):
        word = match.group(0).rstrip("'-")
        long = len(word) >= MIN_LABEL_CHARS and not any(ch.isdigit() for ch in word)
        if long and word.lower() not in STOPWORDS:
            found.append(word)
    return found


def result_texts(content: str) -> list[str]:
    """The text values of a result: a JSON result's string leaves (not its keys, nor a
    table's column names), else the whole text."""
    try:
        data = json.loads(content)
    except ValueError:
        return [content]
    found: list[str] = []
    _strings(data, found, 0)
    return found


def _strings(data: object, found: list[str], depth: int) -> None:
    if depth > 4:
        return
    if isinstance(data, str):
        found.append(data)
    elif isinstance(data, dict):
        for key, value in data.items():
            if key != "columns":
                _strings(value, found, depth + 1)
    elif isinstance(data, list):
        for item in data[:50]:
            _strings(item, found, depth + 1)


def result_labels(contents: Iterable[str], question: str) -> list[str]:
    """The words of ``contents`` (tool results) that the question does not use, in
    order, once each: the labels and names an answer can state ("cloudy", "Oslo")."""
    asked = {w.lower() for w in _LABEL.findall(question)}
    words = (w for c in contents for t in result_texts(c) for w in _text_labels(t))
    return list(dict.fromkeys(w for w in words if w.lower() not in asked))


# Two-letter words that are no name ("to", "in"): a value of a result that is one short
# word is a label (a name: "Bo", "Li") unless it is one of these.
_SHORT_WORDS = frozenset(
    [
        "a",
        "an",
        "to",
        "in",
        "on",
        "at",
        "of",
        "is",
        "it",
        "by",
        "or",
        "as",
        "be",
        "we",
        "he",
        "me",
        "my",
        "no",
        "so",
        "up",
        "us",
        "do",
        "go",
        "if",
        "am",
    ]
)


def _text_labels(text: str) -> list[str]:
    """The labels of one text value of a result: its :func:`label_words`, or the value
    itself when it is one capitalized word shorter than those ("Bo", a name)."""
    word = text.strip()
    if (
        2 <= len(word) < MIN_LABEL_CHARS
        and word.isalpha()
        and word[0].isupper()
        and word.lower() not in _SHORT_WORDS
    ):
        return [word]
    return label_words(text)


def unstated_words(question: str, contents: Iterable[str]) -> list[str]:
    """The words of the question (:func:`label_words`, lower-cased, once each) that no
    result states, as written or sharing a stem ("raining" is stated by "rain", not by
    "sunny"): what a "Yes" to the question would claim without support."""
    known = {w.lower() for c in contents for w in label_words(c)}
    asked = dict.fromkeys(w.lower() for w in label_words(question))
    return [w for w in asked if not any(_same_stem(w, k) for k in known)]


def canonical_number(number: str) -> str:
    """A number as written, with the zeros of a decimal tail dropped: ``12.0`` and
    ``12`` are the same number, and so are ``2.50`` and ``2.5``."""
    return number.rstrip("0").rstrip(".") if "." in number else number


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
_ITEM = re.compile(r"^[ \t]*(?:\d{1,2}[.)]|[-*\u2022])[ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
_ITEM_WORD = re.compile(r"[a-z]+")
MIN_ITEMS = 2
MIN_ITEM_WORD = 3


def list_items(text: str) -> list[str]:
    """The items of a listed text, lower-cased: its marked lines ("1. Buy milk", "- ..."),
    else the comma-separated parts after a lead-in and a colon ("Pancakes: 200 g flour,
    2 eggs, 300 ml milk." -> the three ingredients); fewer than :data:`MIN_ITEMS`: none."""
    items = [m.group(1).lower() for m in _ITEM.finditer(text)]
    if len(items) >= MIN_ITEMS:
        return items
    for m in _COLON_LIST.finditer(text):
        parts = [p.strip().lower() for p in _LIST_SEPARATOR.split(m.group(1))]
        if len([p for p in parts if p]) >= MIN_ITEMS:
            return [p for p in parts if p]
    return []


# The part after a colon up to the sentence's end (a decimal point does not end it).
_COLON_LIST = re.compile(r":[ \t]*([^.:\n]+(?:\.\d[^.:\n]*)*)")
_LIST_SEPARATOR = re.compile(r",\s*(?:and\s+)?|\s+and\s+")


def asked_item(question: str, contents: Iterable[str]) -> tuple[list[str], int] | None:
    """The items of the first result that is a list (:func:`list_items`), and the index
    of the one ``question`` names by its position ("What is the second item?": 1; "the
    last": the last; "the middle": the middle one of an odd number); ``None`` when the
    question names no position (or several) or no result is such a list long enough."""
    asked = set(_ITEM_WORD.findall(question.lower()))
    places: list[int | str] = [i for i, w in enumerate(_ORDINALS) if w in asked]
    if asked & {"last", "final"}:
        places.append(-1)
    if "middle" in asked:
        places.append("middle")
    if len(places) != 1:
        return None
    for content in contents:
        items = [item for t in result_texts(content) for item in list_items(t)]
        place = places[0]
        if place == "middle":
            if len(items) < MIN_ITEMS or len(items) % 2 == 0:
                continue
            place = len(items) // 2
        assert isinstance(place, int)
        if len(items) >= MIN_ITEMS and place < len(items):
            return items, place % len(items)
    return None


_ITEM_NUMBER = re.compile(r"^[ \t]*(\d{1,2})[.)][ \t]+\S", re.MULTILINE)


def item_numbers(contents: Iterable[str]) -> list[str]:
    """The numbers that open the items of the results' numbered lists ("1. Buy milk"
    lines), each once: where an answer may write a number and ". " inside a sentence."""
    found = (
        m.group(1) for c in contents for t in result_texts(c) for m in _ITEM_NUMBER.finditer(t)
    )
    return list(dict.fromkeys(found))


def other_item_first(answer: str, question: str, contents: Iterable[str]) -> str | None:
    """The first word of ``answer`` that only another list item uses, when the
    question names an item by position (:func:`asked_item`) and the answer writes such
    a word before any word of the named item ("The second item is buy milk" for the
    list "1. Buy milk, 2. Call the plumber"); else ``None``."""
    found = asked_item(question, contents)
    if found is None:
        return None
    items, index = found
    own = set(_ITEM_WORD.findall(items[index]))
    asked = set(_ITEM_WORD.findall(question.lower()))
    others = {
        w
        for i, item in enumerate(items)
        if i != index
        for w in _ITEM_WORD.findall(item)
        if len(w) >= MIN_ITEM_WORD and w not in own | asked | STOPWORDS
    }
    for word in _ITEM_WORD.findall(answer.lower()):
        if word in own and len(word) >= MIN_ITEM_WORD and word not in STOPWORDS | asked:
            return None
        if word in others:
            return word
    return None


# A number as a table cell or a result writes it ("12", "-3", "0.25").
_CELL_NUMBER = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?(?!\d)")
MIN_ROWS = 2


def cell_text(value: object) -> str:
    """A table cell as text: a string stripped and lower-cased, a number in canonical
    form (:func:`canonical_number`); "" for a flag, a null or a nested value."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int | float):
        return canonical_number(json.dumps(value))
    return value.strip().lower() if isinstance(value, str) else ""


def is_number(value: str) -> bool:
    """Whether a cell's text (:func:`cell_text`) is a number."""
    return _CELL_NUMBER.fullmatch(value) is not None


def table_rows(data: dict[str, object]) -> dict[str, object]:
    """``data`` with a table given as ``{"columns": [...], "rows": [[...], ...]}`` turned
    into one object per row."""
    columns, rows = data.get("columns"), data.get("rows")
    if isinstance(columns, list) and isinstance(rows, list):
        table = [r for r in rows if isinstance(r, list)]
        return {**data, "rows": [dict(zip(map(str, columns), r, strict=False)) for r in table]}
    return data


def row_values(content: str, min_rows: int = MIN_ROWS) -> list[list[str]]:
    """The values of each row of a result (a table's rows, a list's objects) as text
    (:func:`cell_text`; empty cells left out); empty when it holds fewer than
    ``min_rows`` rows."""
    try:
        data = json.loads(content)
    except ValueError:
        return []
    if isinstance(data, dict):
        data = table_rows(data).get("rows")
    if not isinstance(data, list):
        return []
    rows = [r.values() if isinstance(r, dict) else r for r in data if isinstance(r, list | dict)]
    found = [[t for t in map(cell_text, row) if t] for row in rows]
    return found if len(found) >= min_rows else []


def is_json(text: str) -> bool:
    """Whether ``text`` is one JSON value (a structured result or a decoded call, not
    prose)."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _same_stem(a: str, b: str) -> bool:
    need = min(len(a), len(b), MIN_STEM)
    return a[:need] == b[:need]


__all__ = [
    "MIN_ROWS",
    "cell_text",
    "is_json",
    "is_number",
    "row_values",
    "table_rows",
    "asked_item",
    "base_form",
    "list_items",
    "canonical_number",
    "item_numbers",
    "other_item_first",
    "MIN_STEM",
    "STOPWORDS",
    "label_words",
    "result_labels",
    "result_texts",
    "unstated_words",
]
