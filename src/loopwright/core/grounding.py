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
    asked = {w.lower() for w in label_words(question)}
    words = (w for c in contents for t in result_texts(c) for w in label_words(t))
    return list(dict.fromkeys(w for w in words if w.lower() not in asked))


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


def _same_stem(a: str, b: str) -> bool:
    need = min(len(a), len(b), MIN_STEM)
    return a[:need] == b[:need]


__all__ = [
    "canonical_number",
    "MIN_STEM",
    "STOPWORDS",
    "label_words",
    "result_labels",
    "result_texts",
    "unstated_words",
]
