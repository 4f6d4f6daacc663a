"""Per-provider JSON Schema sanitisation for tool parameters.

Tools declare Draft 2020-12 schemas; providers accept subsets:

* :func:`gemini_schema` -- Gemini function declarations (an OpenAPI-3 subset): ``$ref``
  inlined from ``$defs``/``definitions``; ``const`` -> single-value ``enum``; ``type:
  [X, "null"]`` and ``anyOf: [X, {"type": "null"}]`` -> ``X`` + ``nullable``; ``anyOf``/
  ``oneOf`` of constants of one type (strings, integers, numbers or booleans) -> one
  ``enum``, exactly as if written as one; ``allOf`` of objects merged. What it cannot take
  is dropped when dropping keeps the meaning (``additionalProperties: false``,
  annotations, validation-only keywords, which are moved into the description) and
  rejected with :class:`UnsupportedSchema` naming the construct, the tool and the path
  when it would not (real unions, maps via ``additionalProperties: {...}``,
  ``patternProperties``, recursion, tuples, ``not``/``if``).
* :func:`openai_strict_schema` -- OpenAI strict mode (structured outputs):
  ``additionalProperties: false`` on every object, every property required, optional
  ones made nullable. Returns ``None`` when the schema cannot be strict (maps,
  ``patternProperties``): the adapter then sends that tool non-strict. A string
  ``format`` strict mode does not take (``uri``, ``path``) moves into the description.
  :func:`openai_output_schema` is the same for a native structured answer, strict only
  when that changes nothing the answer is validated against.
* :func:`closed_schema` -- Anthropic structured outputs (``output_config.format``, also
  Claude on Bedrock): ``additionalProperties: false`` on every object; keywords the
  constrained decoder does not take (numeric and length bounds, most ``format`` values)
  move into the description, where the model still reads them (loopwright validates the
  answer against the full schema either way).

Both are pure: the input is never mutated.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

from loopwright.core.errors import ConfigError

Schema = dict[str, Any]


class UnsupportedSchema(ConfigError):
    """A tool's parameter schema uses a construct the target provider cannot express."""


# ----------------------------------------------------------------- $ref inlining


def _resolve_pointer(root: Mapping[str, Any], ref: str, tool: str) -> Schema:
    if not ref.startswith("#/"):
        raise UnsupportedSchema(
            f"tool {tool!r}: $ref {ref!r} is not a local reference (#/$defs/...); inline it"
        )
    node: Any = root
    for token in ref[2:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or token not in node:
            raise UnsupportedSchema(f"tool {tool!r}: $ref {ref!r} points nowhere; fix the schema")
        node = node[token]
    if not isinstance(node, Mapping):
        raise UnsupportedSchema(f"tool {tool!r}: $ref {ref!r} is not a schema object")
    return dict(node)


def inline_refs(schema: Mapping[str, Any], tool: str = "?") -> Schema:
    """Replace every local ``$ref`` by its target and drop ``$defs``/``definitions``.

    Recursive references cannot be inlined: :class:`UnsupportedSchema`.
    """

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(n, seen) for n in node]
        if not isinstance(node, Mapping):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                raise UnsupportedSchema(
                    f"tool {tool!r}: recursive $ref {ref!r} cannot be inlined for this"
                    " provider; bound the nesting depth in the schema"
                )
            target = _resolve_pointer(schema, ref, tool)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**target, **siblings}, (*seen, ref))
        return {k: walk(v, seen) for k, v in node.items() if k not in ("$defs", "definitions")}

    result: Schema = walk(schema, ())
    return result


# ----------------------------------------------------------------- Gemini

# Keywords Gemini's Schema object takes (ai.google.dev/api/caching#Schema).
_GEMINI_KEEP = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
# Annotations: dropping them changes nothing a model must obey.
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "examples",
        "readOnly",
        "writeOnly",
        "deprecated",
        "contentMediaType",
        "contentEncoding",
    }
)
# Validation-only keywords: dropped, but stated in the description so the model sees them.
_DESCRIBED = frozenset(
    {
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "uniqueItems",
        "minContains",
        "maxContains",
        "dependentRequired",
    }
)
_GEMINI_FORMATS = {
    "string": {"enum", "date-time"},
    "integer": {"int32", "int64"},
    "number": {"float", "double"},
}
# Constructs whose removal would change what a valid argument is.
_REJECT = {
    "patternProperties": "patternProperties (keys matching a pattern)",
    "prefixItems": "prefixItems (tuples)",
    "not": "not",
    "if": "if/then/else",
    "propertyNames": "propertyNames",
    "dependentSchemas": "dependentSchemas",
    "unevaluatedProperties": "unevaluatedProperties",
    "contains": "contains",
}


def _is_null(node: Any) -> bool:
    return isinstance(node, Mapping) and node.get("type") == "null" and len(node) <= 2


def _constant_values(branches: list[Any]) -> list[Any] | None:
    values: list[Any] = []
    for b in branches:
        if not isinstance(b, Mapping):
            return None
        if "const" in b:
            values.append(b["const"])
        elif "enum" in b and isinstance(b["enum"], list):
            values.extend(b["enum"])
        else:
            return None
    return values


def _constants_type(values: list[Any]) -> str | None:
    """The one JSON type of ``values`` (``None`` when they mix types: a real union)."""
    if all(isinstance(v, str) for v in values):
        return "string"
    if all(isinstance(v, bool) for v in values):
        return "boolean"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "integer"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return "number"
    return None


class _Gemini:
    def __init__(self, tool: str) -> None:
        self.tool = tool

    def reject(self, construct: str, path: str, why: str) -> UnsupportedSchema:
        return UnsupportedSchema(
            f"tool {self.tool!r}: Gemini cannot take {construct} at {path or 'the root'}"
            f" ({why}); simplify that parameter's schema"
        )

    def union(self, node: Mapping[str, Any], key: str, path: str) -> Schema:
        branches = list(node[key])
        rest = {k: v for k, v in node.items() if k != key}
        nulls = [b for b in branches if _is_null(b)]
        others = [b for b in branches if not _is_null(b)]
        if len(others) == 1:
            merged = {**rest, **self.convert(others[0], f"{path}/{key}/0")}
            if nulls:
                merged["nullable"] = True
            return merged
        values = _constant_values(others)
        kind = _constants_type(values) if values else None
        if values and kind is not None:
            # The same values written as an ``enum`` are accepted: they must be here too.
            out = {**rest, "type": kind, "enum": values}
            if nulls:
                out["nullable"] = True
            return self.convert(out, path)
        raise self.reject(
            key,
            path,
            "a union of different shapes; dropping it would change which arguments are valid",
        )

    def all_of(self, node: Mapping[str, Any], path: str) -> Schema:
        merged: Schema = {k: v for k, v in node.items() if k != "allOf"}
        for i, branch in enumerate(node["allOf"]):
            if not isinstance(branch, Mapping):
                raise self.reject("allOf", path, "a branch is not a schema")
            for k, v in branch.items():
                if k == "properties":
                    merged["properties"] = {**merged.get("properties", {}), **v}
                elif k == "required":
                    merged["required"] = [*merged.get("required", []), *v]
                elif k in merged and merged[k] != v:
                    raise self.reject("allOf", f"{path}/allOf/{i}", f"branches disagree on {k!r}")
                else:
                    merged[k] = v
        return self.convert(merged, path)

    def convert(self, node: Any, path: str = "") -> Any:
        if not isinstance(node, Mapping):
            return node
        for key, label in _REJECT.items():
            if key in node:
                raise self.reject(label, path, "dropping it would change which arguments are valid")
        if "anyOf" in node or "oneOf" in node:
            return self.union(node, "anyOf" if "anyOf" in node else "oneOf", path)
        if "allOf" in node:
            return self.all_of(node, path)
        out: Schema = {}
        notes: list[str] = []
        node = dict(node)
        self._normalise_type(node, path)
        if "const" in node:
            node["enum"] = [node.pop("const")]
        if "enum" in node and "type" not in node:
            kinds = {type(v) for v in node["enum"]}
            if kinds == {str}:
                node["type"] = "string"
        extra = node.pop("additionalProperties", None)
        if isinstance(extra, Mapping) or (extra is True and not node.get("properties")):
            raise self.reject(
                "additionalProperties",
                path,
                "an object with free-form keys (a map) cannot be declared",
            )
        for key, value in node.items():
            if key in _ANNOTATIONS:
                continue
            if key in _DESCRIBED:
                notes.append(f"{key}: {value}")
            elif key == "properties":
                out[key] = {k: self.convert(v, f"{path}/properties/{k}") for k, v in value.items()}
            elif key == "items":
                out[key] = self.convert(value, f"{path}/items")
            elif key == "format" and value not in _GEMINI_FORMATS.get(node.get("type", ""), ()):
                notes.append(f"format: {value}")
            elif key in _GEMINI_KEEP:
                out[key] = value
            else:
                notes.append(f"{key}: {value}")
        if notes:
            desc = out.get("description", "")
            out["description"] = (desc + " " if desc else "") + f"({'; '.join(notes)})"
        return out

    def _normalise_type(self, node: dict[str, Any], path: str) -> None:
        kind = node.get("type")
        if isinstance(kind, list):
            non_null = [t for t in kind if t != "null"]
            if len(non_null) != 1:
                raise self.reject("type", path, f"a list of types {kind} is a union")
            node["type"] = non_null[0]
            if "null" in kind:
                node["nullable"] = True


def gemini_schema(schema: Mapping[str, Any], tool: str = "?") -> Schema:
    """A Gemini-compatible copy of ``schema`` (see module docstring)."""
    result: Schema = _Gemini(tool).convert(inline_refs(schema, tool))
    return result


# ----------------------------------------------------------------- OpenAI strict

_STRICT_DROP = frozenset({"$schema", "$id", "$comment", "default", "examples"})
# The string formats strict mode takes; any other is a 400 for the whole request ("'uri'
# is not a valid format", an MCP server's URL parameter; "path" for a pathlib.Path
# parameter), so it moves into the description, where the model still reads it.
_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


class _NotStrict(Exception):
    pass


def _nullable(node: Schema) -> Schema:
    kind = node.get("type")
    if isinstance(kind, str):
        out = {**node, "type": [kind, "null"]}
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(kind, list):
        return node if "null" in kind else {**node, "type": [*kind, "null"]}
    branches = node.get("anyOf")
    if isinstance(branches, list) and any(_is_null(b) for b in branches):
        return node
    return {"anyOf": [node, {"type": "null"}]}


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(n) for n in node]
    if not isinstance(node, Mapping):
        return node
    if "patternProperties" in node or isinstance(node.get("items"), bool):
        raise _NotStrict
    out: Schema = {k: _strict(v) for k, v in node.items() if k not in _STRICT_DROP}
    fmt = out.get("format")
    if isinstance(fmt, str) and fmt not in _STRICT_FORMATS:  # a property named "format": a dict
        del out["format"]
        text = out.get("description")
        out["description"] = f"{text} (format: {fmt})" if text else f"(format: {fmt})"
    is_object = out.get("type") == "object" or "properties" in out
    if is_object:
        extra = node.get("additionalProperties")
        if extra not in (None, False):
            raise _NotStrict
        props: dict[str, Any] = out.get("properties", {})
        if not all(isinstance(v, Mapping) for v in props.values()):
            # a boolean subschema ({"a": true}: any value) has no strict form, and
            # _nullable(True) was an AttributeError out of the request build
            raise _NotStrict
        required = set(node.get("required", []))
        out["properties"] = {k: v if k in required else _nullable(v) for k, v in props.items()}
        out["required"] = list(props)
        out["additionalProperties"] = False
    return out


def openai_strict_schema(schema: Mapping[str, Any]) -> Schema | None:
    """A strict-mode copy of ``schema``, or ``None`` when it cannot be strict."""
    try:
        result: Schema = _strict(copy.deepcopy(dict(schema)))
    except _NotStrict:
        return None
    return result


def _has_optional(node: Any) -> bool:
    """Whether an object anywhere in ``node`` has a property it does not require."""
    if isinstance(node, list):
        return any(_has_optional(n) for n in node)
    if not isinstance(node, Mapping):
        return False
    props = node.get("properties")
    if isinstance(props, Mapping) and set(props) - set(node.get("required", ())):
        return True
    return any(_has_optional(v) for v in node.values())


def openai_output_schema(schema: Mapping[str, Any]) -> tuple[Schema, bool]:
    """``(schema, strict)`` for a native structured answer (``response_format`` /
    ``text.format``). Strict mode makes every property required and the optional ones
    nullable, so a model would send ``null`` for an omitted field and fail validation
    against the original type: strict only when every property is already required."""
    if not _has_optional(schema):
        strict = openai_strict_schema(schema)
        if strict is not None:
            return strict, True
    return dict(schema), False


# ----------------------------------------------------------------- Anthropic / Claude

# What Claude's constrained decoding takes (platform.claude.com, "Structured outputs",
# JSON Schema limitations); every other keyword is appended to the description.
_CLOSED_KEEP = frozenset(
    {
        "type",
        "enum",
        "const",
        "anyOf",
        "allOf",
        "$ref",
        "$defs",
        "properties",
        "required",
        "items",
        "description",
        "title",
    }
)
_CLOSED_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)


def closed_schema(schema: Mapping[str, Any]) -> Schema:
    """A copy of ``schema`` for Claude's structured outputs (see the module docstring)."""
    result: Schema = _closed(schema)
    return result


def _closed_keeps(key: str, value: Any) -> bool:
    if key == "format":
        return value in _CLOSED_FORMATS
    if key == "minItems":
        return value in (0, 1)
    return key in _CLOSED_KEEP


def _closed(node: Any) -> Any:
    if isinstance(node, list):
        return [_closed(n) for n in node]
    if not isinstance(node, Mapping):
        return node
    out: Schema = {}
    moved: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "$defs") and isinstance(value, Mapping):
            out[key] = {name: _closed(sub) for name, sub in value.items()}
        elif key in ("anyOf", "oneOf", "allOf", "items"):
            out["anyOf" if key == "oneOf" else key] = _closed(value)
        elif key == "additionalProperties" and value is False:
            continue
        elif _closed_keeps(key, value):
            out[key] = value
        elif key not in _ANNOTATIONS and key != "default":
            moved[key] = value
    if out.get("type") == "object" or "properties" in out:
        out["additionalProperties"] = False
    if moved:
        note = "{" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in moved.items()) + "}"
        text = out.get("description")
        out["description"] = f"{text}\n\n{note}" if text else note
    return out


# ----------------------------------------------------------------- native output support

# Claude 4.5 and later take ``output_config.format`` (GA on the Claude API and on Bedrock
# for Haiku/Sonnet/Opus 4.5, Opus/Sonnet 4.6, ...: platform.claude.com, "Structured
# outputs"); a trailing date (``claude-sonnet-4-20250514``) is not a minor version.
_CLAUDE_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?![0-9])")
_GEMINI_VERSION = re.compile(r"gemini-(\d+)")


def claude_native_output(model_id: str) -> bool:
    """Whether the Claude model ``model_id`` (an API id or a Bedrock model id) takes a
    native structured-output schema."""
    match = _CLAUDE_VERSION.search(model_id)
    if match is None:
        return False
    return (int(match[1]), int(match[2] or 0)) >= (4, 5)


def gemini_version(model: str) -> int | None:
    """The major version a Gemini model name carries (``gemini-2.5-flash`` -> 2)."""
    match = _GEMINI_VERSION.search(model)
    return int(match[1]) if match is not None else None


def gemini_native_output(model: str, with_tools: bool) -> bool:
    """Whether the Gemini model ``model`` takes ``responseJsonSchema`` for this request:
    every Gemini model without function declarations; with them only Gemini 3 and later
    (ai.google.dev, "Structured outputs with tools"; 2.x rejects the combination)."""
    match = _GEMINI_VERSION.search(model)
    if match is None:
        return False
    return not with_tools or int(match[1]) >= 3
