"""The shared half of every adapter's ``stream()``: accumulate, never raise.

* :class:`StreamAccumulator` collects text / reasoning / tool-call fragments in arrival
  order, emits the matching delta events (tool-call deltas carry ``partial_arguments``),
  and builds the final canonical :class:`Message`, or the partial one when the stream fails.
* :func:`drive` runs one model call: it opens the wire stream, decodes chunks through the
  adapter's ``decode(chunk, acc)`` and turns every failure into a final ``StreamError``
  with the partial message. It makes exactly one attempt: retrying belongs to the loop
  (the one retry owner, see ``docs/providers.md``), which alone can also retry a stream
  cut after output started, and counts every request it sends.
* :func:`settle` is the one place a call's usage is checked (counts clamped to ints in
  ``[0, MAX_COUNT]``) and priced (:class:`Prices`, read from the table by
  :mod:`loopwright.providers.pricing` when the adapter is built); ``drive`` applies it
  to every call's final event.

A finished response is checked before it is reported: a stream that ends without a stop
signal, a response the server aborted, a tool call whose arguments never close, and an
empty answer are errors with the raw snippet attached, never a silently empty or partial
``ResponseDone``.

**Best-effort parsing of streamed tool-call arguments.**

Streams deliver a call's JSON arguments in fragments. :func:`parse_partial` returns the
object the fragment received so far *implies* (incomplete strings kept, incomplete
numbers/literals and dangling keys dropped), or ``None`` when nothing useful parses yet.
It uses ``jiter``'s partial mode when installed (it ships with the openai and anthropic
SDKs) and a small stdlib completer otherwise; both are property-tested to agree with
``json.loads`` on complete documents and never to raise.

:func:`parse_final` is the strict parse of a finished call: ``""`` means no arguments.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from loopwright.core.errors import MalformedResponse, TransientProviderError
from loopwright.core.events import (
    ModelEvent,
    ReasoningDelta,
    ResponseDone,
    StreamError,
    TextDelta,
    ToolCallDelta,
)
from loopwright.core.messages import (
    JSONValue,
    Message,
    Part,
    ReasoningPart,
    StopReason,
    TextPart,
    ToolCallPart,
    Usage,
)
from loopwright.core.text import scrub
from loopwright.providers._errors import cut_connection, error_from_exception
from loopwright.providers.transport import DEFAULT_CALL_LIMITS, CallLimits, Deadline

C = TypeVar("C")

_PARSE_EVERY_DELTA_BELOW = 16_384
"""Above this size partial arguments are re-parsed only after 10% growth (the parse is
O(n), doing it on every delta of a 1 MB argument would be quadratic)."""


_NO_USAGE = Usage()


@dataclass(slots=True)
class _TextBuf:
    chunks: list[str] = field(default_factory=list)
    meta: dict[str, JSONValue] = field(default_factory=dict)
    reasoning: bool = False
    held: str = ""
    """A high surrogate that ended the last fragment, waiting for its low half."""

    def add(self, delta: str) -> str:
        """Append ``delta`` and return what to emit, mending a character split between
        the two halves of its UTF-16 surrogate pair (see :func:`loopwright.core.text.scrub`)."""
        held = self.held
        if held:
            self.held = ""
            delta = held + delta
        if "\ud800" <= delta[-1:] <= "\udbff":
            self.held = delta[-1]
            delta = delta[:-1]
        if held:
            delta = scrub(delta)
        if delta:
            self.chunks.append(delta)
        return delta

    def joined(self) -> str:
        return _whole("".join(self.chunks) + self.held)


def _whole(text: str) -> str:
    """``text`` with a surrogate pair split between two deltas joined into its character
    (:func:`loopwright.core.text.scrub`); ASCII text, nearly every reply, is returned
    without the call."""
    return text if text.isascii() else scrub(text)


@dataclass(slots=True)
class _CallBuf:
    index: int
    id: str = ""
    name: str = ""
    chunks: list[str] = field(default_factory=list)
    meta: dict[str, JSONValue] = field(default_factory=dict)
    final_arguments: str | None = None
    parsed_at: int = 0

    @property
    def raw(self) -> str:
        if self.final_arguments is not None:
            return _whole(self.final_arguments)
        return _whole("".join(self.chunks))


class StreamAccumulator:
    """Builds one assistant message from stream fragments (see module docstring).

    ``provider`` names the protocol namespace used for ``provider_meta`` and errors.
    ``rename`` maps wire tool names back to canonical ones.
    """

    def __init__(self, provider: str, rename: Callable[[str], str] | None = None) -> None:
        self.provider = provider
        self._rename = rename or (lambda n: n)
        self._parts: list[_TextBuf | _CallBuf] = []
        self._calls: dict[int, _CallBuf] = {}
        self._open_text: _TextBuf | None = None
        self.usage = _NO_USAGE  # frozen: one shared zero value
        self.stop: StopReason | None = None
        self.raw_stop: str | None = None
        self.model = ""
        self.meta: dict[str, JSONValue] = {}
        self.raw_events: list[JSONValue] | None = None
        self.scratch: dict[str, Any] = {}
        """Adapter-private decoding state (id remaps, open item ids ...)."""

    # -- fragments -------------------------------------------------------------
    def break_block(self) -> None:
        """The next text/reasoning fragment starts a new part (a new wire block/item)."""
        self._open_text = None

    def _text_buf(self, reasoning: bool) -> _TextBuf:
        buf = self._open_text
        if buf is None or buf.reasoning != reasoning:
            buf = _TextBuf(reasoning=reasoning)
            self._parts.append(buf)
            self._open_text = buf
        return buf

    def text(self, delta: str, meta: dict[str, JSONValue] | None = None) -> TextDelta | None:
        buf = self._open_text
        if buf is None or buf.reasoning:
            buf = self._text_buf(False)
        if meta:
            buf.meta.update(meta)
        if not delta:
            return None
        if delta[-1] < "\ud800" and not buf.held:  # the common case, as buf.add does
            buf.chunks.append(delta)
            return TextDelta(delta)
        delta = buf.add(delta)
        return TextDelta(delta) if delta else None

    def reasoning(
        self, delta: str, meta: dict[str, JSONValue] | None = None
    ) -> ReasoningDelta | None:
        buf = self._open_text
        if buf is None or not buf.reasoning:
            buf = self._text_buf(True)
        if meta:
            buf.meta.update(meta)
        if not delta:
            return None
        delta = buf.add(delta)
        return ReasoningDelta(delta) if delta else None

    def reasoning_meta(self, meta: dict[str, JSONValue]) -> None:
        """Attach echo-back data (signature, item id, encrypted content) to the current
        reasoning part, creating an empty one when the provider sent no reasoning text."""
        self._text_buf(True).meta.update(meta)

    def call(
        self,
        index: int,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: str = "",
        meta: dict[str, JSONValue] | None = None,
    ) -> ToolCallDelta:
        """Add a fragment of tool call ``index`` (the stream's own ordering key)."""
        buf = self._calls.get(index)
        if buf is None:
            buf = _CallBuf(index)
            self._calls[index] = buf
            self._parts.append(buf)
            self._open_text = None
        if id:
            buf.id = id
        if name:
            buf.name = self._rename(name)
        if meta:
            buf.meta.update(meta)
        partial: dict[str, Any] | None = None
        if arguments:
            buf.chunks.append(arguments)
            partial = self._maybe_parse(buf)
        return ToolCallDelta(index, id or None, buf.name if name else None, arguments, partial)

    def arguments(self, index: int, fragment: str) -> ToolCallDelta:
        """``call(index, arguments=fragment)`` for a non-empty fragment of a call already
        started (the per-fragment hot path); starts the call otherwise."""
        buf = self._calls.get(index)
        if buf is None or not fragment:
            return self.call(index, arguments=fragment)
        buf.chunks.append(fragment)
        return ToolCallDelta(index, None, None, fragment, self._maybe_parse(buf))

    def _maybe_parse(self, buf: _CallBuf) -> dict[str, Any] | None:
        final = buf.final_arguments
        raw = final if final is not None else "".join(buf.chunks)
        size = len(raw)
        if size > _PARSE_EVERY_DELTA_BELOW and size < buf.parsed_at * 1.1:
            return None
        buf.parsed_at = size
        return parse_partial(raw)

    def call_arguments(self, index: int, arguments: str) -> None:
        """The complete arguments of call ``index`` (when the wire repeats them at the end)."""
        buf = self._calls.get(index)
        if buf is None:
            self.call(index, arguments=arguments)
        else:
            buf.final_arguments = arguments

    @property
    def call_count(self) -> int:
        return len(self._calls)

    def has_call(self, index: int) -> bool:
        return index in self._calls

    def finish_reason(self, raw: str | None, stop: StopReason) -> None:
        self.raw_stop = raw
        self.stop = stop

    def record(self, event: JSONValue) -> None:
        """Keep a raw wire event for the ``on_payload("response", ...)`` hook."""
        if self.raw_events is not None:
            self.raw_events.append(event)

    # -- results ---------------------------------------------------------------
    def _build(self, strict: bool) -> tuple[Message, list[tuple[str, str, str]]]:
        parts: list[Part] = []
        bad: list[tuple[str, str, str]] = []
        for buf in self._parts:
            if isinstance(buf, _CallBuf):
                raw = buf.raw
                try:
                    args = parse_final(raw)
                except ArgumentsError as exc:
                    bad.append((buf.name, raw, str(exc)))
                    args = {} if strict else (parse_partial(raw) or {})
                parts.append(ToolCallPart(buf.id, buf.name, args, raw, dict(buf.meta)))
            elif buf.reasoning:
                parts.append(ReasoningPart(buf.joined(), dict(buf.meta)))
            elif buf.chunks or buf.held:
                parts.append(TextPart(buf.joined(), dict(buf.meta)))
        meta = {self.provider: dict(self.meta)} if self.meta else {}
        return Message("assistant", tuple(parts), meta), bad

    def partial(self) -> Message | None:
        """What arrived so far (``None`` when nothing did)."""
        if not self._parts:
            return None
        return self._build(strict=False)[0]

    def finish(self) -> ResponseDone | StreamError:
        """The final event: a checked ``ResponseDone`` or a ``StreamError``."""
        message, bad = self._build(strict=True)
        if self.stop is None:
            return StreamError(
                TransientProviderError(
                    f"{self.provider}: the stream ended before the response completed",
                    provider=self.provider,
                ),
                message if message.parts else None,
                self.usage,
            )
        if self.stop is StopReason.ABORTED:
            # vLLM's "abort", a Responses "cancelled": what arrived is a fragment, not an
            # answer (it was taken for the final one), nor are its calls to be run.
            aborted = TransientProviderError(
                f"{self.provider}: the server aborted the response before it was complete"
                f" (stop reason {self.raw_stop!r})",
                raw=str(self.raw_stop),
                provider=self.provider,
            )
            return StreamError(aborted, message if message.parts else None, self.usage)
        if bad and self.stop is StopReason.MAX_TOKENS:
            # Cut off mid-arguments: running the call on a guess would be wrong.
            name, raw, why = bad[0]
            cut = MalformedResponse(
                f"{self.provider}: tool call {name!r} {why} (the answer hit max_tokens:"
                " raise settings.max_tokens)",
                raw=raw,
                provider=self.provider,
            )
            cut.retryable = False  # the same request is cut at the same limit again
            return StreamError(cut, message, self.usage)
        # Other unparseable arguments are the model's fault, not the wire's: the call goes
        # out with ``arguments={}`` and its ``raw_arguments``, and the dispatcher repairs
        # them (single quotes, trailing commas ...) or answers ``invalid_arguments`` so the
        # model can correct itself, instead of the whole turn failing.
        if not message.parts and self.stop in (StopReason.FINAL_ANSWER, StopReason.TOOL_USE):
            return StreamError(
                MalformedResponse(
                    f"{self.provider}: empty response (stop reason {self.raw_stop!r})",
                    raw=str(self.raw_stop),
                    provider=self.provider,
                ),
                None,
                self.usage,
            )
        stop = self.stop
        if message.tool_calls and stop is StopReason.REFUSAL:
            message = self._without_calls(message)
        elif message.tool_calls and stop is StopReason.FINAL_ANSWER:
            stop = StopReason.TOOL_USE  # some servers say "stop" with tool calls present
        return ResponseDone(message, stop, self.usage, self.model)

    def _without_calls(self, message: Message) -> Message:
        """A refused or content-filtered reply without its tool calls. The filter may cut
        a call mid-arguments (``{"path": "/home/us``, which repair would happily close),
        and a call the provider stopped as unsafe is not to be run either way: the loop
        runs the calls of any reply that has some, so they are taken out here, and the
        refusal ends the run. Their names and raw arguments stay in the message's
        ``provider_meta[<protocol>]["withheld_calls"]`` for the record."""
        withheld: list[JSONValue] = [
            {"name": c.name, "arguments": c.raw_arguments} for c in message.tool_calls
        ]
        meta = {**self.meta, "withheld_calls": withheld}
        parts = tuple(p for p in message.parts if not isinstance(p, ToolCallPart))
        return Message("assistant", parts, {self.provider: meta})


@dataclass(frozen=True, slots=True)
class StreamPlan(Generic[C]):
    """What :func:`drive` needs from an adapter for one call.

    ``open`` performs the request and returns an async iterable of wire chunks (or a
    one-element iterable for a non-streamed response); ``decode`` turns one chunk into
    events through the accumulator (it may raise a ``ProviderError`` for an in-stream
    error event); ``new_accumulator`` builds the call's accumulator. ``limits`` bounds
    the waits (see :mod:`loopwright.providers.transport`); ``prices`` price the usage
    (see :mod:`loopwright.providers.pricing`).
    """

    provider: str
    open: Callable[[], Awaitable[AsyncIterable[C]]]
    decode: Callable[[C, StreamAccumulator], Iterable[ModelEvent | None]]
    new_accumulator: Callable[[], StreamAccumulator]
    limits: CallLimits = DEFAULT_CALL_LIMITS
    prices: Prices | None = None
    on_response: Callable[[StreamAccumulator], None] | None = None


async def _close(source: object) -> None:
    for attr in ("aclose", "close"):
        closer = getattr(source, attr, None)
        if closer is not None:
            with contextlib.suppress(Exception):
                result = closer()
                if isinstance(result, Awaitable):
                    await result
            return


async def drive(plan: StreamPlan[C]) -> AsyncIterator[ModelEvent]:
    """Run one call (one attempt) under the adapter contract (see module docstring)."""
    acc = plan.new_accumulator()
    yielded = False
    source: AsyncIterable[C] | None = None
    clock = Deadline(plan.limits, plan.provider)
    try:
        source = await clock.wait(plan.open(), first=True)
        chunks = aiter(source)
        first = True
        while True:
            try:
                chunk = await clock.wait(anext(chunks), first)
            except StopAsyncIteration:
                break
            except Exception as exc:
                if acc.stop is not None and cut_connection(exc):
                    break  # after the stop signal: the response is whole, a retry would redo it
                raise
            first = False
            for event in plan.decode(chunk, acc):
                if event is not None:
                    yielded = True
                    yield event
    except Exception as exc:
        error = error_from_exception(plan.provider, exc)
        if yielded and type(error) is TransientProviderError:
            error = TransientProviderError(
                f"{plan.provider}: the stream was cut after output had started ({error})",
                status=error.status,
                raw=error.raw,
                provider=plan.provider,
            )
        acc.usage = settle(acc.usage, plan.prices)
        _report(plan, acc)
        try:
            partial = acc.partial()
        except Exception:  # the partial is a courtesy; the error is what matters
            partial = None
        yield StreamError(error, partial, acc.usage)
        return
    finally:
        if source is not None:
            await _close(source)
    acc.usage = settle(acc.usage, plan.prices)  # the one place usage is checked and priced
    _report(plan, acc)
    yield _finished(plan.provider, acc)


async def refuse_non_stream(response: Any, provider: str, *, strict: bool = False) -> None:
    """Raise :class:`MalformedResponse` (carrying the body) when a streamed call was
    answered 200 with something that is not an event stream: a proxy's login page, or
    JSON from a server that ignored ``stream``. The SSE decoder would find no event in it
    and the call would fail as "the stream ended before the response completed".

    ``strict`` refuses every content type but ``text/event-stream`` (providers that
    always send it); otherwise only HTML and JSON are refused, since some compatible
    servers stream valid SSE under no or another content type."""
    if response is None:
        return
    content_type = str(response.headers.get("content-type", "")).lower()
    if "event-stream" in content_type:
        return
    if not strict and not content_type.startswith(("text/html", "application/json")):
        return
    body = (await response.aread()).decode("utf-8", "replace")
    raise MalformedResponse(
        f"{provider}: expected an event stream, got {content_type or 'no content type'}",
        status=response.status_code,
        raw=body[:500],
        provider=provider,
    )


def _finished(provider: str, acc: StreamAccumulator) -> ResponseDone | StreamError:
    """``acc.finish()``, with any failure building the final message as data: nothing
    from parsing a model's output may escape ``stream()`` as an exception."""
    try:
        return acc.finish()
    except Exception as exc:
        return StreamError(
            MalformedResponse(
                f"{provider}: could not build the response ({type(exc).__name__}: {exc})"[:500],
                provider=provider,
            ),
            None,
            acc.usage,
        )


def _report(plan: StreamPlan[Any], acc: StreamAccumulator) -> None:
    if plan.on_response is None:
        return
    with contextlib.suppress(Exception):  # an observer must not break the stream
        plan.on_response(acc)


_CLOSERS = {"{": "}", "[": "]"}
_MAX_CUTS = 8


def _scan(text: str) -> tuple[list[str], bool, list[int]]:
    """Open-bracket stack, whether we end inside a string, and structural cut points."""
    stack: list[str] = []
    in_string = False
    escaped = False
    cuts: list[int] = []
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
            cuts.append(i + 1)
        elif ch in "}]":
            if stack:
                stack.pop()
            cuts.append(i + 1)
        elif ch == ",":
            cuts.append(i)
    return stack, in_string, cuts


def _close_prefix(prefix: str) -> str | None:
    stack, in_string, _ = _scan(prefix)
    text = prefix
    if in_string:
        if text.endswith("\\") and not text.endswith("\\\\"):
            text = text[:-1]
        text += '"'
    text = text.rstrip()
    while text.endswith(","):
        text = text[:-1].rstrip()
    if text.endswith(":"):
        return None
    return text + "".join(_CLOSERS[b] for b in reversed(stack))


def complete_partial(text: str) -> Any:
    """Stdlib completer: close the fragment at the latest point where it parses."""
    if not text.strip():
        return None
    _, _, cuts = _scan(text)
    candidates = [len(text), *reversed(cuts[-_MAX_CUTS:])]
    for end in candidates:
        closed = _close_prefix(text[:end])
        if closed is None:
            continue
        try:
            return _STRICT.decode(closed)
        except ValueError:
            continue
    return None


def _jiter_parser() -> Callable[[str], Any] | None:
    try:
        import jiter
    except ImportError:
        return None

    from_json = jiter.from_json

    def parse(text: str) -> Any:
        return from_json(text.encode(), partial_mode="trailing-strings", allow_inf_nan=False)

    return parse


_PARSER: list[Callable[[str], Any] | None] = []
"""The jiter parser (or ``None`` without jiter), resolved on first use: importing this
module must stay cheap (``import loopwright`` loads no extension it does not need)."""


def _parser() -> Callable[[str], Any] | None:
    if not _PARSER:
        _PARSER.append(_jiter_parser())
    return _PARSER[0]


MAX_DEPTH = 64
"""Deepest nesting of containers accepted in tool arguments. Real tool schemas nest a few
levels; a model (or server) sending ``[[[[...`` a thousand deep made ``json.loads`` and
everything that later walks the value (validation, hashing, JSON output) raise
``RecursionError``. Deeper arguments are rejected here, as data."""


def _too_deep(raw: str, value: Any) -> bool:
    """Whether ``value`` (parsed from ``raw``) nests deeper than :data:`MAX_DEPTH`. Counting
    brackets in C first makes the common case free; the walk is iterative."""
    if raw.count("[") + raw.count("{") <= MAX_DEPTH:
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if type(item) is dict:
            stack.extend((v, depth + 1) for v in item.values() if type(v) in (dict, list))
        elif type(item) is list:
            stack.extend((v, depth + 1) for v in item if type(v) in (dict, list))
    return False


def parse_partial(text: str) -> dict[str, Any] | None:
    """The arguments object implied by a fragment, or ``None``. Never raises."""
    if not text.strip():
        return None
    value: Any = None
    parser = _PARSER[0] if _PARSER else _parser()
    try:
        if parser is not None:
            try:
                value = parser(text)
            except ValueError:
                value = complete_partial(text)
        else:
            value = complete_partial(text)
        if len(text) > MAX_DEPTH and isinstance(value, dict) and _too_deep(text, value):
            return None  # (shorter text cannot hold MAX_DEPTH + 1 brackets)
    except (RecursionError, MemoryError, ValueError):  # hostile input: no preview, no crash
        return None
    return value if isinstance(value, dict) else None


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # "1e999": JSON has no infinity, and it breaks JSON output later
        raise ValueError(f"number {text[:40]!r} is out of range")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity / -Infinity


_STRICT = json.JSONDecoder(parse_float=_finite_float, parse_constant=_no_constant)
"""Strict JSON (no NaN / Infinity / overflowing numbers), built once: ``json.loads`` with
hooks would build a decoder per call."""


class ArgumentsError(ValueError):
    """Finished tool-call arguments are not one JSON object."""


def parse_final(raw: str) -> dict[str, Any]:
    """Strictly parse complete arguments. ``""`` (a no-argument call) is ``{}``.

    Raises :class:`ArgumentsError` (never ``RecursionError``) for anything but one strict
    JSON object nested at most :data:`MAX_DEPTH` deep (``NaN``, ``Infinity`` and numbers
    that overflow to infinity are not JSON: they would make later JSON output invalid)."""
    if not raw.strip():
        return {}
    try:
        value = _STRICT.decode(raw)
    except ValueError as exc:
        raise ArgumentsError(f"arguments are not valid JSON ({exc})") from exc
    except RecursionError:
        raise ArgumentsError(f"arguments nest deeper than {MAX_DEPTH} levels") from None
    if not isinstance(value, dict):
        raise ArgumentsError(f"arguments must be a JSON object, got {type(value).__name__}")
    if len(raw) > MAX_DEPTH and _too_deep(raw, value):
        raise ArgumentsError(f"arguments nest deeper than {MAX_DEPTH} levels")
    return value


def is_arguments_json(raw: str) -> bool:
    """Whether ``raw`` is what :func:`parse_final` accepts (a JSON object, or blank).

    Echoing a call's arguments re-parses them once per run (the adapters' encode cache
    keeps the encoded message): 1.4 us for ``{"a": 2, "b": 3}``, 8 us for 2 KB."""
    try:
        parse_final(raw)
    except ArgumentsError:
        return False
    return True


# ----------------------------------------------------------------- usage, settled


MAX_COUNT = 10**12
"""Token counts above this are not believable from one call; they are clamped (so a
budget still fires) rather than trusted to overflow later arithmetic."""


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per million tokens. ``cached_input`` ``None``: cached tokens cost ``input``;
    ``reasoning`` ``None``: reasoning tokens (part of the output) cost ``output``."""

    input: float
    output: float
    cached_input: float | None = None
    reasoning: float | None = None

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` (``input_tokens`` counts all prompt tokens, cached
        included; ``output_tokens`` includes ``reasoning_tokens``)."""
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        reasoning = min(usage.reasoning_tokens, usage.output_tokens)
        reasoning_rate = self.output if self.reasoning is None else self.reasoning
        total = (
            (usage.input_tokens - cached) * self.input
            + cached * cached_rate
            + (usage.output_tokens - reasoning) * self.output
            + reasoning * reasoning_rate
        )
        return total / 1_000_000


def count(value: object) -> int:
    """A provider's raw token count as a safe int: ``NaN``, infinities, negatives, strings
    and ``None`` are 0, huge values are clamped to :data:`MAX_COUNT`. Never raises."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return min(max(int(value), 0), MAX_COUNT)


def settle(usage: Usage, prices: Prices | None) -> Usage:
    """``usage`` from a provider made safe (counts are ints in ``[0, MAX_COUNT]``; NaN,
    infinities, negatives and non-numbers are 0) and priced when ``prices`` are known."""
    counts = (usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.reasoning_tokens)
    clean = [count(v) for v in counts]
    if clean == list(counts) and all(type(v) is int for v in counts) and prices is None:
        cost = usage.cost
        if type(cost) is float and math.isfinite(cost) and cost >= 0:
            return usage  # the common case: nothing to fix, nothing to price
    settled = Usage(clean[0], clean[1], clean[2], clean[3], 0.0)
    if prices is not None:
        return Usage(clean[0], clean[1], clean[2], clean[3], prices.cost(settled))
    return settled
