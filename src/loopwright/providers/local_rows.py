"""What a question points at in a tool result: the rows it names, the count it asks
for, the list item it names by position (the embedded model's answer focus).

:func:`focus` narrows what the first sentence of a grounded answer
(``local_answer.answer_grammar``) must state to the values the question asks about:
the rows it names by a text value ("Which city does Dana live in?"), the number of
those rows ("How many customers live in Berlin?"), the number a text pairs with the
question's words ("How many tests failed?"), the list item it names by position.
Generic: nothing here knows a tool, only results shaped as tables, lists and texts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from loopwright.core.grounding import (
    MIN_STEM,
    asked_item,
    canonical_number,
    cell_text,
    is_number,
    row_values,
    table_rows,
)

NUMBER = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?(?![\d])")


MAX_NUMBERS = 64


MAX_NUMBER_CHARS = 24


def unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def numbers_in(text: str) -> list[str]:
    """Numbers written in ``text`` (``12``, ``-3``, ``0.25``; thousands separators are
    not joined: ``1,000`` is ``1`` and ``000``; a number right after a letter counts:
    the hour of ``2026-11-24T10:33`` is ``10``, else an answer could not write it and
    wrote another of the result's numbers in its place)."""
    return [m.group(0) for m in NUMBER.finditer(text)]


@dataclass(frozen=True, slots=True)
class Focus:
    """What an answer's first sentence may state: the allowed numbers (``keep``), the
    labels and numbers it must state one of, whether a label (not a number) is due."""

    keep: tuple[str, ...]
    labels: tuple[str, ...]
    latest: tuple[str, ...]
    by_label: bool = False


def focus(
    base: Focus,
    rows: list[list[str]],
    texts: Sequence[str],
    pairs: list[tuple[str, str]],
    asked: str,
) -> Focus:
    """``base`` narrowed to what the question points at: the rows it names, the number
    of those rows, the count a text gives, the list item it names by position; and,
    when the question asks for one text column ("Who lives in Paris?": the name; "What
    is the name of customer 3?"), a value of that column (:func:`asked_column`)."""
    found = _focus(base, rows, texts, pairs, asked)
    named = named_rows(rows, asked)
    values = asked_column(texts, asked, named)
    kept = tuple(w for w in found.labels if w.lower() in values)
    if kept and (len(kept) < len(found.labels) or found.latest):
        # the row's other values (its city, its id, for "Who ...?") are not the answer
        return Focus(found.keep, kept, (), True)
    number = asked_number(texts, asked, named)
    stated = [n for n in found.keep if canonical_number(n) == number]
    if stated and not _WHICH_ROW.search(asked):
        # "What is the stock of the cheapest product?" over the lamp's row: its stock,
        # not its name ("The cheapest product is lamp.") nor its price
        return Focus(found.keep, (), (stated[0],), False)
    return found


# A question asking which row ("Which product has the most stock?", "Who earns most?"):
# the column it names is what the row was picked by, not what to state.
_WHICH_ROW = re.compile(r"\b(?:which|who)\b", re.IGNORECASE)


def asked_number(texts: Sequence[str], question: str, named: list[list[str]]) -> str:
    """The value (canonical) of the one numeric column of a table result that the
    question names by a key word ("stock", "price"; not an identifier), or that a "how
    many" question counting the row's thing asks (a :data:`QUANTITY_COLUMNS` column), in
    the one row it asks about: of the rows ``named`` (see :func:`named_rows`) when there is one,
    else of a one-row table (a query that picked the row: "the cheapest product").
    "" otherwise."""
    words = [w for w in WORD.findall(question.lower()) if len(w) >= MIN_FIELD_WORD]
    for columns, rows in _tables(texts):
        listed = [r for r in rows if len(r) == len(columns)]
        names = [str(c).lower() for c in columns]
        numeric = [
            i
            for i, c in enumerate(names)
            if listed
            and c != "id"
            and not c.endswith("_id")
            and all(isinstance(r[i], int | float) and not isinstance(r[i], bool) for r in listed)
        ]
        chosen = [i for i in numeric if any(names_key(w, names[i]) for w in words)]
        picked = _picked(listed, named)
        if not chosen and _counts_row(question, picked):
            chosen = [i for i in numeric if set(WORD.findall(names[i])) & QUANTITY_COLUMNS]
        if len(chosen) == 1 and len(picked) == 1:
            return cell_text(picked[0][chosen[0]])
    return ""


# Column names that hold how many of a row's thing there are: "How many desks do we
# still have?" names no column, and asks the desk row's quantity, not its price.
QUANTITY_COLUMNS = frozenset(
    ["stock", "quantity", "qty", "count", "units", "inventory", "available", "remaining"]
)


def _counts_row(question: str, picked: list[list[object]]) -> bool:
    """Whether a "how many" question counts the thing the one picked row names ("How
    many desks ...?" of the row ``desk``)."""
    counted = _COUNTED.search(question)
    if counted is None or len(picked) != 1:
        return False
    noun = {counted.group(1).lower()}
    return any(mentions(noun, v) for v in picked[0] if isinstance(v, str))


def asked_column(
    texts: Sequence[str], question: str, named: list[list[str]] | None = None
) -> set[str]:
    """The values (lower-cased) of the one text column of a table result that the
    question asks for: the column it names by a key word ("name", "city"), or, for a
    "who" question, the one whose key says "name"; of the rows ``named`` (see
    :func:`named_rows`) when given, else of a one-row table. Empty otherwise."""
    words = set(WORD.findall(question.lower()))
    for columns, listed in _tables(texts):
        texts_at = [
            i
            for i, c in enumerate(columns)
            if listed and all(isinstance(r[i], str) for r in listed if i < len(r))
        ]
        chosen = [
            i
            for i in texts_at
            if any(names_key(w, str(columns[i]).lower()) for w in words if len(w) >= MIN_FIELD_WORD)
        ]
        if not chosen and "who" in words:
            chosen = [i for i in texts_at if "name" in str(columns[i]).lower()]
        if len(chosen) != 1:
            continue
        picked = _picked(listed, named)
        return {cell_text(r[chosen[0]]) for r in picked if chosen[0] < len(r)}
    return set()


def _tables(texts: Sequence[str]) -> Iterator[tuple[list[object], list[list[object]]]]:
    """``(columns, rows)`` of each result that is a table (``{"columns", "rows"}``)."""
    for content in texts:
        try:
            data = json.loads(content)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        columns, rows = data.get("columns"), data.get("rows")
        if isinstance(columns, list) and isinstance(rows, list):
            yield columns, [r for r in rows if isinstance(r, list)]


def _picked(listed: list[list[object]], named: list[list[str]] | None) -> list[list[object]]:
    """The rows the question asks about: those ``named`` (see :func:`named_rows`) when
    given, else the one row of a one-row table."""
    if named:
        return [r for r in listed if [cell_text(v) for v in r if cell_text(v)] in named]
    return listed if len(listed) == 1 else []


def _focus(
    base: Focus,
    rows: list[list[str]],
    texts: Sequence[str],
    pairs: list[tuple[str, str]],
    asked: str,
) -> Focus:
    keep, labels, latest, by_label = base.keep, list(base.labels), list(base.latest), False
    named = named_rows(rows, asked)
    if named:
        # The question names some rows ("Which city does Dana live in?"): the first
        # sentence states a value of those, not the first row's ("The city is Berlin").
        # An identifier column's number is not such a value ("Bo ... in 2nd place").
        cells = {v for row in named for v in row}
        kept = [w for w in labels if w.lower() in cells]
        ids = _identifiers(texts)
        numbers = [n for n in latest if canonical_number(n) in cells and n not in ids]
        if kept or numbers:
            labels, latest = kept, numbers
        by_label = bool(labels and not latest)
    counted = _counted(rows, named, asked)
    if counted:
        # "How many customers live in Berlin?" over the rows: the number of rows the
        # question names is what the result says (it listed them), not a cell.
        return Focus((counted,), (), (counted,))
    paired = _paired(pairs, asked, latest) if _HOW_MANY.search(asked) else ""
    if paired:
        return Focus(keep, (), (paired,))
    if not named:
        # One row selected by the question's number ("WHERE price = 85") is that row.
        single = [r for t in texts for r in row_values(t, 1)] if not rows else []
        row = _row_by_number(rows or single[:1], texts, asked)
        if row is not None:
            return _row_focus(keep, labels, latest, row, texts, asked)
    item = _list_item(texts, asked)
    if item is not None:
        # A word of the item, and only the item's own numbers: the others' positions
        # are not its value ("the purchase of 1. I bought 1."). Other items' words
        # are not kept out (the model then invented: "I called the doctor"); an
        # answer naming another item first is caught by the answer check.
        labels = [w for w in labels if w.lower() in item[0]] or labels
        return Focus(short(n for n in keep if n in item[1]), tuple(labels), (), True)
    asked_numbers = {canonical_number(n) for n in numbers_in(asked)}
    if latest and labels and all(canonical_number(n) in asked_numbers for n in latest):
        # Every number of the result is one the question wrote ("Which customer has id
        # 2?" -> [2, "Bo", "Paris"]): restating it says nothing ("The customer has 2").
        return Focus(keep, tuple(labels), (), True)
    return Focus(keep, tuple(labels), tuple(latest), by_label)


# A word that makes the number after it a bound, not a value a row holds ("a total
# above 40", "more than 50", "at least 3").
_BOUND = re.compile(
    r"\b(?:above|below|over|under|than|least|most|exceeding|between|and)\s+(-?\d+(?:\.\d+)?)",
    re.IGNORECASE,
)


def _row_by_number(rows: list[list[str]], texts: Sequence[str], asked: str) -> list[str] | None:
    """The one row a question names by a number it writes ("Which product costs 85?",
    "the total of order 5"): the only row holding that number, or the only row whose
    ``id`` is that number; ``None`` for a count ("how many"), a bound ("above 40") or
    a number that picks no single row."""
    if not rows or _HOW_MANY.search(asked):
        return None
    bounds = {canonical_number(m.group(1)) for m in _BOUND.finditer(asked)}
    picked: list[list[str]] = []
    for number in dict.fromkeys(canonical_number(n) for n in numbers_in(asked)):
        if number in bounds:
            continue
        holding = [row for row in rows if number in row]
        if len(holding) != 1:
            holding = [rows[i] for i in _rows_with_id(texts, number) if i < len(rows)]
        if len(holding) == 1 and holding[0] not in picked:
            picked.append(holding[0])
    return picked[0] if len(picked) == 1 else None


def _rows_with_id(texts: Sequence[str], number: str) -> list[int]:
    """The indexes of the table rows whose ``id`` column holds ``number``."""
    for content in texts:
        try:
            data = json.loads(content)
        except ValueError:
            continue
        listed = table_rows(data).get("rows") if isinstance(data, dict) else data
        if isinstance(listed, list):
            dicts = [r for r in listed if isinstance(r, dict | list)]
            return [
                i
                for i, r in enumerate(dicts)
                if isinstance(r, dict)
                and any(str(k).lower() == "id" and cell_text(v) == number for k, v in r.items())
            ]
    return []


def _row_focus(
    keep: tuple[str, ...],
    labels: list[str],
    latest: list[str],
    row: list[str],
    texts: Sequence[str],
    asked: str,
) -> Focus:
    """The focus on a row the question names by a number: the row's name when it has
    one the question does not use ("chair" for "Which product costs 85?"), else its
    other numbers, neither the question's nor identifiers ("50" for "the total of
    order 5", not the customer id 2)."""
    # Only the row's own numbers and the question's: another row's number stated
    # first ("The total of order 5 is 10.0") would pass as a number of the result.
    asked_numbers = {canonical_number(n) for n in numbers_in(asked)}
    ids = _identifiers(texts, asked) - asked_numbers
    # Nor its identifiers: "The total of order 5 is 2,50.0" wrote its customer id.
    own_numbers = {*(v for v in row if v not in ids), *asked_numbers}
    keep = tuple(n for n in keep if canonical_number(n) in own_numbers) or keep
    own = [w for w in labels if w.lower() in row]
    if own:
        return Focus(keep, tuple(own), (), True)
    numbers = [
        n
        for n in latest
        if canonical_number(n) in row
        and canonical_number(n) not in asked_numbers
        and canonical_number(n) not in ids
    ]
    return Focus(keep, (), tuple(numbers or latest), False)


# A capitalized word after a sentence's first word: a name ("Which city does Dana ...").
_NAME = re.compile(r"(?<=[^\s.!?]) +([A-Z][a-z]+)")


def subject_name(named: list[list[str]], question: str) -> str:
    """The name (capitalized mid-sentence in ``question``) of the one row the question
    names, or ""."""
    if len(named) != 1:
        return ""
    names = [m.group(1) for m in _NAME.finditer(question) if m.group(1).lower() in named[0]]
    return names[0] if len(names) == 1 else ""


def named_rows(rows: list[list[str]], question: str) -> list[list[str]]:
    """The rows (see :func:`row_values`) the question names by a text value, when it
    names some but not all of them; else none. A name written capitalized inside a
    sentence names its row however short ("Which city is Bo from?")."""
    asked = set(WORD.findall(question.lower()))
    names = {m.group(1).lower() for m in _NAME.finditer(question)}
    named = [
        row
        for row in rows
        if any(mentions(asked, v) or v in names for v in row if not is_number(v))
    ]
    return named if len(named) < len(rows) else []


def other_rows(rows: list[list[str]], named: list[list[str]], question: str) -> tuple[str, ...]:
    """Words of the text values of the rows the question does not name (``named``, see
    :func:`named_rows`) that no named row, nor the question, uses: these belong to
    other rows only ("Which city does Dana live in?": ``Ana``, ``Berlin``)."""
    if not named:
        return ()
    asked = set(WORD.findall(question.lower()))
    kept = asked | {w for row in named for v in row for w in WORD.findall(v)}
    words = (w for row in rows if row not in named for v in row for w in WORD.findall(v))
    return unique(w for w in words if len(w) >= MIN_FIELD_WORD and w not in kept)


_HOW_MANY = re.compile(r"\bhow many\b", re.IGNORECASE)


_COUNTED = re.compile(r"\bhow many (\w+)", re.IGNORECASE)


def other_fields(fields: Sequence[tuple[str, str]], question: str) -> tuple[str, ...]:
    """The key words of the other numeric fields, when the question names exactly one
    field's value ("How humid is it in Bangkok?": ``temperature``, ``wind``, ``kph``):
    the answer named the temperature and stated it ("The temperature in Bangkok is 11
    degrees")."""
    asked = WORD.findall(question.lower())
    named = {v for w, v in fields if any(names_key(a, w) for a in asked if len(a) >= MIN_STEM)}
    if len(named) != 1:
        return ()
    return unique(w for w, v in fields if v not in named and len(w) >= MIN_FIELD_WORD)


def _counted(rows: list[list[str]], named: list[list[str]], question: str) -> str:
    """The number of rows a "how many" question names by a text value ("How many
    customers live in Berlin?": 2), else "". When the counted word is itself a named
    row's value, the question asks that row's number, not a count ("How many chairs
    are in stock?": the chair row's stock)."""
    counted = _COUNTED.search(question)
    if not named or counted is None:
        return ""
    noun = {counted.group(1).lower()}
    if any(mentions(noun, v) for row in named for v in row if not is_number(v)):
        return ""
    return str(len(named))


def _paired(pairs: list[tuple[str, str]], question: str, latest: list[str]) -> str:
    """The one number of the latest result that a text pairs with a word of a "how
    many" question ("How many tests failed?" and "0 tests failed"), else "". The
    answer otherwise quoted the first sentence: "Build 512 passed." (Only a count:
    "What is the host?" is not "8080\nhost = ...".)"""
    asked = set(WORD.findall(question.lower()))
    numbers = {n for w, n in pairs if w in asked and n in latest}
    return numbers.pop() if len(numbers) == 1 else ""


def _list_item(texts: Sequence[str], question: str) -> tuple[set[str], list[str]] | None:
    """The words and numbers of the list item the question names by its position
    (``core.grounding.asked_item``: "What is the second item in todo.txt?"), or
    ``None``."""
    found = asked_item(question, texts)
    if found is None:
        return None
    items, index = found
    return set(WORD.findall(items[index])), numbers_in(items[index])


def _identifiers(texts: Sequence[str], asked: str = "") -> set[str]:
    """The numbers of a table's identifier columns (``id``, ``customer_id``), but for a
    ``thing_id`` column the question ``asked`` names with both words ("What is the
    customer id of order 3?": its value is the answer)."""
    words = set(WORD.findall(asked.lower()))
    found: set[str] = set()
    for content in texts:
        try:
            data = json.loads(content)
        except ValueError:
            continue
        rows = table_rows(data).get("rows") if isinstance(data, dict) else data
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict):
                found |= {
                    cell_text(v)
                    for k, v in row.items()
                    if str(k).lower() == "id"
                    or (str(k).lower().endswith("_id") and not _named_id(str(k), words))
                }
    return found


def _named_id(key: str, words: set[str]) -> bool:
    """Whether ``words`` name the identifier column ``key`` (``customer_id``) by each of
    its words ("customer", "id")."""
    parts = key.lower().split("_")
    return "id" in words and all(any(names_key(w, p) for w in words) for p in parts)


def short(numbers: Iterable[str]) -> tuple[str, ...]:
    return unique(n for n in numbers if len(n) <= MAX_NUMBER_CHARS)[:MAX_NUMBERS]


KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


MIN_FIELD_WORD = 3


WORD = re.compile(r"[A-Za-z]+")


def names_key(word: str, key: str) -> bool:
    """Whether ``word`` names the key word ``key``: it starts with it ("windy" names
    ``wind``), or is a start of it of at least ``MIN_STEM`` letters ("humid" names
    ``humidity``)."""
    return word.startswith(key) or (len(word) >= MIN_STEM and key.startswith(word))


def mentions(words: set[str], name: str) -> bool:
    """Whether ``words`` name the text value ``name``: each of its words, as written or
    with a plural ending ("chairs" for "chair")."""
    parts = WORD.findall(name)
    if not parts or len(name) < MIN_FIELD_WORD or len(parts) > 3:
        return False
    return all(p in words or f"{p}s" in words or f"{p}es" in words for p in parts)
