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
  name the request gives, when it gives exactly one with the same extension.

Each change is recorded in the message's ``provider_meta`` (``"formula"``,
``"file_name"``: what the model wrote and what replaced it), and the call's streamed
delta is re-emitted to match. Nothing here knows a tool: a formula is recognised by
the calculator's vocabulary, a file name by its shape.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from loopwright.core.events import ModelEvent, ResponseDone
from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.protocols import Model, ModelRequest, ToolCallDelta
from loopwright.core.tools import ToolSpec
from loopwright.strategies.embedded.formula import held_to_formula, question_formula
from loopwright.strategies.embedded.wrapper import ModelWrapper

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


def held_to_file_name(message: Message, request: str) -> Message:
    """``message`` with each file-name argument the request does not contain replaced
    by the request's one file name of that extension (see the module docstring)."""
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
                if not isinstance(value, str) or file_names(value.strip()) != [value.strip()]:
                    continue
                if value.strip().lower() in lowered:
                    continue
                same = [g for g in given if _extension(g) == _extension(value.strip())]
                if len(same) == 1:
                    args[key] = same[0]
                    changed.append({"wrote": value, "file_name": same[0]})
            if args != dict(part.arguments):
                part = ToolCallPart(part.id, part.name, args, json.dumps(args), part.provider_meta)
        parts.append(part)
    if not changed:
        return message
    return Message(message.role, tuple(parts), {**message.provider_meta, FILE_META_KEY: changed})


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
    return held_to_file_name(message, request)


class HoldToRequest(ModelWrapper):
    """A :class:`~loopwright.core.protocols.Model` whose calls are held to the
    request (see the module docstring); ``repaired`` counts the replies changed. Other
    attributes are the wrapped model's."""

    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.repaired = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        held: list[ModelEvent] = []
        async for event in self.model.stream(request):
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


__all__ = ["HoldToRequest", "file_names", "held_to_file_name", "held_to_request"]
