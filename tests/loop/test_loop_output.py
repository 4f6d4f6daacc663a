"""Structured output: ``Agent(output_type=...)`` validates the final answer, re-asks the
model with the validation errors, and stops with ``output_invalid`` when retries run out."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from loopwright import Agent, FunctionModel, Limits, Message, RunStop, ScriptedModel, tool_call
from loopwright.core.messages import ToolResultPart
from loopwright.core.protocols import ModelRequest
from loopwright.loop.output import FINAL_RESULT
from loopwright.store.codec import decode_state, encode_state


class City(BaseModel):
    name: str
    population: int = Field(ge=0)


class Report(BaseModel):
    title: str
    cities: list[City]


@dataclass
class Point:
    x: float
    y: float


class Section(TypedDict):
    heading: str
    words: int


def final(arguments: dict[str, object], id: str = "f1") -> list:  # type: ignore[type-arg]
    return [tool_call(FINAL_RESULT, arguments, id=id)]  # type: ignore[arg-type]


async def test_valid_first_time_ends_the_run_with_the_typed_value() -> None:
    model = ScriptedModel([final({"name": "Paris", "population": 2100000})])
    result = await Agent(model, output_type=City).arun("Biggest French city?")
    assert result.ok and result.turns == 1
    assert result.output == City(name="Paris", population=2100000)
    assert isinstance(result.output, City)
    assert json.loads(result.answer) == {"name": "Paris", "population": 2100000}
    # the history is well formed: the final call got its result
    last = result.messages[-1]
    assert last.role == "tool" and not last.parts[0].is_error  # type: ignore[union-attr]


async def test_the_request_offers_the_final_tool_with_the_types_schema() -> None:
    model = ScriptedModel([final({"name": "Oslo", "population": 700000})])
    await Agent(model, output_type=City).arun("?")
    spec = next(s for s in model.requests[0].tools if s.name == FINAL_RESULT)
    assert spec.parameters["required"] == ["name", "population"]
    assert spec.parameters["properties"]["population"]["minimum"] == 0


async def test_invalid_then_fixed_re_asks_with_errors_naming_the_fields() -> None:
    seen: list[str] = []

    def reply(messages: list[Message], request: ModelRequest) -> object:
        if len(messages) == 1:
            return final({"name": "Paris", "population": -5}, id="a")
        result = messages[-1].parts[0]
        assert isinstance(result, ToolResultPart) and result.is_error
        seen.append(result.content)
        return final({"name": "Paris", "population": 5}, id="b")

    result = await Agent(FunctionModel(reply), output_type=City).arun("?")
    assert result.ok and result.output == City(name="Paris", population=5)
    assert result.turns == 2
    assert "population" in seen[0] and "greater than or equal to 0" in seen[0]
    assert result.messages[2].parts[0].error_kind == "invalid_arguments"  # type: ignore[union-attr]


async def test_exhausted_retries_stop_with_output_invalid() -> None:
    model = ScriptedModel([final({"name": "X"}, id=f"c{i}") for i in range(3)])
    result = await Agent(model, output_type=City, output_retries=2).arun("?")
    assert result.stop is RunStop.OUTPUT_INVALID and not result.ok
    assert result.output is None and result.turns == 3
    assert "population" in result.detail and "Field required" in result.detail
    assert model.remaining == 0


async def test_zero_retries_stop_at_the_first_invalid_answer() -> None:
    model = ScriptedModel([final({"name": 3, "population": "many"}), "unused"])
    result = await Agent(model, output_type=City, output_retries=0).arun("?")
    assert result.stop is RunStop.OUTPUT_INVALID and result.turns == 1
    assert "name" in result.detail and "population" in result.detail


async def test_a_typeddict() -> None:
    model = ScriptedModel([final({"heading": "Intro", "words": 120})])
    result = await Agent(model, output_type=Section).arun("?")
    assert result.output == {"heading": "Intro", "words": 120}


async def test_a_dataclass() -> None:
    model = ScriptedModel([final({"x": 1, "y": "2.5"})])
    result = await Agent(model, output_type=Point).arun("?")
    assert result.output == Point(1.0, 2.5)


async def test_a_nested_pydantic_model_reports_the_nested_path() -> None:
    bad = {"title": "T", "cities": [{"name": "A", "population": 1}, {"name": "B"}]}
    good = {
        "title": "T",
        "cities": [{"name": "A", "population": 1}, {"name": "B", "population": 2}],
    }
    model = ScriptedModel([final(bad, id="a"), final(good, id="b")])
    result = await Agent(model, output_type=Report).arun("?")
    assert result.ok and result.output is not None
    assert result.output.cities[1] == City(name="B", population=2)
    error = result.messages[2].parts[0].content  # type: ignore[union-attr]
    assert "cities.1.population: Field required" in error


async def test_a_non_object_type_is_wrapped_as_response() -> None:
    model = ScriptedModel([final({"response": ["a", "b"]})])
    agent = Agent(model, output_type=list[str])
    result = await agent.arun("?")
    assert result.output == ["a", "b"]
    spec = agent.config.output.spec  # type: ignore[union-attr]
    assert spec.parameters["required"] == ["response"]


async def test_text_json_is_accepted_and_plain_text_is_re_asked() -> None:
    model = ScriptedModel(["Paris, I think.", '```json\n{"name": "Paris", "population": 3}\n```'])
    result = await Agent(model, output_type=City).arun("?")
    assert result.ok and result.output == City(name="Paris", population=3)
    reask = result.messages[2]
    assert reask.role == "user" and FINAL_RESULT in reask.text


async def test_other_calls_in_the_final_reply_are_not_run() -> None:
    ran: list[str] = []

    def note(text: str) -> str:
        """Write a note."""
        ran.append(text)
        return "ok"

    reply = [tool_call("note", {"text": "x"}, id="n"), *final({"x": 0, "y": 0}, id="f")]
    result = await Agent(ScriptedModel([reply]), [note], output_type=Point).arun("?")
    assert result.ok and ran == []
    results = result.messages[-1].parts
    assert [r.call_id for r in results] == ["n", "f"]  # type: ignore[union-attr]
    assert results[0].error_kind == "skipped"  # type: ignore[union-attr]


def test_a_tool_named_final_result_conflicts() -> None:
    from loopwright.core.errors import ConfigError

    def final_result(text: str) -> str:
        """Clash."""
        return text

    with pytest.raises(ConfigError, match="rename the tool"):
        Agent(ScriptedModel(["x"]), [final_result], output_type=City)


def test_sync_run_and_generic_result_type() -> None:
    model = ScriptedModel([final({"heading": "H", "words": 1})])
    result = Agent(model, output_type=Section).run("?")
    assert result.output is not None and result.output["words"] == 1


async def test_str_output_is_the_plain_text_answer() -> None:
    model = ScriptedModel(["Paris"])
    agent = Agent(model, output_type=str)
    result = await agent.arun("Capital of France?")
    assert result.ok and result.output == "Paris" and result.turns == 1
    assert agent.config.output is None
    assert all(s.name != FINAL_RESULT for s in model.requests[0].tools)


async def test_a_scalar_type_accepts_a_json_text_answer() -> None:
    result = await Agent(ScriptedModel(["42"]), output_type=int).arun("?")
    assert result.ok and result.output == 42


async def test_a_resumed_run_keeps_the_re_asks_it_already_used() -> None:
    """The re-ask count lives in the run state and its codec: a run checkpointed after an
    invalid answer and resumed elsewhere does not get its retries back."""
    first = ScriptedModel([final({"name": "X"}, id="a")])
    agent = Agent(first, output_type=City, output_retries=1, limits=Limits(max_turns=1))
    run = agent.start("?")
    assert (await run.result()).stop is RunStop.MAX_TURNS
    saved = decode_state(encode_state(run.state), [], session_id=run.session_id)
    assert saved.output_retries_used == 1
    second = ScriptedModel([final({"name": "Y"}, id="b"), final({"name": "Z"}, id="c")])
    resumed = await Agent(second, output_type=City, output_retries=1).aresume(saved)
    # the one allowed re-ask was spent before the checkpoint: the next invalid answer stops
    assert resumed.stop is RunStop.OUTPUT_INVALID and second.remaining == 1


async def test_a_valid_answer_gives_the_next_answer_its_full_allowance() -> None:
    model = ScriptedModel(
        [
            final({"name": "X"}, id="a"),
            final({"name": "A", "population": 1}, id="b"),
            final({"name": "Y"}, id="c"),
            final({"name": "B", "population": 2}, id="d"),
        ]
    )
    agent = Agent(model, output_type=City, output_retries=1)
    run = agent.start("?")
    assert (await run.result()).output == City(name="A", population=1)
    assert run.state.output_retries_used == 0
    again = await agent.aresume(run.state, prompt="and another?")
    assert again.ok and again.output == City(name="B", population=2)


class NativeModel(FunctionModel):
    """A test double whose provider would constrain the answer to the schema."""

    def supports_native_output(self, with_tools: bool) -> bool:
        return True


async def test_native_mode_sends_the_schema_instead_of_the_tool() -> None:
    seen: list[ModelRequest] = []

    def reply(messages: list[Message], request: ModelRequest) -> object:
        seen.append(request)
        if len(messages) == 1:
            return json.dumps({"name": "Oslo", "population": -1})
        assert messages[-1].role == "user" and "population" in messages[-1].text
        return json.dumps({"name": "Oslo", "population": 700000})

    model = NativeModel(reply)
    result = await Agent(model, output_type=City).arun("?")
    assert result.ok and result.output == City(name="Oslo", population=700000)
    first = seen[0]
    assert first.output is not None and first.output.name == "City"
    assert first.output.schema["properties"]["population"]["minimum"] == 0
    assert all(spec.name != FINAL_RESULT for spec in first.tools)
    # the re-ask names the field and asks for JSON, not for a tool the model was not shown
    reask = result.messages[2].text
    assert "population" in reask and FINAL_RESULT not in reask


async def test_output_mode_tool_and_native_are_honoured_or_refused() -> None:
    from loopwright.core.errors import ConfigError

    native = NativeModel(lambda messages, request: "{}")
    tool_mode = Agent(native, output_type=City, output_mode="tool")
    assert tool_mode.config.output is not None and not tool_mode.config.output.native
    with pytest.raises(ConfigError, match="has no native structured-output mode"):
        Agent(ScriptedModel([]), output_type=City, output_mode="native")
    with pytest.raises(ConfigError, match="output_mode='json'"):
        Agent(ScriptedModel([]), output_type=City, output_mode="json")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="output_mode='json'"):  # was ignored without a type
        Agent(ScriptedModel([]), output_mode="json")  # type: ignore[arg-type]


async def test_native_mode_exhausted_retries_stop_with_output_invalid() -> None:
    model = NativeModel(lambda messages, request: '{"name": "X"}')
    result = await Agent(model, output_type=City, output_retries=1).arun("?")
    assert result.stop is RunStop.OUTPUT_INVALID and result.turns == 2
    assert "population: Field required" in result.detail and result.output is None
