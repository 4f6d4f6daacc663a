"""Derive a Draft 2020-12 JSON Schema (and argument converters) from a typed function.

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``;
``datetime.date``/``datetime``/``time``/``timedelta``, ``uuid.UUID``, ``decimal.Decimal``
and ``pathlib.Path`` (strings of a ``format``, or number-or-string for ``Decimal``:
:mod:`loopwright.tools.valuetypes`);
``Literal`` and ``Enum`` (as ``enum``); ``Optional``/unions (``anyOf``); ``list``,
``Sequence``, ``tuple`` (homogeneous or fixed, via ``prefixItems``), ``set``/``frozenset``
(``uniqueItems``); ``dict[str, X]``; ``TypedDict``; dataclasses; pydantic models;
``Annotated[X, ...]`` with a description string, ``pydantic.Field(...)``,
``annotated_types`` constraints (``Ge``/``Gt``/``Le``/``Lt``/``Interval``/``MultipleOf``/
``MinLen``/``MaxLen``/``Len``) and ``pattern`` from pydantic metadata.
Parameter descriptions come from ``Annotated`` first, then from the docstring (Google,
NumPy, reST/Sphinx or Epydoc style, parsed by ``docstring_parser``).

Anything else is a ``ValueError`` at decoration time that names the parameter and type.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import annotated_types as at
import docstring_parser

from loopwright.tools.invocation import ToolContext
from loopwright.tools.validation import DATA_KEYWORDS
from loopwright.tools.valuetypes import Converter, json_value, value_converter, value_schema

_NONE_TYPE = type(None)
_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    _NONE_TYPE: {"type": "null"},
}
_LIST_ORIGINS = (list, Sequence, typing.Sequence, typing.MutableSequence, typing.Iterable)
_SET_ORIGINS = (set, frozenset, typing.AbstractSet, typing.MutableSet)


@dataclass(frozen=True, slots=True)
class ParamPlan:
    """How one schema property maps back to a Python argument."""

    name: str
    convert: Converter | None


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    description: str
    parameters: dict[str, Any]
    context_param: str | None
    params: tuple[ParamPlan, ...]
    argument_schema: dict[str, Any] | None = None
    """What arguments are validated against, when not ``parameters``: without
    ``uniqueItems`` (sets collapse repeated items, see :func:`function_schema`)."""

    @property
    def converters(self) -> tuple[tuple[str, Converter], ...]:
        return tuple((p.name, p.convert) for p in self.params if p.convert is not None)


def function_schema(fn: Callable[..., Any], *, owner: str | None = None) -> FunctionSchema:
    """Schema, description and argument plan of ``fn`` (see module doc).

    A ``set``/``frozenset`` parameter is advertised with ``uniqueItems: true``, but an item
    the model repeats is collapsed, not refused: the function receives a set either way,
    and a refusal would cost a model turn for nothing. (pydantic, and the tool libraries
    built on it, do the same: its schema says ``uniqueItems`` and its validation builds
    the set.) ``argument_schema`` is the schema without ``uniqueItems`` that arguments
    are validated against."""
    owner = owner or str(getattr(fn, "__name__", repr(fn)))
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ValueError(
            f"tool {owner!r}: cannot resolve its type hints ({exc}); import the names "
            "used in annotations at module level"
        ) from exc
    doc = parse_docstring(inspect.getdoc(fn) or "")
    builder = SchemaBuilder(owner)
    props: dict[str, Any] = {}
    required: list[str] = []
    plans: list[ParamPlan] = []
    defaults: dict[str, Any] = {}
    context_param: str | None = None
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:  # a class or builtin without a signature
        raise ValueError(
            f"tool {owner!r}: cannot read the parameters of {fn!r} ({exc}); wrap it in a "
            "function with typed parameters and a docstring"
        ) from None
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ValueError(
                f"tool {owner!r}: parameter {param.name!r} is {param.kind.description}; "
                "tool parameters must be named (keyword-compatible) parameters"
            )
        annotation = hints.get(param.name, Any)
        if _is_context(annotation):
            context_param = param.name
            continue
        prop = builder.build(annotation, where=param.name)
        if "description" not in prop and doc.params.get(param.name):
            prop = {"description": doc.params[param.name], **prop}
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        else:
            default = _json_default(param.default)
            if default is not _NO_DEFAULT:
                prop["default"] = default
                defaults[param.name] = default
        props[param.name] = prop
        plans.append(ParamPlan(param.name, converter_for(annotation)))
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    if builder.defs:
        schema["$defs"] = builder.defs
    _check_defaults(owner, schema, defaults, hints)
    lenient = without_unique_items(schema)
    checked = None if lenient == schema else lenient
    return FunctionSchema(doc.description, schema, context_param, tuple(plans), checked)


def _check_defaults(
    owner: str, schema: dict[str, Any], defaults: dict[str, Any], hints: Mapping[str, Any]
) -> None:
    """Refuse a default its own annotation refuses (``x: int = "a"``): the schema would
    advertise a default the model may copy, which the validator then refuses, and the
    function would receive a value of the wrong type whenever the model leaves it out."""
    if not defaults:
        return
    from loopwright.tools.validation import validator_for  # the one argument validator

    optional = {k: v for k, v in schema.items() if k != "required"}
    for violation in validator_for(optional).violations(defaults):
        name = violation.pointer.split("/")[1] if violation.pointer else "?"
        hint = hints.get(name, Any)
        shown = getattr(hint, "__name__", None) or repr(hint)
        raise ValueError(
            f"tool {owner!r}: parameter {name!r} has default {defaults.get(name)!r}, which "
            f"its annotation {shown} refuses ({violation}); change the default or the "
            "annotation (X | None = None for an optional value)"
        )


def type_schema(annotation: Any) -> dict[str, Any]:
    """JSON Schema of one annotation (``$defs`` included when needed)."""
    builder = SchemaBuilder("type")
    out = builder.build(annotation, where="value")
    if builder.defs:
        out["$defs"] = builder.defs
    return out


# keywords whose values are named schemas (the names are not keywords)
_NAMED_SCHEMAS = frozenset({"properties", "$defs", "patternProperties", "dependentSchemas"})


def without_unique_items(schema: Any) -> Any:
    """``schema`` with every ``uniqueItems`` keyword left out (a property *named*
    ``uniqueItems`` and data values stay)."""
    if isinstance(schema, list):
        return [without_unique_items(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "uniqueItems":
            continue
        if key in DATA_KEYWORDS:  # instance data: a key named uniqueItems there is data
            out[key] = value
        elif key in _NAMED_SCHEMAS and isinstance(value, dict):
            out[key] = {k: without_unique_items(v) for k, v in value.items()}
        else:
            out[key] = without_unique_items(value)
    return out


# -- docstrings ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ParsedDoc:
    description: str
    params: Mapping[str, str]


def parse_docstring(doc: str) -> ParsedDoc:
    """Description (short + long, parameter sections removed) and per-parameter text."""
    if not doc.strip():
        return ParsedDoc("", {})
    try:
        parsed = docstring_parser.parse(doc)
    except Exception:
        return ParsedDoc(doc.strip(), {})
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    params = {
        p.arg_name: " ".join(p.description.split())
        for p in parsed.params
        if p.description and p.arg_name
    }
    return ParsedDoc("\n\n".join(parts).strip(), params)


# -- the builder ------------------------------------------------------------------------
class SchemaBuilder:
    """Builds schemas for annotations, collecting named sub-schemas in ``defs``."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.defs: dict[str, Any] = {}
        self._expanding: set[type] = set()
        self._recursive: set[type] = set()

    def build(self, tp: Any, *, where: str) -> dict[str, Any]:
        if tp is Any or tp is object:
            return {}
        if tp in _SCALARS:
            return dict(_SCALARS[tp])
        value = value_schema(tp)  # date, time, UUID, Decimal, Path...: tools.valuetypes
        if value is not None:
            return value
        if tp is None:
            return {"type": "null"}
        origin = get_origin(tp)
        if origin is Annotated:
            base, *meta = get_args(tp)
            return apply_metadata(self.build(base, where=where), meta)
        if origin is Literal:
            return enum_schema(list(get_args(tp)))
        if origin is Union or origin is types.UnionType:
            return self._union(get_args(tp), where)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return enum_schema([m.value for m in tp])
        if origin is not None or tp in (list, tuple, set, frozenset, dict):
            return self._generic(tp, origin or tp, where)
        if isinstance(tp, type) and _is_pydantic_model(tp):
            return self._pydantic(tp)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return self._dataclass(tp, where)
        if typing.is_typeddict(tp):
            return self._typeddict(tp, where)
        raise ValueError(
            f"tool {self.owner!r}: parameter {where!r} has type {tp!r}, which has no JSON "
            "Schema mapping; use str/int/float/bool, datetime.date/datetime/time/timedelta, "
            "UUID, Decimal, Path, Literal, Enum, list, dict, a dataclass or a pydantic model"
        )

    def _union(self, args: tuple[Any, ...], where: str) -> dict[str, Any]:
        options = [self.build(a, where=where) for a in args]
        return {"anyOf": options}

    def _generic(self, tp: Any, origin: Any, where: str) -> dict[str, Any]:
        args = get_args(tp)
        if origin in _LIST_ORIGINS:
            out: dict[str, Any] = {"type": "array"}
            if args:
                out["items"] = self.build(args[0], where=f"{where}[]")
            return out
        if origin in _SET_ORIGINS:
            out = {"type": "array", "uniqueItems": True}
            if args:
                out["items"] = self.build(args[0], where=f"{where}[]")
            return out
        if origin is tuple:
            if not args:
                return {"type": "array"}
            if len(args) == 2 and args[1] is Ellipsis:
                return {"type": "array", "items": self.build(args[0], where=f"{where}[]")}
            prefix = [self.build(a, where=f"{where}[{i}]") for i, a in enumerate(args)]
            n = len(prefix)
            return {"type": "array", "prefixItems": prefix, "minItems": n, "maxItems": n}
        if origin in (dict, Mapping, typing.Mapping, typing.MutableMapping):
            out = {"type": "object"}
            if args:
                if args[0] not in (str, Any):
                    raise ValueError(
                        f"tool {self.owner!r}: parameter {where!r} is a dict with "
                        f"{args[0]!r} keys; JSON object keys are strings, use dict[str, ...]"
                    )
                value = self.build(args[1], where=f"{where}{{}}")
                if value:
                    out["additionalProperties"] = value
            return out
        raise ValueError(
            f"tool {self.owner!r}: parameter {where!r} has unsupported generic type {tp!r}"
        )

    def _pydantic(self, model: type) -> dict[str, Any]:
        raw = model.model_json_schema()  # type: ignore[attr-defined]
        for name, sub in (raw.pop("$defs", None) or {}).items():
            body = strip_titles(sub)
            if self.defs.setdefault(name, body) != body:
                raise ValueError(
                    f"tool {self.owner!r}: two different types are named {name!r}; "
                    "rename one of them"
                )
        return strip_titles(raw)

    def _named(self, cls: Any, body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The schema ``body()`` builds for the class ``cls``, inline; a class that refers
        to itself (``kids: list[Tree]``) is put in ``defs`` and referenced by name
        instead (a recursive TypedDict was a RecursionError when the tool was built)."""
        ref = {"$ref": f"#/$defs/{cls.__name__}"}
        if cls in self._expanding:
            self._recursive.add(cls)
            return ref
        self._expanding.add(cls)
        try:
            out = body()
        finally:
            self._expanding.discard(cls)
        if cls in self._recursive:
            self.defs[cls.__name__] = out
            return ref
        return out

    def _dataclass(self, cls: type, where: str) -> dict[str, Any]:
        def body() -> dict[str, Any]:
            hints = get_type_hints(cls, include_extras=True)
            doc = parse_docstring(_own_doc(cls))
            props: dict[str, Any] = {}
            required: list[str] = []
            for f in dataclasses.fields(cls):
                if not f.init:
                    continue
                prop = self.build(hints.get(f.name, Any), where=f"{where}.{f.name}")
                if "description" not in prop and doc.params.get(f.name):
                    prop = {"description": doc.params[f.name], **prop}
                if f.default is not dataclasses.MISSING:
                    default = _json_default(f.default)
                    if default is not _NO_DEFAULT:
                        prop["default"] = default
                elif f.default_factory is dataclasses.MISSING:
                    required.append(f.name)
                props[f.name] = prop
            return _object_schema(doc.description, props, required)

        return self._named(cls, body)

    def _typeddict(self, cls: Any, where: str) -> dict[str, Any]:
        def body() -> dict[str, Any]:
            hints = get_type_hints(cls, include_extras=True)
            doc = parse_docstring(_own_doc(cls))
            props = {}
            for name, tp in hints.items():
                prop = self.build(tp, where=f"{where}.{name}")
                if "description" not in prop and doc.params.get(name):
                    prop = {"description": doc.params[name], **prop}
                props[name] = prop
            required = [k for k in hints if k in cls.__required_keys__]
            return _object_schema(doc.description, props, required)

        return self._named(cls, body)


def _object_schema(description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if description:
        out["description"] = description
    out["type"] = "object"
    out["properties"] = props
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def _own_doc(cls: type) -> str:
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    # dataclasses invent "Name(field: type, ...)" when a class has no docstring.
    return "" if doc.startswith(f"{cls.__name__}(") else doc


def enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds = {_json_kind(v) for v in values}
    out: dict[str, Any] = {}
    if len(kinds) == 1 and None not in kinds:
        out["type"] = kinds.pop()
    out["enum"] = values
    return out


def _json_kind(v: Any) -> str | None:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return None


def strip_titles(schema: Any) -> Any:
    """Remove pydantic's auto-generated ``title`` keywords (property names are kept)."""
    if isinstance(schema, list):
        return [strip_titles(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
            out[key] = {k: strip_titles(v) for k, v in value.items()}
        else:
            out[key] = strip_titles(value)
    return out


# -- Annotated metadata -------------------------------------------------------------------
_LENGTH_KEYS = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


def apply_metadata(schema: dict[str, Any], meta: Sequence[Any]) -> dict[str, Any]:
    """Fold ``Annotated`` metadata (descriptions and constraints) into ``schema``."""
    out = dict(schema)
    for item in _flatten_metadata(meta):
        if isinstance(item, str):
            out["description"] = item
            continue
        if _is_field_info(item):
            if item.description:
                out["description"] = item.description
            if item.examples:
                out["examples"] = list(item.examples)
            out = apply_metadata(out, list(item.metadata))
            continue
        _apply_constraint(out, item)
    if "description" in out:
        out = {"description": out.pop("description"), **out}
    return out


def _flatten_metadata(meta: Sequence[Any]) -> list[Any]:
    flat: list[Any] = []
    for item in meta:
        if isinstance(item, at.GroupedMetadata) and not _is_field_info(item):
            flat.extend(_flatten_metadata(list(item)))
        else:
            flat.append(item)
    return flat


def _apply_constraint(out: dict[str, Any], item: Any) -> None:
    lo_key, hi_key = _LENGTH_KEYS.get(str(out.get("type")), ("minLength", "maxLength"))
    if isinstance(item, at.Ge):
        out["minimum"] = item.ge
    elif isinstance(item, at.Gt):
        out["exclusiveMinimum"] = item.gt
    elif isinstance(item, at.Le):
        out["maximum"] = item.le
    elif isinstance(item, at.Lt):
        out["exclusiveMaximum"] = item.lt
    elif isinstance(item, at.MultipleOf):
        out["multipleOf"] = item.multiple_of
    elif isinstance(item, at.MinLen):
        out[lo_key] = item.min_length
    elif isinstance(item, at.MaxLen):
        out[hi_key] = item.max_length
    elif isinstance(item, at.DocInfo):
        out["description"] = item.documentation
    else:
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            out["pattern"] = pattern
        doc = getattr(item, "documentation", None)
        if isinstance(doc, str):  # typing_extensions.Doc
            out["description"] = doc


def _is_field_info(item: Any) -> bool:
    return type(item).__name__ == "FieldInfo" and hasattr(item, "metadata")


def _is_pydantic_model(tp: type) -> bool:
    return callable(getattr(tp, "model_json_schema", None)) and hasattr(tp, "model_fields")


def _is_context(annotation: Any) -> bool:
    """``ToolContext``, ``ToolContext[Deps]``, or either ``| None``."""
    if annotation is ToolContext or get_origin(annotation) is ToolContext:
        return True
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not _NONE_TYPE]
        return len(args) == 1 and _is_context(args[0])
    return False


# -- defaults -----------------------------------------------------------------------------
_NO_DEFAULT: Any = object()


def _json_default(value: Any) -> Any:
    shown: Any = json_value(value)  # date, UUID, Decimal...: the JSON form the schema takes
    if isinstance(value, enum.Enum):
        value = value.value
    elif shown is not value:
        value = shown
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    elif callable(getattr(value, "model_dump", None)):
        value = value.model_dump(mode="json")
    elif isinstance(value, (tuple, set, frozenset)):
        value = list(value)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return _NO_DEFAULT
    return value


# -- converters: validated JSON -> the function's Python types ------------------------------
def converter_for(annotation: Any) -> Converter | None:
    """``None`` when JSON values already are the right Python values (the fast path)."""
    if _json_native(annotation):
        return None
    base = annotation
    while get_origin(base) is Annotated:
        base = get_args(base)[0]
    if base is float:
        return _to_float
    value = value_converter(base)  # stdlib parsers: standard tzinfo, no pydantic import
    if value is not None:
        return value
    if isinstance(base, type) and issubclass(base, enum.Enum):
        return base
    if isinstance(base, type) and _is_pydantic_model(base):
        return base.model_validate  # type: ignore[attr-defined,no-any-return]
    from pydantic import TypeAdapter  # heavy; only for rich types

    adapter: TypeAdapter[Any] = TypeAdapter(base)
    return adapter.validate_python


def _to_float(value: Any) -> Any:
    return float(value) if type(value) is int else value


def _json_native(tp: Any, seen: frozenset[Any] = frozenset()) -> bool:
    """Whether JSON values already are ``tp``'s Python values. ``seen``: the TypedDicts
    being checked, so a recursive one (``kids: list[Tree]``) ends (it was a RecursionError);
    a type met again adds nothing its first visit does not decide."""
    if tp in (str, int, bool, _NONE_TYPE, None, Any, object, list, dict):
        return True
    origin = get_origin(tp)
    if origin is Annotated:
        return _json_native(get_args(tp)[0], seen)
    if origin is Literal:
        return True
    if origin in (Union, types.UnionType):
        return all(_json_native(a, seen) for a in get_args(tp))
    if origin in (list, dict, Sequence, Mapping, typing.Sequence, typing.Mapping):
        return all(_json_native(a, seen) for a in get_args(tp))
    if typing.is_typeddict(tp):
        if tp in seen:
            return True
        inner = seen | {tp}
        return all(_json_native(a, inner) for a in get_type_hints(tp).values())
    return False
