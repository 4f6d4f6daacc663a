"""OpenTelemetry spans for runs, following the GenAI semantic conventions.

:class:`OtelSubscriber` is an event subscriber (``Hooks(on_event=subscriber)``). It turns
a run's events into a span tree::

    invoke_agent loopwright              (the run; INTERNAL)
      chat gpt-4o                        (each model call attempt; CLIENT)
      execute_tool get_weather           (each tool call; INTERNAL)
      chat gpt-4o
      ...

While a tool runs, its ``execute_tool`` span is the current span, so whatever the tool
calls (an MCP server: the MCP SDK puts the current trace context in each request's
``_meta``; an instrumented HTTP client) parents to that call's span.

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
import threading
import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.util.types import Attributes, AttributeValue

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
    StateChanged,
    StrategyStep,
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
from loopwright.tracing.worker import Worker

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
STRATEGY = "loopwright.strategy"

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
    """One run's spans. The run span is started on the event loop's thread (``span``,
    ``context``, ``token``: it is the current span while the run executes); the others
    are built and every span is ended on the worker thread."""

    parent: otel_context.Context
    awaiting_chunk: int = 0
    token: Token[otel_context.Context] | None = None
    span: Span | None = None
    context: otel_context.Context | None = None
    messages: list[Message] = field(default_factory=list)
    chats: dict[int, tuple[Span, int]] = field(default_factory=dict)
    """Open model-call spans by turn (a strategy may have several calls in flight)."""
    tools: dict[str, tuple[Span, int]] = field(default_factory=dict)
    tool_span_ids: dict[str, int] = field(default_factory=dict)
    """Span ids chosen on the event loop's thread for tool calls that started (the spans
    are built later on the worker thread, with these ids)."""
    strategy: bool = False
    outer: _RunSpans | None = None
    """The run that was current where this one started (a tool running an agent in the
    same task): current again when this one finishes, so its later events stay its own."""


_FIRST_CHUNK = object()


class OtelSubscriber:
    """Turns run events into GenAI spans (see the module docstring).

    ``tracer_provider``: where spans go (default: the global provider).
    ``capture_content``: record message contents (default: the environment switch).
    ``agent_name``: ``gen_ai.agent.name`` and the run span's name suffix.

    On the event loop's thread the subscriber starts the run span (once per run) and
    otherwise only timestamps each event and queues it; the model-call and tool-call spans
    are built, with those timestamps, on a background thread
    (:mod:`loopwright.tracing.worker`): the OpenTelemetry SDK costs tens of microseconds
    per span, which the run does not wait for. :meth:`flush` waits until every span of the
    events received so far has ended (then ``provider.force_flush()`` exports them).
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
        self._ids = _PresetIds.install(self._tracer)
        self._worker = Worker("loopwright-otel", self._handle)

    # -- the event loop's side ---------------------------------------------------------
    def __call__(self, event: RunEvent) -> None:
        kind = type(event)
        run = self._current.get()
        if kind is ModelStreamed:  # only the first chunk of a call matters (its latency)
            if run is not None and run.awaiting_chunk == event.turn:  # type: ignore[union-attr]
                run.awaiting_chunk = 0
                self._worker.put((run, time.time_ns(), (_FIRST_CHUNK, event.turn)))  # type: ignore[union-attr]
            return
        if kind is StateChanged or (kind is MessageAppended and not self.capture_content):
            return
        if kind is RunStarted or run is None:
            run = self._open_run(event)
        elif kind is ModelCallStarted:
            run.awaiting_chunk = event.turn  # type: ignore[union-attr]
        elif kind is ToolCallStarted:
            if self._ids is not None and run.span is not None:  # type: ignore[union-attr]
                span_id = self._ids.inner.generate_span_id()
                run.tool_span_ids[event.call.id] = span_id  # type: ignore[union-attr]
                _CALL_SPAN.set((run, span_id, _CALL_SPAN.get()))  # type: ignore[arg-type]
        elif kind is ToolCallFinished:
            call = _CALL_SPAN.get()
            if call is not None and call[0] is run:  # this task ran the call: back to before
                _CALL_SPAN.set(call[2])
        self._worker.put((run, time.time_ns(), event))
        if kind is RunFinished:
            self._current.set(run.outer)  # type: ignore[union-attr]
            if run.token is not None:
                otel_context.detach(run.token)
                run.token = None

    def _open_run(self, event: RunEvent) -> _RunSpans:
        """The run span, started here (one per run) and made the current span for the
        rest of the run: whatever the run's tools call -- an MCP server (the MCP SDK puts
        the current trace context in each request's ``_meta``), an instrumented HTTP client
        -- joins the run's trace. Its parent is the span current where the run starts (a
        strategy step, a graph node, a request)."""
        parent = otel_context.get_current()
        run = _RunSpans(parent)
        attributes = {OPERATION: "invoke_agent", AGENT_NAME: self.agent_name}
        if isinstance(event, RunStarted) and event.session_id:
            attributes[CONVERSATION_ID] = event.session_id
        run.span = self._tracer.start_span(
            f"invoke_agent {self.agent_name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        current = _RunSpan(run.span, run) if self._ids is not None else run.span
        run.context = trace.set_span_in_context(current, parent)
        run.token = otel_context.attach(run.context)
        run.outer = self._current.get()  # a run started by a tool of another run
        self._current.set(run)
        return run

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until the spans of every event received so far have ended."""
        return self._worker.flush(timeout)

    def close(self) -> None:
        self._worker.close()

    # -- the worker thread -------------------------------------------------------------
    def _handle(self, item: object) -> None:
        run, t, event = cast("tuple[_RunSpans, int, Any]", item)
        if type(event) is tuple:  # (_FIRST_CHUNK, turn)
            opened = run.chats.get(event[1])
            if opened is not None:
                opened[0].set_attribute(TIME_TO_FIRST_CHUNK, (t - opened[1]) / 1e9)
            return
        kind = type(event)
        if kind is MessageAppended:
            run.messages.append(event.message)
        elif kind is ModelCallStarted:
            self._chat_started(run, t, event)
        elif kind is ModelCallFinished:
            self._chat_finished(run, t, event)
        elif kind is ModelCallFailed:
            self._chat_failed(run, t, event)
        elif kind is ToolCallStarted:
            run.tools[event.call.id] = (self._tool_span(run, event.call, event.turn, t), t)
        elif kind is ToolCallFinished:
            self._tool_finished(run, t, event)
        elif kind is LimitReached:
            assert run.span is not None
            run.span.add_event(
                "loopwright.limit_reached",
                {STOP_REASON: event.stop.value, "loopwright.detail": event.detail},
                timestamp=t,
            )
        elif kind is StrategyStep:
            assert run.span is not None
            if not run.strategy:
                run.strategy = True
                run.span.set_attribute(STRATEGY, event.strategy)
            run.span.add_event(
                f"loopwright.strategy.{event.kind}",
                {STRATEGY: event.strategy, "loopwright.detail": json.dumps(dict(event.detail))},
                timestamp=t,
            )
        elif kind is RunFinished:
            self._finish_run(run, t, event)

    # -- run ---------------------------------------------------------------------------
    def _finish_run(self, run: _RunSpans, t: int, event: RunFinished) -> None:
        result = event.result
        span = run.span
        assert span is not None
        for chat, _ in run.chats.values():
            chat.set_status(Status(StatusCode.ERROR, "the run ended during the call"))
            chat.end(end_time=t)
        for tool_span, _ in run.tools.values():
            tool_span.set_status(Status(StatusCode.ERROR, "the run ended before the result"))
            tool_span.end(end_time=t)
        attributes: dict[str, str | int | float] = {
            **_usage_attributes(result.usage),
            STOP_REASON: result.stop.value,
            "loopwright.turns": result.turns,
        }
        if result.stop not in _OK_STOPS:
            attributes[ERROR_TYPE] = result.stop.value
            span.set_status(Status(StatusCode.ERROR, result.detail or result.stop.value))
        span.set_attributes(attributes)
        span.end(end_time=t)

    # -- model calls -------------------------------------------------------------------
    def _chat_started(self, run: _RunSpans, t: int, event: ModelCallStarted) -> None:
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
        chat = self._tracer.start_span(
            f"chat {model}",
            context=run.context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=t,
        )
        run.chats[event.turn] = (chat, t)
        if event.turn == 1 and event.attempt == 1 and run.span is not None:
            run.span.set_attributes({PROVIDER: provider, REQUEST_MODEL: model})

    def _chat_finished(self, run: _RunSpans, t: int, event: ModelCallFinished) -> None:
        opened = run.chats.pop(event.turn, None)
        if opened is None:
            return
        span = opened[0]
        attributes: dict[str, str | int | float | Sequence[str]] = {
            **_usage_attributes(event.usage),
            FINISH_REASONS: [_FINISH.get(event.stop_reason, event.stop_reason)],
        }
        if event.response_model:
            attributes[RESPONSE_MODEL] = split_model(event.response_model)[1]
        if self.capture_content:
            finish = _FINISH.get(event.stop_reason, "stop")
            attributes[OUTPUT_MESSAGES] = _messages_json([event.message], finish)
        span.set_attributes(attributes)
        span.end(end_time=t)

    def _chat_failed(self, run: _RunSpans, t: int, event: ModelCallFailed) -> None:
        opened = run.chats.pop(event.turn, None)
        if opened is None:
            return
        span = opened[0]
        span.set_attributes({ERROR_TYPE: event.error.kind, WILL_RETRY: event.will_retry})
        span.set_status(Status(StatusCode.ERROR, redact_text(str(event.error))[:500]))
        span.end(end_time=t)

    # -- tool calls --------------------------------------------------------------------
    def _tool_span(self, run: _RunSpans, call: ToolCallPart, turn: int, start: int) -> Span:
        attributes: dict[str, str | int] = {
            OPERATION: "execute_tool",
            TOOL_NAME: call.name,
            TOOL_CALL_ID: call.id,
            TOOL_TYPE: "function",
            TURN: turn,
        }
        if self.capture_content:
            attributes[TOOL_ARGUMENTS] = json.dumps(dict(call.arguments), ensure_ascii=False)
        preset = run.tool_span_ids.pop(call.id, None)
        if preset is not None and self._ids is not None:
            self._ids.preset.span_id = preset  # the id the tool's own calls already carry
        try:
            return self._tracer.start_span(
                f"execute_tool {call.name}",
                context=run.context,
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                start_time=start,
            )
        finally:
            if self._ids is not None:
                self._ids.preset.span_id = None

    def _tool_finished(self, run: _RunSpans, t: int, event: ToolCallFinished) -> None:
        duration = int(event.duration_s * 1e9)
        opened = run.tools.pop(event.call.id, None)
        if opened is None:  # never started (denied, skipped, invalid): a span of its duration
            start = t - duration
            span = self._tool_span(run, event.call, event.turn, start)
        else:
            span, start = opened
        result = event.result
        attributes: dict[str, str | int] = {}
        if event.attempts > 1:
            attributes["loopwright.tool.attempts"] = event.attempts
        if self.capture_content:
            attributes[TOOL_RESULT] = result.content
        if result.is_error:
            attributes[ERROR_TYPE] = result.error_kind or "permanent"
            span.set_status(Status(StatusCode.ERROR, redact_text(result.content)[:500]))
        if attributes:
            span.set_attributes(attributes)
        span.end(end_time=start + duration)


_CallSpan: TypeAlias = "tuple[_RunSpans, int, _CallSpan | None]"
_CALL_SPAN: ContextVar[_CallSpan | None] = ContextVar("loopwright_otel_call_span", default=None)
"""The run and span id of the tool call running in this context, and the value before
it (an outer run's call, when a tool runs an agent). Set when the call starts: the event
is emitted in the context the tool then runs in."""


class _RunSpan(trace.Span):
    """The run's span as the current span: while one of the run's tool calls runs in this
    context, its span context is that call's ``execute_tool`` span's (id chosen when the
    call started; the span itself is built later on the worker thread), so what the tool
    calls -- an MCP server, an instrumented HTTP client, a sub-agent run -- parents to the
    call. Choosing an id and setting a context variable costs the run's thread well under
    a microsecond; starting a span there costs tens. Everything else is the run span's."""

    def __init__(self, span: Span, run: _RunSpans) -> None:
        self.span = span
        self.run = run

    def get_span_context(self) -> SpanContext:
        context = self.span.get_span_context()
        call = _CALL_SPAN.get()
        if call is None or call[0] is not self.run:
            return context
        return SpanContext(
            context.trace_id, call[1], False, context.trace_flags, context.trace_state
        )

    def end(self, end_time: int | None = None) -> None:
        self.span.end(end_time)

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        self.span.set_attributes(attributes)

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        self.span.set_attribute(key, value)

    def add_event(
        self,
        name: str,
        attributes: Attributes = None,
        timestamp: int | None = None,
    ) -> None:
        self.span.add_event(name, attributes, timestamp)

    def update_name(self, name: str) -> None:
        self.span.update_name(name)

    def is_recording(self) -> bool:
        return self.span.is_recording()

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        self.span.set_status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        self.span.record_exception(exception, attributes, timestamp, escaped)


class _PresetIds(IdGenerator):
    """The SDK tracer's id generator, except that the worker thread can say which span
    id the next span it starts gets (``preset.span_id``, per thread: the run span is
    started on another thread at the same time)."""

    def __init__(self, inner: IdGenerator) -> None:
        self.inner = inner
        self.preset = threading.local()

    @classmethod
    def install(cls, tracer: trace.Tracer) -> _PresetIds | None:
        """Wrap an SDK tracer's id generator; ``None`` for a tracer without one (the
        API's no-op or proxy tracer, another SDK)."""
        inner = getattr(tracer, "id_generator", None)
        if isinstance(inner, cls):
            return inner  # the SDK caches tracers: the subscribers of one provider share it
        if not isinstance(inner, IdGenerator):
            return None
        ids = cls(inner)
        tracer.id_generator = ids  # type: ignore[attr-defined]
        return ids

    def generate_span_id(self) -> int:
        preset = getattr(self.preset, "span_id", None)
        if preset is not None:
            self.preset.span_id = None
            return int(preset)
        return self.inner.generate_span_id()

    def generate_trace_id(self) -> int:
        return self.inner.generate_trace_id()


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
