"""``@tool`` and ``Tool.from_schema`` take explicit keywords; a typo names the valid ones."""

from __future__ import annotations

import inspect

import pytest

from loopwright import tool
from loopwright.tools import Tool

_FLAGS = [
    "requires_confirmation",
    "permission",
    "idempotent",
    "timeout",
    "max_result_chars",
    "validators",
    "idempotency_key",
    "unknown_outcome",
    "outcome_check",
    "inline",
    "untrusted_output",
    "confirm_when_tainted",
]


def test_typo_in_tool_names_the_valid_keywords() -> None:
    with pytest.raises(TypeError) as info:

        @tool(idempotnet=True)  # type: ignore[call-overload]
        def f(x: int) -> int:
            return x

    message = str(info.value)
    assert message.startswith("tool() got unknown keyword argument 'idempotnet'")
    assert "did you mean 'idempotent'?" in message
    assert "valid keywords: name, description, " + ", ".join(_FLAGS) in message
    assert "_ToolOptions" not in message


def test_typo_in_from_schema_names_the_valid_keywords() -> None:
    schema = {"type": "object", "properties": {}}
    with pytest.raises(TypeError, match=r"Tool.from_schema\(\) got unknown keyword argument"):
        Tool.from_schema("t", "d", schema, lambda: 1, timeot=3)  # type: ignore[call-arg]


def test_flags_are_explicit_keywords() -> None:
    for fn, first in ((tool, ["name", "description"]), (Tool.from_schema, [])):
        params = inspect.signature(fn).parameters.values()
        keywords = [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
        assert keywords == first + _FLAGS
        assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def test_flags_reach_the_tool() -> None:
    @tool(permission="write", idempotent=True, timeout=5, confirm_when_tainted=False)
    def g(x: int) -> int:
        return x

    assert (g.spec.permission.name, g.spec.idempotent, g.spec.timeout) == ("WRITE", True, 5)
    assert g.confirm_when_tainted is False
    assert tool(g) is g  # re-wrapping with no new flags keeps the tool
    assert tool(untrusted_output=True)(g) is not g


_SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}


def test_from_schema_refuses_a_schema_the_function_cannot_take() -> None:
    with pytest.raises(ValueError, match=r"declares 'id' but the function takes no such .*user"):
        Tool.from_schema("lookup", "d", _SCHEMA, lambda user: user)
    with pytest.raises(ValueError, match=r"requires 'limit' but the schema does not declare"):
        Tool.from_schema("lookup", "d", _SCHEMA, lambda id, limit: id)
    # what fits: a default for the undeclared parameter, or **kwargs taking anything
    assert Tool.from_schema("lookup", "d", _SCHEMA, lambda id, limit=3: id).name == "lookup"
    assert Tool.from_schema("lookup", "d", _SCHEMA, lambda **kw: kw).name == "lookup"


def test_name_and_description_of_the_wrong_type_are_named() -> None:
    with pytest.raises(ValueError, match="description must be a str"):
        Tool.from_schema("lookup", None, _SCHEMA, lambda id: id)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool name 5 is invalid"):
        tool(name=5)(lambda id: id)  # type: ignore[call-overload]


def test_tool_of_something_not_callable_says_so() -> None:
    from loopwright.tools import ToolRegistry

    with pytest.raises(ValueError, match=r"tool\(\) needs a function or a Tool, got str 'agent'"):
        ToolRegistry({"agent": object()})  # type: ignore[arg-type]  # a dict iterates its keys
