"""The queries an embedded model may write for ``sql_query``: a regular expression of
plain one-table SELECTs over the tables the tool describes (:func:`select_pattern`),
which a grammar-constrained decoder holds the model to (``providers/local_prompt.py``),
narrowed by what the request asks (:class:`QueryShape`, read from its words by
``strategies.embedded.tables``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

_AGGREGATES = "(COUNT|SUM|MAX|MIN|AVG)"
_COMPARISONS = "(=|<|>|<=|>=|!=)"
# A literal in a WHERE clause: a number or a short quoted text without quotes or
# backslashes (a JSON string holds the query; no escapes to get wrong). The decimal
# point is a class, not an escape: llama.cpp's grammar parser refuses "\." in the
# literal the converter makes of it.
_LITERAL = "(-?[0-9]{1,12}([.][0-9]{1,6})?|'[^'\"\\\\]{1,40}')"
MAX_SELECTED_COLUMNS = 4
MAX_CONDITIONS = 2


@dataclass(frozen=True, slots=True)
class QueryShape:
    """What a request asks of a query, beyond the values it states (read from its words
    by the caller; see ``strategies.embedded.tables``).

    ``keys``: (noun, number) for a row the request names by its key ("order 3", "id
    2"): the number is compared with that row's key column, never a LIMIT (the model
    wrote "ORDER BY customer_id LIMIT 3" for "the total of order 3"). ``limits``: the
    numbers that are a count of rows ("the top 3", "the 3 cheapest"), the only ones a
    LIMIT takes. ``order``: ``"ASC"``/``"DESC"`` (or ``"ANY"``) for a superlative ("the
    cheapest", "the highest total"): the rows sorted by a numeric column and cut to the
    first (or its MIN/MAX); ``sort_columns`` are the columns the request names, the
    only ones sorted by when given. ``counted``: the tables a "how many" counts the rows
    of ("How many customers ..."): a COUNT(*) of that table; ``names``: words the
    request writes as names ("Berlin"), of which a count's WHERE compares one with a
    text column the question does not ask for (``asked_columns``: "Which city does Dana
    live in?" compares ``name``, not ``city``), nor a ``name`` column unless ``by_name``
    (the request says "named" or "called"). ``selects_named``: the request asks for a
    value of the row a name selects ("Who lives in Oslo?"): the query selects it by that
    name, as a count does. ``comparison``: the operator the
    request's words give a number ("fewer than 10": ``<``), else any. ``values``:
    (table, column, value) for each value the query parameter's description lists
    (:func:`~loopwright.tools.builtin.sql.described_values`) that the request writes: it selects the rows holding it
    in that column ("Who wrote Dune?": ``WHERE title = 'Dune'``), and it is compared
    with no other column ("WHERE city = 'Alice'"). ``wants_name``: the request asks
    who (``"who"``) or which row (``"which"``: "Which product ...?", "the most
    expensive item"), not selecting rows by a value it writes: the query selects the
    row's name column first (a person's ``name``; for "which", a ``title`` too)."""

    keys: tuple[tuple[str, str], ...] = ()
    limits: tuple[str, ...] = ()
    order: str = ""
    sort_columns: tuple[str, ...] = ()
    counted: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    asked_columns: tuple[str, ...] = ()
    comparison: str = ""
    by_name: bool = False
    selects_named: bool = False
    values: tuple[tuple[str, str, str], ...] = ()
    wants_name: str = ""


def select_pattern(
    tables: dict[str, dict[str, str]],
    literals: Sequence[str] | None = None,
    shape: QueryShape | None = None,
) -> str:
    """A regular expression (the subset llama.cpp turns into a grammar: see
    ``docs/providers.md``) of the plain one-table SELECTs on ``tables``: columns, ``*``
    or an aggregate of a column; a WHERE of up to :data:`MAX_CONDITIONS` comparisons of
    a column with a literal joined by AND; ORDER BY a column, ASC or DESC;
    LIMIT. A small model held to it writes a query that names real columns of the one
    table it reads, not "FROM products, orders, ..., stock as stock" or
    "WHERE total ABOVE 40". Optional leading space: prompts show string values after
    one. Empty without tables.

    ``literals``, when given, are the only values a comparison may take (numbers as
    written, text quoted): the ones the request states. Free to write any literal, the
    model compared with one it made up ("WHERE price = 100.000" for "the price of the
    desk"); with none, no WHERE clause. A column of a known kind takes literals of
    that kind only (not "WHERE price > 'desk'"). When they hold numbers, the query
    uses one. ``shape`` says how (:class:`QueryShape`): a row's key is compared with
    its key column, a count of rows is the LIMIT, other numbers are compared with a
    column; a superlative sorts and takes the first row; a "how many" of a table's rows
    is its COUNT(*)."""
    shape = shape or QueryShape()
    options = [o for t, kinds in tables.items() for o in _table_options(t, kinds, literals, shape)]
    if not options:
        return ""
    return "^ ?(" + "|".join(f"({o})" for o in options) + ")$"


def _table_options(
    table: str, kinds: dict[str, str], literals: Sequence[str] | None, shape: QueryShape
) -> list[str]:
    """The alternatives of :func:`select_pattern` that read ``table``."""
    col = "(" + "|".join(re.escape(c) for c in kinds) + ")"
    picked = _picked(kinds, shape, _AGGREGATES)
    taken = {n for _, n in shape.keys} | set(shape.limits)
    # a value some column lists is compared with that column only (_valued)
    listed = {v.lower() for _, _, v in shape.values}
    values = (
        None
        if literals is None
        else [v for v in literals if v not in taken and v.lower() not in listed]
    )
    valued = _valued(table, shape)
    condition = "|".join(c for c in (_condition(kinds, values), valued) if c)
    condition = f"({condition})" if condition else ""
    where = (
        f"( WHERE {condition}( AND {condition}){{0,{MAX_CONDITIONS - 1}}})?" if condition else ""
    )
    # ORDER BY a column: an aggregate there, without GROUP BY, is an SQL error
    # ("ORDER BY COUNT(*) DESC": misuse of aggregate)
    sort = f"( ORDER BY {col}( ASC| DESC)?)?"
    name = re.escape(table)
    head = f"SELECT {picked} FROM {name}"
    if table in shape.counted:
        head = f"SELECT COUNT\\(\\*\\) FROM {name}"
    numbers = [v for v in values or () if _NUMBER_TEXT.fullmatch(v)]
    options = [
        f"{head} WHERE {k} = {_literal(n)}{sort}"
        for noun, n in shape.keys
        for k in _key_columns(table, kinds, noun)
    ]
    ranked = _ranked(kinds, shape)
    for n in shape.limits:
        options.append(f"{head}{ranked or sort} LIMIT {_literal(n)}")
    also = f"( AND {valued})?" if valued else ""
    if numbers:
        # The request's numbers are what it asks about ("a total below 30", "costs
        # 85"): the query compares one with a column (one the request names, when it
        # names some), by the operator its words give. The model otherwise counted every
        # row ("SELECT COUNT(*) FROM orders" -> 7) or compared another column.
        given = "(" + "|".join(_literal(n) for n in numbers) + ")"
        compared = [c for c, kind in kinds.items() if _literals(kind, numbers)]
        # a key compared with a quantity is no question ("orders over 50" is not
        # "customer_id > 50"), unless the request names it
        asked = [c for c in compared if c in shape.sort_columns]
        compared = asked or [c for c in compared if not _is_key(c)] or compared
        if compared:
            columns = "|".join(re.escape(c) for c in compared)
            first = f"({columns}) {re.escape(shape.comparison) or _COMPARISONS} {given}"
            # which row holds the number: read whole, as when the request does not
            # ask which (its name and the number alone were echoed: "The product is
            # priced at 240, and it is in stock at 240.", or refused as an answer)
            whole = _picked(kinds, replace(shape, wants_name=""), _AGGREGATES)
            picks = head if table in shape.counted else f"SELECT {whole} FROM {name}"
            options.append(f"{picks} WHERE {first}{also}{sort}( LIMIT [0-9]{{1,4}})?")
    if options:
        return options  # a key, a count of rows or a value given: the query uses it
    if valued:
        return _valued_options(table, kinds, shape, valued, ranked)
    named = _condition(_compared(kinds, shape), [v for v in values or () if v in shape.names])
    if named and (table in shape.counted or shape.selects_named):
        # "How many customers live in Berlin?": the rows the name selects are counted,
        # not every row; "Who lives in Oslo?": the row it selects is read.
        options.append(f"{head} WHERE {named}")
    elif ranked and table not in shape.counted:
        # "the cheapest product": the first row sorted, or the extreme value itself
        extreme = f"{_extreme(shape.order)}\\({_numeric(kinds, shape)}\\)"
        options.append(f"{head}{ranked} LIMIT 1")
        if not (shape.wants_name and _names_of(kinds, shape)):
            # the extreme value itself, unless the request asks which row holds it
            options.append(f"SELECT {extreme} FROM {re.escape(table)}")
    else:
        limit = "" if table in shape.counted else "( LIMIT [0-9]{1,4})?"
        options.append(f"{head}{where}{sort}{limit}")
    return options


def _picked(kinds: dict[str, str], shape: QueryShape, aggregates: str) -> str:
    """What a query selects: ``*`` or up to :data:`MAX_SELECTED_COLUMNS` columns or
    ``aggregates`` of them; a row's name column first when the request asks which row
    (``shape.wants_name``: "Which item has the lowest price?" answered "The item has the
    lowest price, 40 dollars" from every column), then the columns the request names."""
    col = "(" + "|".join(re.escape(c) for c in kinds) + ")"
    item = f"({aggregates}\\(({col}|\\*)\\)|{col})"
    more = f"(, {item}){{0,{MAX_SELECTED_COLUMNS - 1}}}"
    names = _names_of(kinds, shape)
    if shape.wants_name and names:
        # the name, then the columns the request names: the answer reads which row
        # and why ("Which product has 12 in stock?": chair, 12)
        named = "".join(f", {re.escape(c)}" for c in kinds if c in shape.sort_columns)
        return "(" + "|".join(re.escape(c) for c in names) + f"){named}"
    return f"(\\*|{item}{more})"


def _names_of(kinds: dict[str, str], shape: QueryShape) -> list[str]:
    """The columns of ``kinds`` holding a row's name, as ``shape.wants_name`` asks."""
    return [c for c in kinds if _is_name(c, kinds[c], titles=shape.wants_name == "which")]


def _is_name(column: str, kind: str, *, titles: bool) -> bool:
    """Whether ``column`` holds a row's name: text named ``name`` or ``..._name``, or
    with ``titles``, ``title`` ("Who wrote Dune?" asks for no title)."""
    low = column.lower()
    named = low == "name" or low.endswith("_name") or (titles and low == "title")
    return kind in ("TEXT", "") and named


def _valued(table: str, shape: QueryShape) -> str:
    """The comparisons of ``table``'s columns with the listed values the request
    writes (``shape.values``), as one alternative; "" for none."""
    found = [
        f"{re.escape(c)} = {_literal(v)}" for t, c, v in shape.values if t == table and v.strip()
    ]
    return "(" + "|".join(f"({c})" for c in dict.fromkeys(found)) + ")" if found else ""


def _valued_options(
    table: str, kinds: dict[str, str], shape: QueryShape, valued: str, ranked: str
) -> list[str]:
    """The queries of ``table`` for a request that writes values its columns hold
    (``valued``, :func:`_valued`): the rows holding them ("How much does Marco
    earn?", "Who wrote Dune?"), counted when the request counts the table's rows, the
    first one sorted for a superlative ("Who earns the most in Sales?"). Read whole
    or by columns, never by ``COUNT`` unless counted: "How many pages does Ulysses
    have?" is a value of its row, not ``SELECT COUNT(*) ... WHERE title = 'Ulysses'``."""
    # the rows a value selects are read whole: the row is what the answer names
    picked = _picked(kinds, replace(shape, wants_name=""), "(SUM|MAX|MIN|AVG)")
    name = re.escape(table)
    head = f"SELECT {picked} FROM {name}"
    if table in shape.counted:
        head = f"SELECT COUNT\\(\\*\\) FROM {name}"
    # one condition per value written: the model otherwise repeated the one it had
    # ("WHERE name = 'Alice' AND name = 'Alice'")
    given = len({(c, v) for t, c, v in shape.values if t == table})
    more = min(given, MAX_CONDITIONS) - 1
    where = f" WHERE {valued}" + (f"( AND {valued}){{0,{more}}}" if more else "")
    if ranked and table not in shape.counted:
        extreme = f"{_extreme(shape.order)}\\({_numeric(kinds, shape)}\\)"
        return [f"{head}{where}{ranked} LIMIT 1", f"SELECT {extreme} FROM {name}{where}"]
    return [f"{head}{where}"]


def _condition(kinds: dict[str, str], literals: Sequence[str] | None) -> str:
    """One comparison of a column with a literal it may take, as one alternative."""
    conditions = [
        f"{re.escape(c)} {_COMPARISONS} {literal}"
        for c, kind in kinds.items()
        if (literal := _literals(kind, literals))
    ]
    return "(" + "|".join(f"({c})" for c in conditions) + ")" if conditions else ""


def _compared(kinds: dict[str, str], shape: QueryShape) -> dict[str, str]:
    """The columns a name the request writes is compared with in a count: not one the
    request asks for, and not a row's own name unless the request says "named" or
    "called" (``shape.by_name``): "How many customers live in Berlin?" counts by city.
    All of them when that leaves none."""
    kept = {
        c: k
        for c, k in kinds.items()
        if c not in shape.asked_columns and (shape.by_name or "name" not in c.lower())
    }
    return kept or kinds


def _key_columns(table: str, kinds: dict[str, str], noun: str) -> list[str]:
    """The columns of ``table`` that hold the key of a row ``noun`` names: its ``id``
    when ``noun`` names the table itself (in either number) or is "id", else a
    ``<noun>_id`` column ("customer 2" in the orders table is ``customer_id``)."""
    own = noun in ("id", table.lower()) or noun.rstrip("s") == table.lower().rstrip("s")
    wanted = {"id"} if own else {f"{noun.rstrip('s')}_id", f"{noun.rstrip('s')}id"}
    return [re.escape(c) for c in kinds if c.lower() in wanted]


def _numeric(kinds: dict[str, str], shape: QueryShape) -> str:
    """The columns a superlative sorts by: the numeric ones the request names, else every
    numeric one but keys (an id is no quantity), as one alternative; "" for none."""
    numeric = [c for c, kind in kinds.items() if any(k in kind.upper() for k in _NUMERIC)]
    named = [c for c in numeric if c in shape.sort_columns]
    quantities = [c for c in numeric if is_quantity(c, kinds[c])]
    chosen = named or quantities
    return "(" + "|".join(re.escape(c) for c in chosen) + ")" if chosen else ""


def _is_key(column: str) -> bool:
    return column.lower() == "id" or column.lower().endswith("_id")


def is_quantity(column: str, kind: str) -> bool:
    """Whether ``column`` (of ``kind``, as :func:`~loopwright.tools.builtin.sql.described_tables` reads it) holds a
    quantity a superlative sorts by: numeric and not a key (an id is no quantity)."""
    return any(k in kind.upper() for k in _NUMERIC) and not _is_key(column)


def _ranked(kinds: dict[str, str], shape: QueryShape) -> str:
    """The ORDER BY of a superlative (:class:`QueryShape`), or "" for none."""
    columns = _numeric(kinds, shape) if shape.order else ""
    if not columns:
        return ""
    direction = {"ASC": "( ASC)?", "DESC": " DESC"}.get(shape.order, "( ASC| DESC)?")
    return f" ORDER BY {columns}{direction}"


def _extreme(order: str) -> str:
    return {"ASC": "MIN", "DESC": "MAX"}.get(order, "(MIN|MAX)")


_NUMERIC = ("INT", "REAL", "FLOA", "DOUB", "NUM", "DEC")
_NUMBER_TEXT = re.compile(r"-?\d+(?:\.\d+)?")


def _literals(kind: str, literals: Sequence[str] | None) -> str:
    """The literals a column of ``kind`` may be compared with (see
    :func:`select_pattern`), as one alternative, or "" for none."""
    numeric = any(k in kind.upper() for k in _NUMERIC)
    text = bool(kind) and not numeric
    if literals is None:
        return _LITERAL
    kept = [
        v
        for v in literals
        if not (numeric and not _NUMBER_TEXT.fullmatch(v))
        and not (text and _NUMBER_TEXT.fullmatch(v))
    ]
    return "(" + "|".join(_literal(v) for v in kept) + ")" if kept else ""


def _literal(value: str) -> str:
    """``value`` as a regular expression of an SQL literal: a number as is, text quoted
    (without quotes or backslashes of its own: :data:`_LITERAL`)."""
    text = re.sub(r"['\"\\]", "", value)
    if re.fullmatch(r"-?\d+(?:\.\d+)?", text):
        return text.replace(".", "[.]")
    return "'" + "".join(f"[{c}]" if not c.isalnum() else c for c in text) + "'"
