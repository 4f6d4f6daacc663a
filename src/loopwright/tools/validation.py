"""Argument validation against a tool's Draft 2020-12 JSON Schema.

Every violation is reported with the RFC 6901 JSON pointer of the offending value
(``""`` is the whole arguments object). A missing required property and an unexpected
property are reported at the pointer of that property, one violation each, so a model
can fix all of them in one go.

Speed: :class:`SchemaValidator` compiles a schema once. For the common shape of tool
schemas (objects of typed properties with simple constraints) it also builds a fast
pure-Python checker that answers "certainly valid" without touching ``jsonschema``; any
doubt falls through to the full ``jsonschema`` run, which is the single source of truth.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema is imported lazily: ~40 ms that most runs never need
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

_MESSAGE_LIMIT = 300


@dataclass(frozen=True, slots=True)
class Violation:
    """One schema or business-rule violation at ``pointer`` (RFC 6901)."""

    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer or '(root)'}: {self.message}"


def pointer_from_path(path: Iterable[object]) -> str:
    """RFC 6901 pointer for a sequence of keys/indexes (``~`` and ``/`` escaped)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def check_schema(schema: Mapping[str, Any], *, owner: str = "tool") -> None:
    """Raise ``ValueError`` naming ``owner`` when ``schema`` is not a valid Draft 2020-12
    object schema."""
    from jsonschema import Draft202012Validator

    errors = sorted(
        Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema),
        key=lambda e: list(e.path),
    )
    if errors:
        first = errors[0]
        where = pointer_from_path(first.absolute_path) or "(root)"
        raise ValueError(
            f"{owner}: parameters is not a valid JSON Schema at {where}: {first.message}"
        )
    if schema.get("type") != "object":
        raise ValueError(f'{owner}: parameters must be a schema with "type": "object"')


class SchemaValidator:
    """A compiled validator for one schema. Reuse it: compiling is the expensive part."""

    __slots__ = ("_fast", "_full", "schema")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self._full: Draft202012Validator | None = None
        self._fast = compile_fast_check(schema)

    @property
    def fast_check(self) -> Callable[[Any], bool] | None:
        """The compiled pure-Python check (``None`` when the schema is outside its
        subset): ``True`` means certainly valid; ``False`` means "ask jsonschema"."""
        return self._fast

    def jsonschema_validator(self) -> Draft202012Validator:
        """The full ``jsonschema`` validator (built on first need)."""
        if self._full is None:
            from jsonschema import Draft202012Validator

            self._full = Draft202012Validator(self.schema)
        return self._full

    def violations(self, arguments: Mapping[str, Any]) -> list[Violation]:
        """Every violation of ``arguments``; empty when valid."""
        fast = self._fast
        if fast is not None and fast(arguments):
            return []
        try:
            errors = list(self.jsonschema_validator().iter_errors(arguments))
        except RecursionError:
            return [Violation("", "arguments are nested too deeply")]
        out: list[Violation] = []
        for err in errors:
            out.extend(_explain(err))
        out.sort(key=lambda v: v.pointer)
        return out


def _explain(err: ValidationError) -> list[Violation]:
    if err.validator in ("anyOf", "oneOf") and err.context:
        inner = _branch_errors(err)
        if inner:
            return [v for e in inner for v in _explain(e)]
    base = list(err.absolute_path)
    inst = err.instance
    if err.validator == "required" and isinstance(inst, dict):
        missing = [r for r in err.validator_value if r not in inst]
        return [
            Violation(pointer_from_path([*base, m]), "required property is missing")
            for m in missing
        ]
    if (
        err.validator == "additionalProperties"
        and err.validator_value is False
        and isinstance(inst, dict)
    ):
        allowed = list((err.schema.get("properties") or {}).keys())
        extra = [k for k in inst if k not in allowed]
        hint = f"; allowed: {', '.join(allowed)}" if allowed else ""
        return [
            Violation(pointer_from_path([*base, k]), f"unexpected property{hint}") for k in extra
        ]
    msg = err.message
    if len(msg) > _MESSAGE_LIMIT:
        msg = msg[: _MESSAGE_LIMIT - 1] + "…"
    return [Violation(pointer_from_path(base), msg)]


def _branch_errors(err: ValidationError) -> list[ValidationError]:
    """The errors of the one ``anyOf``/``oneOf`` branch the value was meant for, so a
    mistake deep inside an optional object is reported at its own field, not as "not
    valid under any of the given schemas" at the parent. A branch whose type does not
    even match the value (``null`` for an object) is not meant; when several branches
    remain, the most relevant error decides (``jsonschema``'s ``best_match``)."""
    from jsonschema.exceptions import best_match

    by_branch: dict[object, list[ValidationError]] = {}
    for sub in err.context or ():
        branch = sub.relative_schema_path[0] if sub.relative_schema_path else None
        by_branch.setdefault(branch, []).append(sub)
    meant = [
        errors
        for errors in by_branch.values()
        if not any(e.validator == "type" and not e.relative_path for e in errors)
    ]
    if len(meant) == 1:
        return meant[0]
    if not meant:
        return []
    best = best_match([e for errors in meant for e in errors])
    return [best] if best is not None else []


_CACHE: dict[int, tuple[Mapping[str, Any], SchemaValidator]] = {}
_CACHE_MAX = 512


def validator_for(schema: Mapping[str, Any]) -> SchemaValidator:
    """The cached :class:`SchemaValidator` of ``schema`` (keyed by object identity)."""
    hit = _CACHE.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    compiled = SchemaValidator(schema)
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[id(schema)] = (schema, compiled)
    return compiled


def validate_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[Violation]:
    """Every violation of ``arguments`` against ``schema`` (empty list: valid).

    Never raises for bad *arguments*; a bad *schema* raises ``jsonschema`` errors (check
    schemas when tools are built, see :func:`check_schema`).
    """
    if not isinstance(arguments, Mapping):
        return [Violation("", f"arguments must be a JSON object, got {type(arguments).__name__}")]
    return validator_for(schema).violations(arguments)


# -- fast path ----------------------------------------------------------------------------
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
}
_TOP_LEVEL_OK = frozenset({"$schema"})


class _Unsupported(Exception):
    pass


def compile_fast_check(schema: Mapping[str, Any]) -> Check | None:
    """A checker that returns True only for instances that are certainly valid, or
    ``None`` when the schema uses keywords the fast path does not model."""
    try:
        body = {k: v for k, v in schema.items() if k not in _TOP_LEVEL_OK}
        return _compile(body)
    except _Unsupported:
        return None


def _compile(schema: Any) -> Check:
    if schema is True:
        return _always
    if not isinstance(schema, Mapping) or any(k not in _SUPPORTED for k in schema):
        raise _Unsupported
    checks: list[Check] = []
    if "type" in schema:
        checks.append(_type_check(schema["type"]))
    if "enum" in schema or "const" in schema:
        checks.append(_enum_check(schema["enum"] if "enum" in schema else [schema["const"]]))
    checks.extend(_number_checks(schema))
    checks.extend(_string_checks(schema))
    checks.extend(_array_checks(schema))
    if "anyOf" in schema:
        options = [_compile(s) for s in schema["anyOf"]]

        def any_of(v: Any) -> bool:
            return any(o(v) for o in options)

        checks.append(any_of)
    if any(k in schema for k in ("properties", "required", "additionalProperties")):
        if schema.get("type") == "object" and len(checks) == 1:  # the usual arguments schema
            return _object_check(schema, typed=True)
        checks.append(_object_check(schema))
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
    return out


def _array_checks(schema: Mapping[str, Any]) -> list[Check]:
    out: list[Check] = []
    if "minItems" in schema:
        lo = schema["minItems"]
        out.append(lambda v: type(v) is not list or len(v) >= lo)
    if "maxItems" in schema:
        hi = schema["maxItems"]
        out.append(lambda v: type(v) is not list or len(v) <= hi)
    if "items" in schema:
        item = _compile(schema["items"])
        out.append(lambda v: type(v) is not list or all(item(x) for x in v))
    return out


# property checks that are exactly one Python type (``type(x) is T``), tested inline
_EXACT_TYPES: dict[Check, type] = {
    _TYPES["integer"]: int,
    _TYPES["string"]: str,
    _TYPES["boolean"]: bool,
}


def _object_check(schema: Mapping[str, Any], *, typed: bool = False) -> Check:
    """The object keywords; with ``typed`` also ``"type": "object"`` (one check, not two:
    this is every tool call's top-level check)."""
    props = {k: _compile(s) for k, s in (schema.get("properties") or {}).items()}
    required = tuple(schema.get("required") or ())
    extra = schema.get("additionalProperties", True)
    extra_check: Check | None = None if extra is True or extra is False else _compile(extra)
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
