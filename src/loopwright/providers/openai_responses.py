"""OpenAI Responses API (``/v1/responses``), via the ``openai`` SDK.

Wire facts (OpenAI API reference, Responses; ``shared/wire-samples/README.md``):

* input is a list of items: ``{"role": "user"|"system"|"developer", "content"}`` messages,
  assistant ``{"type": "message", "id": "msg_…", "content": [{"type": "output_text"}]}``,
  ``{"type": "function_call", "id": "fc_…", "call_id", "name", "arguments"}`` and results
  ``{"type": "function_call_output", "call_id", "output"}``; reasoning items ``{"type":
  "reasoning", "id": "rs_…", "summary": [...], "encrypted_content"?}`` must be echoed back
  together with the items that followed them.
* tools are flat ``{"type": "function", "name", "description", "parameters", "strict"}``
  (``strict`` is sent explicitly: the API's default is strict).
* structured output: ``text: {"format": {"type": "json_schema", name, description?,
  schema, strict}}``; the answer is the ``output_text`` of the message item.
* the stream is named SSE events: ``response.output_item.added`` -> text
  (``response.output_text.delta``), reasoning (``response.reasoning_summary_text.delta``,
  ``response.reasoning_text.delta``) and argument (``response.function_call_arguments.delta``)
  deltas -> ``response.output_item.done`` (the whole item) -> ``response.completed`` /
  ``response.incomplete`` / ``response.failed``, or an ``error`` event.
* ``status``: completed | incomplete (``incomplete_details.reason``: max_output_tokens,
  content_filter, ...) | failed | cancelled.

Own reasoning items are kept whole in ``provider_meta["openai-responses"]["item"]`` and
echoed verbatim; foreign reasoning (another protocol's) is dropped: the Responses input
has no place for reasoning without its item id.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from loopwright.core.errors import BadRequest, IncompleteTurn, MalformedResponse
from loopwright.core.events import ModelEvent
from loopwright.core.messages import (
    JSONValue,
    Message,
    ReasoningPart,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from loopwright.core.protocols import (
    ModelRequest,
    ModelSettings,
    NamedTool,
    OutputFormat,
    PayloadHook,
)
from loopwright.core.tools import ToolSpec
from loopwright.providers import openai_chat as _openai  # the shared openai SDK helpers
from loopwright.providers._common import (
    StreamAccumulator,
    ToolNameMap,
    error_from_http,
    normalize_call_id,
    own_meta,
)
from loopwright.providers._stream import is_arguments_json, refuse_non_stream
from loopwright.providers.pricing import count
from loopwright.providers.registry import VENDORS, Vendor
from loopwright.providers.schema import openai_output_schema, openai_strict_schema
from loopwright.providers.transport import CallLimits

PROTOCOL = "openai-responses"
_REASONING_KEYS = ("id", "type", "summary", "content", "encrypted_content")

INCOMPLETE_REASONS: dict[str, StopReason] = {
    "max_output_tokens": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}
"""``incomplete_details.reason`` of an ``incomplete`` response -> canonical. The reasons
that leave the turn to be continued by another request (:data:`CONTINUED_REASONS`) are an
:class:`IncompleteTurn`; an unknown reason is a :class:`MalformedResponse`."""
CONTINUED_REASONS: dict[str, str] = {
    "max_messages": "the response reached its limit of output messages",
    "steered": "the response stopped at a steer event and expects a successor response",
}
STATUSES: dict[str, StopReason] = {
    "completed": StopReason.FINAL_ANSWER,
    "cancelled": StopReason.ABORTED,
}

# ----------------------------------------------------------------- encoding


def _output(result: ToolResultPart) -> list[dict[str, Any]]:
    """A function call's output with images: its text, then each image as a data URL
    (function_call_output takes input_text and input_image items)."""
    items: list[dict[str, Any]] = [{"type": "input_text", "text": result.content}]
    for media in result.media:
        url = f"data:{media.mime_type};base64,{media.data}"
        items.append({"type": "input_image", "image_url": url})
    return items


def _arguments(call: ToolCallPart) -> str:
    if call.raw_arguments and is_arguments_json(call.raw_arguments):
        return call.raw_arguments  # echo exactly what the model produced
    return json.dumps(dict(call.arguments), ensure_ascii=False)


class ResponsesEncoder(_openai.OpenAIEncoder):
    """Canonical request -> Responses JSON body (pure; no SDK needed)."""

    @staticmethod
    def _text(part: TextPart) -> dict[str, Any] | None:
        item_id = own_meta(part.provider_meta, PROTOCOL).get("id") if part.provider_meta else None
        if item_id:
            return {
                "type": "message",
                "role": "assistant",
                "id": item_id,
                "status": "completed",
                "content": [{"type": "output_text", "text": part.text, "annotations": []}],
            }
        return {"role": "assistant", "content": part.text} if part.text else None

    @staticmethod
    def _call(part: ToolCallPart, names: ToolNameMap) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "function_call",
            "call_id": normalize_call_id(part.id),
            "name": names.to_wire(part.name),
            "arguments": _arguments(part),
        }
        item_id = own_meta(part.provider_meta, PROTOCOL).get("id") if part.provider_meta else None
        if item_id:
            out["id"] = item_id
        return out

    def assistant(self, message: Message, names: ToolNameMap) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for part in message.parts:
            kind = type(part)
            if kind is TextPart:
                text = self._text(part)  # type: ignore[arg-type]
                if text is not None:
                    out.append(text)
            elif kind is ToolCallPart:
                out.append(self._call(part, names))  # type: ignore[arg-type]
            elif kind is ReasoningPart:
                # Only our own items (with their ids) can be echoed; foreign reasoning is
                # dropped: Responses input has no place for reasoning without an item.
                item = own_meta(part.provider_meta, PROTOCOL).get("item")
                if isinstance(item, dict):
                    out.append(dict(item))
            else:
                raise BadRequest("a tool result cannot be part of an assistant message")
        return out

    def message(self, message: Message, names: ToolNameMap) -> list[dict[str, Any]]:
        """The input items of one canonical message."""
        if message.role == "assistant":
            return self.assistant(message, names)
        if message.role == "tool":
            return [
                {
                    "type": "function_call_output",
                    "call_id": normalize_call_id(r.call_id),
                    "output": _output(r) if r.media else r.content,
                }
                for r in message.parts
                if type(r) is ToolResultPart
            ]
        role = self.vendor.system_role if message.role == "system" else "user"
        return [{"role": role, "content": message.text}]

    def items(self, request: ModelRequest, names: ToolNameMap) -> list[dict[str, Any]]:
        return self._items(request.messages, names)

    def tool(self, spec: ToolSpec, names: ToolNameMap, strict: bool) -> dict[str, Any]:
        params = dict(spec.parameters)
        is_strict = False
        if strict and self.vendor.supports_strict:
            strict_params = openai_strict_schema(params)
            if strict_params is not None:
                params, is_strict = strict_params, True
        out: dict[str, Any] = {"type": "function", "name": names.to_wire(spec.name)}
        if spec.description:
            out["description"] = spec.description
        out["parameters"] = params
        out["strict"] = is_strict
        return out

    def settings(
        self, settings: ModelSettings, has_tools: bool, names: ToolNameMap
    ) -> dict[str, Any]:
        if settings.stop:
            raise BadRequest(
                "settings.stop: the Responses API has no stop sequences; remove them or use"
                " the Chat Completions adapter (openai:MODEL)",
                provider=PROTOCOL,
            )
        out: dict[str, Any] = {}
        if has_tools:
            choice = settings.tool_choice
            if isinstance(choice, NamedTool):
                out["tool_choice"] = {"type": "function", "name": names.to_wire(choice.name)}
            elif choice != "auto":
                out["tool_choice"] = choice
            if settings.parallel_tool_calls is not None:
                out["parallel_tool_calls"] = settings.parallel_tool_calls
        if settings.temperature is not None:
            out["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            out["max_output_tokens"] = settings.max_tokens
        level = _openai.effort(settings.reasoning)
        if level is not None and self.vendor.supports_reasoning_effort:
            out["reasoning"] = {"effort": level, "summary": "auto"}
            # Stateless echo of reasoning items needs their encrypted content.
            out["include"] = ["reasoning.encrypted_content"]
        return out

    def encode(self, request: ModelRequest) -> tuple[dict[str, Any], ToolNameMap]:
        names = self._names(request)
        payload: dict[str, Any] = {"model": self.model}
        if request.system:
            payload["instructions"] = request.system
        payload["input"] = self.items(request, names)
        if request.tools:
            payload["tools"] = self._tools(request.tools, request.settings.strict_tools, names)
        payload.update(self.settings(request.settings, bool(request.tools), names))
        if request.output is not None:
            payload["text"] = {"format": text_format(request.output)}
        if self.stream:
            payload["stream"] = True
        payload.update(request.settings.extra)
        return payload, names


def text_format(output: OutputFormat) -> dict[str, Any]:
    """``text.format`` asking for an answer that follows ``output``'s schema (the
    Responses API's flat shape: ``{type: json_schema, name, description?, schema,
    strict}``)."""
    schema, strict = openai_output_schema(output.schema)
    out: dict[str, Any] = {"type": "json_schema", "name": output.name}
    if output.description:
        out["description"] = output.description
    out["schema"] = schema
    out["strict"] = strict
    return out


# ----------------------------------------------------------------- decoding


def usage_from(raw: Any) -> Usage:
    field = _openai.get
    details_in = field(raw, "input_tokens_details")
    details_out = field(raw, "output_tokens_details")
    return Usage(
        count(field(raw, "input_tokens")),
        count(field(raw, "output_tokens")),
        count(field(details_in, "cached_tokens") if details_in else 0),
        count(field(details_out, "reasoning_tokens") if details_out else 0),
    )


def _reasoning_item(item: Any) -> dict[str, JSONValue]:
    data = _openai.dump(item)
    return {k: data[k] for k in _REASONING_KEYS if data.get(k) is not None}


def _summary_text(item: Any) -> str:
    field = _openai.get
    texts = [field(s, "text") or "" for s in field(item, "summary") or ()]
    texts += [field(c, "text") or "" for c in field(item, "content") or ()]
    return "\n\n".join(t for t in texts if t)


class _Decoder:
    """Stateful per-call event handler (state lives in ``acc.scratch``)."""

    @staticmethod
    def item_added(event: Any, acc: StreamAccumulator) -> Iterator[ModelEvent | None]:
        field = _openai.get
        item, index = field(event, "item"), field(event, "output_index") or 0
        kind = field(item, "type")
        acc.break_block()
        if kind == "function_call":
            yield acc.call(
                index,
                id=field(item, "call_id"),
                name=field(item, "name"),
                arguments=field(item, "arguments") or "",
                meta={PROTOCOL: {"id": field(item, "id")}},
            )
        elif kind == "message":
            acc.text("", {PROTOCOL: {"id": field(item, "id")}})  # opens the part with its id

    @staticmethod
    def item_done(item: Any, index: int, acc: StreamAccumulator) -> Iterator[ModelEvent | None]:
        """A complete item: fills in whatever was not streamed (all of it for a
        non-streamed response) and records what must be echoed back."""
        field = _openai.get
        kind = field(item, "type")
        streamed: set[int] = acc.scratch["streamed"]
        if kind == "function_call":
            if not acc.has_call(index):
                yield acc.call(
                    index,
                    id=field(item, "call_id"),
                    name=field(item, "name"),
                    meta={PROTOCOL: {"id": field(item, "id")}},
                )
            acc.call_arguments(index, field(item, "arguments") or "")
        elif kind == "reasoning":
            text = "" if index in streamed else _summary_text(item)
            acc.reasoning_meta({PROTOCOL: {"item": _reasoning_item(item)}})
            yield acc.reasoning(text)
            acc.break_block()
        elif kind == "message":
            meta = {PROTOCOL: {"id": field(item, "id")}}
            for content in field(item, "content") or ():
                if field(content, "type") == "refusal":
                    acc.scratch["refusal"] = True
                text = field(content, "text") or field(content, "refusal") or ""
                yield acc.text("" if index in streamed else text, meta)
            acc.break_block()

    @staticmethod
    def finished(response: Any, acc: StreamAccumulator) -> None:
        field = _openai.get
        usage = field(response, "usage")
        if usage:
            acc.usage = usage_from(usage)
        if field(response, "model"):
            acc.model = field(response, "model")
        status = field(response, "status") or "completed"
        acc.meta["status"] = status
        if status == "failed":
            error = field(response, "error")
            raise error_from_http(
                PROTOCOL, None, json.dumps(_openai.dump(error) or {"message": "response failed"})
            )
        if status == "incomplete":
            details = field(response, "incomplete_details")
            reason = (field(details, "reason") if details else None) or "unknown"
            acc.meta["incomplete_reason"] = reason
            acc.finish_reason(reason, _incomplete_stop(reason, response))
            return
        stop = STATUSES.get(status)
        if stop is None:
            raise MalformedResponse(
                f"{PROTOCOL}: unknown response status {status!r}; expected completed,"
                " incomplete, failed or cancelled",
                raw=json.dumps(_openai.dump(response), default=str),
                provider=PROTOCOL,
            )
        if acc.scratch.get("refusal"):
            stop = StopReason.REFUSAL
        acc.finish_reason(status, stop)


def _incomplete_stop(reason: str, response: Any) -> StopReason:
    """The stop reason of an ``incomplete`` response; raises for the reasons that are no
    usable end (a turn left for a continuation, an unknown reason)."""
    stop = INCOMPLETE_REASONS.get(reason)
    if stop is not None:
        return stop
    raw = json.dumps(_openai.dump(response), default=str)
    meaning = CONTINUED_REASONS.get(reason)
    if meaning is not None:
        raise IncompleteTurn(
            f"{PROTOCOL}: {meaning} (incomplete_details.reason {reason!r}); loopwright does"
            " not continue incomplete responses",
            raw=raw,
            provider=PROTOCOL,
        )
    raise MalformedResponse(
        f"{PROTOCOL}: response incomplete for an unknown reason {reason!r}; expected one of"
        f" {', '.join([*INCOMPLETE_REASONS, *CONTINUED_REASONS])}",
        raw=raw,
        provider=PROTOCOL,
    )


_TEXT_DELTA = "response.output_text.delta"


def new_accumulator(names: ToolNameMap) -> StreamAccumulator:
    """An accumulator prepared for :func:`decode_event` (its per-call state set up)."""
    acc = StreamAccumulator(PROTOCOL, names.from_wire)
    _prepare(acc)
    return acc


def _prepare(acc: StreamAccumulator) -> None:
    acc.scratch["streamed"] = set()


def decode_event(event: Any, acc: StreamAccumulator) -> Iterator[ModelEvent | None]:
    """One stream event (or, for a non-streamed call, the whole ``Response``)."""
    if acc.raw_events is not None:
        acc.record(_openai.dump(event))
    kind = getattr(event, "type", None)
    if kind == _TEXT_DELTA:  # by far the most frequent event: keep it first and short
        acc.scratch["streamed"].add(event.output_index)
        yield acc.text(event.delta or "")
        return
    if kind is None and getattr(event, "object", None) == "response":  # non-streamed
        for index, item in enumerate(getattr(event, "output", None) or ()):
            yield from _Decoder.item_done(item, index, acc)
        _Decoder.finished(event, acc)
        return
    index = getattr(event, "output_index", None) or 0
    streamed: set[int] = acc.scratch["streamed"]
    if kind == "response.function_call_arguments.delta":
        yield acc.call(index, arguments=event.delta or "")
    elif kind == "response.output_item.added":
        yield from _Decoder.item_added(event, acc)
    elif kind == "response.refusal.delta":
        streamed.add(index)
        acc.scratch["refusal"] = True
        yield acc.text(event.delta or "")
    elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        streamed.add(index)
        yield acc.reasoning(event.delta or "")
    elif kind == "response.reasoning_summary_part.added" and index in streamed:
        yield acc.reasoning("\n\n")
    elif kind == "response.output_item.done":
        yield from _Decoder.item_done(event.item, index, acc)
    elif kind in ("response.completed", "response.incomplete", "response.failed"):
        _Decoder.finished(event.response, acc)
    elif kind == "error":
        raise error_from_http(PROTOCOL, None, json.dumps(_openai.dump(event)))


# ----------------------------------------------------------------- the model


class OpenAIResponsesModel(_openai.OpenAISDKModel):
    """A :class:`~loopwright.core.protocols.Model` speaking the Responses API."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        on_payload: PayloadHook | None = None,
        vendor: Vendor | None = None,
        stream: bool = True,
        call_limits: CallLimits | None = None,
    ) -> None:
        vendor = vendor or VENDORS["openai-responses"]
        super().__init__(
            model,
            vendor,
            base_url=base_url,
            api_key=api_key,
            on_payload=on_payload,
            call_limits=call_limits,
        )
        self.encoder = ResponsesEncoder(model, vendor, stream, self._cache)

    def supports_native_output(self, with_tools: bool) -> bool:
        """``text.format`` json_schema, with or without tools."""
        return self.vendor.native_output

    def encode(self, request: ModelRequest) -> tuple[dict[str, Any], ToolNameMap]:
        return self.encoder.encode(request)

    async def _open(self, payload: dict[str, Any]) -> Any:
        client = self._sdk()
        kwargs = _openai.split_payload(payload, _openai.known_params(type(client.responses).create))
        result = await client.responses.create(**kwargs)
        if not payload.get("stream"):
            return _openai.single(result)
        await refuse_non_stream(getattr(result, "response", None), PROTOCOL)
        return result

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self._stream(
            PROTOCOL,
            lambda: self.encode(request),
            decode_event,
            prepare=_prepare,
            response=_response_payload,
        )


def _response_payload(events: list[JSONValue]) -> dict[str, Any]:
    return {"protocol": PROTOCOL, "events": events}
