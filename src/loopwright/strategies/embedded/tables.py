"""Hold a small model's SQL to the tables a tool describes.

A tool whose description lists its database's tables and columns (``customers(id,
name, city), orders(...)``, as ``tools.builtin.sql.description`` writes them) and whose
query parameter shows SELECT statements as examples gets, in the request the model
sees, a ``pattern`` on that parameter: the plain one-table SELECTs those tables allow
(:func:`loopwright.tools.builtin.sql_pattern.select_pattern`). A provider that decodes under a
grammar (the embedded model) then cannot write a FROM list that runs on ("FROM
products, orders, customers, products, stock as stock, ...") or a comparison SQL does
not have ("WHERE total ABOVE 40"), nor compare with a value the request does not
state ("WHERE price = 100.000" for "the price of the desk"). A column whose kind the
description gives (``price INTEGER``) is compared only with literals of that kind (not
"WHERE price = 'desk'"); the model itself is shown the columns without their kinds
(:func:`loopwright.tools.builtin.sql.without_kinds`). The request's words shape the
query (:func:`query_shape`): a number after a table's noun names a row by its key, not a
LIMIT; a superlative sorts and takes the first row; "how many" of a table's rows counts
them; a request naming some of the tables reads one of those. The tool's registered
schema is unchanged: the dispatcher still accepts any read-only SELECT, from any model.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from loopwright.core.grounding import STOPWORDS
from loopwright.core.protocols import ModelRequest
from loopwright.core.tools import ToolSpec
from loopwright.strategies.embedded.examples import example_parameter
from loopwright.tools.builtin.sql import (
    described_tables,
    described_values,
    without_kinds,
    without_values,
)
from loopwright.tools.builtin.sql_pattern import QueryShape, is_quantity, select_pattern


def _is_select(text: object) -> bool:
    if not isinstance(text, str):
        return False
    statement = text.strip()
    return statement.upper().startswith("SELECT ") and sqlite3.complete_statement(statement + ";")


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]\d)")
_WORD = re.compile(r"[^\W\d_][\w'-]*")
MIN_LITERAL_CHARS = 3
MAX_LITERALS = 40


def _names(word: str, name: str) -> bool:
    """Whether ``word`` is ``name`` as written or in another number ("product" for the
    table ``products``)."""
    return word == name or word.rstrip("s") == name.rstrip("s")


# Words that name the database's own parts, and the words that open a question or an
# instruction: never a value a query compares with ("WHERE name = 'table'" for "Use the
# products table").
_SCHEMA_WORDS = frozenset(
    ["table", "tables", "column", "columns", "row", "rows", "database", "record", "records"]
)
_OPENERS = frozenset(
    [
        "who",
        "what",
        "which",
        "where",
        "when",
        "how",
        "is",
        "are",
        "does",
        "do",
        "did",
        "use",
        "check",
        "look",
        "see",
        "find",
        "show",
        "list",
        "tell",
        "give",
        "please",
        "can",
    ]
)
# Words of order, count and comparison: how a query sorts or compares, not a value.
_ORDER_WORDS = frozenset(
    [
        "most",
        "least",
        "more",
        "less",
        "fewer",
        "many",
        "much",
        "than",
        "above",
        "below",
        "over",
        "under",
        "greater",
        "higher",
        "lower",
        "larger",
        "smaller",
        "bigger",
        "top",
        "first",
        "last",
        "highest",
        "lowest",
        "largest",
        "smallest",
        "biggest",
        "cheapest",
        "fewest",
        "greatest",
        "maximum",
        "minimum",
        "longest",
        "shortest",
        "latest",
        "earliest",
        "newest",
        "oldest",
        "youngest",
        "best",
        "worst",
        "expensive",
    ]
)
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)([^\W\d_][\w'-]*)")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def request_literals(request: str, names: Iterable[str] = ()) -> list[str]:
    """The values a request states that a query may compare with: its numbers and its
    words (``Oslo``, ``desk``), as written, each once, and a plural word's singular
    ("lamp" of "lamps": a row holds one); not a function word, a word for the
    database's parts ("table"), a sentence's opening word ("Use the ..."), nor one of
    ``names`` in either number (the tables' and columns': "WHERE price > 'price'",
    "WHERE name = 'product'")."""
    taken = {n.lower() for n in names}
    openers = {m.group(1) for m in _SENTENCE_START.finditer(request.strip())}
    words = [
        w
        for w in _WORD.findall(request)
        if w.lower() not in STOPWORDS | _SCHEMA_WORDS | _ORDER_WORDS
        and not (w in openers and w.lower() in _OPENERS)
        and not any(_names(w.lower(), n) for n in taken)
    ]
    singular = [w[:-1] for w in words if len(w) > 3 and w.endswith("s") and not w.endswith("ss")]
    kept = [
        *_NUMBER.findall(request),
        # a name may be short ("Bo"); another word of two letters is a function word
        *(w for w in [*words, *singular] if len(w) >= MIN_LITERAL_CHARS or w[:1].isupper()),
    ]
    return list(dict.fromkeys(kept))[:MAX_LITERALS]


# A number that names a row by its key: after a table's noun or "id", with "number",
# "no", "#" or "with id" between ("order 3", "order number 5", "customer with id 2").
_BEFORE_NUMBER = re.compile(r"([A-Za-z_]+)(?:\s+(?:number|no\.?|with id))?\s*#?\s*$")
_KEY_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.]\d|\d)")
# A number that is a count of rows: "the top 3", "the first 2", "the 3 cheapest".
_LIMITED = re.compile(
    r"\b(?:top|first|last|bottom)\s+(\d+)\b|\b(\d+)\s+(?:most|least|[a-z]+est)\b", re.I
)
_HOW_MANY = re.compile(r"\bhow many\s+([a-z_]+)", re.I)
# Superlatives and the direction they sort in ("ANY": it depends on the column).
_DESCENDING = frozenset(
    [
        "most",
        "highest",
        "largest",
        "biggest",
        "greatest",
        "maximum",
        "max",
        "top",
        "longest",
        "latest",
        "newest",
        "priciest",
        "costliest",
    ]
)
_ASCENDING = frozenset(
    ["least", "lowest", "smallest", "cheapest", "fewest", "minimum", "min", "shortest", "earliest"]
)
_EITHER = frozenset(["oldest", "youngest", "best", "worst"])
# Words that name a kind of column without its name: a column whose name holds the key
# ("unit_price", "salary") is named by any of the words. Common English only, the
# kinds of column most tables have.
_COLUMN_WORDS: Mapping[str, frozenset[str]] = {
    "price": frozenset(
        [
            "cost",
            "costs",
            "costing",
            "expensive",
            "cheap",
            "cheaper",
            "cheapest",
            "pricey",
            "priciest",
            "costliest",
            "priced",
        ]
    ),
    "cost": frozenset(["price", "prices", "priced", "expensive", "cheap", "cheaper", "cheapest"]),
    "salary": frozenset(
        ["earn", "earns", "earned", "earning", "earnings", "paid", "pay", "wage", "wages"]
    ),
    "age": frozenset(["old", "older", "oldest", "young", "younger", "youngest", "aged"]),
    "city": frozenset(["where", "live", "lives", "living", "based", "located"]),
    "year": frozenset(
        ["when", "old", "older", "oldest", "newest", "latest", "earliest", "published", "founded"]
    ),
    "date": frozenset(["when", "old", "older", "oldest", "newest", "latest", "earliest"]),
}
# The parts of a column's name that say it holds a point in time: the oldest row has
# its smallest value (an age column's largest).
_TIME_PARTS = frozenset(
    ["year", "date", "born", "founded", "published", "created", "established", "time"]
)


def _age_order(order: str, words: Sequence[str], columns: Iterable[str]) -> str:
    """The direction of "oldest"/"youngest" on ``columns`` (``order`` is "ANY"): by an
    age column, the oldest is the largest; by a point in time, the smallest."""
    old = bool({"oldest", "older"} & set(words))
    young = bool({"youngest", "younger"} & set(words))
    if order != "ANY" or old == young:
        return order
    parts = {p for c in columns for p in c.lower().split("_")}
    if "age" in parts:
        return "DESC" if old else "ASC"
    if parts & _TIME_PARTS:
        return "ASC" if old else "DESC"
    return order


def named_columns(request: str, columns: Iterable[str]) -> tuple[str, ...]:
    """The ``columns`` ``request`` names: by the column's name or one of its parts
    ("price" names ``unit_price``) in either number, or by a word for its kind
    (:data:`_COLUMN_WORDS`: "cost" names ``price``, "earn" names ``salary``)."""
    words = set(_words(request))
    named: list[str] = []
    for column in columns:
        parts = [p for p in column.lower().split("_") if p and p != "id"] or [column.lower()]
        if column.lower() in words or any(
            any(_names(w, p) for w in words) or words & _COLUMN_WORDS.get(p, frozenset())
            for p in parts
        ):
            named.append(column)
    return tuple(named)


# A name: a capitalized word inside a sentence ("Who lives in Oslo?").
_NAME = re.compile(r"(?<=[^\s.!?]) +([A-Z][\w'-]+)")


def request_values(
    request: str,
    listed: Mapping[tuple[str, str], Sequence[str]],
    names: Iterable[str] = (),
) -> tuple[tuple[str, str, str], ...]:
    """(table, column, value) for each value of ``listed`` (by table and column, as
    :func:`~loopwright.tools.builtin.sql.described_values` reads them) that ``request``
    writes as whole words, in any case, also with a plural or possessive ending
    ("chairs", "Alice's"); not a function word, a word of order or of the database's
    parts, nor one of ``names`` (the tables' and columns')."""
    taken = {n.lower() for n in names}
    found: list[tuple[str, str, str]] = []
    for (table, column), values in listed.items():
        for value in values:
            low = value.strip().lower()
            if (
                len(low) < 2
                or low in STOPWORDS | _SCHEMA_WORDS | _ORDER_WORDS | _OPENERS
                or any(_names(low, n) for n in taken)
            ):
                continue
            written = re.compile(rf"(?<![\w'-]){re.escape(low)}(?:'s|s|es)?(?![\w'-])", re.I)
            if written.search(request):
                found.append((table, column, value))
    return tuple(found)


def query_shape(request: str, tables: Mapping[str, Mapping[str, str]]) -> QueryShape:
    """What ``request`` asks of a query on ``tables`` beyond its values
    (:class:`~loopwright.tools.builtin.sql_pattern.QueryShape`): the rows it names by key, the
    counts of rows it gives, a superlative's direction and the columns it names, the
    tables a "how many" counts, the names it writes. Generic: English words for
    order and count, the tables' and columns' own names."""
    words = [w.lower() for w in _WORD.findall(request)]
    columns = {c for kinds in tables.values() for c in kinds}
    keys = tuple(
        (noun, m.group(0))
        for m in _KEY_NUMBER.finditer(request)
        if (before := _BEFORE_NUMBER.search(request[: m.start()])) is not None
        and ((noun := before.group(1).lower()) == "id" or any(_names(noun, t) for t in tables))
    )
    limits = tuple(n for m in _LIMITED.finditer(request) for n in m.groups() if n)
    order = next(
        (
            "DESC" if w in _DESCENDING else "ASC" if w in _ASCENDING else "ANY"
            for w in words
            if w in _DESCENDING | _ASCENDING | _EITHER
        ),
        "",
    )
    counted = tuple(
        t for m in _HOW_MANY.finditer(request) for t in tables if _names(m.group(1).lower(), t)
    )
    named = [n for n in _NAME.findall(request) if not any(_names(n.lower(), t) for t in tables)]
    asked = [c for c in columns if c.lower() in words]
    if "who" in words:
        asked += [c for c in columns if "name" in c.lower()]  # "who" asks for a name
    return QueryShape(
        keys=keys,
        limits=tuple(n for n in limits if n not in {k for _, k in keys}),
        order=_age_order(order, words, columns),
        sort_columns=named_columns(request, columns),
        counted=counted,
        names=tuple(n for n in named if n.lower() not in {c.lower() for c in columns}),
        asked_columns=tuple(asked),
        comparison=_comparison(request),
        by_name=bool({"named", "called"} & set(words)),
        # "who" asks for the name of the row another value selects
        selects_named="who" in words,
        wants_name="who" if "who" in words else "which" if _asks_which_row(request, tables) else "",
    )


# Nouns for a row of any table; a table's own noun is one too ("Which product ...").
_ROW_NOUNS = frozenset(["item", "items", "one", "person", "people", "thing", "entry", "record"])
_SKIPPED = frozenset(["is", "are", "was", "were", "the", "a", "an", "one", "of"])
_ASKING = re.compile(r"\b(?:which|what)\b", re.I)


def _asks_which_row(request: str, tables: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether ``request`` asks which row: the noun after "which"/"what" (past "is
    the" and words of order: "What is the most expensive item ...?") is a row's noun,
    a table's or a generic one, and not followed by a column's name ("the highest
    order total" asks for the total)."""
    found = _ASKING.search(request)
    if found is None:
        return False
    after = _words(request[found.end() :])
    words = [w for w in after if w not in _SKIPPED | _ORDER_WORDS | _DESCENDING | _ASCENDING]
    if not words:
        return False
    noun, rest = words[0], words[1:2]
    columns = [c for kinds in tables.values() for c in kinds]
    row = noun in _ROW_NOUNS or any(_names(noun, t) for t in tables)
    parts = {p for c in columns for p in c.lower().split("_") if p != "id"}
    return row and not (rest and any(_names(rest[0], p) for p in parts))


_COMPARED = (
    (re.compile(r"\bat least\b|\bor more\b", re.I), ">="),
    (re.compile(r"\bat most\b|\bor (?:less|fewer)\b|\bno more than\b", re.I), "<="),
    (
        re.compile(
            r"\b(?:more|greater|higher|larger|bigger) than\b|\b(?:above|over|exceeding)\s+\d", re.I
        ),
        ">",
    ),
    (re.compile(r"\b(?:less|fewer|lower|smaller) than\b|\b(?:below|under)\s+\d", re.I), "<"),
)


def _comparison(request: str) -> str:
    """The operator a request's words give its number ("more than 50": ``>``), ``=``
    when they give none and a number is compared, "" when they give several."""
    found = {op for pattern, op in _COMPARED if pattern.search(request)}
    if len(found) > 1:
        return ""
    return found.pop() if found else "="


def held_to_tables(spec: ToolSpec, request: str | None = None) -> ToolSpec:
    """``spec`` with its query parameter held to its tables (module docstring), its
    comparisons to the values ``request`` states when given; ``spec`` itself when it
    describes no tables or shows no SELECT examples."""
    name = example_parameter(spec, _is_select, unpatterned=True)
    tables = described_tables(spec.description) if name is not None else {}
    if name is None or not tables:
        return spec
    props: dict[str, Any] = dict(spec.parameters["properties"])
    described = str(props[name].get("description", ""))
    shape = literals = None
    if request is not None:
        everything = [*tables, *(c for kinds in tables.values() for c in kinds)]
        values = request_values(request, described_values(described), everything)
        # A request that names some of the tables reads one of them ("Use the customers
        # table": a query of the orders table answered "How many customers ...?"), else
        # one holding a value it writes ("Who wrote Dune?": the books table).
        named = {t: k for t, k in tables.items() if any(_names(w, t) for w in _words(request))}
        holding = {t: k for t, k in tables.items() if any(v[0] == t for v in values)}
        # else one with a column it names ("Which item has the lowest price?")
        columned = {t: k for t, k in tables.items() if named_columns(request, k)}
        tables = named or holding or columned or tables
        names = [*tables, *(c for kinds in tables.values() for c in kinds)]
        literals = request_literals(request, names)
        shape = replace(query_shape(request, tables), values=values)
    props[name] = {
        **props[name],
        "pattern": select_pattern(tables, literals, shape),
        "description": without_values(described),
    }
    return replace(
        spec,
        description=without_kinds(spec.description),
        parameters={**spec.parameters, "properties": props},
    )


def asked_tables(spec: ToolSpec, request: str) -> bool:
    """Whether ``request`` asks about the tables ``spec`` describes (a tool whose query
    parameter shows SELECT examples): it names one of them ("the oldest book") or
    writes a value their columns hold (:func:`request_values`: "Who wrote Dune?"), or
    a superlative of a quantity a column holds ("the most expensive item": ``price``).
    Left to choose, the model answered such questions from nothing, without a call."""
    name = example_parameter(spec, _is_select)
    tables = described_tables(spec.description) if name is not None else {}
    if name is None or not tables:
        return False
    if any(_names(w, t) for w in _words(request) for t in tables):
        return True
    # a superlative of a quantity a column holds ("the most expensive item": price)
    numeric = [c for kinds in tables.values() for c, k in kinds.items() if is_quantity(c, k)]
    if query_shape(request, tables).order and named_columns(request, numeric):
        return True
    listed = described_values(str(spec.parameters["properties"][name].get("description", "")))
    everything = [*tables, *(c for kinds in tables.values() for c in kinds)]
    return bool(request_values(request, listed, everything))


def request_held_to_tables(request: ModelRequest) -> ModelRequest:
    """``request`` with each of its tools held to its tables (see :func:`held_to_tables`)."""
    asked = next((m.text for m in reversed(request.messages) if m.role == "user"), None)
    tools: Sequence[ToolSpec] = [held_to_tables(t, asked) for t in request.tools]
    if all(a is b for a, b in zip(tools, request.tools, strict=True)):
        return request
    return replace(request, tools=tuple(tools))


__all__ = [
    "asked_tables",
    "held_to_tables",
    "query_shape",
    "request_held_to_tables",
    "request_literals",
    "request_values",
]
