"""Structured output through a real adapter: the OpenAI Chat adapter against the fake
server, with the final-answer tool on the wire (docs/loop.md, "Structured output")."""

from __future__ import annotations

import json

from contract import Answer, Call
from fakeserver import FakeServer
from kit_openai import ChatKit
from pydantic import BaseModel, Field

from loopwright import Agent, RunStop
from loopwright.loop.output import FINAL_RESULT


class Forecast(BaseModel):
    city: str
    high_c: float = Field(le=60)
    summary: str


def test_openai_chat_final_result_re_asked_then_valid() -> None:
    kit = ChatKit("openai")
    bad = {"city": "Oslo", "high_c": 99, "summary": "hot"}
    good = {"city": "Oslo", "high_c": 12.5, "summary": "mild"}
    with FakeServer() as server:
        server.push(
            kit.reply(Answer(calls=(Call("call_1", FINAL_RESULT, bad),), stop="tool_use")),
            kit.reply(Answer(calls=(Call("call_2", FINAL_RESULT, good),), stop="tool_use")),
        )
        agent = Agent(kit.model(server.url), output_type=Forecast)
        result = agent.run("Forecast for Oslo?")
        first, second = (r.json for r in server.requests)
    assert result.stop is RunStop.FINAL_ANSWER
    assert result.output == Forecast(city="Oslo", high_c=12.5, summary="mild")
    # the final-answer tool went out with the output type's schema
    (tool,) = first["tools"]
    assert tool["function"]["name"] == FINAL_RESULT
    assert tool["function"]["parameters"]["properties"]["high_c"]["maximum"] == 60
    # the second request answers the invalid call with errors naming the field
    answer = second["messages"][-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_1"
    assert "high_c: Input should be less than or equal to 60" in answer["content"]
    assert json.loads(result.answer) == good
