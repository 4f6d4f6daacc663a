"""BM25 over tool names, descriptions and parameter names: pure Python, no dependencies.

A tool's document is its name split into words (``getCurrentTime``, ``get_current_time``
and ``time.get_current`` all give ``get current time``), its description, and its
parameters' names, descriptions and allowed values (``enum``). Words are lower-cased and
lightly stemmed (plural and verb endings) so "orders" meets "order" and "booking" meets
"book". A query is the user's words plus the kinds of value it contains (a date, a
time, a URL, ...: :func:`query_text`), which meet the parameter names of the tools that
take such values. The inverted index is built once; a query touches only the postings
of its own words.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loopwright.core.tools import ToolSpec

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "get",
        "give",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "should",
        "show",
        "tell",
        "that",
        "the",
        "their",
        "them",
        "this",
        "to",
        "us",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


def stem(word: str) -> str:
    """A light suffix stripper (enough for tool vocabularies; not a full Porter stemmer)."""
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, keep in (
        ("ies", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            return word[: -len(suffix)] + keep
    return word


def words(text: str) -> list[str]:
    """Lower-cased, stemmed words of ``text`` without stopwords (camelCase split)."""
    spaced = _CAMEL.sub(" ", text).lower()
    return [stem(w) for w in _WORD.findall(spaced) if w not in STOPWORDS]


def tool_text(spec: ToolSpec) -> str:
    """The text a tool is found by: name, description, parameter names, descriptions and
    allowed values."""
    name = re.sub(r"[_.\-]+", " ", spec.name)
    # the name twice: its words say what the tool does more reliably than prose does
    # (+1.4 points of recall@5 on the BFCL pool, benchmarks/tool_selection.py)
    parts = [name, name, spec.description]
    _parameter_text(spec.parameters, parts, 0)
    return "\n".join(p for p in parts if p)


_ENUM_VALUES = 30  # a long enum (every country, every currency) is cut: its head says enough


def _parameter_text(schema: Mapping[str, Any], parts: list[str], depth: int) -> None:
    props = schema.get("properties")
    if not isinstance(props, Mapping) or depth > 2:
        return
    for name, sub in props.items():
        parts.append(str(name).replace("_", " "))
        if not isinstance(sub, Mapping):
            continue
        if isinstance(sub.get("description"), str):
            parts.append(sub["description"])
        items = sub.get("items")
        for node in (sub, items):
            # allowed values name what the tool covers ("Music", "Theater" for an event
            # finder): +5 points of recall@5 on the BFCL pool's dev split
            values = node.get("enum") if isinstance(node, Mapping) else None
            if isinstance(values, list):
                parts.append(" ".join(str(v) for v in values[:_ENUM_VALUES]))
        _parameter_text(sub, parts, depth + 1)
        if isinstance(items, Mapping):
            _parameter_text(items, parts, depth + 1)


_MONTH = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
# What kind of value a request carries, as the words a parameter taking it is named by.
# Generic value shapes only (no domain vocabulary): a request with a date in it is more
# likely to want a tool with a date parameter than an otherwise equal one without.
_VALUE_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            rf"\b\d{{4}}[-./]\d{{1,2}}[-./]\d{{1,2}}|\b\d{{1,2}}(?:st|nd|rd|th)\b"
            rf"|\b(?:{_MONTH})[a-z]*\.? \d{{1,2}}\b|\b\d{{1,2}} (?:{_MONTH})[a-z]*\b"
            r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:today|tomorrow|yesterday)\b"
            r"|\bnext (?:week|month|year)\b",
            re.IGNORECASE,
        ),
        "date",
    ),
    (re.compile(r"\b\d{1,2}(?::\d{2})?\s?[ap]m\b|\b\d{1,2}:\d{2}\b", re.IGNORECASE), "time"),
    (re.compile(r"https?://|\bwww\.", re.IGNORECASE), "url"),
    # each name tried only from the start of its run of name characters (the
    # lookbehinds): tried from every position, each scanned the rest of the run, which
    # was quadratic in a long one (20,000 "a-" took 27 s)
    (re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+\.\w"), "email"),
    (
        re.compile(r"(?<![\w-])[\w-]+\.(?:png|jpe?g|gif|txt|csv|json|pdf|py|md|xlsx?|docx?|zip)\b"),
        "file",
    ),
)


def query_text(query: str) -> str:
    """``query`` plus the kinds of value it contains (``"... on March 3rd"`` gains
    ``date``), so a request meets the parameters its values would fill."""
    kinds = [word for pattern, word in _VALUE_KINDS if pattern.search(query)]
    return f"{query}\n{' '.join(kinds)}" if kinds else query


class BM25:
    """Okapi BM25 (``k1``, ``b``) over a fixed list of documents."""

    __slots__ = ("_idf", "_norms", "_postings", "size")

    def __init__(self, documents: Iterable[Sequence[str]], k1: float = 1.2, b: float = 0.3):
        # b=0.3 (weak length normalisation): long tool descriptions are not padding, they
        # list what the tool covers (+1.3 points of recall@5 over the usual 0.75)
        docs = [Counter(d) for d in documents]
        self.size = len(docs)
        lengths = [sum(c.values()) for c in docs]
        average = (sum(lengths) / len(lengths)) if lengths else 1.0
        frequency: Counter[str] = Counter()
        for counts in docs:
            frequency.update(counts.keys())
        n = len(docs)
        self._idf = {w: math.log(1.0 + (n - df + 0.5) / (df + 0.5)) for w, df in frequency.items()}
        self._norms = [k1 * (1.0 - b + b * length / (average or 1.0)) for length in lengths]
        postings: dict[str, list[tuple[int, float]]] = {}
        for doc, counts in enumerate(docs):
            norm = self._norms[doc]
            for word, tf in counts.items():
                # the per-(word, document) factor is precomputed: a query only sums
                postings.setdefault(word, []).append((doc, tf * (k1 + 1.0) / (tf + norm)))
        self._postings = postings

    def scores(self, query: Sequence[str]) -> dict[int, float]:
        """Document index -> score, for documents sharing a word with ``query``."""
        out: dict[int, float] = {}
        for word in set(query):
            idf = self._idf.get(word)
            if idf is None:
                continue
            for doc, weight in self._postings[word]:
                out[doc] = out.get(doc, 0.0) + idf * weight
        return out

    def top(self, query: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The ``k`` best (index, score) pairs, best first."""
        found = self.scores(query)
        return sorted(found.items(), key=lambda item: -item[1])[:k]
