"""A request stating a formula or a file name is held to the one tool that takes it
(``strategies.embedded.requested.stated_tool``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from loopwright.core.events import ModelEvent, ResponseDone
from loopwright.core.messages import Message, StopReason, ToolCallPart, ToolResultPart, Usage
from loopwright.core.protocols import ModelRequest, ModelSettings, NamedTool
from loopwright.core.tools import ToolSpec
from loopwright.strategies.embedded import HoldToRequest
from loopwright.strategies.embedded.requested import (
    held_to_file_name,
    held_to_stated_tool,
    stated_tool,
)
from loopwright.tools.builtin import make_tools

TOOLS = [t.spec for t in make_tools(("calculator", "get_weather", "read_file"))]


@pytest.mark.parametrize(
    ("question", "tool"),
    [
        ("What do you get when you multiply 13 by 7?", "calculator"),
        ("Take 37 away from 500.", "calculator"),
        ("Which build number is mentioned in status.txt?", "read_file"),
        ("What color are violets according to poem.txt?", "read_file"),
        ("What is the weather in Paris?", None),
        ("What is the capital of Italy?", None),
        # a formula and a file name: two tools take what it states; the model decides
        ("Is 2 + 2 written in notes.txt?", None),
    ],
)
def test_the_one_tool_taking_what_the_request_states(question: str, tool: str | None) -> None:
    assert stated_tool(question, TOOLS) == tool


def test_tools_without_such_examples_are_never_chosen() -> None:
    bare = ToolSpec(
        "open_doc",
        "Open a document.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    assert stated_tool("Open status.txt", [bare]) is None


class _Seen:
    """A stand-in model that records the requests it is given and answers."""

    name = "stub"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        yield ResponseDone(Message.assistant("ok"), StopReason.FINAL_ANSWER, Usage(), "stub")


async def test_the_first_turn_names_the_tool_later_turns_do_not() -> None:
    seen = _Seen()
    model = HoldToRequest(seen)
    question = Message.user("What do you get when you multiply 13 by 7?")
    async for _ in model.stream(ModelRequest([question], tools=TOOLS)):
        pass
    assert seen.requests[-1].settings.tool_choice == NamedTool("calculator")
    answered = [question, Message.tool_results([ToolResultPart("c1", "calculator", "91")])]
    async for _ in model.stream(ModelRequest(answered, tools=TOOLS)):
        pass
    assert seen.requests[-1].settings.tool_choice == "auto"


def test_a_choice_the_caller_made_is_kept() -> None:
    request = ModelRequest(
        [Message.user("Multiply 13 by 7.")],
        tools=TOOLS,
        settings=ModelSettings(tool_choice="none"),
    )
    assert held_to_stated_tool(request) is request


def test_a_copied_example_file_name_is_replaced_by_the_request_one() -> None:
    reply = Message("assistant", (ToolCallPart("c1", "read_file", {"path": "README.md"}, "{}"),))
    question = "Which build number is mentioned in status.txt?"
    fixed = held_to_file_name(reply, question, TOOLS)
    assert dict(fixed.tool_calls[0].arguments) == {"path": "status.txt"}
    # not an example: another file the model means (another extension) is kept
    other = Message("assistant", (ToolCallPart("c1", "read_file", {"path": "build.md"}, "{}"),))
    assert held_to_file_name(other, question, TOOLS) is other
    # two file names in the request: which one is not known
    assert held_to_file_name(reply, "Compare status.txt and poem.txt.", TOOLS) is reply


def test_a_file_name_written_in_another_case_is_the_requests() -> None:
    reply = Message("assistant", (ToolCallPart("c1", "read_file", {"path": "README.txt"}, "{}"),))
    question = "What version is the project according to readme.txt?"
    fixed = held_to_file_name(reply, question, TOOLS)
    assert dict(fixed.tool_calls[0].arguments) == {"path": "readme.txt"}
    # as the request writes it: left alone
    same = Message("assistant", (ToolCallPart("c1", "read_file", {"path": "readme.txt"}, "{}"),))
    assert held_to_file_name(same, question, TOOLS) is same


def test_a_phrase_of_the_request_given_for_a_file_parameter_is_the_requests_file() -> None:
    # read_file's path takes file names (its examples); "build 512" is a phrase of the
    # request, not a file: the request's one file name replaces it
    reply = Message("assistant", (ToolCallPart("c1", "read_file", {"path": "build 512"}, "{}"),))
    question = "What was the result of build 512? See status.txt."
    fixed = held_to_file_name(reply, question, TOOLS)
    assert dict(fixed.tool_calls[0].arguments) == {"path": "status.txt"}
    assert fixed.provider_meta["file_name"] == [{"wrote": "build 512", "file_name": "status.txt"}]
    # two file names in the request: which one is not known
    assert held_to_file_name(reply, "Compare status.txt and poem.txt.", TOOLS) is reply
    # a parameter that takes no file names keeps its phrase
    city = Message("assistant", (ToolCallPart("c1", "get_weather", {"city": "Paris"}, "{}"),))
    assert held_to_file_name(city, "Weather in Paris? See notes.txt.", TOOLS) is city


class _Tokenizer:
    """A stand-in llama that records the prompt prefixes it tokenizes."""

    def __init__(self) -> None:
        self.prefixes: list[str] = []

    def tokenize(self, data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        if add_bos:
            self.prefixes.append(data.decode())
        return list(range(len(data.split()) + 1))


def test_a_named_tool_keeps_the_prompt_prefix_of_the_turns_around_it() -> None:
    """The answer turn after a call shows every tool; a first turn showing only the
    named one missed llama.cpp's prompt cache (0.8 s more per answer)."""
    from loopwright.providers import local, local_load

    fake = _Tokenizer()
    model = local.LocalModel("/nonexistent/model.gguf")
    model._loaded = local_load.Loaded(fake)
    question = [Message.user("What do you get when you multiply 13 by 7?")]
    named = ModelSettings(tool_choice=NamedTool("calculator"))
    plan = model._plan(ModelRequest(question, tools=TOOLS, settings=named))
    model._plan(ModelRequest(question, tools=TOOLS))
    assert fake.prefixes[0] == fake.prefixes[1]
    assert plan.choices == tuple(t for t in TOOLS if t.name == "calculator")
