"""Structured output: a run's final answer validated against the agent's ``output_type``.

Two ways to ask for the answer, chosen per agent (``output_mode``):

* **native** -- the request carries the output type's JSON schema
  (:class:`~loopwright.core.protocols.OutputFormat`) and the provider constrains the
  answer text itself (OpenAI ``response_format``, Anthropic ``output_config``, Gemini
  ``responseJsonSchema``, Bedrock ``outputConfig``, a grammar on the embedded model). Used
  when the model declares :class:`~loopwright.core.protocols.SupportsNativeOutput`.
* **tool** -- works with every provider: the request offers one more tool,
  ``final_result``, whose parameters are the schema; the run ends when the model calls it
  with arguments that validate.

Either way the answer is validated here (pydantic ``TypeAdapter``): an invalid one is
answered with the validation errors (each naming its field) and the model tries again, at
most ``output_retries`` times (counted in the run state). A reply with text and no call
is accepted when the text is JSON that validates (the native mode's answers, and models
that answer in JSON without calling the tool), and otherwise re-asked.

Output types whose schema is not an object (``list[str]``, ``int``, a union) are wrapped
as ``{"response": <schema>}``: tool parameters and native schemas must be objects.

pydantic is imported only when an agent has an ``output_type`` (it is not on the import
path of ``import loopwright``).
See ``docs/loop.md`` ("Structured output").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Generic, Literal, TypeAlias, TypeVar

from loopwright.core.errors import ConfigError
from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.protocols import Model, OutputFormat, SupportsNativeOutput
from loopwright.core.tools import ToolSpec

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError

FINAL_RESULT = "final_result"
"""The name of the final-answer tool (a registered tool may not use it)."""
_WRAPPER = "response"
_MAX_ERRORS = 8  # validation errors shown to the model per attempt

T = TypeVar("T")
OutputMode: TypeAlias = Literal["auto", "native", "tool"]
"""How an ``output_type`` is asked for: ``"native"`` (the provider's structured-output
mode; a model without one is a :class:`ConfigError`), ``"tool"`` (the ``final_result``
tool) or ``"auto"`` (native where the model supports it, else the tool)."""
OUTPUT_MODES: tuple[OutputMode, ...] = ("auto", "native", "tool")


class OutputInvalid(Exception):
    """The model's final answer did not validate; ``str()`` is what the model is told."""


def check_output_mode(mode: object) -> None:
    """Raise :class:`ConfigError` unless ``mode`` is an :data:`OutputMode` (checked with or
    without an ``output_type``: a misspelt mode was silently ignored without one)."""
    if mode not in OUTPUT_MODES:
        raise ConfigError(
            f"Agent(output_mode={mode!r}): give one of {', '.join(map(repr, OUTPUT_MODES))}"
        )


@dataclass(frozen=True, slots=True)
class OutputSchema(Generic[T]):
    """How an agent's answers are asked for and checked: the type, its adapter, the
    ``final_result`` tool and the native :class:`OutputFormat` (the same schema), how many
    invalid answers are re-asked, the requested ``mode`` and whether the native mode is
    the one in use (``native``, set by :meth:`resolve` for the agent's model)."""

    output_type: type[T]
    adapter: TypeAdapter[T]
    spec: ToolSpec
    wrapped: bool
    retries: int
    format: OutputFormat
    mode: OutputMode = "auto"
    native: bool = False

    @classmethod
    def build(
        cls, output_type: type[T], retries: int, mode: OutputMode = "auto"
    ) -> OutputSchema[T]:
        """Raise :class:`ConfigError` (naming ``output_type`` and the fix) when pydantic
        cannot validate or describe the type, or ``mode`` is not an :data:`OutputMode`."""
        check_output_mode(mode)
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
        described = str(schema.pop("description", None) or "")
        tool_text = described or (
            f"Give your final answer as {name}. Call this tool once, when you are done; "
            "its arguments are the answer."
        )
        spec = ToolSpec(FINAL_RESULT, tool_text, schema, timeout=None)
        # OpenAI names a schema with at most 64 of [A-Za-z0-9_-]
        wire_name = re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:64].strip("_") or "output"
        return cls(
            output_type,
            adapter,
            spec,
            wrapped,
            retries,
            OutputFormat(wire_name, schema, described),
            mode,
        )

    def resolve(self, model: Model, has_tools: bool, must_call: bool) -> OutputSchema[T]:
        """This schema with ``native`` decided for ``model``: whether the model declares a
        native mode for a request with (``has_tools``) or without tools, and whether the
        settings force a tool call (``must_call``: ``tool_choice`` other than ``"auto"``,
        which a native answer could never satisfy). A ``"native"`` mode that cannot be
        honoured is a :class:`ConfigError`."""
        able = isinstance(model, SupportsNativeOutput) and model.supports_native_output(has_tools)
        if self.mode == "native" and (not able or must_call):
            why = (
                "the settings force a tool call (tool_choice), which a native answer cannot make"
                if able
                else f"{model.name!r} has no native structured-output mode"
                + (" together with tools" if has_tools else "")
            )
            raise ConfigError(
                f"Agent(output_mode='native'): {why}; use output_mode='tool' (the final_result "
                "tool works with every model) or 'auto'"
            )
        native = able and not must_call and self.mode != "tool"
        return self if native == self.native else replace(self, native=native)

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
                "the answer must be one JSON object following the requested schema; answer "
                "again with only that JSON"
                if self.native
                else f"the answer must be given by calling the {FINAL_RESULT} tool; call it "
                "now with your answer as its arguments"
            ) from None
        if self.wrapped and isinstance(value, Mapping) and set(value) == {_WRAPPER}:
            value = value[_WRAPPER]
        return self._validate(value)

    def _validate(self, value: object) -> T:
        from pydantic import ValidationError

        try:
            return self.adapter.validate_python(value)
        except ValidationError as exc:
            raise OutputInvalid(_describe(exc, self.wrapped, self.native)) from None


def _describe(exc: ValidationError, wrapped: bool, native: bool) -> str:
    """The validation errors as the model is told them: one line per field."""
    errors = exc.errors(include_url=False, include_input=False)
    lines = []
    for error in errors[:_MAX_ERRORS]:
        where = ".".join(str(p) for p in error["loc"]) or "(the whole value)"
        lines.append(f"- {where}: {error['msg']}")
    if len(errors) > _MAX_ERRORS:
        lines.append(f"- ... and {len(errors) - _MAX_ERRORS} more")
    whole = f"{_WRAPPER!r} " if wrapped else ""
    where, again = (
        ("the JSON", "answer again with the corrected JSON")
        if native
        else ("the arguments", f"call {FINAL_RESULT} again")
    )
    return (
        f"the final answer is invalid ({len(errors)} error(s) in {whole}{where}):\n"
        + "\n".join(lines)
        + f"\nFix these fields and {again}."
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
