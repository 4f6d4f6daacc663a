"""Anthropic Messages API adapter (``anthropic:MODEL``), driven by the official SDK.

Wire facts this module relies on (Anthropic docs "Tool use" and "Streaming messages";
SDK ``anthropic`` >= 0.40):

* The system prompt is a top-level ``system`` field; history alternates ``user`` /
  ``assistant`` messages of content blocks. Tool calls are ``tool_use`` blocks in the
  assistant message; their results go back as ``tool_result`` blocks *inside the next
  user message*, first in that message.
* ``tool_use`` ids and tool names must match ``^[a-zA-Z0-9_-]+$`` (names: 1-64 chars), so
  ids from other providers are normalised and names mapped reversibly.
* Thinking blocks carry a ``signature`` (``redacted_thinking`` carries opaque ``data``);
  both must be echoed back unchanged on the next request. They are kept under
  ``provider_meta["anthropic"]`` of the :class:`ReasoningPart`. Reasoning from another
  provider is replayed as text (a foreign signature would be rejected).
* Streaming is SSE: ``message_start`` -> ``content_block_start`` / ``_delta``
  (``text_delta``, ``input_json_delta``, ``thinking_delta``, ``signature_delta``) /
  ``_stop`` -> ``message_delta`` (stop reason, cumulative usage) -> ``message_stop``; an
  ``error`` event can arrive mid-stream (e.g. ``overloaded_error``).
* ``max_tokens`` is mandatory.
* Structured output (Claude 4.5 and later, with or without tools): ``output_config:
  {"format": {"type": "json_schema", "schema": ...}}``, the schema closed
  (``additionalProperties: false``) and limited to what the constrained decoder takes
  (:func:`~loopwright.providers.schema.closed_schema`); the answer is the text block.

The request goes through the SDK client's documented raw-request method
(``client.post("/v1/messages", body=..., stream=True, stream_cls=AsyncStream[object])``):
the SDK still does authentication, headers (``anthropic-version``), SSE decoding and
``event: error`` handling, but hands back each event as its JSON object. That keeps the
body exactly what :func:`encode_request` built (SDK 2.x's ``messages.create`` no longer
types ``temperature``) and skips building a typed model per event, which costs more than
this module's whole decoding (see ``benchmarks/notes/adapters.md``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.core.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    IncompleteTurn,
    MalformedResponse,
    ProviderError,
    RateLimited,
    TransientProviderError,
)
from loopwright.core.events import ModelEvent
from loopwright.core.messages import (
    Message,
    ReasoningPart,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from loopwright.core.protocols import ModelRequest, ModelSettings, NamedTool, PayloadHook
from loopwright.core.tools import ToolSpec
from loopwright.providers._common import (
    EncodeCache,
    RemoteModel,
    StreamAccumulator,
    ToolNameMap,
    error_from_exception,
    foreign_reasoning_text,
    is_context_overflow,
    normalize_call_id,
    own_meta,
    resume_merged,
    tool_definitions,
    tool_name_map,
)
from loopwright.providers._stream import refuse_non_stream
from loopwright.providers.registry import VENDORS, Vendor
from loopwright.providers.schema import claude_native_output, closed_schema
from loopwright.providers.transport import CallLimits, bounded_client

PROVIDER = "anthropic"

STOP_REASONS: Mapping[str, StopReason] = {
    "end_turn": StopReason.FINAL_ANSWER,
    "stop_sequence": StopReason.FINAL_ANSWER,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
}
"""Anthropic ``stop_reason`` -> canonical. ``model_context_window_exceeded`` is reported as
:class:`ContextOverflow`, ``pause_turn`` as :class:`IncompleteTurn` (see
:func:`map_stop_reason`); any other value is a :class:`MalformedResponse`."""

EFFORT_BUDGETS: Mapping[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}
"""``ModelSettings.reasoning`` effort -> ``thinking.budget_tokens`` (minimum is 1024)."""

_THINKING_OFF = ("none", "off", "disabled")

# In-stream ``error`` events arrive with HTTP status 200; classify them by error type.
_ERROR_TYPES: Mapping[str, type[ProviderError]] = {
    "overloaded_error": TransientProviderError,
    "api_error": TransientProviderError,
    "timeout_error": TransientProviderError,
    "rate_limit_error": RateLimited,
    "authentication_error": AuthError,
    "permission_error": AuthError,
    "billing_error": AuthError,
    "invalid_request_error": BadRequest,
    "not_found_error": BadRequest,
    "request_too_large": ContextOverflow,
}


@dataclass(frozen=True, slots=True)
class AnthropicOptions:
    """Adapter knobs beyond the registry convention.

    ``default_max_tokens`` is sent when the request sets none (the API requires the
    field); with thinking enabled it is raised to ``budget + default_max_tokens``.
    Deadlines and the response size cap are the adapter's ``call_limits``.
    """

    default_max_tokens: int = 4096


# ----------------------------------------------------------------------------- request


def _thinking(settings: ModelSettings, opts: AnthropicOptions) -> dict[str, Any] | None:
    value = settings.reasoning
    if value is None or (isinstance(value, str) and value.lower() in _THINKING_OFF):
        return None
    if isinstance(value, int):
        budget = max(1024, value)
    else:
        try:
            budget = EFFORT_BUDGETS[value.lower()]
        except KeyError:
            efforts = ", ".join(EFFORT_BUDGETS)
            raise BadRequest(
                f"settings.reasoning={value!r} is not understood by anthropic;"
                f" use one of {efforts}, 'none', or a token budget (int >= 1024)",
                provider=PROVIDER,
            ) from None
    return {"type": "enabled", "budget_tokens": budget}


def _tool_choice(settings: ModelSettings, names: ToolNameMap) -> dict[str, Any] | None:
    choice = settings.tool_choice
    out: dict[str, Any]
    if isinstance(choice, NamedTool):
        out = {"type": "tool", "name": names.to_wire(choice.name)}
    elif choice == "required":
        out = {"type": "any"}
    elif choice == "none":
        return {"type": "none"}
    elif settings.parallel_tool_calls is False:
        out = {"type": "auto"}
    else:
        return None
    if settings.parallel_tool_calls is False:
        out["disable_parallel_tool_use"] = True
    return out


def _assistant_blocks(message: Message, names: ToolNameMap) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ReasoningPart):
            blocks.extend(_reasoning_block(part))
        elif isinstance(part, ToolCallPart):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": normalize_call_id(part.id),
                    "name": names.to_wire(part.name),
                    "input": dict(part.arguments),
                }
            )
    return blocks


def _reasoning_block(part: ReasoningPart) -> list[dict[str, Any]]:
    meta = own_meta(part.provider_meta, PROVIDER)
    redacted = meta.get("redacted_data")
    if isinstance(redacted, str):
        return [{"type": "redacted_thinking", "data": redacted}]
    signature = meta.get("signature")
    if isinstance(signature, str) and signature:
        return [{"type": "thinking", "thinking": part.text, "signature": signature}]
    text = foreign_reasoning_text(part)
    return [{"type": "text", "text": text}] if text else []


def _result_content(part: ToolResultPart) -> list[dict[str, Any]]:
    """A tool result with images: its text, then each image (tool_result content blocks
    may be text or image)."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": part.content}] if part.content else []
    for media in part.media:
        source = {"type": "base64", "media_type": media.mime_type, "data": media.data}
        blocks.append({"type": "image", "source": source})
    return blocks


def _user_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": normalize_call_id(part.call_id),
                "content": _result_content(part) if part.media else part.content,
            }
            if part.is_error:
                block["is_error"] = True
            blocks.append(block)
        elif isinstance(part, TextPart | ReasoningPart) and part.text:
            blocks.append({"type": "text", "text": part.text})
    return blocks


def encode_messages(
    messages: Sequence[Message], names: ToolNameMap, cache: EncodeCache | None = None
) -> tuple[list[str], list[dict[str, Any]]]:
    """Canonical history -> (system texts found in it, Anthropic ``messages``).

    Tool messages become user messages; consecutive same-role messages are merged (the
    API wants alternating roles, and tool results first in their user message). With a
    ``cache`` each message's blocks are encoded once per conversation, and encoding
    resumes after the previous request's messages when this one extends them; the tool
    names the history mentions are registered in ``names`` either way.
    """
    if cache is None:
        return _encode_from(messages, 0, names, None, [], [])
    start, state, seed = cache.resume(messages, names)
    if state is None:
        system, out = _encode_from(messages, 0, names, cache, [], [])
    elif start == len(messages):
        return list(state[0]), resume_merged(state[1], "content")
    else:
        system, out = _encode_from(
            messages, start, names, cache, list(state[0]), resume_merged(state[1], "content")
        )
    cache.save(messages, seed, names, (tuple(system), tuple(out)))
    return system, out


def _encode_from(
    messages: Sequence[Message],
    start: int,
    names: ToolNameMap,
    cache: EncodeCache | None,
    system: list[str],
    out: list[dict[str, Any]],
) -> tuple[list[str], list[dict[str, Any]]]:
    """Encode ``messages[start:]`` onto ``system`` / ``out`` (the state after the rest)."""
    for message in messages[start:] if start else messages:
        if message.role == "system":
            if message.text:
                system.append(message.text)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = cache.get(message, names) if cache is not None else None
        if blocks is None:
            blocks = (
                _assistant_blocks(message, names) if role == "assistant" else _user_blocks(message)
            )
            if cache is not None:
                cache.put(message, names, blocks)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": list(blocks)})
    return system, out


def _tool_defs(tools: Sequence[ToolSpec], names: ToolNameMap) -> list[dict[str, Any]]:
    return [
        {
            "name": names.to_wire(spec.name),
            "description": spec.description,
            "input_schema": dict(spec.parameters),
        }
        for spec in tools
    ]


def encode_request(
    model: str,
    request: ModelRequest,
    opts: AnthropicOptions = AnthropicOptions(),
    cache: EncodeCache | None = None,
) -> tuple[dict[str, Any], ToolNameMap]:
    """Build the exact ``POST /v1/messages`` body (``stream: true``) for ``request``."""
    tools = request.tools
    names = tool_name_map(tools, cache)
    history_system, messages = encode_messages(request.messages, names, cache)
    settings = request.settings
    thinking = _thinking(settings, opts)
    max_tokens = settings.max_tokens or opts.default_max_tokens
    if thinking is not None and max_tokens <= thinking["budget_tokens"]:
        max_tokens = thinking["budget_tokens"] + opts.default_max_tokens
    payload: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
    system = "\n\n".join(s for s in (request.system, *history_system) if s)
    if system:
        payload["system"] = system
    if tools:
        payload["tools"] = tool_definitions(tools, names, cache, _tool_defs)
        choice = _tool_choice(settings, names)
        if choice is not None:
            payload["tool_choice"] = choice
    if thinking is not None:
        payload["thinking"] = thinking  # the API rejects temperature with thinking on
    elif settings.temperature is not None:
        payload["temperature"] = settings.temperature
    if settings.stop:
        payload["stop_sequences"] = list(settings.stop)
    if request.output is not None:
        # structured output (Claude 4.5+): the answer text follows the schema
        schema = closed_schema(request.output.schema)
        payload["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    payload.update(settings.extra)
    payload["stream"] = True
    return payload, names


# ----------------------------------------------------------------------------- response


_INPUT_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _usage(raw: Mapping[str, Any], previous: Usage, inputs: dict[str, int]) -> Usage:
    """Anthropic reports uncached input, cache reads and cache writes separately; the
    canonical ``input_tokens`` is their sum (as OpenAI's ``prompt_tokens``). Reasoning
    tokens come from ``output_tokens_details.thinking_tokens`` (included in output).

    Counts are cumulative and every field of ``message_delta``'s usage is optional (null
    or absent): a field it does not restate keeps its earlier value (``inputs`` holds the
    three input counts seen so far), so a delta restating only some, or all as null,
    loses none of ``message_start``'s."""
    for key in _INPUT_KEYS:
        value = raw.get(key)
        if isinstance(value, int):
            inputs[key] = value
    output = raw.get("output_tokens")
    details = raw.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
    return Usage(
        sum(inputs.values()) if inputs else previous.input_tokens,
        output if isinstance(output, int) else previous.output_tokens,
        inputs.get("cache_read_input_tokens", previous.cached_tokens),
        thinking if isinstance(thinking, int) else previous.reasoning_tokens,
        0.0,
    )


def map_stop_reason(raw: object, event: Mapping[str, Any]) -> StopReason:
    """Canonical stop reason for ``raw``; raises for overflow, paused turns and unknown
    values.

    ``pause_turn`` means the API paused a long-running turn of server tools (web search,
    code execution) and expects the paused assistant content sent back, server-tool
    blocks included, to let the model continue. The adapter keeps no server-tool blocks
    and the loop sends no continuations, so the turn is reported as unfinished rather
    than taken for the final answer it is not."""
    if isinstance(raw, str) and raw in STOP_REASONS:
        return STOP_REASONS[raw]
    snippet = json.dumps(event, default=str)[:500]
    if raw == "pause_turn":
        raise IncompleteTurn(
            "anthropic: the API paused a long-running server-tool turn (stop_reason"
            " pause_turn) and expects it continued; loopwright does not continue paused"
            " turns: lower the server tools' max_uses or ask for less per turn",
            raw=snippet,
            provider=PROVIDER,
        )
    if raw == "model_context_window_exceeded":
        raise ContextOverflow(
            "anthropic: the model hit its context window while answering"
            " (stop_reason model_context_window_exceeded); shorten the history",
            raw=snippet,
            provider=PROVIDER,
        )
    raise MalformedResponse(
        f"anthropic: unknown stop_reason {raw!r}", raw=snippet, provider=PROVIDER
    )


def _block_start(index: int, block: Mapping[str, Any], acc: StreamAccumulator) -> ModelEvent | None:
    kind = block.get("type")
    acc.break_block()
    if kind == "text":
        return acc.text(str(block.get("text") or ""))
    if kind == "thinking":
        signature = block.get("signature")
        meta = {PROVIDER: {"signature": signature}} if signature else None
        return acc.reasoning(str(block.get("thinking") or ""), meta)
    if kind == "redacted_thinking":
        acc.reasoning_meta({PROVIDER: {"redacted_data": str(block.get("data") or "")}})
        acc.break_block()
        return None
    if kind == "tool_use":
        initial = block.get("input")
        args = json.dumps(initial) if isinstance(initial, dict) and initial else ""
        return acc.call(
            index, id=str(block.get("id") or ""), name=str(block.get("name") or ""), arguments=args
        )
    return None  # server tools, citations-only blocks ...: nothing to replay


def _block_delta(index: int, delta: Mapping[str, Any], acc: StreamAccumulator) -> ModelEvent | None:
    kind = delta.get("type")
    if kind == "text_delta":
        text = delta.get("text")
        return acc.text(text if type(text) is str else str(text or ""))
    if kind == "input_json_delta":
        fragment = delta.get("partial_json")
        if type(fragment) is not str:
            fragment = str(fragment or "")
        if not fragment or not acc.has_call(index):
            return None
        return acc.arguments(index, fragment)
    if kind == "thinking_delta":
        return acc.reasoning(str(delta.get("thinking") or ""))
    if kind == "signature_delta":
        acc.reasoning_meta({PROVIDER: {"signature": str(delta.get("signature") or "")}})
        return None
    return None


def decode_event(event: Mapping[str, Any], acc: StreamAccumulator) -> Iterable[ModelEvent | None]:
    """One SSE event (as its JSON object) -> canonical events, through ``acc``.

    Raises only :class:`ProviderError`: an event of an unexpected shape is a
    :class:`MalformedResponse` carrying the event as its raw snippet."""
    if acc.raw_events is not None:
        acc.raw_events.append(event)
    try:
        if event.get("type") == "content_block_delta":  # the per-fragment hot path
            index = event.get("index", 0)
            if type(index) is not int:
                index = int(index)
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":  # what _block_delta does, one call less
                text = delta.get("text")
                return (acc.text(text if type(text) is str else str(text or "")),)
            return (_block_delta(index, delta, acc),)
        return _decode(event, acc)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise MalformedResponse(
            f"anthropic: unexpected {event.get('type')!r} event shape ({exc})",
            raw=json.dumps(event, default=str)[:500],
            provider=PROVIDER,
        ) from exc


def _decode(event: Mapping[str, Any], acc: StreamAccumulator) -> Iterable[ModelEvent | None]:
    kind = event.get("type")
    if kind == "content_block_start":
        return (_block_start(int(event.get("index", 0)), event.get("content_block") or {}, acc),)
    if kind == "content_block_stop":
        acc.break_block()
    elif kind == "message_start":
        message = event.get("message") or {}
        acc.model = str(message.get("model") or acc.model)
        if message.get("id"):
            acc.meta["id"] = message["id"]
        acc.usage = _usage(message.get("usage") or {}, acc.usage, _inputs(acc))
    elif kind == "message_delta":
        acc.usage = _usage(event.get("usage") or {}, acc.usage, _inputs(acc))
        raw_stop = (event.get("delta") or {}).get("stop_reason")
        if raw_stop is not None:
            acc.finish_reason(str(raw_stop), map_stop_reason(raw_stop, event))
    elif kind == "error":
        raise stream_error((event.get("error") or {}), json.dumps(event, default=str))
    return ()


def _inputs(acc: StreamAccumulator) -> dict[str, int]:
    inputs: dict[str, int] = acc.scratch.setdefault("inputs", {})
    return inputs


def stream_error(error: Mapping[str, Any], raw: str) -> ProviderError:
    """An Anthropic ``{"type": ..., "message": ...}`` error object -> taxonomy."""
    kind = str(error.get("type") or "")
    message = str(error.get("message") or kind or "unknown error")
    text = f"anthropic {kind}: {message}"
    if is_context_overflow(PROVIDER, None, message):
        return ContextOverflow(text, raw=raw, provider=PROVIDER)
    cls = _ERROR_TYPES.get(kind, TransientProviderError)
    return cls(text, raw=raw, provider=PROVIDER)


def classify(exc: BaseException) -> ProviderError:
    """SDK exception -> taxonomy. In-stream ``error`` events surface as an
    ``APIStatusError`` with status 200; their body names the error type."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    if status == 200 and isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):
            return stream_error(inner, json.dumps(body, default=str))
    return error_from_exception(PROVIDER, exc)


# ----------------------------------------------------------------------------- adapter


class AnthropicModel(RemoteModel):
    """:class:`~loopwright.core.protocols.Model` over the Anthropic Messages API.

    Constructor follows the registry convention (see :mod:`loopwright.providers.registry`);
    ``options`` holds the Anthropic-specific knobs. The SDK client is built lazily, once
    per event loop, with ``max_retries=0``: one ``stream()`` is one request (the loop owns
    retries).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        on_payload: PayloadHook | None = None,
        vendor: Vendor | None = None,
        options: AnthropicOptions | None = None,
        call_limits: CallLimits | None = None,
    ) -> None:
        super().__init__(
            model,
            vendor or VENDORS["anthropic"],
            base_url=base_url,
            api_key=api_key,
            on_payload=on_payload,
            call_limits=call_limits,
        )
        self.options = options or AnthropicOptions()

    def supports_native_output(self, with_tools: bool) -> bool:
        """``output_config.format`` (with or without tools) on Claude 4.5 and later."""
        return claude_native_output(self.model)

    def _new_client(self) -> Any:
        from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

        return AsyncAnthropic(
            api_key=self._api_key or "not-needed",
            base_url=self.base_url,
            max_retries=0,
            timeout=self.call_limits.read_timeout,
            default_headers=dict(self.vendor.extra_headers) or None,
            http_client=bounded_client(DefaultAsyncHttpxClient, self.call_limits),
        )

    async def _open(self, payload: dict[str, Any]) -> AsyncIterable[Mapping[str, Any]]:
        from anthropic import AsyncStream

        try:
            stream = await self._sdk().post(
                "/v1/messages",
                body=payload,
                cast_to=object,
                stream=True,
                stream_cls=AsyncStream[object],
            )
        except Exception as exc:
            raise classify(exc) from exc
        await refuse_non_stream(getattr(stream, "response", None), PROVIDER, strict=True)
        return _events(stream)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self._stream(
            PROVIDER,
            lambda: encode_request(self.model, request, self.options, self._cache),
            decode_event,
            model=self.model,
        )


async def _events(stream: Any) -> AsyncIterator[Mapping[str, Any]]:
    """The SDK's SSE stream (events as their JSON objects), errors mapped."""
    try:
        async for event in stream:
            if not isinstance(event, dict):
                raise MalformedResponse(
                    f"anthropic: stream event is not a JSON object: {event!r}"[:300],
                    raw=json.dumps(event, default=str)[:500],
                    provider=PROVIDER,
                )
            yield event
    except Exception as exc:
        raise classify(exc) from exc
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            await close()


__all__ = [
    "EFFORT_BUDGETS",
    "STOP_REASONS",
    "AnthropicModel",
    "AnthropicOptions",
    "classify",
    "decode_event",
    "encode_messages",
    "encode_request",
    "map_stop_reason",
]
