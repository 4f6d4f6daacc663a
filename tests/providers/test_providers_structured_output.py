"""Structured output through the real adapters and their official SDKs, against the fake
servers: the provider's native structured-output mode where the model has one (the schema
on the wire, the answer text validated and re-asked with its errors), the final-answer
tool otherwise (docs/loop.md, "Structured output")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contract import Answer, Call
from fakeserver import FakeServer, Reply
from kit_anthropic import AnthropicKit
from kit_bedrock import OPTIONS, BedrockKit
from kit_gemini import GeminiKit
from kit_openai import ChatKit, ResponsesKit
from pydantic import BaseModel, Field

from loopwright import Agent, RunStop, tool
from loopwright.core.errors import ConfigError
from loopwright.core.protocols import Model
from loopwright.loop.output import FINAL_RESULT
from loopwright.providers.bedrock import BedrockModel
from loopwright.providers.gemini import GeminiModel
from loopwright.providers.openai_chat import OpenAIChatModel
from loopwright.providers.registry import VENDORS
from loopwright.providers.schema import claude_native_output, closed_schema, gemini_native_output


class Forecast(BaseModel):
    """A weather forecast for one city."""

    city: str
    high_c: float = Field(le=60)
    summary: str


BAD = {"city": "Oslo", "high_c": 99, "summary": "hot"}
GOOD = {"city": "Oslo", "high_c": 12.5, "summary": "mild"}
ERROR_LINE = "high_c: Input should be less than or equal to 60"


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return city


def _text(kit: Any, value: object) -> Any:
    return kit.reply(Answer(text=json.dumps(value)))


def _run_bad_then_good(kit: Any, model: Model | None = None) -> tuple[Any, list[Any]]:
    """An agent asking for a Forecast, answered first with an invalid one, then a valid
    one: the result and the two recorded requests."""
    with FakeServer() as server:
        server.push(_text(kit, BAD), _text(kit, GOOD))
        agent = Agent(model or kit.model(server.url), output_type=Forecast)
        result = agent.run("Forecast for Oslo?")
        requests = list(server.requests)
    assert result.stop is RunStop.FINAL_ANSWER, result.detail
    assert result.output == Forecast(**GOOD)
    assert json.loads(result.answer) == GOOD
    assert len(requests) == 2
    return result, requests


def _openai_chat(url: str) -> OpenAIChatModel:
    return OpenAIChatModel(
        "gpt-4o", base_url=url + "/v1", api_key="sk-test", vendor=VENDORS["openai"]
    )


def test_openai_chat_sends_response_format_and_re_asks_with_the_errors() -> None:
    kit = ChatKit("openai")
    with FakeServer() as server:
        server.push(_text(kit, BAD), _text(kit, GOOD))
        result = Agent(_openai_chat(server.url), output_type=Forecast).run("Forecast?")
        first, second = (r.json for r in server.requests)
    assert result.output == Forecast(**GOOD)
    assert "tools" not in first  # no final-answer tool in the native mode
    fmt = first["response_format"]
    assert fmt["type"] == "json_schema"
    spec = fmt["json_schema"]
    assert spec["name"] == "Forecast" and spec["description"].startswith("A weather forecast")
    # every field is required, so strict mode changes nothing the answer is checked against
    assert spec["strict"] is True and spec["schema"]["additionalProperties"] is False
    assert spec["schema"]["properties"]["high_c"]["maximum"] == 60
    reask = second["messages"][-1]
    assert reask["role"] == "user" and ERROR_LINE in reask["content"]
    assert "answer again with the corrected JSON" in reask["content"]


def test_openai_chat_optional_fields_are_sent_non_strict() -> None:
    class Loose(BaseModel):
        city: str
        note: str = ""

    kit = ChatKit("openai")
    with FakeServer() as server:
        server.push(_text(kit, {"city": "Oslo"}))
        result = Agent(_openai_chat(server.url), output_type=Loose).run("?")
        (request,) = (r.json for r in server.requests)
    assert result.output == Loose(city="Oslo")
    spec = request["response_format"]["json_schema"]
    # strict would make "note" required and nullable, and a null note would not validate
    assert spec["strict"] is False and spec["schema"]["required"] == ["city"]


def test_openai_responses_sends_text_format() -> None:
    kit = ResponsesKit()
    _, (first, second) = _run_bad_then_good(kit)
    body = first.json
    fmt = body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["name"] == "Forecast" and fmt["strict"] is True
    assert fmt["schema"]["required"] == ["city", "high_c", "summary"]
    assert "tools" not in body
    reask = second.json["input"][-1]
    assert reask["role"] == "user" and ERROR_LINE in json.dumps(reask)


def test_anthropic_sends_output_config_with_a_closed_schema() -> None:
    kit = AnthropicKit()  # claude-sonnet-5: structured outputs are GA from Claude 4.5 on
    _, (first, second) = _run_bad_then_good(kit)
    body = first.json
    fmt = body["output_config"]["format"]
    assert fmt["type"] == "json_schema" and "tools" not in body
    schema = fmt["schema"]
    assert schema["additionalProperties"] is False
    # the decoder takes no numeric bounds: the bound moves into the description, and the
    # answer is still validated against it (the first answer is re-asked)
    assert "maximum" not in schema["properties"]["high_c"]
    assert "maximum: 60" in schema["properties"]["high_c"]["description"]
    reask = second.json["messages"][-1]
    assert reask["role"] == "user" and ERROR_LINE in json.dumps(reask)


def test_gemini_without_tools_sends_response_json_schema() -> None:
    kit = GeminiKit()  # gemini-2.5-flash
    _, (first, second) = _run_bad_then_good(kit)
    generation = first.json["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    assert generation["responseJsonSchema"]["properties"]["high_c"]["maximum"] == 60
    assert "tools" not in first.json
    last = second.json["contents"][-1]
    assert last["role"] == "user" and ERROR_LINE in last["parts"][0]["text"]


def test_gemini_2_with_tools_uses_the_final_answer_tool_and_gemini_3_the_schema() -> None:
    kit = GeminiKit()
    call = Call("c1", FINAL_RESULT, GOOD)
    with FakeServer() as server:
        server.push(kit.reply(Answer(calls=(call,), stop="tool_use")))
        old = Agent(kit.model(server.url), [lookup], output_type=Forecast).run("?")
        (request,) = (r.json for r in server.requests)
    assert old.output == Forecast(**GOOD)
    assert "responseJsonSchema" not in request.get("generationConfig", {})
    names = [d["name"] for d in request["tools"][0]["functionDeclarations"]]
    assert names == ["lookup", FINAL_RESULT]
    with FakeServer() as server:
        server.push(_text(kit, GOOD))
        model = GeminiModel("gemini-3-pro-preview", base_url=server.url, api_key="k")
        new = Agent(model, [lookup], output_type=Forecast).run("?")
        (request,) = (r.json for r in server.requests)
    assert new.output == Forecast(**GOOD)
    assert "responseJsonSchema" in request["generationConfig"]
    names = [d["name"] for d in request["tools"][0]["functionDeclarations"]]
    assert names == ["lookup"]


def test_bedrock_claude_sends_output_config_text_format() -> None:
    kit = BedrockKit()
    with FakeServer() as server:
        model = BedrockModel(
            "anthropic.claude-sonnet-4-5-20250929-v1:0", base_url=server.url, options=OPTIONS
        )
        server.push(_text(kit, BAD), _text(kit, GOOD))
        result = Agent(model, output_type=Forecast).run("?")
        first, second = (r.json for r in server.requests)
    assert result.output == Forecast(**GOOD)
    text_format = first["outputConfig"]["textFormat"]
    assert text_format["type"] == "json_schema"
    spec = text_format["structure"]["jsonSchema"]
    assert spec["name"] == "Forecast"
    schema = json.loads(spec["schema"])  # a JSON string on this wire
    assert schema["additionalProperties"] is False and "toolConfig" not in first
    assert ERROR_LINE in json.dumps(second["messages"][-1])


def test_bedrock_older_claude_uses_the_final_answer_tool() -> None:
    kit = BedrockKit()  # Claude 3.7 Sonnet: no native structured output
    call = Call("c1", FINAL_RESULT, GOOD)
    with FakeServer() as server:
        server.push(kit.reply(Answer(calls=(call,), stop="tool_use")))
        result = Agent(kit.model(server.url), output_type=Forecast).run("?")
        (request,) = (r.json for r in server.requests)
    assert result.output == Forecast(**GOOD)
    assert "outputConfig" not in request
    (spec,) = request["toolConfig"]["tools"]
    assert spec["toolSpec"]["name"] == FINAL_RESULT


def test_output_mode_tool_keeps_the_final_answer_tool_on_a_native_model() -> None:
    kit = ChatKit("openai")
    with FakeServer() as server:
        server.push(
            kit.reply(Answer(calls=(Call("call_1", FINAL_RESULT, BAD),), stop="tool_use")),
            kit.reply(Answer(calls=(Call("call_2", FINAL_RESULT, GOOD),), stop="tool_use")),
        )
        agent = Agent(_openai_chat(server.url), output_type=Forecast, output_mode="tool")
        result = agent.run("Forecast for Oslo?")
        first, second = (r.json for r in server.requests)
    assert result.output == Forecast(**GOOD)
    assert "response_format" not in first
    (spec,) = first["tools"]
    assert spec["function"]["name"] == FINAL_RESULT
    assert spec["function"]["parameters"]["properties"]["high_c"]["maximum"] == 60
    answer = second["messages"][-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_1"
    assert ERROR_LINE in answer["content"] and f"call {FINAL_RESULT} again" in answer["content"]
    assert json.loads(result.answer) == GOOD


def test_a_vendor_without_a_schema_mode_uses_the_tool_and_native_is_refused() -> None:
    kit = ChatKit("deepseek")  # response_format takes only json_object there
    with FakeServer() as server:
        server.push(kit.reply(Answer(calls=(Call("c", FINAL_RESULT, GOOD),), stop="tool_use")))
        result = Agent(kit.model(server.url), output_type=Forecast).run("?")
        (request,) = (r.json for r in server.requests)
        with pytest.raises(
            ConfigError, match=r"output_mode='native'.*deepseek.*output_mode='tool'"
        ):
            Agent(kit.model(server.url), output_type=Forecast, output_mode="native")
    assert result.output == Forecast(**GOOD) and "response_format" not in request


def test_native_is_refused_when_the_settings_force_a_tool_call() -> None:
    from loopwright import ModelSettings

    settings = ModelSettings(tool_choice="required")
    model = _openai_chat("http://127.0.0.1:9")
    with pytest.raises(ConfigError, match="force a tool call"):
        Agent(model, [lookup], output_type=Forecast, output_mode="native", settings=settings)
    auto = Agent(model, [lookup], output_type=Forecast, settings=settings)
    assert auto.config.output is not None and not auto.config.output.native


@pytest.mark.parametrize(
    ("model_id", "native"),
    [
        ("claude-sonnet-4-5", True),
        ("claude-haiku-4-5-20251001", True),
        ("claude-opus-4-6", True),
        ("claude-sonnet-5", True),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("us.anthropic.claude-opus-4-5-20251101-v1:0", True),
        ("claude-opus-4-1-20250805", False),
        ("claude-sonnet-4-20250514", False),  # a date is not a minor version
        ("claude-3-7-sonnet-20250219", False),
        ("meta.llama3-70b-instruct-v1:0", False),
    ],
)
def test_which_claude_models_take_a_native_schema(model_id: str, native: bool) -> None:
    assert claude_native_output(model_id) is native


def test_gemini_takes_a_schema_with_tools_from_version_3() -> None:
    assert gemini_native_output("gemini-2.5-flash", with_tools=False)
    assert not gemini_native_output("gemini-2.5-flash", with_tools=True)
    assert gemini_native_output("gemini-3.1-pro-preview", with_tools=True)
    assert not gemini_native_output("my-tuned-model", with_tools=False)


def test_closed_schema_closes_every_object_and_describes_what_it_drops() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "mail": {"type": "string", "format": "email"},
            "color": {"type": "string", "format": "color", "description": "A color."},
            "pick": {"oneOf": [{"$ref": "#/$defs/Item"}, {"type": "null"}]},
        },
        "required": ["tags"],
        "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    }
    closed = closed_schema(schema)
    assert closed["additionalProperties"] is False
    assert closed["$defs"]["Item"]["additionalProperties"] is False
    props = closed["properties"]
    assert "minItems" not in props["tags"] and props["tags"]["description"] == "{minItems: 2}"
    assert props["mail"]["format"] == "email"
    assert props["color"]["description"] == 'A color.\n\n{format: "color"}'
    assert props["pick"]["anyOf"][0] == {"$ref": "#/$defs/Item"}
    assert closed["required"] == ["tags"]
    assert "additionalProperties" not in schema  # the input is not changed


def test_openai_chat_refusal_in_native_mode_stops_with_refusal() -> None:
    kit = ChatKit("openai")
    refusal = Reply.sse(
        [
            kit.chunk({"role": "assistant", "content": None, "refusal": "I can't help with that."}),
            kit.chunk({}, "stop"),
        ],
        done=True,
    )
    with FakeServer() as server:
        server.push(refusal)
        result = Agent(_openai_chat(server.url), output_type=Forecast).run("?")
    # a refusal is not an invalid answer to re-ask: the run stops and says why
    assert result.stop is RunStop.REFUSAL and result.output is None
    assert result.answer == "I can't help with that."


def test_which_vendors_take_a_schema_for_every_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    native = {name for name, vendor in VENDORS.items() if vendor.native_output}
    assert {"deepseek", "groq", "together", "openrouter"}.isdisjoint(native)
    assert {"openai", "openai-responses", "mistral", "vllm", "llamacpp"} <= native
    groq = Agent("groq:llama-3.3-70b-versatile", output_type=Forecast)
    assert groq.config.output is not None and not groq.config.output.native
    openai = Agent("openai:gpt-4o", output_type=Forecast)
    assert openai.config.output is not None and openai.config.output.native
