"""What the tools' schemas say about each string parameter, for the argument guard.

Read once per call turn by ``local_args.argument_guard``: which parameters are
identifiers (and the request's codes they may take), which are lists of free strings,
held to a shape, joined names ("Paris, France"), which names a value may not echo, and
the words a string value may use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from loopwright.core.tools import ToolSpec
from loopwright.providers.local_decide import codes_in, value_kind
from loopwright.providers.local_ground import JOINED_EXAMPLE

_WORD = re.compile(r"[a-z0-9_]+", re.IGNORECASE)

# A description that opens by saying the value is an identifier.
_ID_DESCRIPTION = re.compile(r"^\s*(?:the\s+|an?\s+)?(?:unique\s+)?(?:identifier|id|uuid)\b", re.I)


def coded_parameters(
    tools: Sequence[ToolSpec], source: str
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """For each top-level free string parameter that is an identifier (its name's head
    noun, ``local_decide.value_kind``, or its description's first words), the codes
    ``source`` gives (``local_decide.codes_in``, lower case) that are not words of the
    tool's own text ("UUID" in "project with UUID SUPERFANCY" names the kind, not
    the value). Empty when the request gives none."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for spec in tools:
        own = set(
            _WORD.findall(f"{spec.name} {spec.description} {json.dumps(spec.parameters)}".lower())
        )
        codes = tuple(c.lower() for c in codes_in(source) if c.lower() not in own)
        for key, sub in (spec.parameters.get("properties") or {}).items():
            if not isinstance(sub, Mapping) or sub.get("type") != "string" or "enum" in sub:
                continue
            described = _ID_DESCRIPTION.search(str(sub.get("description") or ""))
            if codes and (value_kind(key) == "id" or described):
                found.append((key, _named_codes(key, codes, source) or codes))
    return tuple(found)


# Words between a parameter's name and its code in the request ("project with UUID
# SUPERFANCY", "component AB1010CD").
CODE_WINDOW = 4


def _named_codes(key: str, codes: tuple[str, ...], source: str) -> tuple[str, ...]:
    """The codes the request writes within :data:`CODE_WINDOW` words after a word of
    the parameter's name: with three identifiers to fill, each takes its own."""
    names = {w for w in name_parts(key) if len(w) > 2}
    words = [(m.group(0).lower(), m.group(0)) for m in re.finditer(r"\S+", source)]
    near: list[str] = []
    for i, (word, _) in enumerate(words):
        if word.strip(".,;:!?'\"") not in names:
            continue
        for _, raw in words[i + 1 : i + 1 + CODE_WINDOW]:
            near += [c for c in codes if c in raw.lower() and c not in near]
    return tuple(c for c in codes if c in near)


# Words of a parameter's name that say its value is prose (a sentence keeps its mark);
# not "query" or "expression": a formula or a search ends without one.
TEXT_WORDS = {"text", "message", "statement", "sentence", "content", "question", "prompt"}


def name_parts(key: str) -> list[str]:
    return re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", key).lower())


FROM_CUE = "(?:from|desde)"
TO_CUE = "(?:to|into|hacia)"
_FROM_WORDS = {"from", "source", "origin", "start", "departure", "base", "src", "begin"}
_TO_WORDS = {"to", "target", "destination", "end", "arrival", "dest", "into"}


def direction(key: str) -> str | None:
    """``"from"`` or ``"to"`` when a parameter's name says which end of a move it is
    (``from_currency``, ``target_language``), else ``None``."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", key).lower()
    words = set(re.findall(r"[a-z]+", spaced))
    if words & _FROM_WORDS and not words & _TO_WORDS:
        return "from"
    if words & _TO_WORDS and not words & _FROM_WORDS:
        return "to"
    return None


def echoed_names(tools: Sequence[ToolSpec]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """For each top-level string parameter, the names its value may not be (lower
    case, ``_`` as a space): its own name, its tool's name and the enum values of the
    tool's other parameters (see :meth:`ArgumentGuard._echoes`)."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for spec in tools:
        props = spec.parameters.get("properties") or {}
        values = {
            str(v).lower().replace("_", " ")
            for sub in props.values()
            if isinstance(sub, Mapping) and isinstance(sub.get("enum"), list)
            for v in sub["enum"]
        }
        for key, sub in props.items():
            if not isinstance(sub, Mapping) or sub.get("type") != "string" or "enum" in sub:
                continue
            spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", key)
            names = {key.lower(), spaced.lower().replace("_", " "), spec.name.lower()}
            names |= {spec.name.lower().replace("_", " "), *values}
            found.append((key, tuple(sorted(names))))
    return tuple(found)


def listed_parameters(tools: Sequence[ToolSpec]) -> tuple[str, ...]:
    """The names of the parameters (at any depth) that are lists of free strings:
    items with no ``enum``, ``const``, ``examples`` or shape of their own."""
    found: set[str] = set()

    def visit(props: object) -> None:
        if not isinstance(props, Mapping):
            return
        for key, sub in props.items():
            if not isinstance(sub, Mapping):
                continue
            items = sub.get("items")
            if (
                sub.get("type") == "array"
                and isinstance(items, Mapping)
                and items.get("type") == "string"
                and not any(k in items for k in ("enum", "const", "examples", "pattern"))
            ):
                found.add(key)
            visit(sub.get("properties"))
            if isinstance(items, Mapping):
                visit(items.get("properties"))

    for spec in tools:
        visit(spec.parameters.get("properties"))
    return tuple(sorted(found))


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


def joined_parameters(tools: Sequence[ToolSpec]) -> tuple[str, ...]:
    """The names of the string parameters (top level) whose description writes a name
    joined to its region with a comma (see ``local_ground.JOINED_EXAMPLE``)."""
    found = []
    for spec in tools:
        for key, sub in (spec.parameters.get("properties") or {}).items():
            if isinstance(sub, Mapping) and JOINED_EXAMPLE.search(str(sub.get("description", ""))):
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


__all__ = [
    "CODE_WINDOW",
    "FROM_CUE",
    "TEXT_WORDS",
    "TO_CUE",
    "coded_parameters",
    "direction",
    "echoed_names",
    "joined_parameters",
    "known_words",
    "listed_parameters",
    "name_parts",
    "shaped_parameters",
]
