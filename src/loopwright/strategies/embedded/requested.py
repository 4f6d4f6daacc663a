"""Hold a small model's calls to what the request states verbatim.

Some values a request gives need no understanding, only copying, and a 270M model
still changes them: it translates "Subtract 199 from 1024" into ``199 - 1024``, and it
reads "What does status.txt say about the build?" as ``read_file("build.txt")``.
:class:`HoldToRequest` wraps a model and checks each call it makes since the last user
message against the request:

* **the request's formula** (:mod:`.formula`): a formula argument, or a plan, of
  another value than the formula the request states is replaced by it (only before
  the first result: later calls work on results);
* **the request's file name**: a string argument that is a file name (``name.ext``,
  optionally under directories) the request does not contain is replaced by the file
  name the request gives, when it gives exactly one with the same extension, or
  exactly one at all and the argument is the parameter's example copied; a parameter
  whose examples are all file names, given no file name at all, takes the request's
  one file name.

Each change is recorded in the message's ``provider_meta`` (``"formula"``,
``"file_name"``: what the model wrote and what replaced it), and the call's streamed
delta is re-emitted to match.

Before the first call, a request that states such a value is also held to the one
offered tool that takes it (:func:`stated_tool`): when exactly one tool has a required
string parameter whose examples are all formulas, or all file names, and the request
states a value of that kind, or one tool queries tables the request asks about (by a
table's name or a value its columns hold: :func:`.tables.asked_tables`), the turn's
``tool_choice`` names that tool. Left to choose,
the model answered "What do you get when you multiply 13 by 7?" with "13 * 7" and
"Which build number is mentioned in status.txt?" from nothing, without a call.

The SQL a tool's query parameter takes is held to the tables its description lists
(:mod:`.tables`).

Nothing here knows a tool: a formula is recognised by the calculator's vocabulary, a
file name by its shape, and a parameter by its examples.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from loopwright.core.events import ModelEvent, ResponseDone
from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.protocols import Model, ModelRequest, NamedTool, ToolCallDelta
from loopwright.core.tools import ToolSpec
from loopwright.strategies.embedded.examples import example_parameter
from loopwright.strategies.embedded.formula import (
    arithmetic,
    held_to_formula,
    question_formula,
    request_formula,
)
from loopwright.strategies.embedded.tables import asked_tables, request_held_to_tables
from loopwright.strategies.wrapper import ModelWrapper

FILE_META_KEY = "file_name"
# A file name: a name, a dot and an extension starting with a letter, optionally under
# directories ("notes/todo.txt"); not a number ("2.5") nor the middle of a longer word.
_FILE = re.compile(r"(?<![\w/.\-])([\w\-/]+\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/\-]|\.\w)")
_LETTER = re.compile(r"[A-Za-z_]")


def file_names(text: str) -> list[str]:
    """The file names ``text`` writes, in order, each once (a name holds a letter:
    "2.5" is a number). Linear in ``text``: one match attempt per run of name
    characters (a request may be a megabyte long)."""
    names = (n for n in _FILE.findall(text) if _LETTER.search(n.rsplit(".", 1)[0]))
    return list(dict.fromkeys(names))


def _extension(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower()


def _examples(tools: Sequence[ToolSpec], name: str, key: str) -> list[object]:
    """The examples ``tools``' schema for tool ``name`` shows for parameter ``key``."""
    for spec in tools:
        props = spec.parameters.get("properties")
        if spec.name == name and isinstance(props, Mapping):
            schema = props.get(key)
            examples = schema.get("examples") if isinstance(schema, Mapping) else None
            return list(examples) if isinstance(examples, list) else []
    return []


def held_to_file_name(message: Message, request: str, tools: Sequence[ToolSpec] = ()) -> Message:
    """``message`` with each file-name argument the request does not contain replaced
    by the request's one file name of that extension, or by its one file name when the
    argument is the parameter's own example, copied from the prompt ("Which build
    number is mentioned in status.txt?" -> ``read_file("README.md")``)."""
    given = file_names(request)
    if not given:
        return message
    lowered = request.lower()
    parts: list[Any] = []
    changed: list[dict[str, str]] = []
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            args = dict(part.arguments)
            for key, value in part.arguments.items():
                if _takes_file_names(tools, part.name, key) and _not_a_file_name(value, given):
                    # a parameter that takes file names, given another phrase of the
                    # request ("the result of build 512? See status.txt." ->
                    # read_file("build 512")): the request's one file name
                    args[key] = given[0]
                    changed.append({"wrote": str(value), "file_name": given[0]})
                    continue
                if not isinstance(value, str) or file_names(value.strip()) != [value.strip()]:
                    continue
                if value.strip() in request:
                    continue
                # a name the request writes in another case is the request's (the model
                # wrote "README.txt" for "readme.txt": another file on most systems)
                same = [g for g in given if g.lower() == value.strip().lower()]
                if not same and value.strip().lower() in lowered:
                    continue
                same = same or [g for g in given if _extension(g) == _extension(value.strip())]
                if not same and len(given) == 1 and value in _examples(tools, part.name, key):
                    same = given
                if len(same) == 1:
                    args[key] = same[0]
                    changed.append({"wrote": value, "file_name": same[0]})
            if args != dict(part.arguments):
                part = ToolCallPart(part.id, part.name, args, json.dumps(args), part.provider_meta)
        parts.append(part)
    if not changed:
        return message
    return Message(message.role, tuple(parts), {**message.provider_meta, FILE_META_KEY: changed})


def _takes_file_names(tools: Sequence[ToolSpec], name: str, key: str) -> bool:
    """Whether the parameter's examples are all file names (what it takes)."""
    examples = _examples(tools, name, key)
    return bool(examples) and all(_is_file_name(e) for e in examples)


def _not_a_file_name(value: object, given: Sequence[str]) -> bool:
    """A string that has no file name in it, where the request writes exactly one."""
    return isinstance(value, str) and len(given) == 1 and not file_names(value)


def _request(messages: Sequence[Message]) -> tuple[str, bool]:
    """The last user message's text, and whether a tool has returned since."""
    answered = False
    for message in reversed(messages):
        if message.role == "user":
            return message.text, answered
        answered = answered or bool(message.tool_results_parts)
    return "", answered


def held_to_request(
    message: Message, messages: Sequence[Message], tools: Sequence[ToolSpec]
) -> Message:
    """``message`` (a reply to ``messages``) held to the request (module docstring)."""
    request, answered = _request(messages)
    if not request:
        return message
    if not answered:
        formula = question_formula(messages)
        if formula is not None:
            message = held_to_formula(message, formula, tools)
    return held_to_file_name(message, request, tools)


def _is_file_name(text: object) -> bool:
    return isinstance(text, str) and file_names(text) == [text]


def _is_formula(text: object) -> bool:
    return isinstance(text, str) and arithmetic(text) is not None


# A kind of value: whether an example is one, and whether a request states one.
_KINDS: tuple[tuple[Callable[[object], bool], Callable[[str], bool]], ...] = (
    (_is_formula, lambda request: request_formula(request) is not None),
    (_is_file_name, lambda request: bool(file_names(request))),
)
MIN_EXAMPLES = 2


def _takes(spec: ToolSpec, is_kind: Callable[[object], bool]) -> bool:
    """Whether a required string parameter of ``spec`` shows only values of a kind: at
    least :data:`MIN_EXAMPLES` examples, every one of it."""
    return example_parameter(spec, is_kind, min_examples=MIN_EXAMPLES) is not None


def stated_tool(request: str, tools: Sequence[ToolSpec]) -> str | None:
    """The one tool of ``tools`` that takes a kind of value ``request`` states (module
    docstring), or ``None`` when none does or several do."""
    chosen: set[str] = set()
    for is_kind, states in _KINDS:
        takers = [t.name for t in tools if _takes(t, is_kind)]
        if takers and states(request):
            chosen.update(takers)
    chosen.update(t.name for t in tools if asked_tables(t, request))
    return chosen.pop() if len(chosen) == 1 else None


def held_to_stated_tool(request: ModelRequest) -> ModelRequest:
    """``request`` with its ``tool_choice`` naming :func:`stated_tool`, when the choice
    is left to the model and no tool has returned since the last user message."""
    if request.settings.tool_choice != "auto" or len(request.tools) < 1:
        return request
    text, answered = _request(request.messages)
    if not text or answered:
        return request
    name = stated_tool(text, request.tools)
    if name is None:
        return request
    settings = replace(request.settings, tool_choice=NamedTool(name))
    return replace(request, settings=settings)


class HoldToRequest(ModelWrapper):
    """A :class:`~loopwright.core.protocols.Model` whose calls are held to the
    request (see the module docstring); ``repaired`` counts the replies changed. Other
    attributes are the wrapped model's."""

    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.repaired = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        held: list[ModelEvent] = []
        narrowed = request_held_to_tables(held_to_stated_tool(request))
        async for event in self.model.stream(narrowed):
            if isinstance(event, ToolCallDelta):
                held.append(event)
                continue
            if isinstance(event, ResponseDone) and event.message.tool_calls:
                message = held_to_request(event.message, request.messages, request.tools)
                if message is not event.message:
                    self.repaired += 1
                    held = [_delta(i, c) for i, c in enumerate(message.tool_calls)]
                    event = ResponseDone(message, event.stop_reason, event.usage, event.model)
            for pending in held:
                yield pending
            held = []
            yield event


def _delta(index: int, call: ToolCallPart) -> ToolCallDelta:
    return ToolCallDelta(index, call.id, call.name, call.raw_arguments, dict(call.arguments))


__all__ = [
    "HoldToRequest",
    "file_names",
    "held_to_file_name",
    "held_to_request",
    "held_to_stated_tool",
    "stated_tool",
]
