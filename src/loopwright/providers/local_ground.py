"""What the embedded model's tool arguments are grounded in: the schema of each
parameter narrowed, before it becomes the call grammar, to what the request (or a tool
result) visibly gives.

A small model invents what a parameter's schema leaves open. So a parameter whose value
the request gives is held to it: an enum value the request names, a number the request
or a result contains (the one next to the parameter's name when there is one), a list
no longer than the request's, a date written in the parameter's format, a flag the
request names; an optional parameter is offered only when the request gives it, and
becomes required when the request gives a definite value for it. Generic: it reads
only the schema and the text. The decode-time guards are in ``local_args``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.core.messages import Message
from loopwright.core.tools import ToolSpec
from loopwright.core.untrusted import unwrap_untrusted
from loopwright.providers.local_dates import dates_in, grounded_date, months_in, takes_date
from loopwright.providers.local_names import (
    JOINED_EXAMPLE,
    MIN_PREFIX_CHARS,
    WORDS,
    changed_to,
    coded_value,
    coordinate,
    described_examples,
    mentions,
    name_words,
    named_example,
    named_flag,
    named_number,
    named_span,
    named_values,
    names_an_example,
    negated,
    same_word,
)
from loopwright.providers.local_numbers import (
    fitting,
    longest_number_list,
    longest_word_list,
    numbers_at,
    numbers_in,
    percents_in,
    says_a_number,
    shares,
    takes_fraction,
)
from loopwright.providers.local_units import unit_numbers


def request_context(messages: Sequence[Message]) -> str:
    """The last user message and the tool results after it."""
    texts: list[str] = []
    for message in reversed(messages):
        for part in message.tool_results_parts:
            texts.append(unwrap_untrusted(part.content) or part.content)
        if message.role == "user":
            texts.append(message.text)
            break
    return "\n".join(reversed(texts))


@dataclass(frozen=True, slots=True)
class Grounding:
    """What a call's arguments are grounded in: the user's latest request, and the
    numbers of the tool results since it."""

    request: str
    result_numbers: tuple[float, ...] = ()

    @classmethod
    def of(cls, messages: Sequence[Message]) -> Grounding:
        request = next((m.text for m in reversed(messages) if m.role == "user"), "")
        results = request_context(messages)[len(request) :]  # the request comes first
        return cls(request, numbers_in(results))

    @property
    def numbers(self) -> tuple[float, ...]:
        """The request's numbers, then the results' (in order, repeats kept)."""
        return numbers_in(self.request) + self.result_numbers


def grounded_required(
    schema: Mapping[str, Any],
    ground: Grounding,
    name: str = "",
    skip: Sequence[str] = (),
    unit: float | None = None,
) -> dict[str, Any]:
    """A required parameter's schema held to what the request gives, else unchanged:
    an enum to the values the request names (:func:`named_values`); a code to the
    one the request asks for by meaning (:func:`coded_value`); a number to the
    numbers of the request and the results (the model otherwise writes a look-alike:
    ``"time": 190`` for "I can wait up to 600 seconds"), or to the one number written
    next to the parameter's ``name`` (:func:`named_number`), else to ``unit``, the number
    written with a unit only this parameter names (``local_units``); a flag the request names
    to on unless negated (:func:`named_flag`); a list of numbers to those numbers, no
    longer than the request's longest list (:func:`longest_number_list`); a list of
    strings no longer than the request's longest list in words
    (:func:`longest_word_list`); a date in a format the description names to the
    request's dates in that format (``local_dates.grounded_date``)."""
    kind = schema.get("type")
    if isinstance(schema.get("enum"), list):
        # codes listed as an enum ([1, 2]) are named by what the description says
        # they stand for ("'2' represents ironing service")
        named = named_values(schema["enum"], ground.request) or [
            c for c in coded_value(schema, ground.request) if c in schema["enum"]
        ]
        named = changed_to(named, name, ground.request)
        return {**schema, "enum": named} if named else dict(schema)
    if (dated := grounded_date(schema, ground.request)) is not None:
        return dated
    if coded := coded_value(schema, ground.request):
        return {"type": kind, "enum": coded}
    if (span := named_span(name, schema, ground.request)) is not None:
        return {"type": kind, "enum": [span]}
    if kind == "boolean" and (flag := named_flag(name, ground.request)) is not None:
        return {"type": "boolean", "enum": [flag]}
    if (example := named_example(schema, ground.request)) is not None:
        return example
    if kind in ("number", "integer"):
        values = fitting(kind, shares(schema, ground.request, ground.numbers))
        n = coordinate(name, ground.request)
        n = named_number(name, ground.request, skip) if n is None else n
        n = unit if n is None else n
        near = fitting(kind, shares(schema, ground.request, [n] if n is not None else []))
        return {"type": kind, "enum": near or values} if values else dict(schema)
    return _grounded_list(schema, ground)


def _grounded_list(schema: Mapping[str, Any], ground: Grounding) -> dict[str, Any]:
    items = schema.get("items")
    if schema.get("type") != "array" or not isinstance(items, Mapping):
        return dict(schema)
    if items.get("type") in ("number", "integer"):
        values = fitting(items["type"], shares(schema, ground.request, ground.numbers))
        longest = longest_number_list(ground.request)
        if values and longest:
            return {**schema, "items": {"enum": values}, "maxItems": longest}
        return dict(schema)
    if isinstance(items.get("enum"), list):
        named = named_values(items["enum"], ground.request)
        if named:
            return {**schema, "items": {**items, "enum": named}, "maxItems": len(named)}
        return dict(schema)
    if items.get("type") == "string":
        return {**schema, "maxItems": longest_word_list(ground.request)}
    return dict(schema)


def grounded_optional(
    schema: Mapping[str, Any], name: str, request: str, tool_words: Iterable[str] = ()
) -> dict[str, Any] | None:
    """An optional parameter's schema narrowed to what ``request`` gives, or ``None``
    to leave the parameter out.

    A small model fills every optional parameter it is offered, with invented values
    ("abv_min": 10.0, "device_id": "100000000000"). So an optional parameter is offered
    only when the request gives it: an enum (or a list of enum items) keeps the values
    the request names; a number takes one of the request's numbers; a date in a known
    format one of the request's dates, when the name's other words (``return`` of
    ``return_time``) are the request's too; a string whose
    description gives examples, when the request names one ("Type of the lawsuit,
    e.g., 'IPR', 'Patent'" for "patent lawsuits"); anything else is offered when the
    request uses a word of the parameter's name ("aligned", "unit") that the tool's
    own name and required parameters (``tool_words``) do not use: "movies" in "list
    movies in Mumbai" is about ``get_movies``, not its ``movie_date``; "title" is the
    required ``Title``'s word, not ``MetaTitle``'s."""
    words = set(WORDS.findall(request.lower()))
    if isinstance(schema.get("enum"), list):
        named = changed_to(named_values(schema["enum"], request), name, request)
        return {**schema, "enum": named} if named else None
    kind = schema.get("type")
    if coded := coded_value(schema, request):
        return {"type": kind, "enum": coded}
    if (span := named_span(name, schema, request)) is not None:
        return {"type": kind, "enum": [span]}
    if kind in ("number", "integer"):
        values = fitting(kind, shares(schema, request, numbers_in(request)))
        return {"enum": values} if values else None
    own = {w[: MIN_PREFIX_CHARS + 2] for w in tool_words}
    telling = [w for w in name_words(name) if w[: MIN_PREFIX_CHARS + 2] not in own]
    mentioned = any(any(same_word(x, w) for x in words) for w in telling)
    calendar = _named_calendar(name, schema, request)
    if takes_date(schema) or calendar is not None:
        # a date the request gives is this parameter's unless the name says which
        # date it is and the request does not use that word ("return_time")
        which = [w for w in telling if w not in _DATE_WORDS]
        asked = not which or any(same_word(x, w) for x in words for w in which)
        if not asked:
            return None
        return calendar if calendar is not None else grounded_date(schema, request)
    items = schema.get("items")
    if kind == "array" and isinstance(items, Mapping) and isinstance(items.get("enum"), list):
        return (
            _grounded_list(schema, Grounding(request))
            if named_values(items["enum"], request)
            else None
        )
    if names_an_example(schema, request):
        return named_example(schema, request) or _grounded_list(schema, Grounding(request))
    if not mentioned:
        return None
    if kind == "boolean":
        # The request names the option, so it asks for it, unless it says it does not
        # ("including human impact" gave ``false``; "without details" is false).
        return {"type": "boolean", "enum": [not negated(telling, request)]}
    return _grounded_list(schema, Grounding(request))


def _named_calendar(name: str, schema: Mapping[str, Any], request: str) -> dict[str, Any] | None:
    """An optional string whose name ends in ``date`` or ``month`` and whose
    description names no format, held to the request's dates written as ISO dates
    (``YYYY-MM-DD``, the form APIs read when they name none) or to the months it
    names ("in December" for ``month``, written in full with a capital); ``None`` when
    the name says neither or the request gives none. Left out, the call lost a date
    the request gives ("the rate at January 1, 2022")."""
    words = name_words(name)
    if schema.get("type") != "string" or not words or takes_date(schema) or "enum" in schema:
        return None
    if words[-1] == "date":
        days = [f"{y:04d}-{m:02d}-{d:02d}" for y, m, d in dates_in(request)]
        return {"type": "string", "enum": days} if days else None
    if words[-1] == "month":
        named = [m.capitalize() for m in months_in(request)]
        return {"type": "string", "enum": named} if named else None
    return None


# Words of a date parameter's name that say only that it is a date.
_DATE_WORDS = frozenset({"date", "time", "datetime", "day", "month", "when", "new"})


def gives_required(spec: ToolSpec, request: str) -> bool:
    """Whether ``request`` gives what ``spec``'s required parameters need that can be
    checked from text: a number for each numeric one, a named value for each enum.
    "I have to make a payment" talks about ``make_payment`` but gives no amount: a
    call would invent one. Strings are not checked (their values are free text)."""
    props = spec.parameters.get("properties") or {}
    for key in spec.parameters.get("required") or ():
        schema = props.get(key)
        if not isinstance(schema, Mapping):
            continue
        if isinstance(schema.get("enum"), list):
            # codes listed as an enum are named by meaning, as grounded_required reads them
            coded = [c for c in coded_value(schema, request) if c in schema["enum"]]
            if not named_values(schema["enum"], request) and not coded:
                return False
        elif (
            schema.get("type") in ("number", "integer")
            and not numbers_in(request)
            and not coded_value(schema, request)
        ):
            return False
    return True


def grounded_arguments(spec: ToolSpec, ground: Grounding | None) -> Mapping[str, Any]:
    """``spec``'s parameters with each parameter grounded in ``ground``
    (:func:`grounded_required`, :func:`grounded_optional`), nested objects' properties
    too (:func:`_grounded_object`); unchanged when ``ground`` is ``None``. An optional
    parameter the request gives a definite value for (a named enum value or flag, a
    date, a number next to the parameter's name) becomes required: offered but
    optional, the model closed the object without it (``"rating"`` for "at least a 4.5
    star rating")."""
    schema = spec.parameters
    if ground is None or not isinstance(schema.get("properties"), Mapping):
        return schema
    return _grounded_object(schema, ground, name_words(spec.name), nested=False)


MAX_GROUNDED_DEPTH = 3


def _is_object(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object" and isinstance(schema.get("properties"), Mapping)


def _grounded_object(
    schema: Mapping[str, Any],
    ground: Grounding,
    own: list[str],
    *,
    nested: bool,
    depth: int = 0,
) -> dict[str, Any]:
    """An object schema's properties grounded one by one (see
    :func:`grounded_arguments`); ``own`` are the words of the tool's (or the nested
    object's) name. A nested object is grounded the same way (a settings ``body``'s
    ``"airConJobMode"`` enum, a ``profile_data``'s ``"age"``): the model otherwise
    filled every property of it with invented values (``"bio": "I need to update
    ..."``, ``"targetTemperature": 100``). A nested object that marks nothing
    required takes the properties the request gives as required (its author did not
    say which are optional), and an optional nested object is kept, and required,
    when the request gives one of its properties a definite value."""
    props = schema["properties"]
    required = [k for k in schema.get("required") or () if k in props]
    taken = own + [w for k in required for w in name_words(k)]
    # Words several parameters' names share ("value" of initial_value and final_value)
    # and the tool's own words ("temperature" of calculate_final_temperature) do not
    # tell which parameter a number next to them belongs to.
    counts = Counter(w for k in props for w in set(name_words(k)))
    shared = own + [w for w, c in counts.items() if c > 1]
    spare = _spare_numbers(props, set(required), ground.request)
    units = unit_numbers(props, ground.request, numbers_at(ground.request))
    kept: dict[str, Any] = {}
    given: list[str] = []
    for key, sub in props.items():
        if not isinstance(sub, Mapping):
            kept[key] = sub
        elif _is_object(sub) and depth < MAX_GROUNDED_DEPTH:
            inner = _grounded_object(sub, ground, name_words(key), nested=True, depth=depth + 1)
            if key in required or inner["required"]:
                kept[key] = inner
                given += [] if key in required else [key]
            elif grounded_optional(sub, key, ground.request, taken) is not None:
                kept[key] = inner  # named ("with these params"), nothing definite in it
        elif key in required:
            kept[key] = grounded_required(sub, ground, key, shared, units.get(key))
        elif (narrowed := grounded_optional(sub, key, ground.request, taken)) is not None:
            numeric = sub.get("type") in ("number", "integer")
            named = mentions(key, ground.request, taken) or key in units
            if numeric and "enum" in narrowed and not spare and not named:
                continue
            near = named_number(key, ground.request, shared) if numeric and named else None
            near = units.get(key) if near is None and numeric else near
            if near is not None:
                near_share = shares(sub, ground.request, [near])
                narrowed = {"enum": fitting(sub.get("type"), near_share) or narrowed["enum"]}
                given.append(key)
            elif (
                (_definite(narrowed) and not numeric)
                or names_an_example(sub, ground.request)
                or (nested and not required)
            ):
                given.append(key)
            kept[key] = narrowed
    return {**schema, "properties": kept, "required": required + given}


def _definite(schema: Mapping[str, Any]) -> bool:
    """Whether a narrowed schema holds a value the request gives: an enum (named
    values, a flag, a date) or a list of named enum items."""
    items = schema.get("items")
    return "enum" in schema or (isinstance(items, Mapping) and "enum" in items)


def _spare_numbers(props: Mapping[str, Any], required: set[str], request: str) -> bool:
    """Whether the request has more numbers than the required parameters take: an
    optional number otherwise takes one of theirs ("the 2021 season" gave
    ``"top": 2021``) unless the request names it ("the top 3"). Numbers inside quotes
    belong to a quoted name ("'JBL Flip 4'"), not to a parameter."""
    takers = [props[k] for k in required if isinstance(props.get(k), Mapping)]
    if any(t.get("type") == "array" for t in takers):
        return False  # a list of numbers takes them all
    wanted = sum(t.get("type") in ("number", "integer") for t in takers)
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", " ", request)
    return len(set(numbers_in(unquoted))) > wanted


__all__ = [
    "JOINED_EXAMPLE",
    "Grounding",
    "coded_value",
    "described_examples",
    "gives_required",
    "grounded_arguments",
    "grounded_optional",
    "grounded_required",
    "longest_number_list",
    "longest_word_list",
    "named_example",
    "named_flag",
    "named_number",
    "named_values",
    "numbers_in",
    "says_a_number",
    "percents_in",
    "request_context",
    "takes_fraction",
]
