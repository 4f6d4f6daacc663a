"""Google Gemini ``generateContent`` adapter (``gemini:MODEL``), via the ``google-genai`` SDK.

Wire facts this module relies on (ai.google.dev function-calling guide, REST reference
``v1beta/models.streamGenerateContent``; google-genai >= 1.0):

* The request is ``contents`` (roles ``user`` / ``model``) plus ``systemInstruction``,
  ``tools[{functionDeclarations[{name, description, parametersJsonSchema}]}]``,
  ``toolConfig.functionCallingConfig{mode AUTO|ANY|NONE, allowedFunctionNames}`` and the
  generation fields. The SDK takes the latter flat in ``config``; the payload this module
  builds (and shows to ``on_payload``) is exactly the SDK call: ``{"model", "contents",
  "config"}`` with the wire's camelCase names.
* Calls come back as ``functionCall{name, args}`` parts with ``args`` an *object*, whole
  (never fragmented); results go back as ``functionResponse{name, response}`` parts in a
  ``user`` turn. The Gemini API usually sends no call id, so ids are synthesised
  (stable: turn number, position, name) and results are paired back *by order*: the
  ``functionResponse`` parts follow the order of the calls they answer. Images a tool
  returned ride in ``functionResponse.parts[{inlineData{mimeType, data}}]`` on Gemini 3
  and later (the "multimodal function responses" of the function-calling guide); older
  models get the text and a note.
* Thought signatures (``thoughtSignature``, base64) ride on the part they came with and must
  be sent back on that part: on a function call they are kept in the call's
  ``provider_meta["gemini"]``, on text/thought parts in the message's. Thought summaries
  (``thought: true`` parts) are reasoning.
* There is no tool-specific finish reason: ``STOP`` with function calls is tool use.
* Streaming is SSE (``?alt=sse``) of whole ``GenerateContentResponse`` objects; an error may
  arrive as a ``{"error": {...}}`` chunk.
* Structured output: ``responseMimeType: "application/json"`` with ``responseJsonSchema``
  (JSON Schema; the SDK's ``response_json_schema``, unlike ``responseSchema``'s OpenAPI
  subset), together with function declarations only on Gemini 3 and later
  (:func:`~loopwright.providers.schema.gemini_native_output`).

This module builds the request and drives the SDK; decoding the chunks lives in
:mod:`loopwright.providers.gemini_stream` (its names are re-exported here).
"""

from __future__ import annotations

import base64
import json
import re
from collections import OrderedDict
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.core.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    ProviderError,
    RateLimited,
)
from loopwright.core.events import ModelEvent
from loopwright.core.messages import (
    JSONValue,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from loopwright.core.protocols import ModelRequest, ModelSettings, NamedTool, PayloadHook
from loopwright.core.tools import ToolSpec
from loopwright.providers._common import (
    EncodeCache,
    RemoteModel,
    ToolNameMap,
    error_from_exception,
    foreign_reasoning_text,
    own_meta,
    resume_merged,
    tool_definitions,
    tool_name_map,
    tool_result_text,
)
from loopwright.providers.gemini_stream import (
    FAILED_REASONS,
    FINISH_REASONS,
    MALFORMED_REASONS,
    PROVIDER,
    _Turn,
    decode_sdk_chunk,
    full_chunk,
    map_finish_reason,
    synthesize_call_id,
    wire_chunk,
)
from loopwright.providers.registry import VENDORS, Vendor
from loopwright.providers.schema import (
    UnsupportedSchema,
    gemini_native_output,
    gemini_schema,
    gemini_version,
)
from loopwright.providers.transport import (
    CallLimits,
    SSELines,
    bounded_client,
    default_httpx_client_class,
)

EFFORT_LEVELS: Mapping[str, str] = {
    "minimal": "MINIMAL",
    "low": "LOW",
    "medium": "MEDIUM",
    "high": "HIGH",
}
"""``ModelSettings.reasoning`` effort -> ``thinkingConfig.thinkingLevel`` (Gemini 3+; an
int is ``thinkingBudget``; ``"none"`` is budget 0)."""

EFFORT_BUDGETS: Mapping[str, int] = {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576}
"""Effort -> ``thinkingBudget`` for Gemini 1.x/2.x, which predate ``thinkingLevel``."""

_BUDGET_MODELS = re.compile(r"^(models/)?gemini-[12]\.")

_RETRY_DELAY = re.compile(r'"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"')


@dataclass(frozen=True, slots=True)
class GeminiOptions:
    """``api_version`` is the REST version the SDK targets. Deadlines and the response
    size cap are the adapter's ``call_limits``."""

    api_version: str = "v1beta"


def _assistant_turns(messages: Sequence[Message]) -> int:
    """The id-synthesis turn number of the reply to ``messages``."""
    return sum(1 for m in messages if m.role == "assistant")


# ----------------------------------------------------------------------------- request


def _json_schema(node: Any) -> Any:
    """The sanitiser emits OpenAPI ``nullable``; ``parametersJsonSchema`` is JSON Schema,
    where the same thing is ``type: [T, "null"]``."""
    if isinstance(node, list):
        return [_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


_SCHEMAS: OrderedDict[int, tuple[ToolSpec, dict[str, Any]]] = OrderedDict()
_SCHEMA_CACHE_SIZE = 512


def _schema_for(spec: ToolSpec) -> dict[str, Any]:
    """The sanitised schema of ``spec``, cached per spec object: a loop sends the same
    specs every turn and sanitising is the costliest part of encoding. Specs are frozen
    (their schema must not be mutated, see :mod:`loopwright.core.tools`); the cache holds
    the spec itself so an id is never confused with a recycled one."""
    hit = _SCHEMAS.get(id(spec))
    if hit is not None and hit[0] is spec:
        _SCHEMAS.move_to_end(id(spec))
        return hit[1]
    try:
        schema = _json_schema(gemini_schema(spec.parameters, spec.name))
    except UnsupportedSchema as exc:
        raise BadRequest(str(exc), provider=PROVIDER) from exc
    _SCHEMAS[id(spec)] = (spec, schema)
    if len(_SCHEMAS) > _SCHEMA_CACHE_SIZE:
        _SCHEMAS.popitem(last=False)
    return schema


def _declarations(tools: Sequence[ToolSpec], names: ToolNameMap) -> list[dict[str, Any]]:
    out = []
    for spec in tools:
        schema = _schema_for(spec)
        out.append(
            {
                "name": names.to_wire(spec.name),
                "description": spec.description,
                "parametersJsonSchema": schema,
            }
        )
    return out


def _tool_config(settings: ModelSettings, names: ToolNameMap) -> dict[str, Any] | None:
    choice = settings.tool_choice
    if isinstance(choice, NamedTool):
        config = {"mode": "ANY", "allowedFunctionNames": [names.to_wire(choice.name)]}
    elif choice == "required":
        config = {"mode": "ANY"}
    elif choice == "none":
        config = {"mode": "NONE"}
    else:
        return None
    return {"functionCallingConfig": config}


def _thinking(model: str, settings: ModelSettings) -> dict[str, Any] | None:
    value = settings.reasoning
    if value is None:
        return None
    if isinstance(value, int):
        return {"includeThoughts": value > 0, "thinkingBudget": value}
    key = value.lower()
    if key in ("none", "off", "disabled"):
        return {"thinkingBudget": 0}
    if key not in EFFORT_LEVELS:
        raise BadRequest(
            f"settings.reasoning={value!r} is not understood by gemini; use one of"
            f" {', '.join(EFFORT_LEVELS)}, 'none', or a token budget (int)",
            provider=PROVIDER,
        )
    if _BUDGET_MODELS.match(model):
        return {"includeThoughts": True, "thinkingBudget": EFFORT_BUDGETS[key]}
    return {"includeThoughts": True, "thinkingLevel": EFFORT_LEVELS[key]}


def _signed(part: dict[str, Any], signature: object) -> dict[str, Any]:
    if isinstance(signature, str) and signature:
        part["thoughtSignature"] = signature
    return part


def _model_parts(message: Message, names: ToolNameMap) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                parts.append({"text": part.text})
        elif isinstance(part, ReasoningPart):
            meta = own_meta(part.provider_meta, PROVIDER)
            if meta:
                parts.append(_signed({"text": part.text, "thought": True}, meta.get("signature")))
            elif (text := foreign_reasoning_text(part)) is not None:
                parts.append({"text": text})
        elif isinstance(part, ToolCallPart):
            meta = own_meta(part.provider_meta, PROVIDER)
            call: dict[str, Any] = {"name": names.to_wire(part.name), "args": dict(part.arguments)}
            if isinstance(meta.get("id"), str):
                call["id"] = meta["id"]
            parts.append(_signed({"functionCall": call}, meta.get("thought_signature")))
    signature = own_meta(message.provider_meta, PROVIDER).get("thought_signature")
    if isinstance(signature, str) and signature:
        # A text/thought part's signature: returned on the last non-call part.
        target = next((p for p in reversed(parts) if "functionCall" not in p), None)
        if target is None:
            parts.append({"text": "", "thoughtSignature": signature})
        else:
            target["thoughtSignature"] = signature
    return parts


_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/webp"})


def takes_result_media(model: str) -> bool:
    """Whether ``model`` takes images inside function responses (Gemini 3 and later)."""
    version = gemini_version(model)
    return version is not None and version >= 3


def _response_parts(
    message: Message, calls: Sequence[ToolCallPart], names: ToolNameMap, media: bool
) -> list[dict[str, Any]]:
    """Tool results in the order of the calls they answer (Gemini pairs them by order);
    results whose call is not in the previous turn keep their own order at the end."""
    results = [p for p in message.parts if isinstance(p, ToolResultPart)]
    if len(results) > 1:  # (a stable sort: a single result needs no order map)
        order = {call.id: i for i, call in enumerate(calls)}
        results.sort(key=lambda p: order.get(p.call_id, len(order)))
    by_id = {call.id: call for call in calls}
    parts = []
    for result in results:
        images = media and result.media and all(m.mime_type in _MEDIA_TYPES for m in result.media)
        text = result.content if images else tool_result_text(result)
        response = {"error" if result.is_error else "result": text}
        body: dict[str, Any] = {"name": names.to_wire(result.name), "response": response}
        if images:
            body["parts"] = [
                {"inlineData": {"mimeType": m.mime_type, "data": m.data}} for m in result.media
            ]
        call = by_id.get(result.call_id)
        gemini_id = own_meta(call.provider_meta, PROVIDER).get("id") if call else None
        if isinstance(gemini_id, str):
            body["id"] = gemini_id
        parts.append({"functionResponse": body})
    return parts


def _parts(
    message: Message, last_assistant: Message | None, names: ToolNameMap, media: bool
) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return _model_parts(message, names)
    if message.role == "tool":
        calls = last_assistant.tool_calls if last_assistant is not None else ()
        return _response_parts(message, calls, names, media)
    return [{"text": p.text} for p in message.parts if isinstance(p, TextPart) and p.text]


def encode_contents(
    messages: Sequence[Message],
    names: ToolNameMap,
    cache: EncodeCache | None = None,
    media: bool = False,
) -> tuple[list[str], list[dict[str, Any]]]:
    """Canonical history -> (system texts found in it, Gemini ``contents``). ``media``:
    images go inside function responses (:func:`takes_result_media`; a cache serves one
    model, so one value of it).

    With a ``cache`` each message is encoded once per conversation (a tool result only
    reused after the same assistant message, since its order follows those calls), and
    encoding resumes after the previous request's messages when this one extends them."""
    if cache is None:
        system, contents, _ = _encode_from(messages, 0, names, None, ([], [], None), media)
        return system, contents
    start, state, seed = cache.resume(messages, names)
    if state is not None:
        resumed = (list(state[0]), resume_merged(state[1], "parts"), state[2])
        if start == len(messages):
            return resumed[0], resumed[1]
        system, contents, last = _encode_from(messages, start, names, cache, resumed, media)
    else:
        system, contents, last = _encode_from(messages, 0, names, cache, ([], [], None), media)
    cache.save(messages, seed, names, (tuple(system), tuple(contents), last))
    return system, contents


def _encode_from(
    messages: Sequence[Message],
    start: int,
    names: ToolNameMap,
    cache: EncodeCache | None,
    state: tuple[list[str], list[dict[str, Any]], Message | None],
    media: bool,
) -> tuple[list[str], list[dict[str, Any]], Message | None]:
    """Encode ``messages[start:]`` onto ``state`` (system texts, contents, last assistant
    message: what encoding the others left)."""
    system, contents, last_assistant = state
    for message in messages[start:] if start else messages:
        if message.role == "system":
            if message.text:
                system.append(message.text)
            continue
        role = "model" if message.role == "assistant" else "user"
        # Entries are [answered assistant message, parts]: a tool result's parts follow
        # the order of the calls it answers, so they are reused only after the same one.
        hit = cache.get(message, names) if cache is not None else None
        if hit is not None and (message.role != "tool" or hit[0] is last_assistant):
            parts = hit[1]
        else:
            parts = _parts(message, last_assistant, names, media)
            if cache is not None:
                cache.put(message, names, [last_assistant, parts])
        if message.role == "assistant":
            last_assistant = message
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": list(parts)})
    return system, contents, last_assistant


def encode_request(
    model: str, request: ModelRequest, cache: EncodeCache | None = None
) -> tuple[dict[str, Any], ToolNameMap]:
    """Build the SDK call ``{"model", "contents", "config"}`` for ``request``."""
    names = tool_name_map(request.tools, cache)
    history_system, contents = encode_contents(
        request.messages, names, cache, takes_result_media(model)
    )
    settings = request.settings
    config: dict[str, Any] = {}
    system = "\n\n".join(s for s in (request.system, *history_system) if s)
    if system:
        config["systemInstruction"] = {"parts": [{"text": system}]}
    if request.tools:
        declarations = tool_definitions(request.tools, names, cache, _declarations)
        config["tools"] = [{"functionDeclarations": declarations}]
        tool_config = _tool_config(settings, names)
        if tool_config is not None:
            config["toolConfig"] = tool_config
    if settings.temperature is not None:
        config["temperature"] = settings.temperature
    if settings.max_tokens is not None:
        config["maxOutputTokens"] = settings.max_tokens
    if settings.stop:
        config["stopSequences"] = list(settings.stop)
    if settings.seed is not None:
        config["seed"] = settings.seed
    thinking = _thinking(model, settings)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    if request.output is not None:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = dict(request.output.schema)
    config.update(settings.extra)
    return {"model": model, "contents": contents, "config": config}, names


def _sdk_contents(contents: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The SDK validates dicts in Python mode, where a ``str`` for the ``bytes`` field
    ``thoughtSignature`` would be UTF-8 encoded (then base64'd again on the wire); hand it
    the decoded bytes instead."""
    out = []
    for content in contents:
        parts = content.get("parts") or []
        if not any("thoughtSignature" in p for p in parts):
            out.append(dict(content))
            continue
        fixed = []
        for part in parts:
            sig = part.get("thoughtSignature")
            if isinstance(sig, str):
                part = {**part, "thoughtSignature": _signature_bytes(sig)}
            fixed.append(part)
        out.append({**content, "parts": fixed})
    return out


def _signature_bytes(signature: str) -> bytes:
    """Signatures are base64 on the wire (standard alphabet; pydantic dumps URL-safe)."""
    padded = signature + "=" * (-len(signature) % 4)
    try:
        return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except ValueError as exc:
        raise BadRequest(
            f"gemini: a thought signature in the history is not base64 ({exc})",
            raw=signature[:200],
            provider=PROVIDER,
        ) from exc


def classify(exc: BaseException) -> ProviderError:
    """SDK exception -> taxonomy; a 429's ``RetryInfo.retryDelay`` becomes retry_after."""
    error = error_from_exception(PROVIDER, exc)
    if isinstance(error, RateLimited) and error.retry_after is None:
        found = _RETRY_DELAY.search(error.raw or json.dumps(getattr(exc, "details", None)))
        if found:
            error.retry_after = float(found.group(1))
    text = f"{error} {error.raw or ''}"
    if isinstance(error, BadRequest) and ("API_KEY_INVALID" in text or "API key not valid" in text):
        # Gemini answers a bad key with 400 INVALID_ARGUMENT + ErrorInfo API_KEY_INVALID.
        return AuthError(
            f"{error} (check the API key)", status=error.status, raw=error.raw, provider=PROVIDER
        )
    if not isinstance(error, ContextOverflow) and "exceeds the maximum number of tokens" in text:
        return ContextOverflow(str(error), status=error.status, raw=error.raw, provider=PROVIDER)
    return error


# ----------------------------------------------------------------------------- adapter


def _data_lines_only() -> SSELines:
    """google-genai reads only ``data: `` lines: comments, ``event:``/``id:``/``retry:``
    lines and ``data:`` without its space are rewritten away (see ``transport.SSELines``)."""
    return SSELines(keep_events=False)


class GeminiModel(RemoteModel):
    """:class:`~loopwright.core.protocols.Model` over Gemini ``streamGenerateContent``.

    Constructor follows the registry convention; ``options`` holds the Gemini knobs. The
    SDK's own retries are off (one attempt); one ``stream()`` is one request (the loop owns
    retries). Automatic function calling is disabled: loopwright runs the tools.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        on_payload: PayloadHook | None = None,
        vendor: Vendor | None = None,
        options: GeminiOptions | None = None,
        call_limits: CallLimits | None = None,
    ) -> None:
        super().__init__(
            model,
            vendor or VENDORS["gemini"],
            base_url=base_url,
            api_key=api_key,
            on_payload=on_payload,
            call_limits=call_limits,
        )
        self.options = options or GeminiOptions()

    def supports_native_output(self, with_tools: bool) -> bool:
        """``responseJsonSchema``: without tools on every Gemini model, with them on
        Gemini 3 and later."""
        return gemini_native_output(self.model, with_tools)

    def _new_client(self) -> Any:
        from google import genai
        from google.genai import types

        http = types.HttpOptions(
            base_url=self.base_url,
            api_version=self.options.api_version,
            timeout=int(self.call_limits.read_timeout * 1000),
            httpx_async_client=bounded_client(
                default_httpx_client_class(), self.call_limits, _data_lines_only
            ),
            headers=dict(self.vendor.extra_headers) or None,
            # Explicit "one attempt": the SDK's default may change, the loop owns retries.
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        return genai.Client(api_key=self._api_key or "not-needed", http_options=http)

    async def _open(self, payload: Mapping[str, Any]) -> AsyncIterable[Any]:
        config = {**payload.get("config", {}), "automaticFunctionCalling": {"disable": True}}
        try:
            stream = await self._sdk().aio.models.generate_content_stream(
                model=payload["model"],
                contents=_sdk_contents(payload.get("contents") or []),
                config=config,
            )
        except Exception as exc:
            raise classify(exc) from exc
        return _chunks(stream)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        turns: list[_Turn] = []  # the call's decoding state (set on its accumulator)
        return self._stream(
            PROVIDER,
            lambda: encode_request(self.model, request, self._cache),
            lambda chunk, acc: decode_sdk_chunk(chunk, acc, turns[-1]),
            model=self.model,
            prepare=lambda acc: turns.append(_Turn(_assistant_turns(request.messages))),
            response=_response_payload,
        )


def _response_payload(chunks: list[JSONValue]) -> dict[str, Any]:
    return {"chunks": chunks}


async def _chunks(stream: Any) -> AsyncIterator[Any]:
    """The SDK's typed chunks, errors mapped."""
    try:
        async for chunk in stream:
            yield chunk
    except Exception as exc:
        raise classify(exc) from exc


__all__ = [
    "EFFORT_LEVELS",
    "FAILED_REASONS",
    "FINISH_REASONS",
    "GeminiModel",
    "GeminiOptions",
    "MALFORMED_REASONS",
    "classify",
    "decode_sdk_chunk",
    "full_chunk",
    "encode_contents",
    "encode_request",
    "map_finish_reason",
    "synthesize_call_id",
    "wire_chunk",
]
