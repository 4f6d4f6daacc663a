"""Errors inside optional nested objects are reported at the field; sloppy raw arguments
from a provider are repaired (or returned to the model as invalid_arguments)."""

from __future__ import annotations

from pydantic import BaseModel

from loopwright import Agent, ScriptedModel
from loopwright.core.messages import ToolCallPart
from loopwright.tools import Dispatcher, ToolRegistry, tool
from loopwright.tools.builtin import make_calculator


class Address(BaseModel):
    city: str
    zip: int


class Person(BaseModel):
    name: str
    address: Address | None = None


@tool(inline=True)
def save(person: Person, backup: Address | None = None) -> str:
    """Save a person."""
    return "saved"


def test_errors_inside_optional_models_point_at_the_field() -> None:
    found = save.validate(
        {"person": {"name": "a", "address": {"city": "x", "zip": "nope"}}, "backup": {"city": 3}}
    )
    pointers = {v.pointer: v.message for v in found}
    assert pointers["/person/address/zip"] == "'nope' is not of type 'integer'"
    assert pointers["/backup/city"] == "3 is not of type 'string'"
    assert pointers["/backup/zip"] == "required property is missing"
    assert not any("any of the given schemas" in m for m in pointers.values())


def test_a_value_matching_no_branch_type_keeps_the_parent_message() -> None:
    found = save.validate({"person": {"name": "a", "address": [1]}})
    assert [(v.pointer, "any of the given schemas" in v.message) for v in found] == [
        ("/person/address", True)
    ]


async def test_sloppy_raw_arguments_are_repaired_at_dispatch() -> None:
    d = Dispatcher(ToolRegistry([make_calculator()]))
    call = ToolCallPart("c", "calculator", {}, "{'expression': '1+1',}")
    out = await d.run_one(call)
    assert out.result.content == "2" and out.repairs
    bad = await d.run_one(ToolCallPart("c", "calculator", {}, "expression = 1+1"))
    assert bad.result.error_kind == "invalid_arguments"


def test_raw_arguments_from_a_model_reply_reach_the_tool() -> None:
    call = ToolCallPart("c1", "calculator", {}, "{'expression': '1+1',}")
    result = Agent(ScriptedModel([[call], "two"]), tools=[make_calculator()]).run("1+1?")
    assert result.messages[-2].parts[0].content == "2"
    assert result.answer == "two"
