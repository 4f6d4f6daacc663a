"""Structured output: a run's final answer validated against the agent's ``output_type``.

The mechanism works with every provider through the :class:`~loopwright.core.protocols.Model`
protocol: the request offers one more tool, ``final_result``, whose parameters are the
output type's JSON schema (pydantic ``TypeAdapter``). The run ends when the model calls it
with arguments that validate; invalid arguments are answered with the validation errors
(each naming its field) and the model tries again, at most ``output_retries`` times. A
reply with text and no call is accepted when the text is JSON that validates (models that
answer in JSON without calling the tool), and otherwise re-asked like invalid arguments.

Output types whose schema is not an object (``list[str]``, ``int``, a union) are wrapped
as ``{"response": <schema>}``: tool parameters must be an object.

pydantic is imported only when an agent has an ``output_type`` (it is not on the import
path of ``import loopwright``).
See ``docs/loop.md`` ("Structured output").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from loopwright.core.errors import ConfigError
from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.tools import ToolSpec

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError

FINAL_RESULT = "final_result"
"""The name of the final-answer tool (a registered tool may not use it)."""
_WRAPPER = "response"
_MAX_ERRORS = 8  # validation errors shown to the model per attempt

T = TypeVar("T")


class OutputInvalid(Exception):
    """The model's final answer did not validate; ``str()`` is what the model is told."""


@dataclass(frozen=True, slots=True)
class OutputSchema(Generic[T]):
    """How an agent's answers are checked: the type, its adapter, the ``final_result``
    tool offered to the model, and how many invalid answers are re-asked."""

    output_type: type[T]
    adapter: TypeAdapter[T]
    spec: ToolSpec
    wrapped: bool
    retries: int

    @classmethod
    def build(cls, output_type: type[T], retries: int) -> OutputSchema[T]:
        """Raise :class:`ConfigError` (naming ``output_type`` and the fix) when pydantic
        cannot validate or describe the type."""
        from pydantic import TypeAdapter
        from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

        name = getattr(output_type, "__name__", repr(output_type))
        try:
            adapter: TypeAdapter[T] = TypeAdapter(output_type)
            schema = adapter.json_schema()
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(
                f"Agent(output_type={name}): pydantic cannot build a JSON schema for it "
                f"({first}); use a pydantic model, a dataclass or a TypedDict whose fields "
                "have JSON-compatible types"
            ) from None
        wrapped = schema.get("type") != "object"
        if wrapped:
            defs = schema.pop("$defs", None)
            schema = {"type": "object", "properties": {_WRAPPER: schema}, "required": [_WRAPPER]}
            if defs:
                schema["$defs"] = defs
        description = schema.pop("description", None) or (
            f"Give your final answer as {name}. Call this tool once, when you are done; "
            "its arguments are the answer."
        )
        spec = ToolSpec(FINAL_RESULT, str(description), schema, timeout=None)
        return cls(output_type, adapter, spec, wrapped, retries)

    def from_call(self, call: ToolCallPart) -> T:
        """The value of a ``final_result`` call; raises :class:`OutputInvalid`."""
        if not call.arguments and call.raw_arguments.strip():
            raise OutputInvalid(
                f"the arguments of {FINAL_RESULT} are not a JSON object "
                f"({call.raw_arguments[:200]!r}); call it again with valid JSON"
            )
        value: object = call.arguments
        if self.wrapped:
            if _WRAPPER not in call.arguments:
                raise OutputInvalid(
                    f"{FINAL_RESULT} needs a {_WRAPPER!r} argument; call it again as "
                    f'{FINAL_RESULT}({{"{_WRAPPER}": ...}})'
                )
            value = call.arguments[_WRAPPER]
        return self._validate(value)

    def from_text(self, text: str) -> T:
        """The value of a plain-text answer that is JSON; raises :class:`OutputInvalid`."""
        body = _strip_fence(text)
        try:
            value = json.loads(body)
        except ValueError:
            raise OutputInvalid(
                f"the answer must be given by calling the {FINAL_RESULT} tool; call it now "
                "with your answer as its arguments"
            ) from None
        if self.wrapped and isinstance(value, Mapping) and set(value) == {_WRAPPER}:
            value = value[_WRAPPER]
        return self._validate(value)

    def _validate(self, value: object) -> T:
        from pydantic import ValidationError

        try:
            return self.adapter.validate_python(value)
        except ValidationError as exc:
            raise OutputInvalid(_describe(exc, self.wrapped)) from None


def _describe(exc: ValidationError, wrapped: bool) -> str:
    """The validation errors as the model is told them: one line per field."""
    errors = exc.errors(include_url=False, include_input=False)
    lines = []
    for error in errors[:_MAX_ERRORS]:
        where = ".".join(str(p) for p in error["loc"]) or "(the whole value)"
        lines.append(f"- {where}: {error['msg']}")
    if len(errors) > _MAX_ERRORS:
        lines.append(f"- ... and {len(errors) - _MAX_ERRORS} more")
    whole = f"{_WRAPPER!r} " if wrapped else ""
    return (
        f"the final answer is invalid ({len(errors)} error(s) in {whole}the arguments):\n"
        + "\n".join(lines)
        + f"\nFix these fields and call {FINAL_RESULT} again."
    )


def _strip_fence(text: str) -> str:
    """``text`` without a surrounding Markdown code fence (```json ... ```)."""
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        body = body[3:-3]
        newline = body.find("\n")
        if newline != -1 and body[:newline].strip().isalnum():
            body = body[newline + 1 :]
    return body.strip()


def final_answer_text(message: Message) -> str:
    """The answer text of a reply that called ``final_result``: its text, else the call's
    arguments as the model wrote them (what ``RunResult.answer`` holds)."""
    if message.text:
        return message.text
    for call in message.tool_calls:
        if call.name == FINAL_RESULT:
            return call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False)
    return ""
