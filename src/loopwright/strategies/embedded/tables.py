"""Hold a small model's SQL to the tables a tool describes.

A tool whose description lists its database's tables and columns (``customers(id,
name, city), orders(...)``, as ``tools.builtin.sql.description`` writes them) and whose
query parameter shows SELECT statements as examples gets, in the request the model
sees, a ``pattern`` on that parameter: the plain one-table SELECTs those tables allow
(:func:`loopwright.tools.builtin.sql.select_pattern`). A provider that decodes under a
grammar (the embedded model) then cannot write a FROM list that runs on ("FROM
products, orders, customers, products, stock as stock, ...") or a comparison SQL does
not have ("WHERE total ABOVE 40"), nor compare with a value the request does not
state ("WHERE price = 100.000" for "the price of the desk"). A column whose kind the
description gives (``price INTEGER``) is compared only with literals of that kind (not
"WHERE price = 'desk'"); the model itself is shown the columns without their kinds
(:func:`loopwright.tools.builtin.sql.without_kinds`). The tool's registered schema is
unchanged: the dispatcher still accepts any read-only SELECT, from any model.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from loopwright.core.grounding import STOPWORDS
from loopwright.core.protocols import ModelRequest
from loopwright.core.tools import ToolSpec
from loopwright.strategies.embedded.examples import example_parameter
from loopwright.tools.builtin.sql import described_tables, select_pattern, without_kinds


def _is_select(text: object) -> bool:
    if not isinstance(text, str):
        return False
    statement = text.strip()
    return statement.upper().startswith("SELECT ") and sqlite3.complete_statement(statement + ";")


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]\d)")
_WORD = re.compile(r"[^\W\d_][\w'-]*")
MIN_LITERAL_CHARS = 2
MAX_LITERALS = 40


def _names(word: str, name: str) -> bool:
    """Whether ``word`` is ``name`` as written or in another number ("product" for the
    table ``products``)."""
    return word == name or word.rstrip("s") == name.rstrip("s")


def request_literals(request: str, names: Iterable[str] = ()) -> list[str]:
    """The values a request states that a query may compare with: its numbers and its
    words (``Oslo``, ``desk``), as written, each once; not a function word, nor one of
    ``names`` in either number (the tables' and columns': "WHERE price > 'price'",
    "WHERE name = 'product'")."""
    taken = {n.lower() for n in names}
    words = [
        w
        for w in _WORD.findall(request)
        if w.lower() not in STOPWORDS and not any(_names(w.lower(), n) for n in taken)
    ]
    kept = [*_NUMBER.findall(request), *(w for w in words if len(w) >= MIN_LITERAL_CHARS)]
    return list(dict.fromkeys(kept))[:MAX_LITERALS]


def held_to_tables(spec: ToolSpec, request: str | None = None) -> ToolSpec:
    """``spec`` with its query parameter held to its tables (module docstring), its
    comparisons to the values ``request`` states when given; ``spec`` itself when it
    describes no tables or shows no SELECT examples."""
    name = example_parameter(spec, _is_select, unpatterned=True)
    tables = described_tables(spec.description) if name is not None else {}
    if name is None or not tables:
        return spec
    names = [*tables, *(c for kinds in tables.values() for c in kinds)]
    literals = request_literals(request, names) if request is not None else None
    props: dict[str, Any] = dict(spec.parameters["properties"])
    props[name] = {**props[name], "pattern": select_pattern(tables, literals)}
    return replace(
        spec,
        description=without_kinds(spec.description),
        parameters={**spec.parameters, "properties": props},
    )


def request_held_to_tables(request: ModelRequest) -> ModelRequest:
    """``request`` with each of its tools held to its tables (see :func:`held_to_tables`)."""
    asked = next((m.text for m in reversed(request.messages) if m.role == "user"), None)
    tools: Sequence[ToolSpec] = [held_to_tables(t, asked) for t in request.tools]
    if all(a is b for a, b in zip(tools, request.tools, strict=True)):
        return request
    return replace(request, tools=tuple(tools))


__all__ = ["held_to_tables", "request_held_to_tables"]
