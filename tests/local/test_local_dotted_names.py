"""Dotted tool names (``math.factorial``): accepted by ``Tool.from_schema``, kept by the
embedded model's prompt/grammar, and mapped to a valid wire name by the HTTP adapters."""

from __future__ import annotations

import pytest

from loopwright.core.messages import Message
from loopwright.core.protocols import ModelRequest
from loopwright.providers import local_output as lo
from loopwright.providers import local_prompt as lp
from loopwright.providers._common import VALID_NAME
from loopwright.providers.openai_chat import OpenAIChatModel
from loopwright.tools import Tool

SCHEMA = {
    "type": "object",
    "properties": {"number": {"type": "integer"}},
    "required": ["number"],
}


def factorial_tool() -> Tool:
    return Tool.from_schema("math.factorial", "Factorial of a number.", SCHEMA, lambda number: 1)


def test_from_schema_accepts_dotted_names() -> None:
    assert factorial_tool().name == "math.factorial"


@pytest.mark.parametrize("bad", [".hidden", "a b", "", "x" * 65, "a/b"])
def test_other_invalid_names_are_still_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="tool name"):
        Tool.from_schema(bad, "d", SCHEMA, lambda number: 1)


def test_openai_wire_name_is_valid_and_maps_back() -> None:
    spec = factorial_tool().spec
    request = ModelRequest([Message.user("5!")], tools=[spec])
    payload, names = OpenAIChatModel("m", api_key="k").encode(request)
    wire = payload["tools"][0]["function"]["name"]
    assert wire != spec.name and VALID_NAME.match(wire)
    assert names.from_wire(wire) == "math.factorial"


def test_embedded_prompt_and_output_keep_the_dotted_name() -> None:
    spec = factorial_tool().spec
    assert "\nmath.factorial: Factorial of a number." in lp.render_prefix([spec], None)
    schema = lp.output_schema([spec], "tools", lp.GrammarBounds())
    assert schema["properties"]["tool"] == {"const": "math.factorial"}
    parsed = lo.parse_output('{"tool": "math.factorial", "arguments": {"number": 5}}', [spec.name])
    assert parsed == lo.ParsedCall("math.factorial", {"number": 5})
