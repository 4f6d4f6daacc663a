"""The seams between layers, as :class:`typing.Protocol` classes.

The loop reaches a provider only through :class:`Model`; context policies only through
:class:`ContextPolicy`. Implementations live in their own packages. The model contract is
whole here: the :class:`ModelRequest` going in and the stream events coming out
(:data:`ModelEvent`, re-exported by :mod:`loopwright.core.events` with the run events).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, runtime_checkable

from loopwright.core.errors import ConfigError, ProviderError
from loopwright.core.messages import Message, StopReason, Usage
from loopwright.core.tools import ToolSpec
from loopwright.core.values import slot_init

# ---------------------------------------------------------------- what a model yields
# (re-exported by loopwright.core.events with the run events)


@slot_init
@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    type: ClassVar[Literal["text_delta"]] = "text_delta"


@slot_init
@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str
    type: ClassVar[Literal["reasoning_delta"]] = "reasoning_delta"


@slot_init
@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a streamed tool call. ``index`` orders calls within one response;
    ``partial_arguments`` is the best parse of the arguments received so far."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments_delta: str = ""
    partial_arguments: dict[str, Any] | None = None
    type: ClassVar[Literal["tool_call_delta"]] = "tool_call_delta"


@slot_init
@dataclass(frozen=True, slots=True)
class ResponseDone:
    """The complete assistant message of one model call."""

    message: Message
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    type: ClassVar[Literal["response_done"]] = "response_done"


@slot_init
@dataclass(frozen=True, slots=True)
class StreamError:
    """The model call failed. ``partial`` keeps whatever arrived before the failure."""

    error: ProviderError
    partial: Message | None = None
    usage: Usage = field(default_factory=Usage)
    type: ClassVar[Literal["stream_error"]] = "stream_error"


ModelEvent: TypeAlias = TextDelta | ReasoningDelta | ToolCallDelta | ResponseDone | StreamError

# ---------------------------------------------------------------- requests and seams


@dataclass(frozen=True, slots=True)
class NamedTool:
    """tool_choice value forcing one specific tool."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "required", "none"] | NamedTool


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Per-call generation settings. ``None`` means "the provider's default".

    ``reasoning`` is a neutral effort level (``"low" | "medium" | "high"``) or a token
    budget; adapters translate it (Anthropic ``thinking``, OpenAI ``reasoning_effort``,
    Gemini ``thinkingConfig``). ``extra`` is merged into the wire request verbatim.
    """

    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool | None = None
    strict_tools: bool = False
    reasoning: str | int | None = None
    seed: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Checked here, where the value is typed, rather than as a 400 from the provider
        # mid-run (or, for stop="END", as the three stop strings "E", "N", "D").
        t = self.temperature
        if t is not None and (_not_number(t) or not 0 <= t < float("inf")):
            _bad("temperature", t, "a number >= 0 (e.g. temperature=0.2) or None")
        if self.max_tokens is not None and (
            not isinstance(self.max_tokens, int)
            or _not_number(self.max_tokens)
            or self.max_tokens < 1
        ):
            _bad("max_tokens", self.max_tokens, "a positive int (e.g. max_tokens=512) or None")
        if self.seed is not None and (not isinstance(self.seed, int) or _not_number(self.seed)):
            _bad("seed", self.seed, "an int or None")
        if isinstance(self.stop, str) or not all(isinstance(x, str) for x in self.stop):
            _bad("stop", self.stop, 'a tuple of strings, e.g. stop=("\\n\\n",)')
        if self.tool_choice not in ("auto", "required", "none") and not isinstance(
            self.tool_choice, NamedTool
        ):
            _bad("tool_choice", self.tool_choice, '"auto", "required", "none" or NamedTool(name)')


def _not_number(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int | float)


def _bad(name: str, value: object, wanted: str) -> None:
    raise ConfigError(f"ModelSettings.{name} must be {wanted}, got {value!r}")


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """The JSON schema the model's final text answer must follow, for a provider's native
    structured-output mode (OpenAI ``response_format`` / ``text.format``, Anthropic
    ``output_config.format``, Gemini ``responseJsonSchema``, Bedrock
    ``outputConfig.textFormat``). ``schema`` is a Draft 2020-12 JSON Schema of ``type:
    object``; ``name`` names it where the wire wants a name. Set on a request only for a
    model that declares :class:`SupportsNativeOutput` (see ``docs/loop.md``,
    "Structured output")."""

    name: str
    schema: Mapping[str, Any]
    description: str = ""


@slot_init
@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model call. ``messages`` is the history *as given*: a model must not mutate
    it, and the loop passes its own list without copying (step cost must not grow with
    history length), so a model must not keep a reference past the call either.
    ``output``, when set, asks for the final answer as JSON following that schema,
    through the provider's native structured-output mode."""

    messages: Sequence[Message]
    system: str | None = None
    tools: Sequence[ToolSpec] = ()
    settings: ModelSettings = field(default_factory=ModelSettings)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    output: OutputFormat | None = None


PayloadHook: TypeAlias = Callable[[str, Mapping[str, Any]], Mapping[str, Any] | None]
"""``on_payload(direction, payload)``: direction is ``"request"`` or ``"response"``.
For requests, returning a mapping replaces the payload sent."""


@runtime_checkable
class Model(Protocol):
    """A model is a stream of :data:`ModelEvent`.

    Contract:

    * ``stream`` never raises once iteration has started: every failure is yielded as a
      :class:`StreamError` carrying a :class:`~loopwright.core.errors.ProviderError`
      (retryable or not) and the partial message; it is the last event.
    * A successful stream ends with exactly one :class:`ResponseDone` holding the whole
      assistant message, its normalised stop reason and usage.
    * One ``stream()`` call is one attempt (one HTTP request for a network adapter):
      adapters never retry, and build vendor SDK clients with their own retries off.
      Retrying a retryable error is the caller's decision; the loop is the one owner
      (``Limits.model_retries``, see ``docs/providers.md``).
    """

    @property
    def name(self) -> str: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...


async def complete(
    model: Model,
    request: ModelRequest,
    on_event: Callable[[ModelEvent], object] | None = None,
) -> ResponseDone | StreamError:
    """Drain ``model.stream(request)`` and return its final event; ``on_event`` sees
    every event on the way (to forward a stream while waiting for its result)."""
    last: ResponseDone | StreamError | None = None
    async for event in model.stream(request):
        if on_event is not None:
            on_event(event)
        if isinstance(event, (ResponseDone, StreamError)):
            last = event
    if last is None:
        from loopwright.core.errors import MalformedResponse

        return StreamError(MalformedResponse("model stream ended without a final event"))
    return last


@runtime_checkable
class HasContextWindow(Protocol):
    """A model that knows how many tokens its context holds declares it with this
    property; the loop then hands ``context_window - settings.max_tokens`` to the agent's
    context policy when ``Limits.context_budget`` is not set."""

    @property
    def context_window(self) -> int: ...


@runtime_checkable
class ReportsCost(Protocol):
    """A model that fills ``Usage.cost`` says so with ``reports_cost = True``: provider
    adapters for models in the price table, test doubles whose script carries the cost. A
    ``Limits.cost_budget`` on any other model could never fire, so the loop refuses it."""

    @property
    def reports_cost(self) -> bool: ...


@runtime_checkable
class FollowsTextFormats(Protocol):
    """A model that says ``follows_text_formats = False`` cannot write the text formats a
    prompt asks for (a JSON plan, a line ``Answer: ...``, a verdict word): the strategies
    that need them are refused for it (``loopwright.strategies.catalog``). A model that
    does not say is taken to follow them."""

    @property
    def follows_text_formats(self) -> bool: ...


@runtime_checkable
class SupportsNativeOutput(Protocol):
    """A model whose provider can constrain the answer to a JSON schema itself (a request's
    :attr:`ModelRequest.output`). ``with_tools``: whether the request also offers tools
    (some models take a schema only without them). An agent with an ``output_type`` uses
    this mode when the model says ``True`` (``output_mode="auto"``), and the final-answer
    tool otherwise."""

    def supports_native_output(self, with_tools: bool) -> bool: ...


@runtime_checkable
class Fingerprinted(Protocol):
    """A text that remembers the prompt templates it was rendered from
    (``loopwright.prompts.PromptText``): a system prompt that is one has its fingerprints
    recorded on the run's model-call events."""

    @property
    def fingerprints(self) -> tuple[str, ...]: ...


class ContextPolicy(Protocol):
    """A pure function from the history to the messages actually sent.

    Must not mutate its input; must never separate a tool call from its result; must
    keep system messages. ``budget`` is the token budget for the returned messages.
    """

    def __call__(self, messages: Sequence[Message], budget: int | None) -> Sequence[Message]: ...
