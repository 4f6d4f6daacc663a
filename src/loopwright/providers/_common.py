"""Small helpers every adapter shares (the stable import surface for adapter modules).

Re-exports the error mapping (:mod:`._errors`) and the stream driver with its partial
JSON parser (:mod:`._stream`), holds the reversible tool-name mapping (below), and adds the request-side pieces: the ``on_payload`` hook, id
normalisation for cross-provider histories, the foreign-reasoning policy, the one
``stream()`` every adapter runs (:func:`stream_call`), per-event-loop SDK clients
(:class:`PerLoop`) and what every remote adapter is whatever its wire (:class:`RemoteModel`).

**Reversible tool-name mapping.**

OpenAI, Anthropic and Bedrock accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``
(Gemini also allows dots and colons, but the common subset keeps histories portable).
Names outside it (``files.read``, ``web search``, 80-character MCP names) are mapped to a
valid wire name: invalid characters become ``_`` and a short hash of the original is
appended so two different names never collide. :class:`ToolNameMap` remembers the pairs
of one request so calls coming back are renamed to the canonical name.
"""

from __future__ import annotations

import abc
import asyncio
import copy
import functools
import hashlib
import operator
import re
import threading
import weakref
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Hashable,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from loopwright.core.errors import BadRequest, ProviderError
from loopwright.core.events import ModelEvent, StreamError
from loopwright.core.messages import (
    JSONValue,
    Message,
    ReasoningPart,
    ToolCallPart,
    ToolResultPart,
)
from loopwright.core.protocols import PayloadHook
from loopwright.core.tools import ToolSpec
from loopwright.providers._errors import (
    error_from_exception,
    error_from_http,
    is_context_overflow,
    parse_retry_after,
)
from loopwright.providers._stream import (
    StreamAccumulator,
    StreamPlan,
    drive,
    parse_final,
    parse_partial,
)
from loopwright.providers.pricing import Prices, prices_for
from loopwright.providers.schema import UnsupportedSchema
from loopwright.providers.transport import DEFAULT_CALL_LIMITS, CallLimits

if TYPE_CHECKING:
    from loopwright.providers.registry import Vendor

C = TypeVar("C")
T = TypeVar("T")

__all__ = [
    "AdapterCall",
    "PerLoop",
    "RemoteModel",
    "StreamAccumulator",
    "StreamPlan",
    "EncodeCache",
    "ToolNameMap",
    "apply_request_hook",
    "drive",
    "encode_items",
    "error_from_exception",
    "error_from_http",
    "foreign_reasoning_text",
    "is_context_overflow",
    "name_map_for",
    "normalize_call_id",
    "own_meta",
    "parse_final",
    "parse_partial",
    "parse_retry_after",
    "report_response",
    "resume_merged",
    "stream_call",
    "tool_definitions",
    "tool_name_map",
    "wire_name",
]

_ID_OK = re.compile(r"[a-zA-Z0-9_-]+")  # fullmatch: "$" would accept a trailing "\n"


@functools.lru_cache(maxsize=8192)
def normalize_call_id(call_id: str, max_len: int = 64) -> str:
    """A tool-call id every protocol accepts (``[a-zA-Z0-9_-]``, at most ``max_len``).

    Deterministic, so a call and its result (normalised separately) still pair up. Ids
    that already fit are unchanged; empty ids become ``call_<hash of ''>``.
    """
    if call_id and len(call_id) <= max_len and _ID_OK.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode()).hexdigest()
    room = max_len - 13
    if room < 1:
        return ("c" + digest)[: max(1, max_len)]
    stem = re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:room] or "call"[:room]
    return f"{stem}_{digest[:12]}"


def tool_result_text(part: ToolResultPart) -> str:
    """A tool result's content for an API that takes no images in tool results: the
    content (which names each image on a line) and a note that they are not shown."""
    if not part.media:
        return part.content
    count = len(part.media)
    images = "an image" if count == 1 else f"{count} images"
    return (
        f"{part.content}\n[the tool returned {images}; this model API takes no images in "
        "tool results, so they are not shown]"
    )


def own_meta(meta: Mapping[str, JSONValue], protocol: str) -> Mapping[str, JSONValue]:
    """This protocol's slice of a ``provider_meta`` mapping (empty when absent)."""
    if not meta:  # the common case (most parts carry no meta): no lookups at all
        return {}
    value = meta.get(protocol)
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def foreign_reasoning_text(part: ReasoningPart) -> str | None:
    """How reasoning produced by another provider is replayed: as plain text, or dropped
    (``None``) when it has no text (e.g. only an encrypted blob). Signatures and opaque
    ids never cross protocols: they are only valid for the issuer."""
    text = part.text.strip()
    return f"<reasoning>\n{text}\n</reasoning>" if text else None


def name_map_for(tools: Sequence[ToolSpec], messages: Iterable[Message]) -> ToolNameMap:
    """Wire names for the request's tools and every tool name in the history."""
    names = ToolNameMap.build(t.name for t in tools)
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                names.add(part.name)
    return names


def apply_request_hook(
    hook: PayloadHook | None, provider: str, payload: dict[str, Any]
) -> dict[str, Any]:
    """Let ``on_payload("request", payload)`` see and optionally replace the request.

    The hook gets a deep copy: the payload shares its wire dicts with the encode cache
    (and later requests), so observing a run cannot change what is sent, and installing
    a hook does not switch the adapter to another code path. A returned mapping is sent
    instead. Raises :class:`BadRequest` when the hook fails or returns something that is
    not a mapping, so the adapter reports it as a final ``StreamError`` (never retried).
    """
    if hook is None:
        return payload
    try:
        replaced = hook("request", copy.deepcopy(payload))
    except Exception as exc:
        raise BadRequest(
            f"on_payload hook failed on the request: {type(exc).__name__}: {exc}",
            provider=provider,
        ) from exc
    if replaced is None:
        return payload
    if not isinstance(replaced, Mapping):
        raise BadRequest(
            f"on_payload hook must return a mapping or None, got {type(replaced).__name__}",
            provider=provider,
        )
    return dict(replaced)


def report_response(hook: PayloadHook | None, payload: Mapping[str, Any]) -> None:
    """Show the raw response to ``on_payload("response", ...)``; its return is ignored."""
    if hook is None:
        return
    try:
        hook("response", payload)
    except Exception:  # an observer must not turn a good answer into a failure
        return


def _same_items(saved: Sequence[Any], current: Sequence[Any]) -> bool:
    """``current`` starts with exactly the objects of ``saved`` (identity, in order)."""
    return len(saved) <= len(current) and all(map(operator.is_, saved, current))


@dataclass(slots=True)
class _Prefix:
    """One saved history encoding: ``messages`` encoded from a name map whose pairs were
    ``seed`` left the map as ``names`` and the adapter's encoder in ``state``."""

    seed: tuple[tuple[str, str], ...]
    messages: tuple[Message, ...]
    names: ToolNameMap
    state: Any


@dataclass(slots=True)
class _ToolsEntry:
    specs: tuple[ToolSpec, ...]
    names: ToolNameMap
    defs: dict[Hashable, list[Any]]


class EncodeCache:
    """Memo of encoded history messages, so a growing conversation is not re-encoded
    from scratch on every step (messages are frozen: the same object encodes the same).

    Three levels, all keyed by object identity (entries keep their objects alive, so an
    id is never reused while cached):

    * per message (:meth:`get` / :meth:`put`): an entry records the tool names it mapped
      and is only reused while the request's :class:`ToolNameMap` maps them the same way;
    * per conversation prefix (:meth:`resume` / :meth:`save`): an agent loop sends the
      previous request's messages plus a few new ones, so the encoder's whole state after
      the previous request (wire messages, name map, adapter extras) is kept and encoding
      resumes after it; this turns the steady state from O(history) dictionary work into
      an O(history) identity check plus the new messages;
    * per tool list (:meth:`tool_names` / :meth:`tool_defs`): the name map seeded with the
      tools and the encoded tool definitions, built once per list of the same specs.

    Cached wire dicts are shared between requests: an ``on_payload`` hook is shown a deep
    copy (see :func:`apply_request_hook`), and adapters copy a resumed state's containers
    before extending them. ``limit`` bounds memory (the per-message
    memo is cleared when full; at most :attr:`PREFIXES` prefixes are kept).
    """

    PREFIXES = 8

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._data: dict[int, tuple[Message, tuple[tuple[str, str], ...], list[Any]]] = {}
        self._prefixes: list[_Prefix] = []
        self._tools: _ToolsEntry | None = None

    def get(self, message: Message, names: ToolNameMap) -> list[Any] | None:
        hit = self._data.get(id(message))
        if hit is None or hit[0] is not message:
            return None
        for canonical, wire in hit[1]:
            if names.to_wire(canonical) != wire:
                return None
        return hit[2]

    def put(self, message: Message, names: ToolNameMap, items: list[Any]) -> list[Any]:
        if len(self._data) >= self._limit:
            self._data.clear()
        used = tuple(
            (p.name, names.to_wire(p.name)) for p in message.parts if isinstance(p, ToolCallPart)
        )
        self._data[id(message)] = (message, used, items)
        return items

    # -- conversation prefixes ---------------------------------------------------
    def resume(
        self, messages: Sequence[Message], names: ToolNameMap
    ) -> tuple[int, Any, tuple[tuple[str, str], ...]]:
        """Where to resume encoding ``messages`` with the fresh map ``names``.

        Returns ``(start, state, seed)``: ``messages[:start]`` are the same objects a
        saved encoding (started from a map with ``names``' pairs) covered; ``names`` now
        holds the pairs that encoding left and ``state`` is what the adapter saved
        (``None`` and ``start == 0`` on a miss). The adapter must copy ``state``'s
        containers before changing them, and pass ``seed`` back to :meth:`save`.
        """
        seed = names.pairs()
        prefixes = self._prefixes
        for i, entry in enumerate(prefixes):
            if (
                entry.seed == seed
                and messages
                and entry.messages
                and entry.messages[0] is messages[0]
                and _same_items(entry.messages, messages)
            ):
                if i:
                    prefixes.insert(0, prefixes.pop(i))
                names.restore(entry.names)
                return len(entry.messages), entry.state, seed
        return 0, None, seed

    def save(
        self,
        messages: Sequence[Message],
        seed: tuple[tuple[str, str], ...],
        names: ToolNameMap,
        state: Any,
    ) -> None:
        """Remember the encoder ``state`` after encoding all of ``messages`` (from a map
        with pairs ``seed``, now ``names``). ``state`` must not be changed afterwards."""
        if not messages:
            return
        first = messages[0]
        kept = [e for e in self._prefixes if e.messages[0] is not first or e.seed != seed]
        kept.insert(0, _Prefix(seed, tuple(messages), names.copy(), state))
        del kept[self.PREFIXES :]
        self._prefixes = kept

    # -- tools -------------------------------------------------------------------
    def _tools_entry(self, tools: Sequence[ToolSpec]) -> _ToolsEntry:
        entry = self._tools
        if entry is None or len(entry.specs) != len(tools) or not _same_items(entry.specs, tools):
            entry = _ToolsEntry(tuple(tools), ToolNameMap.build(t.name for t in tools), {})
            self._tools = entry
        return entry

    def tool_names(self, tools: Sequence[ToolSpec]) -> ToolNameMap:
        """A fresh map seeded with ``tools``' names (same as :meth:`ToolNameMap.build`)."""
        return self._tools_entry(tools).names.copy()

    def tool_defs(
        self,
        tools: Sequence[ToolSpec],
        build: Callable[[Sequence[ToolSpec], ToolNameMap], list[Any]],
        variant: Hashable = None,
    ) -> list[Any]:
        """``build(tools, names)`` (the wire tool definitions), once per list of the same
        specs and ``variant`` (whatever else the definitions depend on). ``build`` sees a
        map seeded with the tools only: their wire names never change as history names
        are added. Returns a new list of the shared definitions."""
        entry = self._tools_entry(tools)
        defs = entry.defs.get(variant)
        if defs is None:
            defs = build(tools, entry.names.copy())
            entry.defs[variant] = defs
        return list(defs)


def tool_name_map(tools: Sequence[ToolSpec], cache: EncodeCache | None) -> ToolNameMap:
    """A fresh map seeded with ``tools``' names only (history names are added as the
    messages are encoded), built once per tool list when there is a ``cache``."""
    if cache is None:
        return ToolNameMap.build(spec.name for spec in tools)
    return cache.tool_names(tools)


def tool_definitions(
    tools: Sequence[ToolSpec],
    names: ToolNameMap,
    cache: EncodeCache | None,
    build: Callable[[Sequence[ToolSpec], ToolNameMap], list[Any]],
    variant: Hashable = None,
) -> list[Any]:
    """The wire tool definitions ``build(tools, names)``; with a ``cache``, the memoised
    ones (see :meth:`EncodeCache.tool_defs`, which builds them from a map seeded with the
    tools only: their wire names are the same in ``names``)."""
    if cache is None:
        return build(tools, names)
    return cache.tool_defs(tools, build, variant)


def encode_items(
    messages: Sequence[Message],
    names: ToolNameMap,
    cache: EncodeCache,
    encode: Callable[[Message, ToolNameMap], list[Any]],
) -> list[Any]:
    """The wire items of ``messages`` for protocols that map each message to a flat run
    of items (OpenAI Chat / Responses): ``encode(message, names)`` concatenated.

    Registers every tool-call name of the history in ``names`` first, in order (as
    :func:`name_map_for` does), memoises per message and resumes after the previous
    request's messages (see :class:`EncodeCache`). Returns a new list.
    """
    start, state, seed = cache.resume(messages, names)
    out = list(state) if state is not None else []
    if state is not None and start == len(messages):
        return out
    rest = messages[start:] if start else messages
    for message in rest:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                names.add(part.name)
    for message in rest:
        items = cache.get(message, names)
        if items is None:
            items = cache.put(message, names, encode(message, names))
        out.extend(items)
    cache.save(messages, seed, names, tuple(out))
    return out


def resume_merged(state: Sequence[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """A resumable copy of saved role-merged wire messages (``[{"role", key: [...]}]``):
    only the last one can still grow (a following same-role message merges into it), so
    it and its ``key`` list are copied; the others are shared."""
    out = list(state)
    if out:
        last = out[-1]
        out[-1] = {**last, key: list(last[key])}
    return out


def _events_payload(events: list[JSONValue]) -> dict[str, Any]:
    return {"events": events}


@dataclass(frozen=True, slots=True)
class AdapterCall(Generic[C]):
    """One ``Model.stream(request)`` call of an adapter, for :func:`stream_call`.

    ``encode()`` builds the request payload and its tool-name map (it may raise a
    ``ProviderError`` or :class:`UnsupportedSchema`); ``open(payload)`` performs the
    request and returns the wire chunks; ``decode`` is the adapter's chunk decoder (see
    :class:`StreamPlan`). ``hook`` is the ``on_payload`` hook; with one, every accumulator
    keeps the raw wire events and ``response(events)`` is the payload shown to it as
    ``"response"``. ``limits`` are the call's deadlines (see :mod:`.transport`);
    ``prices`` fill ``Usage.cost`` (see :mod:`.pricing`). ``model`` presets the accumulator's model name (for wires that may
    not send it); ``prepare(acc)`` runs on the call's fresh accumulator, for the adapter's
    decoding state.
    """

    provider: str
    encode: Callable[[], tuple[dict[str, Any], ToolNameMap]]
    open: Callable[[dict[str, Any]], Awaitable[AsyncIterable[C]]]
    decode: Callable[[C, StreamAccumulator], Iterable[ModelEvent | None]]
    hook: PayloadHook | None = None
    model: str = ""
    prepare: Callable[[StreamAccumulator], None] | None = None
    response: Callable[[list[JSONValue]], dict[str, Any]] = _events_payload
    limits: CallLimits = DEFAULT_CALL_LIMITS
    prices: Prices | None = None


async def stream_call(call: AdapterCall[C]) -> AsyncIterator[ModelEvent]:
    """The adapter contract around one call: encode, let the ``on_payload`` hook see (or
    replace) the request, then :func:`drive` the stream. An encoding or hook failure is
    the single final ``StreamError`` (an unsupported tool schema as :class:`BadRequest`);
    nothing raises once iteration has started."""
    provider = call.provider
    try:
        payload, names = call.encode()
        payload = apply_request_hook(call.hook, provider, payload)
    except ProviderError as err:
        yield StreamError(err)
        return
    except UnsupportedSchema as err:
        yield StreamError(BadRequest(str(err), provider=provider))
        return
    hook, model, prepare = call.hook, call.model, call.prepare

    def accumulator() -> StreamAccumulator:
        acc = StreamAccumulator(provider, names.from_wire)
        acc.model = model
        if hook is not None:
            acc.raw_events = []
        if prepare is not None:
            prepare(acc)
        return acc

    def report(acc: StreamAccumulator) -> None:
        events = acc.raw_events
        report_response(hook, call.response(events if events is not None else []))

    plan: StreamPlan[C] = StreamPlan(
        provider=provider,
        open=lambda: call.open(payload),
        decode=call.decode,
        new_accumulator=accumulator,
        limits=call.limits,
        prices=call.prices,
        on_response=report if hook is not None else None,
    )
    async for event in drive(plan):
        yield event


class PerLoop(Generic[T]):
    """One lazily built value per running event loop: an SDK client (its connection
    pool) must not be shared across loops, so ``make()`` runs once for each loop that
    asks. ``get`` must be called from inside a running loop. The factory is passed per
    call (not stored), so a model's bound method does not make a reference cycle.

    Values are held per live loop (a closed loop's value is dropped), not in one slot:
    one model used from several threads, each with its own loop, built a new client at
    every switch between them, and two threads switching at once could pair one loop
    with the other's client."""

    def __init__(self) -> None:
        self._values: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def get(self, make: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        value = self._values.get(loop)
        if value is None:
            with self._lock:
                value = self._values.get(loop)
                if value is None:
                    # a client may hold its loop: entries of closed loops are dropped
                    # here, so sequential ``asyncio.run`` calls keep one client, not all
                    for closed in [k for k in self._values if k.is_closed()]:
                        del self._values[closed]
                    value = make()
                    self._values[loop] = value
        return value


class RemoteModel(abc.ABC):
    """The identity and per-model state every remote adapter shares, whatever its wire.

    ``model`` and ``vendor`` make the :attr:`name`; ``base_url`` and the api key reach the
    SDK client, which :meth:`_sdk` builds with :meth:`_new_client` once per running event
    loop (a client's connection pool must not cross loops, see :class:`PerLoop`).
    ``on_payload`` is the request/response hook, ``call_limits`` the deadlines of every
    call (see :mod:`.transport`), ``prices`` the vendor's row of the price table (``None``
    when the model has none, so ``Usage.cost`` stays unset). The :class:`EncodeCache`
    keeps the encoded prefix of a growing conversation between calls; ``on_payload``
    sees a copy of the payload, so the cache serves with or without the hook.
    """

    def __init__(
        self,
        model: str,
        vendor: Vendor,
        *,
        base_url: str | None,
        api_key: str | None,
        on_payload: PayloadHook | None,
        call_limits: CallLimits | None,
    ) -> None:
        self.model = model
        self.vendor = vendor
        self.base_url = base_url
        self._api_key = api_key
        self.on_payload = on_payload
        self.call_limits = call_limits or DEFAULT_CALL_LIMITS
        self.prices = prices_for(vendor.name, model)
        self._cache = EncodeCache()
        self._clients: PerLoop[Any] = PerLoop()

    @property
    def name(self) -> str:
        return f"{self.vendor.name}:{self.model}"

    @property
    def reports_cost(self) -> bool:
        """Whether ``Usage.cost`` is filled (the model has a row in the price table)."""
        return self.prices is not None

    def _sdk(self) -> Any:
        """The SDK client of the running event loop (built on first use in it)."""
        return self._clients.get(self._new_client)

    @abc.abstractmethod
    def _new_client(self) -> Any:
        """A new SDK client, with the SDK's own retries off (the loop owns retries)."""

    @abc.abstractmethod
    async def _open(self, payload: dict[str, Any]) -> AsyncIterable[Any]:
        """Send the (encoded, hooked) request; the wire chunks, errors mapped."""

    def _stream(
        self,
        provider: str,
        encode: Callable[[], tuple[dict[str, Any], ToolNameMap]],
        decode: Callable[[Any, StreamAccumulator], Iterable[ModelEvent | None]],
        *,
        model: str = "",
        prepare: Callable[[StreamAccumulator], None] | None = None,
        response: Callable[[list[JSONValue]], dict[str, Any]] = _events_payload,
    ) -> AsyncIterator[ModelEvent]:
        """One ``stream()`` call (see :class:`AdapterCall`): :func:`stream_call` over
        :meth:`_open`, with this model's ``on_payload`` hook, call limits and prices."""
        return stream_call(
            AdapterCall(
                provider=provider,
                encode=encode,
                open=self._open,
                decode=decode,
                hook=self.on_payload,
                model=model,
                prepare=prepare,
                response=response,
                limits=self.call_limits,
                prices=self.prices,
            )
        )


VALID_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$")
"""A tool name every protocol accepts as it is: OpenAI, Anthropic and Bedrock take
``[a-zA-Z0-9_-]{1,64}``; Gemini's function names must also start with a letter or an
underscore (a tool named ``7zip`` was a 400 there)."""
_INVALID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LEN = 8


@functools.lru_cache(maxsize=4096)
def wire_name(name: str) -> str:
    """The wire form of ``name``: itself when valid, else sanitised + ``_`` + hash."""
    if VALID_NAME.fullmatch(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LEN]
    stem = _INVALID_CHAR.sub("_", name)
    if not stem[:1].isalpha() and not stem.startswith("_"):
        stem = "_" + stem  # (isalpha: after the substitution only ASCII letters remain)
    stem = stem[: 64 - _HASH_LEN - 1]
    return f"{stem}_{digest}"


@dataclass(slots=True)
class ToolNameMap:
    """Canonical <-> wire names for one request (tool specs + names seen in history)."""

    _to_wire: dict[str, str] = field(default_factory=dict)
    _from_wire: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, names: Iterable[str]) -> ToolNameMap:
        mapping = cls()
        for name in names:
            mapping.add(name)
        return mapping

    def add(self, name: str) -> str:
        known = self._to_wire.get(name)
        if known is not None:
            return known
        wire = wire_name(name)
        other = self._from_wire.get(wire)
        if other is not None and other != name:
            # A valid name that happens to equal another name's sanitised form.
            wire = wire_name(name + "\x00" + other)
        self._to_wire[name] = wire
        self._from_wire[wire] = name
        return wire

    def copy(self) -> ToolNameMap:
        """An independent map with the same pairs (same insertion order)."""
        return ToolNameMap(dict(self._to_wire), dict(self._from_wire))

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Every (canonical, wire) pair in insertion order: equal pairs, equal mapping."""
        return tuple(self._to_wire.items())

    def restore(self, other: ToolNameMap) -> None:
        """Become a copy of ``other`` (whose pairs extend this map's: see
        :meth:`EncodeCache.resume <loopwright.providers._common.EncodeCache.resume>`)."""
        self._to_wire.update(other._to_wire)
        self._from_wire.update(other._from_wire)

    def to_wire(self, name: str) -> str:
        return self._to_wire.get(name) or self.add(name)

    def from_wire(self, wire: str) -> str:
        """The canonical name of ``wire``; unknown names come back unchanged."""
        return self._from_wire.get(wire, wire)

    @property
    def renamed(self) -> dict[str, str]:
        """Only the names that changed (canonical -> wire)."""
        return {k: v for k, v in self._to_wire.items() if k != v}
