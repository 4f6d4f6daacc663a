"""OpenTelemetry spans for runs, following the GenAI semantic conventions.

:class:`OtelSubscriber` is an event subscriber (``Hooks(on_event=subscriber)``). It turns
a run's events into a span tree::

    invoke_agent loopwright              (the run; INTERNAL)
      chat gpt-4o                        (each model call attempt; CLIENT)
      execute_tool get_weather           (each tool call; INTERNAL)
      chat gpt-4o
      ...

The run span's parent is whatever span is current where the run starts (a strategy or
graph step, a web request), so runs nest under the caller's own spans.

Attribute names are those of the GenAI conventions (``gen_ai.operation.name``,
``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.response.model``,
``gen_ai.usage.input_tokens`` / ``output_tokens``, ``gen_ai.response.finish_reasons``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``error.type`` ...; a test checks them
against ``opentelemetry-semantic-conventions``). loopwright's own additions use the
``loopwright.`` prefix: ``loopwright.usage.cost`` (from ``Usage.cost``),
``loopwright.prompt.fingerprints`` (``name@version#hash`` of the prompts sent),
``loopwright.turn``, ``loopwright.attempt``, ``loopwright.stop_reason``.

Message contents (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.tool.call.arguments`` / ``result``) are recorded only when content capture is on:
``capture_content=True``, or the conventions' switch
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` in the environment.

Needs the ``otel`` extra (``opentelemetry-sdk``, the OTLP/HTTP exporter); nothing on the
core import path imports this module.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from loopwright.core.events import (
    LimitReached,
    MessageAppended,
    ModelCallFailed,
    ModelCallFinished,
    ModelCallStarted,
    ModelStreamed,
    RunEvent,
    RunFinished,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
)
from loopwright.core.messages import (
    Message,
    ReasoningPart,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from loopwright.core.run import RunStop
from loopwright.tracing.redact import redact_text

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# GenAI semantic-convention attribute names (checked against the semconv package in tests)
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"
# loopwright's own
COST = "loopwright.usage.cost"
FINGERPRINTS = "loopwright.prompt.fingerprints"
TURN = "loopwright.turn"
ATTEMPT = "loopwright.attempt"
STOP_REASON = "loopwright.stop_reason"
WILL_RETRY = "loopwright.will_retry"

# model-string prefix -> gen_ai.provider.name (the conventions' well-known values)
_PROVIDERS = {
    "openai": "openai",
    "openai-responses": "openai",
    "azure": "azure.ai.openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "perplexity": "perplexity",
    "cohere": "cohere",
    "local": "loopwright.local",
}
_FINISH = {
    StopReason.FINAL_ANSWER: "stop",
    StopReason.TOOL_USE: "tool_call",
    StopReason.MAX_TOKENS: "length",
    StopReason.REFUSAL: "content_filter",
    StopReason.ERROR: "error",
    StopReason.ABORTED: "aborted",
}
_OK_STOPS = frozenset({RunStop.FINAL_ANSWER, RunStop.AWAITING_CONFIRMATION})


def _version() -> str:
    # the installed distribution's version (the facade module is above this layer)
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("loopwright")
    except PackageNotFoundError:
        return "unknown"


def split_model(name: str) -> tuple[str, str]:
    """``"openai:gpt-4o"`` -> (``"openai"``, ``"gpt-4o"``); no prefix -> (name, name)."""
    prefix, sep, model = name.partition(":")
    if not sep:
        return name, name
    return _PROVIDERS.get(prefix.lower(), prefix.lower()), model


def capture_from_env() -> bool:
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(slots=True)
class _RunSpans:
    span: Span
    parent: otel_context.Context
    messages: list[Message] = field(default_factory=list)
    chat: Span | None = None
    chat_started: float = 0.0
    first_chunk: bool = False
    tools: dict[str, tuple[Span, int]] = field(default_factory=dict)


class OtelSubscriber:
    """Turns run events into GenAI spans (see the module docstring).

    ``tracer_provider``: where spans go (default: the global provider).
    ``capture_content``: record message contents (default: the environment switch).
    ``agent_name``: ``gen_ai.agent.name`` and the run span's name suffix.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        *,
        capture_content: bool | None = None,
        agent_name: str = "loopwright",
    ) -> None:
        self._tracer = trace.get_tracer("loopwright", _version(), tracer_provider=tracer_provider)
        self.capture_content = capture_from_env() if capture_content is None else capture_content
        self.agent_name = agent_name
        self._current: ContextVar[_RunSpans | None] = ContextVar(
            f"loopwright_otel_run_{id(self)}", default=None
        )

    def __call__(self, event: RunEvent) -> None:
        kind = type(event)
        run = self._current.get()
        if kind is ModelStreamed:
            if run is not None and not run.first_chunk and run.chat is not None:
                run.first_chunk = True
                run.chat.set_attribute(TIME_TO_FIRST_CHUNK, time.perf_counter() - run.chat_started)
            return
        if kind is RunStarted or run is None:
            run = self._start_run(event)
        if kind is MessageAppended:
            if self.capture_content:
                run.messages.append(event.message)  # type: ignore[union-attr]
        elif kind is ModelCallStarted:
            self._chat_started(run, event)  # type: ignore[arg-type]
        elif kind is ModelCallFinished:
            self._chat_finished(run, event)  # type: ignore[arg-type]
        elif kind is ModelCallFailed:
            self._chat_failed(run, event)  # type: ignore[arg-type]
        elif kind is ToolCallStarted:
            self._tool_started(run, event)  # type: ignore[arg-type]
        elif kind is ToolCallFinished:
            self._tool_finished(run, event)  # type: ignore[arg-type]
        elif kind is LimitReached:
            run.span.add_event(
                "loopwright.limit_reached",
                {STOP_REASON: event.stop.value, "loopwright.detail": event.detail},  # type: ignore[union-attr]
            )
        elif kind is RunFinished:
            self._finish_run(run, event)  # type: ignore[arg-type]

    # -- run ---------------------------------------------------------------------------
    def _start_run(self, event: RunEvent) -> _RunSpans:
        parent = otel_context.get_current()
        span = self._tracer.start_span(
            f"invoke_agent {self.agent_name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes={OPERATION: "invoke_agent", AGENT_NAME: self.agent_name},
        )
        if isinstance(event, RunStarted) and event.session_id:
            span.set_attribute(CONVERSATION_ID, event.session_id)
        run = _RunSpans(span, trace.set_span_in_context(span, parent))
        self._current.set(run)
        return run

    def _finish_run(self, run: _RunSpans, event: RunFinished) -> None:
        result = event.result
        span = run.span
        if run.chat is not None:
            run.chat.set_status(Status(StatusCode.ERROR, "the run ended during the call"))
            run.chat.end()
        for tool_span, _ in run.tools.values():
            tool_span.set_status(Status(StatusCode.ERROR, "the run ended before the result"))
            tool_span.end()
        span.set_attributes(_usage_attributes(result.usage))
        span.set_attribute(STOP_REASON, result.stop.value)
        span.set_attribute("loopwright.turns", result.turns)
        if result.stop not in _OK_STOPS:
            span.set_attribute(ERROR_TYPE, result.stop.value)
            span.set_status(Status(StatusCode.ERROR, result.detail or result.stop.value))
        span.end()
        self._current.set(None)

    # -- model calls -------------------------------------------------------------------
    def _chat_started(self, run: _RunSpans, event: ModelCallStarted) -> None:
        provider, model = split_model(event.model)
        attributes: dict[str, str | int | Sequence[str]] = {
            OPERATION: "chat",
            PROVIDER: provider,
            REQUEST_MODEL: model,
            TURN: event.turn,
            ATTEMPT: event.attempt,
        }
        if event.prompt_fingerprints:
            attributes[FINGERPRINTS] = list(event.prompt_fingerprints)
        if self.capture_content:
            sent = run.messages[-event.message_count :] if event.message_count else []
            attributes[INPUT_MESSAGES] = _messages_json(sent)
        run.chat = self._tracer.start_span(
            f"chat {model}", context=run.parent, kind=SpanKind.CLIENT, attributes=attributes
        )
        run.chat_started = time.perf_counter()
        run.first_chunk = False
        if event.turn == 1 and event.attempt == 1:
            run.span.set_attribute(PROVIDER, provider)
            run.span.set_attribute(REQUEST_MODEL, model)

    def _chat_finished(self, run: _RunSpans, event: ModelCallFinished) -> None:
        span = run.chat
        if span is None:
            return
        run.chat = None
        span.set_attributes(_usage_attributes(event.usage))
        if event.response_model:
            span.set_attribute(RESPONSE_MODEL, split_model(event.response_model)[1])
        span.set_attribute(FINISH_REASONS, [_FINISH.get(event.stop_reason, event.stop_reason)])
        if self.capture_content:
            span.set_attribute(
                OUTPUT_MESSAGES,
                _messages_json([event.message], _FINISH.get(event.stop_reason, "stop")),
            )
        span.end()

    def _chat_failed(self, run: _RunSpans, event: ModelCallFailed) -> None:
        span = run.chat
        if span is None:
            return
        run.chat = None
        span.set_attribute(ERROR_TYPE, event.error.kind)
        span.set_attribute(WILL_RETRY, event.will_retry)
        span.set_status(Status(StatusCode.ERROR, redact_text(str(event.error))[:500]))
        span.end()

    # -- tool calls --------------------------------------------------------------------
    def _tool_started(self, run: _RunSpans, event: ToolCallStarted) -> None:
        call = event.call
        run.tools[call.id] = (self._tool_span(run, call, event.turn, None), time.time_ns())

    def _tool_span(
        self, run: _RunSpans, call: ToolCallPart, turn: int, start_ns: int | None
    ) -> Span:
        attributes: dict[str, str | int] = {
            OPERATION: "execute_tool",
            TOOL_NAME: call.name,
            TOOL_CALL_ID: call.id,
            TOOL_TYPE: "function",
            TURN: turn,
        }
        if self.capture_content:
            attributes[TOOL_ARGUMENTS] = json.dumps(dict(call.arguments), ensure_ascii=False)
        return self._tracer.start_span(
            f"execute_tool {call.name}",
            context=run.parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start_ns,
        )

    def _tool_finished(self, run: _RunSpans, event: ToolCallFinished) -> None:
        duration_ns = int(event.duration_s * 1e9)
        opened = run.tools.pop(event.call.id, None)
        if opened is None:  # never started (denied, skipped, invalid): a span of its duration
            start_ns = time.time_ns() - duration_ns
            span = self._tool_span(run, event.call, event.turn, start_ns)
        else:
            span, start_ns = opened
        result = event.result
        if event.attempts > 1:
            span.set_attribute("loopwright.tool.attempts", event.attempts)
        if self.capture_content:
            span.set_attribute(TOOL_RESULT, result.content)
        if result.is_error:
            kind = result.error_kind or "permanent"
            span.set_attribute(ERROR_TYPE, kind)
            span.set_status(Status(StatusCode.ERROR, redact_text(result.content)[:500]))
        span.end(end_time=start_ns + duration_ns)


def _usage_attributes(usage: Usage) -> dict[str, int | float]:
    out: dict[str, int | float] = {
        INPUT_TOKENS: usage.input_tokens,
        OUTPUT_TOKENS: usage.output_tokens,
        COST: usage.cost,
    }
    if usage.cached_tokens:
        out[CACHE_READ_TOKENS] = usage.cached_tokens
    if usage.reasoning_tokens:
        out[REASONING_TOKENS] = usage.reasoning_tokens
    return out


def _messages_json(messages: Sequence[Message], finish_reason: str | None = None) -> str:
    """Messages in the conventions' JSON shape (role + typed parts)."""
    out = []
    for message in messages:
        parts: list[dict[str, object]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                parts.append({"type": "text", "content": part.text})
            elif isinstance(part, ReasoningPart):
                parts.append({"type": "reasoning", "content": part.text})
            elif isinstance(part, ToolCallPart):
                parts.append(
                    {
                        "type": "tool_call",
                        "id": part.id,
                        "name": part.name,
                        "arguments": dict(part.arguments),
                    }
                )
            elif isinstance(part, ToolResultPart):
                parts.append(
                    {"type": "tool_call_response", "id": part.call_id, "response": part.content}
                )
        item: dict[str, object] = {"role": message.role, "parts": parts}
        if finish_reason is not None:
            item["finish_reason"] = finish_reason
        out.append(item)
    return json.dumps(out, ensure_ascii=False, default=str)


def configure_otlp(service_name: str | None = None, *, set_global: bool = True) -> TracerProvider:
    """A tracer provider exporting over OTLP/HTTP in a background thread.

    The exporter reads the standard environment: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), ``OTEL_EXPORTER_OTLP_HEADERS``,
    ``OTEL_EXPORTER_OTLP_TIMEOUT`` ...; ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``
    name the service (default ``loopwright``). With ``set_global`` the provider becomes
    the global one when none was set yet (so other instrumentation joins the same traces). Call ``provider.shutdown()`` at exit to flush the last spans.
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    protocol = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
    )
    if protocol and protocol != "http/protobuf":
        raise ValueError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported; loopwright exports "
            "OTLP over HTTP: set it to http/protobuf (or unset it)"
        )
    name = service_name or os.environ.get("OTEL_SERVICE_NAME") or "loopwright"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if set_global and not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(provider)
    return provider
