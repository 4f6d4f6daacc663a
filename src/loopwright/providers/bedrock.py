"""Amazon Bedrock Converse adapter (``bedrock:MODEL_ID``), via ``boto3``'s ``converse_stream``.

Wire facts this module relies on (Bedrock API reference ``ConverseStream``, botocore
service model ``bedrock-runtime`` 2023-09-30, user guide "Call a tool with the Converse
API"):

* Request: ``modelId``, ``messages`` (strictly alternating ``user`` / ``assistant``, content
  blocks), ``system[{text}]``, ``inferenceConfig{maxTokens, temperature, stopSequences}``,
  ``toolConfig{tools[{toolSpec{name, description, inputSchema{json}}}], toolChoice{auto|any|
  tool{name}}}``; model-specific fields (Claude ``thinking``) in
  ``additionalModelRequestFields``. There is no ``none`` tool choice: tools are left out
  instead (impossible when the history holds tool blocks: Bedrock then requires
  ``toolConfig``, so the tools stay and the model chooses).
* Structured output: ``outputConfig{textFormat{type: json_schema, structure{jsonSchema{
  schema (a JSON string), name, description?}}}}`` (user guide "Get validated JSON
  results from models"); used for Claude 4.5 and later.
* Calls are ``toolUse{toolUseId, name, input}`` blocks; results go back as
  ``toolResult{toolUseId, content[{text} | {image{format, source{bytes}}}], status}``
  blocks in a ``user`` message. The service model documents images in tool results for
  Anthropic Claude 3/4 and Amazon Nova models only (:func:`takes_result_images`); other
  models get the text and a note. On the JSON wire ``bytes`` is base64; boto3 takes raw
  bytes.
  ``toolUseId`` must match ``[a-zA-Z0-9_-]+`` (ids from other providers are normalised).
* The response stream is AWS binary event-stream (not SSE): ``messageStart``,
  ``contentBlockStart`` (tool use only), ``contentBlockDelta{text | toolUse{input} |
  reasoningContent{text | signature | redactedContent}}``, ``contentBlockStop``,
  ``messageStop{stopReason}``, ``metadata{usage}``; errors may arrive as exception events.
* boto3 is synchronous: the call and each ``next()`` on the event stream run in a worker
  thread and are bridged to the async stream.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import threading
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopwright.core.errors import (
    BadRequest,
    ContextOverflow,
    MalformedResponse,
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
from loopwright.core.protocols import (
    ModelRequest,
    ModelSettings,
    NamedTool,
    OutputFormat,
    PayloadHook,
)
from loopwright.core.tools import ToolSpec
from loopwright.providers._common import (
    EncodeCache,
    RemoteModel,
    StreamAccumulator,
    ToolNameMap,
    foreign_reasoning_text,
    normalize_call_id,
    own_meta,
    resume_merged,
    tool_definitions,
    tool_name_map,
    tool_result_text,
)
from loopwright.providers.bedrock_wire import (
    PROVIDER,
    capture,
    captured,
    classify,
    coded_error,
    events,
)
from loopwright.providers.registry import VENDORS, Vendor
from loopwright.providers.schema import claude_native_output, closed_schema
from loopwright.providers.transport import CallLimits

STOP_REASONS: Mapping[str, StopReason] = {
    "end_turn": StopReason.FINAL_ANSWER,
    "stop_sequence": StopReason.FINAL_ANSWER,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "guardrail_intervened": StopReason.REFUSAL,
    "content_filtered": StopReason.REFUSAL,
}
"""Bedrock ``stopReason`` -> canonical. ``malformed_model_output`` / ``malformed_tool_use``
are :class:`MalformedResponse`; ``model_context_window_exceeded`` is
:class:`ContextOverflow`; unknown values are :class:`MalformedResponse`."""

EFFORT_BUDGETS: Mapping[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}
"""Effort -> Claude ``thinking.budget_tokens`` (sent in additionalModelRequestFields)."""


@dataclass(frozen=True, slots=True)
class BedrockOptions:
    """AWS client settings. Credentials default to boto3's chain (environment, profile,
    role, ``AWS_BEARER_TOKEN_BEDROCK``); ``default_max_tokens`` is sent when the request
    sets none and thinking needs a budget below it."""

    region: str | None = None
    aws_access_key_id: str | None = None
    aws_secret_access_key: str | None = None
    aws_session_token: str | None = None
    default_max_tokens: int = 4096


# ----------------------------------------------------------------------------- request


def _thinking_budget(settings: ModelSettings) -> int | None:
    value = settings.reasoning
    if value is None or (isinstance(value, str) and value.lower() in ("none", "off", "disabled")):
        return None
    if isinstance(value, int):
        return max(1024, value)
    try:
        return EFFORT_BUDGETS[value.lower()]
    except KeyError:
        raise BadRequest(
            f"settings.reasoning={value!r} is not understood by bedrock; use one of"
            f" {', '.join(EFFORT_BUDGETS)}, 'none', or a token budget (int >= 1024)",
            provider=PROVIDER,
        ) from None


def _reasoning_block(part: ReasoningPart) -> dict[str, Any] | None:
    meta = own_meta(part.provider_meta, PROVIDER)
    redacted = meta.get("redacted")
    if isinstance(redacted, str):
        return {"reasoningContent": {"redactedContent": redacted}}
    signature = meta.get("signature")
    if isinstance(signature, str) and signature:
        return {"reasoningContent": {"reasoningText": {"text": part.text, "signature": signature}}}
    text = foreign_reasoning_text(part)
    return {"text": text} if text else None


def _assistant_content(message: Message, names: ToolNameMap) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"text": part.text})
        elif isinstance(part, ReasoningPart):
            block = _reasoning_block(part)
            if block is not None:
                blocks.append(block)
        elif isinstance(part, ToolCallPart):
            use = {
                "toolUseId": normalize_call_id(part.id),
                "name": names.to_wire(part.name),
                "input": dict(part.arguments),
            }
            blocks.append({"toolUse": use})
    return blocks


_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}


def takes_result_images(model: str) -> bool:
    """Whether ``model`` (a model id, an inference profile such as
    ``us.anthropic.claude-...``, or an ARN naming one) takes images in tool results."""
    return "anthropic.claude" in model or "amazon.nova" in model


def _result_content(part: ToolResultPart, images: bool) -> list[dict[str, Any]]:
    """A tool result's content blocks: its text, then each image the model can take."""
    media = [m for m in part.media if m.mime_type in _IMAGE_FORMATS] if images else []
    if not media or len(media) != len(part.media):
        return [{"text": tool_result_text(part)}]
    blocks: list[dict[str, Any]] = [{"text": part.content}]
    for m in media:
        source = {"bytes": m.data}  # base64 as on the JSON wire; _sdk_kwargs decodes
        blocks.append({"image": {"format": _IMAGE_FORMATS[m.mime_type], "source": source}})
    return blocks


def _user_content(message: Message, images: bool = False) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            result = {
                "toolUseId": normalize_call_id(part.call_id),
                "content": _result_content(part, images),
                "status": "error" if part.is_error else "success",
            }
            blocks.append({"toolResult": result})
        elif isinstance(part, TextPart | ReasoningPart) and part.text:
            blocks.append({"text": part.text})
    return blocks


def encode_messages(
    messages: Sequence[Message],
    names: ToolNameMap,
    cache: EncodeCache | None = None,
    images: bool = False,
) -> tuple[list[str], list[dict[str, Any]], bool]:
    """Canonical history -> (system texts, Converse ``messages``, whether tool blocks occur).
    ``images``: tool results carry their images (:func:`takes_result_images`); a cache
    serves one model, so one value of it.

    Tool messages become user messages and same-role neighbours are merged: Converse
    rejects two consecutive messages with one role. With a ``cache`` each message's
    blocks are encoded once per conversation, and encoding resumes after the previous
    request's messages when this one extends them."""
    if cache is None:
        return _encode_from(messages, 0, names, None, ([], [], False), images)
    start, state, seed = cache.resume(messages, names)
    if state is not None:
        resumed = (list(state[0]), resume_merged(state[1], "content"), state[2])
        if start == len(messages):
            return resumed
        result = _encode_from(messages, start, names, cache, resumed, images)
    else:
        result = _encode_from(messages, 0, names, cache, ([], [], False), images)
    system, out, has_tool_blocks = result
    cache.save(messages, seed, names, (tuple(system), tuple(out), has_tool_blocks))
    return result


def _encode_from(
    messages: Sequence[Message],
    start: int,
    names: ToolNameMap,
    cache: EncodeCache | None,
    state: tuple[list[str], list[dict[str, Any]], bool],
    images: bool,
) -> tuple[list[str], list[dict[str, Any]], bool]:
    """Encode ``messages[start:]`` onto ``state`` (what encoding the others left)."""
    system, out, has_tool_blocks = state
    for message in messages[start:] if start else messages:
        if message.role == "system":
            if message.text:
                system.append(message.text)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = cache.get(message, names) if cache is not None else None
        if blocks is None:
            blocks = (
                _assistant_content(message, names)
                if role == "assistant"
                else _user_content(message, images)
            )
            if cache is not None:
                cache.put(message, names, blocks)
        if not has_tool_blocks:
            has_tool_blocks = message.role == "tool" or any("toolUse" in b for b in blocks)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": list(blocks)})
    return system, out, has_tool_blocks


def _tool_specs(tools: Sequence[ToolSpec], names: ToolNameMap) -> list[dict[str, Any]]:
    out = []
    for spec in tools:
        tool_spec: dict[str, Any] = {
            "name": names.to_wire(spec.name),
            "inputSchema": {"json": dict(spec.parameters)},
        }
        if spec.description:
            tool_spec["description"] = spec.description  # must be non-empty when present
        out.append({"toolSpec": tool_spec})
    return out


def _tool_config(
    request: ModelRequest, names: ToolNameMap, has_tool_blocks: bool, cache: EncodeCache | None
) -> dict[str, Any] | None:
    choice = request.settings.tool_choice
    if not request.tools or (choice == "none" and not has_tool_blocks):
        return None
    config: dict[str, Any] = {"tools": tool_definitions(request.tools, names, cache, _tool_specs)}
    if isinstance(choice, NamedTool):
        config["toolChoice"] = {"tool": {"name": names.to_wire(choice.name)}}
    elif choice == "required":
        config["toolChoice"] = {"any": {}}
    return config


def encode_request(
    model: str,
    request: ModelRequest,
    opts: BedrockOptions = BedrockOptions(),
    cache: EncodeCache | None = None,
) -> tuple[dict[str, Any], ToolNameMap]:
    """Build the ``converse_stream`` keyword arguments (= the wire body + ``modelId``)."""
    names = tool_name_map(request.tools, cache)
    history_system, messages, has_tool_blocks = encode_messages(
        request.messages, names, cache, takes_result_images(model)
    )
    settings = request.settings
    payload: dict[str, Any] = {"modelId": model, "messages": messages}
    system = [s for s in (request.system, *history_system) if s]
    if system:
        payload["system"] = [{"text": s} for s in system]
    inference: dict[str, Any] = {}
    budget = _thinking_budget(settings)
    max_tokens = settings.max_tokens
    if budget is not None and (max_tokens or 0) <= budget:
        max_tokens = budget + opts.default_max_tokens
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    if settings.temperature is not None and budget is None:
        inference["temperature"] = settings.temperature
    if settings.stop:
        inference["stopSequences"] = list(settings.stop)
    if inference:
        payload["inferenceConfig"] = inference
    tool_config = _tool_config(request, names, has_tool_blocks, cache)
    if tool_config is not None:
        payload["toolConfig"] = tool_config
    if budget is not None:
        payload["additionalModelRequestFields"] = {
            "thinking": {"type": "enabled", "budget_tokens": budget}
        }
    if request.output is not None:
        payload["outputConfig"] = {"textFormat": _text_format(request.output)}
    payload.update(settings.extra)
    return payload, names


def _text_format(output: OutputFormat) -> dict[str, Any]:
    """``outputConfig.textFormat``: the schema travels as a JSON *string*; Claude's
    constrained decoding takes the same subset as on the Anthropic API."""
    spec: dict[str, Any] = {"schema": json.dumps(closed_schema(output.schema)), "name": output.name}
    if output.description:
        spec["description"] = output.description
    return {"type": "json_schema", "structure": {"jsonSchema": spec}}


def _sdk_kwargs(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``redactedContent`` is a blob: the payload keeps it base64 (JSON-safe), boto3
    wants the bytes."""
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return dict(payload)
    fixed = []
    for message in messages:
        content = []
        for block in message.get("content") or ():
            reasoning = block.get("reasoningContent") if isinstance(block, Mapping) else None
            if isinstance(reasoning, Mapping) and isinstance(reasoning.get("redactedContent"), str):
                raw = base64.b64decode(reasoning["redactedContent"])
                block = {"reasoningContent": {"redactedContent": raw}}
            result = block.get("toolResult") if isinstance(block, Mapping) else None
            if isinstance(result, Mapping) and any("image" in c for c in result["content"]):
                block = {"toolResult": {**result, "content": _raw_images(result["content"])}}
            content.append(block)
        fixed.append({**message, "content": content})
    return {**payload, "messages": fixed}


def _raw_images(content: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in content:
        image = c.get("image")
        if isinstance(image, Mapping):
            raw = base64.b64decode(image["source"]["bytes"])
            c = {"image": {**image, "source": {"bytes": raw}}}
        out.append(dict(c))
    return out


# ----------------------------------------------------------------------------- response


def _usage(raw: Mapping[str, Any]) -> Usage:
    """``inputTokens`` excludes cache reads/writes; canonical input is their sum."""

    def n(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) else 0

    cached = n("cacheReadInputTokens")
    total_in = n("inputTokens") + cached + n("cacheWriteInputTokens")
    return Usage(total_in, n("outputTokens"), cached, 0, 0.0)


def map_stop_reason(raw: object, event: Mapping[str, Any]) -> StopReason:
    """Canonical stop reason for ``raw``; raises for overflow, malformed and unknown."""
    if isinstance(raw, str) and raw in STOP_REASONS:
        return STOP_REASONS[raw]
    snippet = json.dumps(event, default=str)[:500]
    if raw == "model_context_window_exceeded":
        raise ContextOverflow(
            "bedrock: the model hit its context window (stopReason"
            " model_context_window_exceeded); shorten the history",
            raw=snippet,
            provider=PROVIDER,
        )
    if raw in ("malformed_model_output", "malformed_tool_use"):
        raise MalformedResponse(
            f"bedrock: the model produced unusable output (stopReason {raw})",
            raw=snippet,
            provider=PROVIDER,
        )
    raise MalformedResponse(f"bedrock: unknown stopReason {raw!r}", raw=snippet, provider=PROVIDER)


@dataclass(slots=True)
class _Blocks:
    """Decoding state: the content block being filled and its reasoning meta."""

    index: int | None = None
    reasoning: dict[str, Any] = field(default_factory=dict)

    def enter(self, index: int, acc: StreamAccumulator) -> None:
        if index != self.index:
            acc.break_block()
            self.index = index
            self.reasoning = {}


def _reasoning_delta(
    delta: Mapping[str, Any], acc: StreamAccumulator, blocks: _Blocks
) -> ModelEvent | None:
    if isinstance(delta.get("signature"), str):
        blocks.reasoning["signature"] = delta["signature"]
    redacted = delta.get("redactedContent")
    if isinstance(redacted, bytes | bytearray):
        blocks.reasoning["redacted"] = base64.b64encode(bytes(redacted)).decode()
    elif isinstance(redacted, str):
        blocks.reasoning["redacted"] = redacted
    text = delta.get("text")
    event = acc.reasoning(text if isinstance(text, str) else "")
    if blocks.reasoning:
        acc.reasoning_meta({PROVIDER: dict(blocks.reasoning)})
    return event


def _delta(event: Mapping[str, Any], acc: StreamAccumulator, blocks: _Blocks) -> ModelEvent | None:
    index = event.get("contentBlockIndex", 0)
    if type(index) is not int:
        index = int(index)
    if index != blocks.index:
        blocks.enter(index, acc)
    delta = event.get("delta") or {}
    text = delta.get("text")
    if isinstance(text, str):
        return acc.text(text)
    tool = delta.get("toolUse")
    if isinstance(tool, dict):
        fragment = tool.get("input")
        if isinstance(fragment, str) and fragment:
            return acc.arguments(index, fragment)
        return None
    reasoning = delta.get("reasoningContent")
    if isinstance(reasoning, dict):
        return _reasoning_delta(reasoning, acc, blocks)
    return None


def decode_event(
    event: Mapping[str, Any], acc: StreamAccumulator, blocks: _Blocks
) -> Iterable[ModelEvent | None]:
    """One parsed ``ConverseStreamOutput`` member (``{"contentBlockDelta": {...}}``) ->
    canonical events, through ``acc``. Raises only :class:`ProviderError` (an unexpected
    shape is a :class:`MalformedResponse` with the event as raw snippet)."""
    if acc.raw_events is not None:
        acc.record(_jsonable(event))
    try:
        if "contentBlockDelta" in event:  # the per-fragment hot path
            return (_delta(event["contentBlockDelta"], acc, blocks),)
        return _decode(event, acc, blocks)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise MalformedResponse(
            f"bedrock: unexpected event shape ({exc})",
            raw=json.dumps(_jsonable(event), default=str)[:500],
            provider=PROVIDER,
        ) from exc


def _decode(
    event: Mapping[str, Any], acc: StreamAccumulator, blocks: _Blocks
) -> Iterable[ModelEvent | None]:
    if "contentBlockStart" in event:
        start_event = event["contentBlockStart"]
        index = int(start_event.get("contentBlockIndex", 0))
        blocks.enter(index, acc)
        tool = (start_event.get("start") or {}).get("toolUse")
        if isinstance(tool, dict):
            name = str(tool.get("name") or "")
            return (acc.call(index, id=str(tool.get("toolUseId") or ""), name=name),)
    elif "contentBlockStop" in event:
        blocks.index = None
        acc.break_block()
    elif "messageStop" in event:
        stop = event["messageStop"]
        raw = stop.get("stopReason")
        acc.finish_reason(str(raw), map_stop_reason(raw, event))
    elif "metadata" in event:
        usage = event["metadata"].get("usage")
        if isinstance(usage, dict):
            acc.usage = _usage(usage)
    else:
        for key, value in event.items():
            if key.endswith("Exception"):
                message = value.get("message") if isinstance(value, dict) else value
                raise coded_error(key, str(message), None, json.dumps(_jsonable(event)))
    return ()


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


# ----------------------------------------------------------------------------- adapter

_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def _client_for(base_url: str | None, opts: BedrockOptions, limits: CallLimits) -> Any:
    """A shared ``bedrock-runtime`` client per endpoint + settings: building one loads the
    service model (tens of milliseconds) and boto3 clients are thread-safe."""
    import boto3
    from botocore.config import Config

    with _CLIENTS_LOCK:
        session = boto3.session.Session()
        # botocore reads AWS_DEFAULT_REGION / the profile; AWS_REGION is what the other
        # AWS SDKs (and Bedrock's docs) use, so honour it too.
        region = opts.region or os.environ.get("AWS_REGION") or session.region_name
        if not region:
            raise BadRequest(
                "bedrock: no AWS region configured; set AWS_REGION (or AWS_DEFAULT_REGION,"
                " a profile region, or BedrockOptions(region=...))",
                provider=PROVIDER,
            )
        key = (
            base_url,
            region,
            opts.aws_access_key_id,
            opts.aws_secret_access_key,
            opts.aws_session_token,
            limits.connect,
            limits.read_timeout,
        )
        client = _CLIENTS.get(key)
        if client is None:
            config = Config(
                retries={"total_max_attempts": 1, "mode": "standard"},
                # A blocked read in the worker thread must end too: the stream
                # driver's deadlines cannot interrupt a thread.
                read_timeout=limits.read_timeout,
                connect_timeout=limits.connect,
            )
            client = session.client(
                "bedrock-runtime",
                endpoint_url=base_url,
                region_name=region,
                aws_access_key_id=opts.aws_access_key_id,
                aws_secret_access_key=opts.aws_secret_access_key,
                aws_session_token=opts.aws_session_token,
                config=config,
            )
            client.meta.events.register("before-parse.bedrock-runtime.ConverseStream", capture)
            _CLIENTS[key] = client
        return client


class BedrockModel(RemoteModel):
    """:class:`~loopwright.core.protocols.Model` over Bedrock ``ConverseStream``.

    Constructor follows the registry convention (``api_key`` is unused: boto3 resolves
    AWS credentials or ``AWS_BEARER_TOKEN_BEDROCK`` itself); ``options`` holds the AWS
    settings. botocore's own retries are off: one ``stream()`` is one request (the loop owns
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
        options: BedrockOptions | None = None,
        call_limits: CallLimits | None = None,
    ) -> None:
        del api_key  # boto3 reads AWS_BEARER_TOKEN_BEDROCK from the environment itself
        super().__init__(
            model,
            vendor or VENDORS["bedrock"],
            base_url=base_url,
            api_key=None,
            on_payload=on_payload,
            call_limits=call_limits,
        )
        self.options = options or BedrockOptions()
        self._client: Any = None

    def supports_native_output(self, with_tools: bool) -> bool:
        """``outputConfig.textFormat`` for Claude 4.5 and later. Bedrock documents it for
        some open-weight models as well, without a list this adapter could check, so
        those use the final-answer tool (``output_mode="tool"``, the default for them)."""
        return claude_native_output(self.model)

    def _sdk(self) -> Any:
        # boto3 is synchronous and runs in a worker thread (no event loop there): one
        # client a model, itself shared through the module's cache (see _client_for).
        if self._client is None:
            self._client = self._new_client()
        return self._client

    def _new_client(self) -> Any:
        return _client_for(self.base_url, self.options, self.call_limits)

    def _call(self, kwargs: dict[str, Any]) -> Any:
        """Runs in a worker thread: the HTTP call up to the response headers."""
        captured.body = None
        try:
            return self._sdk().converse_stream(**kwargs)["stream"]
        except Exception as exc:
            raise classify(exc, getattr(captured, "body", None)) from exc

    async def _open(self, payload: Mapping[str, Any]) -> AsyncIterable[Mapping[str, Any]]:
        stream = await asyncio.to_thread(self._call, _sdk_kwargs(payload))
        return events(stream, self.call_limits.max_response_bytes)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        states: list[_Blocks] = []  # one per attempt: the decoding state of the current one
        return self._stream(
            PROVIDER,
            lambda: encode_request(self.model, request, self.options, self._cache),
            lambda event, acc: decode_event(event, acc, states[-1]),
            model=self.model,
            prepare=lambda acc: states.append(_Blocks()),
        )


__all__ = [
    "EFFORT_BUDGETS",
    "STOP_REASONS",
    "BedrockModel",
    "BedrockOptions",
    "classify",
    "decode_event",
    "encode_messages",
    "encode_request",
    "map_stop_reason",
]
