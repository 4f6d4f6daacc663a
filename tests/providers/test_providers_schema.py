"""Schema sanitisation, construct by construct (Gemini subset, OpenAI strict mode)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.providers.schema import (
    UnsupportedSchema,
    gemini_schema,
    inline_refs,
    openai_strict_schema,
)


def obj(**props: object) -> dict:
    return {"type": "object", "properties": props}


# ----------------------------------------------------------------- Gemini: kept / rewritten


def test_ref_and_defs_are_inlined():
    schema = {
        "type": "object",
        "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}},
        "properties": {"unit": {"$ref": "#/$defs/Unit", "description": "unit"}},
    }
    out = gemini_schema(schema, "t")
    assert out == {
        "type": "object",
        "properties": {"unit": {"type": "string", "enum": ["c", "f"], "description": "unit"}},
    }


def test_legacy_definitions_and_nested_refs():
    schema = {
        "definitions": {"A": {"$ref": "#/definitions/B"}, "B": {"type": "integer"}},
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/A"}},
    }
    assert gemini_schema(schema)["properties"]["a"] == {"type": "integer"}


def test_recursive_ref_is_rejected_naming_tool():
    schema = {
        "$defs": {"Node": obj(child={"$ref": "#/$defs/Node"})},
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    }
    with pytest.raises(UnsupportedSchema, match=r"tool 'tree'.*recursive \$ref"):
        gemini_schema(schema, "tree")


def test_remote_ref_is_rejected():
    with pytest.raises(UnsupportedSchema, match="not a local reference"):
        inline_refs({"$ref": "https://example.com/s.json"}, "t")


def test_const_becomes_single_value_enum():
    out = gemini_schema(obj(mode={"const": "fast"}))
    assert out["properties"]["mode"] == {"type": "string", "enum": ["fast"]}


def test_nullable_type_list_and_anyof_null():
    out = gemini_schema(
        obj(a={"type": ["string", "null"]}, b={"anyOf": [{"type": "integer"}, {"type": "null"}]})
    )
    assert out["properties"]["a"] == {"type": "string", "nullable": True}
    assert out["properties"]["b"] == {"type": "integer", "nullable": True}


def test_anyof_of_constants_becomes_enum():
    out = gemini_schema(obj(m={"anyOf": [{"const": "fast"}, {"const": "deep"}]}))
    assert out["properties"]["m"] == {"type": "string", "enum": ["fast", "deep"]}
    out = gemini_schema(obj(m={"oneOf": [{"const": "a"}, {"enum": ["b", "c"]}]}))
    assert out["properties"]["m"]["enum"] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([1, 2, 3], "integer"),
        ([0.5, 2], "number"),
        ([True, False], "boolean"),
        (["a", "b"], "string"),
    ],
)
@pytest.mark.parametrize("key", ["oneOf", "anyOf"])
def test_union_of_constants_is_accepted_like_the_same_enum(values, kind, key):
    as_enum = gemini_schema(obj(n={"type": kind, "enum": values}))
    as_union = gemini_schema(obj(n={key: [{"const": v, "title": str(v)} for v in values]}))
    assert as_union == as_enum
    nullable = gemini_schema(obj(n={key: [*({"const": v} for v in values), {"type": "null"}]}))
    assert nullable["properties"]["n"] == {"type": kind, "enum": values, "nullable": True}


def test_union_of_constants_of_different_types_is_still_rejected():
    with pytest.raises(UnsupportedSchema, match="oneOf"):
        gemini_schema(obj(n={"oneOf": [{"const": 1}, {"const": "one"}]}))


def test_allof_objects_are_merged():
    schema = {
        "allOf": [obj(a={"type": "string"}) | {"required": ["a"]}, obj(b={"type": "integer"})]
    }
    out = gemini_schema(schema)
    assert out == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a"],
    }


def test_additional_properties_false_is_dropped():
    out = gemini_schema(obj(a={"type": "string"}) | {"additionalProperties": False})
    assert "additionalProperties" not in out


def test_annotations_dropped_and_validation_keywords_described():
    schema = obj(
        n={
            "type": "integer",
            "exclusiveMinimum": 0,
            "multipleOf": 5,
            "description": "count",
            "examples": [5],
        }
    ) | {"$schema": "x", "$id": "y"}
    out = gemini_schema(schema)
    assert "$schema" not in out and "$id" not in out
    n = out["properties"]["n"]
    assert "exclusiveMinimum" not in n and "examples" not in n
    assert n["description"] == "count (exclusiveMinimum: 0; multipleOf: 5)"


def test_unsupported_string_format_moves_to_description():
    out = gemini_schema(
        obj(e={"type": "string", "format": "email"}, d={"type": "string", "format": "date-time"})
    )
    assert out["properties"]["e"] == {"type": "string", "description": "(format: email)"}
    assert out["properties"]["d"]["format"] == "date-time"


# ----------------------------------------------------------------- Gemini: rejected


@pytest.mark.parametrize(
    ("schema", "construct"),
    [
        (obj(x={"anyOf": [{"type": "string"}, {"type": "integer"}]}), "anyOf"),
        (obj(x={"oneOf": [obj(a={"type": "string"}), obj(b={"type": "string"})]}), "oneOf"),
        (
            obj(x={"type": "object", "additionalProperties": {"type": "string"}}),
            "additionalProperties",
        ),
        (
            obj(x={"type": "object", "patternProperties": {"^s_": {"type": "string"}}}),
            "patternProperties",
        ),
        (obj(x={"type": "array", "prefixItems": [{"type": "string"}]}), "prefixItems"),
        (obj(x={"not": {"type": "string"}}), "not"),
        (obj(x={"type": ["string", "integer"]}), "type"),
        (
            {"allOf": [obj(a={"type": "string"}), obj(a={"type": "integer"}) | {"type": "array"}]},
            "allOf",
        ),
    ],
)
def test_meaning_changing_constructs_are_rejected(schema, construct):
    with pytest.raises(UnsupportedSchema) as info:
        gemini_schema(schema, "my_tool")
    message = str(info.value)
    assert "'my_tool'" in message and construct in message
    assert "\n" not in message


def test_input_is_not_mutated():
    schema = {
        "$defs": {"A": {"const": "x"}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "additionalProperties": False,
    }
    before = copy.deepcopy(schema)
    gemini_schema(schema)
    openai_strict_schema(schema)
    assert schema == before


# ----------------------------------------------------------------- OpenAI strict


def test_strict_required_everywhere_and_optional_nullable():
    schema = obj(
        city={"type": "string"},
        unit={"type": "string", "enum": ["c", "f"]},
        nested=obj(x={"type": "integer"}) | {"required": ["x"]},
    ) | {"required": ["city"]}
    out = openai_strict_schema(schema)
    assert out is not None
    assert out["additionalProperties"] is False
    assert out["required"] == ["city", "unit", "nested"]
    assert out["properties"]["city"] == {"type": "string"}
    assert out["properties"]["unit"] == {"type": ["string", "null"], "enum": ["c", "f", None]}
    nested = out["properties"]["nested"]
    assert nested["type"] == ["object", "null"]
    assert nested["additionalProperties"] is False and nested["required"] == ["x"]


def test_strict_moves_a_format_it_does_not_take_into_the_description():
    # was sent as is: OpenAI refuses the whole request ("'uri' is not a valid format")
    schema = obj(
        url={"type": "string", "format": "uri", "description": "The page."},
        folder={"type": "string", "format": "path"},
        ref={"type": "string", "format": "uuid"},
        format={"type": "string"},  # a property named "format" stays a property
    ) | {"required": ["url", "folder", "ref", "format"]}
    out = openai_strict_schema(schema)
    assert out is not None
    props = out["properties"]
    assert props["url"] == {"type": "string", "description": "The page. (format: uri)"}
    assert props["folder"] == {"type": "string", "description": "(format: path)"}
    assert props["ref"] == {"type": "string", "format": "uuid"}
    assert props["format"] == {"type": "string"}


def test_strict_untyped_optional_wrapped_in_anyof():
    out = openai_strict_schema(obj(r={"$ref": "#/$defs/R"}) | {"$defs": {"R": obj()}})
    assert out is not None
    assert out["properties"]["r"] == {"anyOf": [{"$ref": "#/$defs/R"}, {"type": "null"}]}
    assert out["$defs"]["R"]["additionalProperties"] is False


def test_strict_already_nullable_is_not_doubled():
    out = openai_strict_schema(obj(o={"anyOf": [{"type": "integer"}, {"type": "null"}]}))
    assert out is not None
    assert out["properties"]["o"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}


@pytest.mark.parametrize(
    "schema",
    [
        obj(m={"type": "object", "additionalProperties": {"type": "string"}}),
        obj(m={"type": "object", "patternProperties": {"x": {}}}),
        obj() | {"additionalProperties": True},
        obj(a=True),  # a boolean subschema: was an AttributeError out of the request build
        obj(a=False),
        obj(a={"type": "array", "items": True}),
    ],
)
def test_strict_impossible_returns_none(schema):
    assert openai_strict_schema(schema) is None


simple = st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean"])})


@settings(deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), simple, max_size=6), st.data())
def test_strict_property(props, data):
    required = data.draw(
        st.lists(st.sampled_from(sorted(props)), unique=True) if props else st.just([])
    )
    out = openai_strict_schema(obj(**props) | {"required": required})
    assert out is not None
    assert set(out["required"]) == set(props)
    for name, prop in out["properties"].items():
        assert ("null" in prop["type"]) == (name not in required)
    gem = gemini_schema(obj(**props) | {"required": required})
    assert set(gem["properties"]) == set(props)
