"""OpenAI Chat Completions (and every OpenAI-compatible server), via the ``openai`` SDK.

Wire facts (OpenAI API reference, ``/v1/chat/completions``):

* tools ``{"type": "function", "function": {name, description, parameters, strict?}}``;
  calls come back in ``message.tool_calls[{id, type, function: {name, arguments}}]`` with
  ``arguments`` a JSON *string*; results go back as ``{"role": "tool", "tool_call_id",
  "content"}`` messages.
* streamed tool calls arrive as ``delta.tool_calls[{index, id?, function{name?, arguments}}]``
  fragments keyed by ``index``; usage arrives in a final chunk with empty ``choices`` when
  ``stream_options.include_usage`` is set.
* ``finish_reason``: ``stop | length | tool_calls | content_filter | function_call``; the
  deprecated ``function_call`` field (servers still on the functions API) is read as one
  tool call without an id.
* structured output: ``response_format: {"type": "json_schema", "json_schema": {name,
  description?, schema, strict}}``; the answer is the message's JSON text (a refusal
  comes back in ``message.refusal``).
* reasoning: DeepSeek/vLLM/llama.cpp send ``reasoning_content``, OpenRouter/Ollama/Groq
  ``reasoning``; both are read, the vendor's field is echoed back (DeepSeek's thinking
  mode rejects tool-call turns whose ``reasoning_content`` is missing).

Vendor quirks come from :class:`~loopwright.providers.registry.Vendor` flags, never from
``if vendor == ...`` branches.

The ``openai`` SDK helpers at the end of this module (the client, keyword splitting,
reading SDK objects) are shared with :mod:`loopwright.providers.openai_responses`, the
other adapter over the same SDK. The ``openai`` package is imported only inside
:func:`make_client` (it is an optional extra). Clients are built with ``max_retries=0``
(the loop owns retries, see ``docs/providers.md``) and the bounded HTTP client of
:mod:`.transport` (call limits, size cap, no ``__del__`` scheduling ``aclose`` on a
foreign event loop).
"""

from __future__ import annotations

import abc
import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.core.errors import BadRequest, ConfigError, MalformedResponse
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
from loopwright.providers._common import (
    EncodeCache,
    RemoteModel,
    StreamAccumulator,
    ToolNameMap,
    encode_items,
    foreign_reasoning_text,
    name_map_for,
    normalize_call_id,
    own_meta,
    tool_definitions,
    tool_result_text,
)
from loopwright.providers._stream import is_arguments_json, refuse_non_stream
from loopwright.providers.pricing import count
from loopwright.providers.registry import GENERIC_OPENAI_COMPAT, PLACEHOLDER_KEY, VENDORS, Vendor
from loopwright.providers.schema import openai_output_schema, openai_strict_schema
from loopwright.providers.transport import CallLimits, SSELines, bounded_client

PROTOCOL = "openai-chat"
MAX_ID = 40  # OpenAI rejects tool_call ids longer than 40 characters

FINISH_REASONS: dict[str, StopReason] = {
    "stop": StopReason.FINAL_ANSWER,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
    # vLLM / llama.cpp extensions
    "eos": StopReason.FINAL_ANSWER,
    "abort": StopReason.ABORTED,
}


def map_finish_reason(raw: str, snippet: str = "") -> StopReason:
    """Canonical stop reason. An unknown value is reported as
    :class:`MalformedResponse` (with the raw chunk) rather than guessed: the partial
    message is kept by the stream driver."""
    stop = FINISH_REASONS.get(raw)
    if stop is None:
        raise MalformedResponse(
            f"{PROTOCOL}: unknown finish_reason {raw!r}; expected one of"
            f" {', '.join(FINISH_REASONS)}",
            raw=snippet or raw,
            provider=PROTOCOL,
        )
    return stop


# ----------------------------------------------------------------- encoding


def _arguments_json(call: ToolCallPart) -> str:
    if call.raw_arguments and is_arguments_json(call.raw_arguments):
        return call.raw_arguments  # echo exactly what the model produced
    return json.dumps(dict(call.arguments), ensure_ascii=False)


def _content(texts: list[str]) -> str | list[dict[str, str]]:
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": t} for t in texts]


class OpenAIEncoder(abc.ABC):
    """What the encoders of the two APIs over the ``openai`` SDK share (Chat Completions
    here, Responses in :mod:`.openai_responses`): the history's wire items, the tool list
    and the request's tool-name map.

    ``cache`` memoises encoded history messages and tool definitions (see
    :class:`EncodeCache`); pass ``None`` to encode everything every time.
    """

    def __init__(
        self, model: str, vendor: Vendor, stream: bool = True, cache: EncodeCache | None = None
    ) -> None:
        self.model = model
        self.vendor = vendor
        self.stream = stream
        self.cache = cache

    @abc.abstractmethod
    def message(self, message: Message, names: ToolNameMap) -> list[dict[str, Any]]:
        """The wire items of one canonical message."""

    @abc.abstractmethod
    def tool(self, spec: ToolSpec, names: ToolNameMap, strict: bool) -> dict[str, Any]:
        """The wire definition of one tool."""

    def _names(self, request: ModelRequest) -> ToolNameMap:
        cache = self.cache
        if cache is None:
            return name_map_for(request.tools, request.messages)
        else:  # history names are registered as the messages are encoded
            return cache.tool_names(request.tools)

    def _items(self, messages: Sequence[Message], names: ToolNameMap) -> list[dict[str, Any]]:
        if self.cache is not None:
            return encode_items(messages, names, self.cache, self.message)
        out: list[dict[str, Any]] = []
        for message in messages:
            out.extend(self.message(message, names))
        return out

    def _tools(
        self, tools: Sequence[ToolSpec], strict: bool, names: ToolNameMap
    ) -> list[dict[str, Any]]:
        return tool_definitions(
            tools,
            names,
            self.cache,
            lambda specs, seeded: [self.tool(t, seeded, strict) for t in specs],
            strict,
        )


class ChatEncoder(OpenAIEncoder):
    """Canonical request -> Chat Completions JSON body (pure; no SDK needed)."""

    def _reasoning_text(self, part: ReasoningPart) -> str | None:
        if not part.provider_meta or own_meta(part.provider_meta, PROTOCOL):
            return part.text
        return foreign_reasoning_text(part)

    def _call(self, part: ToolCallPart, names: ToolNameMap) -> dict[str, Any]:
        return {
            "id": normalize_call_id(part.id, MAX_ID),
            "type": "function",
            "function": {"name": names.to_wire(part.name), "arguments": _arguments_json(part)},
        }

    def assistant(self, message: Message, names: ToolNameMap) -> dict[str, Any]:
        texts: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, Any]] = []
        for part in message.parts:
            kind = type(part)
            if kind is TextPart:
                texts.append(part.text)  # type: ignore[union-attr]
            elif kind is ToolCallPart:
                calls.append(self._call(part, names))  # type: ignore[arg-type]
            elif kind is ReasoningPart:
                text = self._reasoning_text(part)  # type: ignore[arg-type]
                if text is not None:
                    reasoning.append(text)
            else:
                raise BadRequest("a tool result cannot be part of an assistant message")
        # Always a string: OpenAI accepts "" beside tool calls, while llama-cpp-python
        # rejects null (pydantic) and a missing key (its chat template reads .content).
        out: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
        field = self.vendor.reasoning_field
        if field and (reasoning or calls):
            # DeepSeek's thinking mode wants the field on every tool-call turn, even empty.
            out[field] = "\n".join(reasoning)
        if calls:
            out["tool_calls"] = calls
        return out

    def message(self, message: Message, names: ToolNameMap) -> list[dict[str, Any]]:
        """The wire messages of one canonical message (a tool message may be several)."""
        role = message.role
        if role == "assistant":
            return [self.assistant(message, names)]
        if role == "tool":
            return [
                {
                    "role": "tool",
                    "tool_call_id": normalize_call_id(r.call_id, MAX_ID),
                    "content": tool_result_text(r),
                }
                for r in message.parts
                if type(r) is ToolResultPart
            ]
        texts = [p.text for p in message.parts if type(p) is TextPart]
        wire_role = self.vendor.system_role if role == "system" else "user"
        return [{"role": wire_role, "content": _content(texts or [""])}]

    def messages(self, request: ModelRequest, names: ToolNameMap) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if request.system:
            out.append({"role": self.vendor.system_role, "content": request.system})
        out += self._items(request.messages, names)
        return out

    def tool(self, spec: ToolSpec, names: ToolNameMap, strict: bool) -> dict[str, Any]:
        function: dict[str, Any] = {"name": names.to_wire(spec.name)}
        if spec.description:
            function["description"] = spec.description
        params = dict(spec.parameters)
        if strict and self.vendor.supports_strict:
            strict_params = openai_strict_schema(params)
            if strict_params is not None:
                params = strict_params
                function["strict"] = True
        function["parameters"] = params
        return {"type": "function", "function": function}

    def settings(
        self, settings: ModelSettings, has_tools: bool, names: ToolNameMap
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if has_tools:
            choice = settings.tool_choice
            if isinstance(choice, NamedTool):
                out["tool_choice"] = {
                    "type": "function",
                    "function": {"name": names.to_wire(choice.name)},
                }
            elif choice != "auto":
                out["tool_choice"] = choice
            if settings.parallel_tool_calls is not None:
                out["parallel_tool_calls"] = settings.parallel_tool_calls
        if settings.temperature is not None:
            out["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            out[self.vendor.max_tokens_field] = settings.max_tokens
        if settings.stop:
            out["stop"] = list(settings.stop)
        if settings.seed is not None:
            out["seed"] = settings.seed
        level = effort(settings.reasoning)
        if level is not None and self.vendor.supports_reasoning_effort:
            out["reasoning_effort"] = level
        return out

    def encode(self, request: ModelRequest) -> tuple[dict[str, Any], ToolNameMap]:
        names = self._names(request)
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": self.messages(request, names),
        }
        if request.tools:
            payload["tools"] = self._tools(request.tools, request.settings.strict_tools, names)
        payload.update(self.settings(request.settings, bool(request.tools), names))
        if request.output is not None:
            payload["response_format"] = response_format(request.output)
        if self.stream:
            payload["stream"] = True
            if self.vendor.stream_usage:
                payload["stream_options"] = {"include_usage": True}
        payload.update(request.settings.extra)
        return payload, names


def response_format(output: OutputFormat) -> dict[str, Any]:
    """The ``response_format`` asking for an answer that follows ``output``'s schema."""
    schema, strict = openai_output_schema(output.schema)
    spec: dict[str, Any] = {"name": output.name}
    if output.description:
        spec["description"] = output.description
    spec["schema"] = schema
    spec["strict"] = strict
    return {"type": "json_schema", "json_schema": spec}


# ----------------------------------------------------------------- decoding


def usage_from(raw: Any) -> Usage:
    prompt = field(raw, "prompt_tokens") or 0
    completion = field(raw, "completion_tokens") or 0
    prompt_details = field(raw, "prompt_tokens_details")
    cached = field(prompt_details, "cached_tokens") if prompt_details else None
    if cached is None:
        cached = field(raw, "prompt_cache_hit_tokens")  # DeepSeek
    details = field(raw, "completion_tokens_details")
    reasoning = field(details, "reasoning_tokens") if details else None
    return Usage(count(prompt), count(completion), count(cached), count(reasoning))


def _reasoning_of(obj: Any) -> str | None:
    extras = getattr(obj, "__pydantic_extra__", None)
    if not extras:
        return None
    value = extras.get("reasoning_content")
    if value is None:
        value = extras.get("reasoning")
    return value if isinstance(value, str) else None


def _call_index(
    acc: StreamAccumulator, index: int | None, call_id: str | None, position: int
) -> int:
    """The accumulator slot of a tool-call fragment. Some servers omit ``index`` or reuse
    index 0 for every call of a parallel batch (each with a fresh id)."""
    index = position if index is None else int(index)
    ids: dict[int, str] = acc.scratch.setdefault("ids", {})
    remap: dict[int, int] = acc.scratch.setdefault("remap", {})
    slot = remap.get(index, index)
    if call_id and slot in ids and ids[slot] != call_id:
        slot = max(ids) + 1
        remap[index] = slot
    if call_id:
        ids[slot] = call_id
    return slot


def _tool_call(acc: StreamAccumulator, tc: Any, position: int) -> ModelEvent:
    call_id = getattr(tc, "id", None)
    function = getattr(tc, "function", None)
    name = arguments = None
    if function is not None:
        name, arguments = function.name, function.arguments
    slot = _call_index(acc, getattr(tc, "index", None), call_id, position)
    return acc.call(slot, id=call_id, name=name, arguments=arguments or "")


def _legacy_call(acc: StreamAccumulator, function_call: Any) -> ModelEvent:
    """The deprecated ``function_call`` field (finish reason ``function_call``), which
    servers still speaking the functions API send instead of ``tool_calls``: one call,
    no id (the loop gives it one), its arguments streamed like a tool call's."""
    name, arguments = (
        getattr(function_call, "name", None),
        getattr(function_call, "arguments", None),
    )
    return acc.call(0, name=name, arguments=arguments or "")


def decode_choice(choice: Any, acc: StreamAccumulator, whole: bool) -> Iterator[ModelEvent | None]:
    """One streamed ``delta`` (or, when ``whole``, a complete ``message``). Reads SDK
    model attributes directly: this runs once per chunk."""
    delta = getattr(choice, "message" if whole else "delta", None)
    if delta is not None:
        reasoning = _reasoning_of(delta)
        if reasoning:
            yield acc.reasoning(reasoning, {PROTOCOL: {"field": "reasoning_content"}})
        content = delta.content
        if content:
            yield acc.text(content)
        refusal = getattr(delta, "refusal", None)
        if refusal:
            acc.scratch["refusal"] = True
            yield acc.text(refusal)
        tool_calls = delta.tool_calls
        if tool_calls:
            for position, tc in enumerate(tool_calls):
                yield _tool_call(acc, tc, position)
        elif getattr(delta, "function_call", None) is not None:
            yield _legacy_call(acc, delta.function_call)
    raw = getattr(choice, "finish_reason", None)
    if raw:
        stop = FINISH_REASONS.get(raw) or map_finish_reason(
            raw, json.dumps(dump(choice), default=str)
        )
        if acc.scratch.get("refusal"):
            stop = StopReason.REFUSAL
        acc.finish_reason(raw, stop)
        acc.meta["finish_reason"] = raw


def decode_chunk(chunk: Any, acc: StreamAccumulator) -> Iterator[ModelEvent | None]:
    """One ``ChatCompletionChunk`` (streaming) or ``ChatCompletion`` (non-streaming), as
    the openai SDK builds them."""
    if acc.raw_events is not None:
        acc.record(dump(chunk))
    usage = getattr(chunk, "usage", None)
    if usage:
        acc.usage = usage_from(usage)
        acc.model = getattr(chunk, "model", None) or acc.model
    choices = getattr(chunk, "choices", None)
    if not choices:
        return
    if not acc.model:
        acc.model = getattr(chunk, "model", None) or ""
    whole = getattr(chunk, "object", None) == "chat.completion"
    for choice in choices:
        if not getattr(choice, "index", 0):
            yield from decode_choice(choice, acc, whole)


# ----------------------------------------------------------------- the model


class OpenAISDKModel(RemoteModel):
    """A remote adapter over the ``openai`` SDK (Chat Completions or Responses): its
    ``AsyncOpenAI`` client talks to ``base_url``, else the vendor's URL."""

    def _new_client(self) -> Any:
        return make_client(
            ClientConfig(
                self.base_url or self.vendor.base_url,
                self._api_key,
                self.call_limits,
                self.vendor.extra_headers,
            )
        )


class OpenAIChatModel(OpenAISDKModel):
    """A :class:`~loopwright.core.protocols.Model` speaking Chat Completions.

    ``vendor`` carries the quirk flags (see :data:`loopwright.providers.registry.VENDORS`);
    ``stream=False`` asks for one JSON response instead of SSE (decoded the same way).
    """

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
        if vendor is None:
            vendor = GENERIC_OPENAI_COMPAT if base_url else VENDORS["openai"]
        super().__init__(
            model,
            vendor,
            base_url=base_url,
            api_key=api_key,
            on_payload=on_payload,
            call_limits=call_limits,
        )
        self.encoder = ChatEncoder(model, vendor, stream, self._cache)

    def supports_native_output(self, with_tools: bool) -> bool:
        """``response_format`` json_schema, with or without tools, where the vendor takes
        it (:attr:`Vendor.native_output`)."""
        return self.vendor.native_output

    def encode(self, request: ModelRequest) -> tuple[dict[str, Any], ToolNameMap]:
        return self.encoder.encode(request)

    async def _open(self, payload: dict[str, Any]) -> Any:
        client = self._sdk()
        create = client.chat.completions.create
        kwargs = split_payload(payload, known_params(type(client.chat.completions).create))
        result = await create(**kwargs)
        if not payload.get("stream"):
            return single(result)
        await refuse_non_stream(getattr(result, "response", None), PROTOCOL)
        return result

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self._stream(
            PROTOCOL, lambda: self.encode(request), decode_chunk, response=_response_payload
        )


def _response_payload(events: list[JSONValue]) -> dict[str, Any]:
    return {"protocol": PROTOCOL, "events": events}


# ----------------------------------------------------------------- the openai SDK
# (shared with openai_responses)


@dataclass(frozen=True, slots=True)
class ClientConfig:
    base_url: str | None
    api_key: str | None
    limits: CallLimits
    headers: Mapping[str, str]


def make_client(config: ClientConfig) -> Any:
    """An ``AsyncOpenAI`` client for ``config``, with the SDK's own retries off."""
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "the openai adapters need the openai SDK: pip install 'loopwright[openai]'"
        ) from exc
    return openai.AsyncOpenAI(
        base_url=config.base_url,
        api_key=config.api_key or PLACEHOLDER_KEY,
        max_retries=0,
        timeout=config.limits.read_timeout,
        default_headers=dict(config.headers) or None,
        # The openai SDK dispatches an id:/retry:-only event and fails on its empty data.
        http_client=bounded_client(openai.DefaultAsyncHttpxClient, config.limits, SSELines),
    )


_KNOWN: dict[str, frozenset[str]] = {}


def known_params(method: Callable[..., Any]) -> frozenset[str]:
    """Keyword names a SDK ``create`` method accepts (cached per method)."""
    key = f"{method.__module__}.{method.__qualname__}"
    known = _KNOWN.get(key)
    if known is None:
        params = inspect.signature(method).parameters
        known = frozenset(p for p in params if p not in ("self", "extra_body", "extra_headers"))
        _KNOWN[key] = known
    return known


def split_payload(payload: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """SDK keyword arguments for ``payload``: known keys as keywords, the rest (vendor
    extensions, ``settings.extra``) in ``extra_body`` so the wire body equals ``payload``."""
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in payload.items():
        (kwargs if key in known else extra)[key] = value
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def effort(reasoning: str | int | None) -> str | None:
    """A neutral reasoning setting as an OpenAI effort level (token budgets bucketed)."""
    if reasoning is None:
        return None
    if isinstance(reasoning, int):
        if reasoning <= 0:
            return "minimal"
        return "low" if reasoning <= 2048 else "medium" if reasoning <= 8192 else "high"
    return reasoning


async def single(value: Any) -> AsyncIterator[Any]:
    """A non-streamed response as a one-chunk stream (one decoding path)."""
    yield value


def dump(obj: Any) -> Any:
    """A JSON-able view of an SDK object for ``on_payload("response", ...)``."""
    to_dict = getattr(obj, "model_dump", None)
    if to_dict is not None:
        return to_dict(mode="json", exclude_unset=True)
    return obj


def field(obj: Any, name: str) -> Any:
    """``obj.name`` for SDK models (vendor extra fields included) or dicts; ``None`` when
    absent. Hot path of decoding: pydantic v2 keeps fields in ``__dict__`` and extras in
    ``__pydantic_extra__``, read directly to avoid ``__getattr__`` misses."""
    if obj is None:
        return None
    if type(obj) is dict:
        return obj.get(name)
    attrs = getattr(obj, "__dict__", None)
    if attrs is not None:
        value = attrs.get(name)
        if value is None:
            extra = getattr(obj, "__pydantic_extra__", None)
            if extra:
                value = extra.get(name)
        return value
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def get(obj: Any, name: str) -> Any:
    """A declared field of an SDK model (or a dict key); faster than :func:`field`."""
    if type(obj) is dict:
        return obj.get(name)
    return getattr(obj, name, None)


def extra(obj: Any, name: str) -> Any:
    """A vendor extension field (not declared by the SDK model), e.g. ``reasoning_content``."""
    if type(obj) is dict:
        return obj.get(name)
    extras = getattr(obj, "__pydantic_extra__", None)
    if extras is None:  # not a pydantic model allowing extras: plain attribute lookup
        return getattr(obj, name, None)
    return extras.get(name)
