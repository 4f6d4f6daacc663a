"""Schema derivation, construct by construct, with exact expected schemas."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional, TypedDict

import annotated_types as at
import pytest
from pydantic import BaseModel, Field

from loopwright.tools import ToolContext, function_schema, tool, type_schema


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (Any, {}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
        (Literal["a", 1], {"enum": ["a", 1]}),
        (Color, {"type": "string", "enum": ["red", "green"]}),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),  # noqa: UP045
        (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (list, {"type": "array"}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (set[str], {"type": "array", "uniqueItems": True, "items": {"type": "string"}}),
        (frozenset[int], {"type": "array", "uniqueItems": True, "items": {"type": "integer"}}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict, {"type": "object"}),
        (dict[str, Any], {"type": "object"}),
        (
            list[list[int]],
            {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        ),
    ],
)
def test_type_schema_per_construct(annotation: Any, expected: dict[str, Any]) -> None:
    assert type_schema(annotation) == expected


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (Annotated[str, "the name"], {"description": "the name", "type": "string"}),
        (Annotated[int, at.Ge(1), at.Le(10)], {"type": "integer", "minimum": 1, "maximum": 10}),
        (
            Annotated[float, at.Gt(0), at.Lt(1)],
            {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        ),
        (
            Annotated[int, at.Interval(ge=0, lt=5)],
            {"type": "integer", "minimum": 0, "exclusiveMaximum": 5},
        ),
        (Annotated[int, at.MultipleOf(3)], {"type": "integer", "multipleOf": 3}),
        (
            Annotated[str, at.MinLen(2), at.MaxLen(5)],
            {"type": "string", "minLength": 2, "maxLength": 5},
        ),
        (
            Annotated[list[int], at.Len(1, 3)],
            {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
        ),
        (
            Annotated[str, Field(description="code", pattern=r"^[A-Z]{3}$", min_length=3)],
            {"description": "code", "type": "string", "minLength": 3, "pattern": "^[A-Z]{3}$"},
        ),
        (
            Annotated[int, Field(ge=0, le=100, description="percent")],
            {"description": "percent", "type": "integer", "minimum": 0, "maximum": 100},
        ),
    ],
)
def test_annotated_descriptions_and_constraints(annotation: Any, expected: dict[str, Any]) -> None:
    assert type_schema(annotation) == expected


def test_google_docstring_params_defaults_and_required() -> None:
    def search(query: str, limit: int = 10, color: Color = Color.RED) -> list[str]:
        """Search the catalogue.

        Longer explanation.

        Args:
            query: Words to look for.
            limit: Maximum number of hits.
            color: Colour filter.
        """
        return []

    fs = function_schema(search)
    assert fs.description == "Search the catalogue.\n\nLonger explanation."
    assert fs.parameters == {
        "type": "object",
        "properties": {
            "query": {"description": "Words to look for.", "type": "string"},
            "limit": {"description": "Maximum number of hits.", "type": "integer", "default": 10},
            "color": {
                "description": "Colour filter.",
                "type": "string",
                "enum": ["red", "green"],
                "default": "red",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_numpy_and_sphinx_docstrings() -> None:
    def numpy_style(x: int) -> int:
        """Double it.

        Parameters
        ----------
        x : int
            The number.
        """
        return 2 * x

    def sphinx_style(x: int) -> int:
        """Double it.

        :param x: The number.
        """
        return 2 * x

    for fn in (numpy_style, sphinx_style):
        fs = function_schema(fn)
        assert fs.description == "Double it."
        assert fs.parameters["properties"]["x"] == {"description": "The number.", "type": "integer"}


def test_annotated_description_wins_over_docstring() -> None:
    def f(x: Annotated[int, "from annotation"]) -> None:
        """Do.

        Args:
            x: from docstring
        """

    assert function_schema(f).parameters["properties"]["x"]["description"] == "from annotation"


@dataclass
class Address:
    """A postal address.

    Attributes:
        street: Street and number.
    """

    street: str
    city: str = "Paris"
    tags: list[str] = field(default_factory=list)


def test_nested_dataclass_is_inlined_with_field_docs() -> None:
    assert type_schema(Address) == {
        "description": "A postal address.",
        "type": "object",
        "properties": {
            "street": {"description": "Street and number.", "type": "string"},
            "city": {"type": "string", "default": "Paris"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["street"],
        "additionalProperties": False,
    }


@dataclass
class Node:
    value: int
    children: list[Node] = field(default_factory=list)


def test_recursive_dataclass_uses_defs() -> None:
    schema = type_schema(Node)
    assert schema == {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["value"],
                "additionalProperties": False,
            }
        },
    }


class Branch(TypedDict, total=False):
    value: int
    kids: list[Branch]


def test_recursive_typeddict_uses_defs_and_takes_arguments() -> None:
    """A TypedDict that refers to itself was a RecursionError when the tool was built."""
    assert type_schema(Branch)["$defs"]["Branch"]["properties"]["kids"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Branch"},
    }

    @tool
    def size(tree: Branch) -> int:
        """Count the nodes."""
        return 1 + sum(size.fn(k) for k in tree.get("kids", []))

    assert size.validate({"tree": {"value": 1, "kids": [{"value": 2}]}}) == []
    assert [v.pointer for v in size.validate({"tree": {"kids": [{"value": "x"}]}})] == [
        "/tree/kids/0/value"
    ]


class Item(BaseModel):
    name: str = Field(description="item name")
    qty: int = 1


class Order(BaseModel):
    items: list[Item]


def test_pydantic_model_titles_stripped_and_defs_hoisted() -> None:
    def place(order: Order) -> str:
        return "ok"

    params = function_schema(place).parameters
    assert params["properties"]["order"] == {
        "properties": {"items": {"items": {"$ref": "#/$defs/Item"}, "type": "array"}},
        "required": ["items"],
        "type": "object",
    }
    assert params["$defs"] == {
        "Item": {
            "properties": {
                "name": {"description": "item name", "type": "string"},
                "qty": {"default": 1, "type": "integer"},
            },
            "required": ["name"],
            "type": "object",
        }
    }


class Movie(TypedDict):
    title: str
    year: int


def test_typeddict() -> None:
    assert type_schema(Movie) == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["title", "year"],
        "additionalProperties": False,
    }


def test_tool_context_parameter_is_excluded() -> None:
    def f(x: int, ctx: ToolContext) -> int:
        return x

    fs = function_schema(f)
    assert fs.context_param == "ctx"
    assert list(fs.parameters["properties"]) == ["x"]


def test_tool_without_parameters() -> None:
    @tool
    def now() -> str:
        """Current time."""
        return "noon"

    assert now.spec.parameters == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    assert now.spec.description == "Current time."


@pytest.mark.parametrize(
    ("fn_src", "fragment"),
    [
        ("def f(*args: int) -> None: ...", "named"),
        ("def f(**kw: int) -> None: ...", "named"),
        ("def f(x: complex) -> None: ...", "no JSON Schema mapping"),
        ("def f(x: dict[int, str]) -> None: ...", "dict[str, ...]"),
    ],
)
def test_unsupported_signatures_name_the_parameter(fn_src: str, fragment: str) -> None:
    ns: dict[str, Any] = {}
    exec(fn_src, ns)
    with pytest.raises(ValueError, match="tool 'f'") as info:
        function_schema(ns["f"])
    assert fragment in str(info.value)


def test_unresolvable_hint_is_a_clear_error() -> None:
    def f(x: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(ValueError, match="cannot resolve its type hints"):
        function_schema(f)
