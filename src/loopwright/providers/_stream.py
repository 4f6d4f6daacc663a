"""The shared half of every adapter's ``stream()``: accumulate, never raise.

* :class:`StreamAccumulator` collects text / reasoning / tool-call fragments in arrival
  order, emits the matching delta events (tool-call deltas carry ``partial_arguments``),
  and builds the final canonical :class:`Message`, or the partial one when the stream fails.
* :func:`drive` runs one model call: it opens the wire stream, decodes chunks through the
  adapter's ``decode(chunk, acc)`` and turns every failure into a final ``StreamError``
  with the partial message. It makes exactly one attempt: retrying belongs to the loop
  (the one retry owner, see ``docs/providers.md``), which alone can also retry a stream
  cut after output started, and counts every request it sends.

A finished response is checked before it is reported: a stream that ends without a stop
signal, a tool call whose arguments never close, and an empty answer are errors with the
raw snippet attached, never a silently empty ``ResponseDone``.
"""

from __future__ import annotations

import contextlib
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
from loopwright.providers._errors import error_from_exception
from loopwright.providers._partial_json import ArgumentsError, parse_final, parse_partial
from loopwright.providers.pricing import Prices, settle
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
        return self.final_arguments if self.final_arguments is not None else "".join(self.chunks)


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
        buf.chunks.append(delta)
        return TextDelta(delta)

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
        buf.chunks.append(delta)
        return ReasoningDelta(delta)

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
                parts.append(ReasoningPart("".join(buf.chunks), dict(buf.meta)))
            elif buf.chunks:
                parts.append(TextPart("".join(buf.chunks), dict(buf.meta)))
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
        if bad and self.stop is StopReason.MAX_TOKENS:
            # Cut off mid-arguments: running the call on a guess would be wrong.
            name, raw, why = bad[0]
            return StreamError(
                MalformedResponse(
                    f"{self.provider}: tool call {name!r} {why} (the answer hit max_tokens:"
                    " raise it)",
                    raw=raw,
                    provider=self.provider,
                ),
                message,
                self.usage,
            )
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
        if message.tool_calls and stop is StopReason.FINAL_ANSWER:
            stop = StopReason.TOOL_USE  # some servers say "stop" with tool calls present
        return ResponseDone(message, stop, self.usage, self.model)


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
