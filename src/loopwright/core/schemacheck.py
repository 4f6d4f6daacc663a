"""A compiled pure-Python JSON Schema check that answers "certainly valid".

``jsonschema`` is the single source of truth for what a schema means, but running it
costs tens of microseconds per keyword (every subschema is entered through
``evolve``/``descend``), which dominates wherever a small JSON document is checked per
call: tool arguments on every step, a planner's or reflector's reply on every turn.

:func:`compile_fast_check` turns the common subset of Draft 2020-12 into nested Python
closures once per schema. The check returns ``True`` only for instances that are
certainly valid; ``False`` means "ask ``jsonschema``" (the caller then runs it, for the
verdict and for its error messages). A schema with a keyword outside the subset compiles
to ``None``. Within the subset: types, ``enum``/``const``, numeric and length bounds,
``pattern``, ``items``, object keywords, ``anyOf``, ``allOf``, local ``$ref`` into the
root's ``$defs``, and ``if``/``then``/``else`` (the ``if`` is decided by a three-valued
check, so a doubt never skips a ``then``).

``format`` is an annotation except for the formats of :mod:`loopwright.core.formats`
(``date``, ``date-time``, ``time``, ``duration``, ``uuid``), which are asserted: ``@tool``
converts such strings to Python values and a value that cannot convert must be refused
with the pointer of its field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

# re-exported: the prompt patterns and the tool validator import them from here
from loopwright.core.formats import FORMATS, format_checker, format_hint

__all__ = ["FORMATS", "Check", "compile_fast_check", "format_checker", "format_hint"]

Check = Callable[[Any], bool]
_ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "format",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_SUPPORTED = _ANNOTATIONS | {
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
    "anyOf",
    "allOf",
    "$ref",
    "if",
    "then",
    "else",
}
_TOP_LEVEL_OK = frozenset({"$schema", "$defs"})
_DEFS_PREFIX = "#/$defs/"


class _Unsupported(Exception):
    pass


def compile_fast_check(schema: Mapping[str, Any]) -> Check | None:
    """A checker that returns True only for instances that are certainly valid, or
    ``None`` when the schema uses keywords the fast path does not model."""
    try:
        body = {k: v for k, v in schema.items() if k not in _TOP_LEVEL_OK}
        return _compile(body, _Refs(schema.get("$defs")))
    except (_Unsupported, RecursionError):
        return None


class _Refs:
    """The root's ``$defs``, each compiled once (a forwarding cell first, so a
    recursive definition compiles to a loop instead of recursing forever)."""

    __slots__ = ("compiled", "defs")

    def __init__(self, defs: Any) -> None:
        if defs is not None and not isinstance(defs, Mapping):
            raise _Unsupported
        self.defs: Mapping[str, Any] = defs or {}
        self.compiled: dict[str, Check] = {}

    def check(self, ref: Any) -> Check:
        if not isinstance(ref, str) or not ref.startswith(_DEFS_PREFIX):
            raise _Unsupported
        name = ref[len(_DEFS_PREFIX) :]
        if "/" in name or "~" in name or "%" in name or name not in self.defs:
            raise _Unsupported
        if name not in self.compiled:
            cell: list[Check] = []
            self.compiled[name] = lambda v: cell[0](v)
            cell.append(_compile(self.defs[name], self))
            self.compiled[name] = cell[0]
        return self.compiled[name]


def _compile(schema: Any, refs: _Refs) -> Check:
    if schema is True:
        return _always
    if not isinstance(schema, Mapping) or any(k not in _SUPPORTED for k in schema):
        raise _Unsupported
    checks: list[Check] = []
    if "$ref" in schema:
        checks.append(refs.check(schema["$ref"]))
    if "type" in schema:
        checks.append(_type_check(schema["type"]))
    if "enum" in schema or "const" in schema:
        checks.append(_enum_check(schema["enum"] if "enum" in schema else [schema["const"]]))
    checks.extend(_number_checks(schema))
    checks.extend(_string_checks(schema))
    checks.extend(_array_checks(schema, refs))
    if "allOf" in schema:
        checks.extend(_compile(s, refs) for s in _subschemas(schema["allOf"]))
    if "if" in schema:
        checks.append(_conditional(schema, refs))
    if "anyOf" in schema:
        options = [_compile(s, refs) for s in _subschemas(schema["anyOf"])]

        def any_of(v: Any) -> bool:
            return any(o(v) for o in options)

        checks.append(any_of)
    if any(k in schema for k in ("properties", "required", "additionalProperties")):
        if schema.get("type") == "object" and len(checks) == 1:  # the usual arguments schema
            return _object_check(schema, refs, typed=True)
        checks.append(_object_check(schema, refs))
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    return _all_of(tuple(checks))


def _all_of(checks: tuple[Check, ...]) -> Check:
    def check(v: Any) -> bool:
        # An explicit loop: all() over a generator costs a frame per call (hot path).
        for c in checks:  # noqa: SIM110
            if not c(v):
                return False
        return True

    return check


def _always(_: Any) -> bool:
    return True


def _is_int(v: Any) -> bool:
    return type(v) is int


def _is_num(v: Any) -> bool:
    return (type(v) is int) or (type(v) is float and math.isfinite(v))


_TYPES: dict[str, Check] = {
    "string": lambda v: type(v) is str,
    "integer": _is_int,
    "number": _is_num,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
}


def _type_check(type_: Any) -> Check:
    if isinstance(type_, str):
        if type_ not in _TYPES:
            raise _Unsupported
        return _TYPES[type_]
    if isinstance(type_, list) and all(t in _TYPES for t in type_):
        checks = [_TYPES[t] for t in type_]
        return lambda v: any(c(v) for c in checks)
    raise _Unsupported


def _enum_check(values: Any) -> Check:
    if not isinstance(values, list):
        raise _Unsupported
    scalars = [e for e in values if e is None or isinstance(e, (str, int, float, bool))]

    def check(v: Any) -> bool:
        if isinstance(v, (dict, list)):
            return False  # jsonschema's deep equality decides
        return any(type(e) is type(v) and e == v for e in scalars)

    return check


def _number_checks(schema: Mapping[str, Any]) -> list[Check]:
    out: list[Check] = []
    bounds: list[tuple[str, Callable[[Any, Any], bool]]] = [
        ("minimum", lambda v, b: v >= b),
        ("maximum", lambda v, b: v <= b),
        ("exclusiveMinimum", lambda v, b: v > b),
        ("exclusiveMaximum", lambda v, b: v < b),
    ]
    for key, cmp in bounds:
        if key in schema:
            bound = schema[key]
            if not _is_num(bound):
                raise _Unsupported
            out.append(_bound_check(bound, cmp))
    return out


def _bound_check(bound: Any, cmp: Callable[[Any, Any], bool]) -> Check:
    def check(v: Any) -> bool:
        t = type(v)
        if t is int:
            return cmp(v, bound)
        if t is float:
            return math.isfinite(v) and cmp(v, bound)  # inf/nan: let jsonschema decide
        return True  # bounds ignore non-numbers (bool is not a number here)

    return check


def _string_checks(schema: Mapping[str, Any]) -> list[Check]:
    out: list[Check] = []
    if "minLength" in schema:
        lo = schema["minLength"]
        out.append(lambda v: type(v) is not str or len(v) >= lo)
    if "maxLength" in schema:
        hi = schema["maxLength"]
        out.append(lambda v: type(v) is not str or len(v) <= hi)
    if "pattern" in schema:
        try:
            rx = re.compile(schema["pattern"])
        except (re.error, TypeError):
            raise _Unsupported from None
        out.append(lambda v: type(v) is not str or rx.search(v) is not None)
    fmt = FORMATS.get(schema.get("format"))  # type: ignore[arg-type]
    if fmt is not None:
        out.append(fmt)
    return out


def _array_checks(schema: Mapping[str, Any], refs: _Refs) -> list[Check]:
    out: list[Check] = []
    if "minItems" in schema:
        lo = schema["minItems"]
        out.append(lambda v: type(v) is not list or len(v) >= lo)
    if "maxItems" in schema:
        hi = schema["maxItems"]
        out.append(lambda v: type(v) is not list or len(v) <= hi)
    if "items" in schema:
        item = _compile(schema["items"], refs)
        out.append(lambda v: type(v) is not list or all(item(x) for x in v))
    return out


# property checks that are exactly one Python type (``type(x) is T``), tested inline
_EXACT_TYPES: dict[Check, type] = {
    _TYPES["integer"]: int,
    _TYPES["string"]: str,
    _TYPES["boolean"]: bool,
}


def _object_check(schema: Mapping[str, Any], refs: _Refs, *, typed: bool = False) -> Check:
    """The object keywords; with ``typed`` also ``"type": "object"`` (one check, not two:
    this is every tool call's top-level check)."""
    props = {k: _compile(s, refs) for k, s in (schema.get("properties") or {}).items()}
    required = tuple(schema.get("required") or ())
    extra = schema.get("additionalProperties", True)
    extra_check: Check | None = None if extra is True or extra is False else _compile(extra, refs)
    closed = extra is False
    exact = tuple((k, _EXACT_TYPES[c]) for k, c in props.items() if c in _EXACT_TYPES)
    prop_items = tuple((k, c) for k, c in props.items() if c not in _EXACT_TYPES)

    def check(v: Any) -> bool:
        if type(v) is not dict:
            return False if typed else not isinstance(v, Mapping)  # keywords ignore non-objects
        for r in required:
            if r not in v:
                return False
        for k, t in exact:
            if k in v and type(v[k]) is not t:
                return False
        for k, c in prop_items:
            if k in v and not c(v[k]):
                return False
        if closed or extra_check is not None:
            for k in v:
                if k not in props and (closed or not extra_check(v[k])):  # type: ignore[misc]
                    return False
        return True

    return check


def _subschemas(value: Any) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise _Unsupported
    return value


# -- if / then / else ---------------------------------------------------------------------
# The ``if`` schema needs a verdict in both directions (a valid instance that the fast
# check merely doubts must not be sent down ``else``), so it is compiled to a three-valued
# decision: True (certainly matches), False (certainly does not), None (unknown; then the
# instance must satisfy both branches to be certainly valid).
Decide = Callable[[Any], bool | None]
_JSON_TYPES = (dict, list, str, int, float, bool, type(None))
_DECIDABLE = _ANNOTATIONS | {"type", "enum", "const", "properties", "required"}


def _conditional(schema: Mapping[str, Any], refs: _Refs) -> Check:
    decide = _decider(schema["if"])
    then = _compile(schema.get("then", True), refs)
    else_ = _compile(schema.get("else", True), refs)

    def check(v: Any) -> bool:
        verdict = decide(v)
        if verdict is None:
            return then(v) and else_(v)
        return then(v) if verdict else else_(v)

    return check


def _decider(schema: Any) -> Decide:
    if schema is True:
        return lambda v: True
    if not isinstance(schema, Mapping) or any(k not in _DECIDABLE for k in schema):
        raise _Unsupported
    parts: list[Decide] = []
    if "type" in schema:
        parts.append(_type_decider(schema["type"]))
    if "enum" in schema or "const" in schema:
        parts.append(_enum_decider(schema["enum"] if "enum" in schema else [schema["const"]]))
    if "required" in schema:
        names = tuple(schema["required"])
        parts.append(lambda v: _on_dict(v, lambda d: all(n in d for n in names)))
    if "properties" in schema:
        props = {k: _decider(s) for k, s in schema["properties"].items()}
        parts.append(lambda v: _on_dict(v, lambda d: _conjunction(
            props[k](d[k]) for k in props if k in d
        )))  # fmt: skip
    return lambda v: _conjunction(p(v) for p in parts)


def _conjunction(verdicts: Any) -> bool | None:
    result: bool | None = True
    for verdict in verdicts:
        if verdict is False:
            return False
        if verdict is None:
            result = None
    return result


def _on_dict(v: Any, decide: Callable[[dict[str, Any]], bool | None]) -> bool | None:
    if type(v) is dict:
        return decide(v)
    return None if isinstance(v, Mapping) else True  # object keywords ignore non-objects


def _type_decider(type_: Any) -> Decide:
    names = [type_] if isinstance(type_, str) else type_
    if not isinstance(names, list) or any(n not in _TYPES for n in names):
        raise _Unsupported

    def decide(v: Any) -> bool | None:
        if type(v) not in _JSON_TYPES:
            return None
        if type(v) is float and "integer" in names:
            return None  # 1.0 is an integer to JSON Schema
        return any(_TYPES[n](v) or (n == "number" and type(v) is float) for n in names)

    return decide


def _enum_decider(values: Any) -> Decide:
    if not isinstance(values, list) or any(
        not (e is None or isinstance(e, (str, int, float, bool))) for e in values
    ):
        raise _Unsupported

    def decide(v: Any) -> bool | None:
        t = type(v)
        if t is dict or t is list:
            return False  # never equal to a scalar
        if t is int or t is float:
            if t is float and not math.isfinite(v):
                return None
            return any(type(e) in (int, float) and e == v for e in values)
        if t is str or t is bool or v is None:
            return any(type(e) is t and e == v for e in values)
        return None

    return decide
