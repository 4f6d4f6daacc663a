"""Test doubles that implement the :class:`~loopwright.core.protocols.Model` protocol.

* :class:`ScriptedModel` replays a fixed list of replies, one per model call.
* :class:`FunctionModel` asks a function of the conversation for each reply.

Both stream like a real adapter: text arrives as :class:`TextDelta` events, tool calls
as :class:`ToolCallDelta` events, and every call ends with exactly one
:class:`ResponseDone` or one :class:`StreamError` (a scripted
:class:`~loopwright.core.errors.ProviderError` is *yielded*, never raised, so retry logic
can be tested). They never touch the network and are cheap enough for benchmarks.

A *reply* is any of:

* ``str`` -- a final text answer;
* a :class:`~loopwright.core.messages.Message` -- used as the assistant message as is;
* a sequence of :class:`~loopwright.core.messages.ToolCallPart` (see :func:`tool_call`);
* a :class:`~loopwright.core.errors.ProviderError` instance -- yielded as ``StreamError``;
* a :class:`Reply` wrapping one of the above with usage, a stop reason or a delay.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections import deque
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import TypeAlias

from loopwright.core.errors import ProviderError
from loopwright.core.events import (
    ModelEvent,
    ResponseDone,
    StreamError,
    TextDelta,
    ToolCallDelta,
)
from loopwright.core.messages import (
    JSONValue,
    Message,
    Part,
    StopReason,
    TextPart,
    ToolCallPart,
    Usage,
)
from loopwright.core.protocols import ModelRequest, ModelSettings
from loopwright.core.tools import ToolSpec
from loopwright.core.values import slot_init

__all__ = [
    "FunctionModel",
    "RecordedRequest",
    "Reply",
    "ReplyLike",
    "ScriptExhausted",
    "ScriptedModel",
    "tool_call",
]

_ZERO = Usage()
_TOOL_USE = StopReason.TOOL_USE
_FINAL = StopReason.FINAL_ANSWER


class ScriptExhausted(ProviderError):
    """A :class:`ScriptedModel` was called more times than it has replies (not retryable)."""

    kind = "script_exhausted"


@slot_init
@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted reply with optional extras.

    ``content`` is a ``str``, a ``Message``, a sequence of ``ToolCallPart`` or a
    ``ProviderError``. ``usage`` is reported in ``ResponseDone`` (or ``StreamError``).
    ``stop_reason`` defaults to ``tool_use`` when the message has tool calls, else
    ``final_answer``. ``delay`` seconds are awaited (``asyncio.sleep``) before the first
    event, to simulate latency.
    """

    content: str | Message | Sequence[ToolCallPart] | ProviderError
    usage: Usage | None = None
    stop_reason: StopReason | None = None
    delay: float = 0.0


ReplyLike: TypeAlias = str | Message | Sequence[ToolCallPart] | ProviderError | Reply


def tool_call(
    name: str,
    arguments: Mapping[str, JSONValue] | str | None = None,
    *,
    id: str | None = None,
) -> ToolCallPart:
    """Build a :class:`ToolCallPart` for a script.

    ``arguments`` may be a mapping, or a raw string exactly as a model would emit it (it
    is parsed when it is a JSON object; otherwise ``arguments`` stays empty and the
    dispatcher sees only ``raw_arguments``, as with a real adapter). ``id`` defaults to an
    empty string, which the scripted models replace with ``call_<n>`` (unique per model).
    """
    if not isinstance(name, str):
        raise TypeError(f"tool_call(name=...) takes the tool's name as a str, got {name!r}")
    if arguments is not None and not isinstance(arguments, str | Mapping):
        # a list or a tuple became dict(...) pairs, or a TypeError naming nothing
        raise TypeError(
            f"tool_call({name!r}, arguments=...) takes a dict of arguments (or the raw JSON "
            f"text a model would send), got {type(arguments).__name__}"
        )
    if isinstance(arguments, str):
        raw = arguments
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        args: Mapping[str, JSONValue] = parsed if isinstance(parsed, dict) else {}
    else:
        args = dict(arguments or {})
        raw = json.dumps(args, ensure_ascii=False)
    return ToolCallPart(id or "", name, args, raw)


@slot_init
@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """What a scripted model keeps of one request.

    Only a bounded tail of the history is kept (``tail``, the last ``record_tail``
    messages) plus its length, so recording costs the same at step 1,000 as at step 1.
    ``tools`` and ``settings`` are the request's own objects (not copied).
    """

    message_count: int
    tail: tuple[Message, ...]
    system: str | None
    tools: Sequence[ToolSpec]
    settings: ModelSettings

    @property
    def last_message(self) -> Message | None:
        return self.tail[-1] if self.tail else None

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)


_Fields: TypeAlias = tuple[int, tuple[Message, ...], str | None, Sequence[ToolSpec], ModelSettings]
"""A :class:`RecordedRequest`'s fields, in order (see ``_StreamingDouble.requests``)."""


class _StreamingDouble:
    """Shared machinery: turning a reply into stream events and recording requests."""

    reports_cost = True
    """The cost is whatever the script's ``Usage`` says (a cost budget can be tested)."""

    def __init__(
        self, name: str, record_tail: int, chunk_size: int | None, max_requests: int
    ) -> None:
        if max_requests < 1:
            raise ValueError(f"max_requests must be >= 1, got {max_requests}")
        if record_tail < 0:
            raise ValueError(f"record_tail must be >= 0, got {record_tail}")
        if chunk_size is not None and chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1 or None, got {chunk_size}")
        self._name = name
        self._record_tail = record_tail
        self._chunk_size = chunk_size
        self._ids = 0
        self._calls = 0
        self._requests: deque[RecordedRequest] = deque(maxlen=max_requests)
        # the calls not yet read through ``requests``: each a plain tuple of the
        # record's fields, made a RecordedRequest when ``requests`` is read (see there)
        self._unread: deque[_Fields] = deque(maxlen=max_requests)

    @property
    def name(self) -> str:
        return self._name

    @property
    def calls(self) -> int:
        """How many times ``stream`` was called."""
        return self._calls

    @property
    def requests(self) -> deque[RecordedRequest]:
        """One :class:`RecordedRequest` per call, in call order: the last ``max_requests``
        (a model shared by many runs must not grow without bound). Always the same
        ``deque``; the calls made since it was last read join it when it is read, so
        read ``model.requests`` after the calls you want to see.

        A call records a plain tuple of what it saw (history length, tail, system prompt,
        tools, settings) and the record is built from it here: building a frozen
        ``RecordedRequest`` per call was 5.2k of the double's 7.7k instructions of
        recording, ~2.4 % of a burst of 1,000 runs x 6 calls (benchmarks/notes/loop.md,
        round 10), for records a test reads a few of."""
        unread = self._unread
        if unread:
            self._requests.extend([RecordedRequest(*fields) for fields in unread])
            unread.clear()
        return self._requests

    def _record(self, request: ModelRequest) -> None:
        msgs = request.messages
        n = self._record_tail
        self._calls += 1
        self._unread.append(
            (
                len(msgs),
                tuple(msgs[-n:]) if n else (),
                request.system,
                request.tools,
                request.settings,
            )
        )

    def _message(self, content: str | Message | Sequence[ToolCallPart]) -> Message:
        if isinstance(content, str):
            return Message("assistant", (TextPart(content),))
        if isinstance(content, Message):
            return content
        parts: tuple[Part, ...] = tuple(content)
        for part in parts:  # the common case: tool calls that already have their ids
            if type(part) is not ToolCallPart or not part.id:
                parts = tuple(self._call_part(p) for p in parts)
                break
        return Message("assistant", parts)

    def _call_part(self, part: object) -> ToolCallPart:
        if not isinstance(part, ToolCallPart):
            raise TypeError(
                f"a scripted reply list must hold ToolCallPart values, got {type(part).__name__}; "
                "use tool_call(name, arguments) to build them"
            )
        if part.id:
            return part
        self._ids += 1
        return ToolCallPart(f"call_{self._ids}", part.name, part.arguments, part.raw_arguments)

    def _events(self, reply: ReplyLike) -> tuple[float, tuple[ModelEvent, ...]]:
        """The delay and the complete event sequence of one reply (may raise TypeError
        for a malformed reply)."""
        delay = 0.0
        if type(reply) is Reply:
            delay = reply.delay
        return delay, self._stream_of(reply)

    def _stream_of(self, reply: ReplyLike) -> tuple[ModelEvent, ...]:
        """The event sequence of one reply, its delay aside (may raise TypeError). A
        reply of tool calls that already have their ids (what a reply function writes)
        takes the first branch: no list, no second pass over the parts (a
        ``FunctionModel`` call with one tool call, iterated to its end: 49.7k -> 45.1k
        instructions, ``benchmarks/notes/loop.md``, round 7)."""
        usage = _ZERO
        stop: StopReason | None = None
        if type(reply) is Reply:
            usage = reply.usage or _ZERO
            stop = reply.stop_reason
            reply = reply.content
        kind = type(reply)
        if kind is list or kind is tuple:
            parts: tuple[Part, ...] = tuple(reply)  # type: ignore[arg-type]
            deltas: tuple[ModelEvent, ...] = ()
            for index, part in enumerate(parts):
                if type(part) is not ToolCallPart or not part.id:
                    break
                deltas += (ToolCallDelta(index, part.id, part.name, part.raw_arguments),)
            else:
                message = Message("assistant", parts)
                if stop is None:
                    stop = _TOOL_USE if parts else _FINAL
                return (*deltas, ResponseDone(message, stop, usage, self._name))
        if isinstance(reply, ProviderError):
            return (StreamError(reply, None, usage),)
        message = self._message(reply)  # type: ignore[arg-type]
        events: list[ModelEvent] = []
        index = 0
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                events.append(ToolCallDelta(index, part.id, part.name, part.raw_arguments))
                index += 1
            elif isinstance(part, TextPart):
                events += [TextDelta(chunk) for chunk in self._chunks(part.text)]
        if stop is None:
            stop = _TOOL_USE if index else _FINAL
        events.append(ResponseDone(message, stop, usage, self._name))
        return tuple(events)

    def _chunks(self, text: str) -> Iterable[str]:
        size = self._chunk_size
        if not text:
            return ()
        if size is None or len(text) <= size:
            return (text,)
        return (text[i : i + size] for i in range(0, len(text), size))

    def _failure(self, exc: Exception, reply: object = None, returned: bool = False) -> StreamError:
        """The failure event of one call: the function raised, or (``returned``) it
        returned ``reply``, which is no reply (named as such: "raised TypeError: 'NoneType'
        object is not iterable" sent a user looking for a bug the function does not have)."""
        if returned:
            try:
                _checked(reply, 0)
            except TypeError:
                inner = reply.content if isinstance(reply, Reply) else reply
                return StreamError(
                    ProviderError(
                        f"{self._name} reply function returned {type(inner).__name__}; "
                        f"{_REPLY_FORMS}"
                    )
                )
        return StreamError(
            ProviderError(f"{self._name} reply function raised {type(exc).__name__}: {exc}")
        )


class ScriptedModel(_StreamingDouble):
    """Replays ``replies`` in order, one per model call.

    When the script runs out, the call yields a ``StreamError`` carrying
    :class:`ScriptExhausted` (not retryable), so a run stops with ``model_error`` and a
    message saying how many replies were used. ``remaining`` tells how many are left.

    ``record_tail`` is how many trailing history messages each :class:`RecordedRequest`
    keeps, ``max_requests`` how many recent requests ``requests`` holds; ``chunk_size``
    splits text into several ``TextDelta`` events (``None``: one delta per text part).

    Example::

        model = ScriptedModel([[tool_call("add", {"a": 1, "b": 2})], "3"])
    """

    def __init__(
        self,
        replies: Iterable[ReplyLike],
        *,
        name: str = "scripted",
        record_tail: int = 3,
        chunk_size: int | None = None,
        max_requests: int = 256,
    ) -> None:
        super().__init__(name, record_tail, chunk_size, max_requests)
        if isinstance(replies, str | bytes | Message | Reply) or not isinstance(replies, Iterable):
            # a str would be replayed one character per call
            raise TypeError(
                f"ScriptedModel(replies=...) takes a list of replies, one per model call "
                f"(e.g. ScriptedModel([{replies!r}])), got {type(replies).__name__}"
            )
        # every reply is checked and turned into its event sequence once, up front: a
        # call then only replays prebuilt events (and streaming can never fail)
        self._script = [self._events(_checked(r, i)) for i, r in enumerate(replies)]
        self._next = 0

    @property
    def remaining(self) -> int:
        return len(self._script) - self._next

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self._record(request)
        if self._next >= len(self._script):
            return self._exhausted()
        delay, events = self._script[self._next]
        self._next += 1
        return _Replay(events, delay)

    def _exhausted(self) -> AsyncIterator[ModelEvent]:
        used = len(self._script)
        error = ScriptExhausted(
            f"ScriptedModel ran out of replies: it holds {used} and was called "
            f"{self.calls} times; add replies to the script"
        )
        return _Replay((StreamError(error),), 0.0)


def _checked(reply: object, index: int) -> ReplyLike:
    """Validate one scripted reply up front, so streaming it can never fail."""
    inner = reply.content if isinstance(reply, Reply) else reply
    if isinstance(inner, (str, Message, ProviderError)):
        return reply  # type: ignore[return-value]
    if isinstance(inner, Sequence) and all(isinstance(p, ToolCallPart) for p in inner):
        return reply  # type: ignore[return-value]
    raise TypeError(f"replies[{index}] is {type(inner).__name__}; {_REPLY_FORMS}")


_REPLY_FORMS = (
    "a reply must be a str, a Message, a list of ToolCallPart (build them with "
    "tool_call()), a ProviderError or a Reply"
)


_ASKING = object()
"""No reply yet: the reply function is still running (a failure then is its own)."""

_PLAIN = frozenset({Reply, str, list, tuple, Message})
"""Reply types that are never awaitable: ``inspect.isawaitable`` (an ABC check) is skipped."""

ReplyFunction: TypeAlias = Callable[
    [Sequence[Message], ModelRequest], ReplyLike | Awaitable[ReplyLike]
]


class FunctionModel(_StreamingDouble):
    """Asks ``fn(messages, request)`` for each reply (sync or async function).

    ``messages`` is ``request.messages`` (the history as sent, not a copy: do not mutate
    or keep it). The function returns any reply form (see the module docstring). If it
    raises, the call yields a non-retryable ``StreamError`` naming the exception, so a
    buggy script shows up as ``model_error`` instead of a crash.

    Example::

        def reply(messages, request):
            last = messages[-1]
            return "done" if last.role == "tool" else [tool_call("add", {"a": 1, "b": 2})]

        model = FunctionModel(reply)
    """

    def __init__(
        self,
        fn: ReplyFunction,
        *,
        name: str = "function",
        record_tail: int = 3,
        chunk_size: int | None = None,
        max_requests: int = 256,
    ) -> None:
        super().__init__(name, record_tail, chunk_size, max_requests)
        if not callable(fn):
            raise TypeError(
                f"FunctionModel(fn=...) takes a function fn(messages, request) returning a "
                f"reply, got {type(fn).__name__}; for fixed replies use ScriptedModel([...])"
            )
        self._fn = fn

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self._record(request)
        return _Answer(self, request)


class _Replay:
    """One call's events as an async iterator, after ``delay`` seconds.

    A small class, not an async generator: asyncio registers every async generator it
    sees in a ``WeakSet`` on its first step (a weak reference and a Python-level hook
    call per model call, and a finalizer when it ends), and a thousand concurrent runs
    waiting on a double hold a thousand of them for the garbage collector to walk."""

    __slots__ = ("_delay", "_events", "_index")

    def __init__(self, events: tuple[ModelEvent, ...], delay: float) -> None:
        self._events = events
        self._delay = delay
        self._index = 0

    def __aiter__(self) -> _Replay:
        return self

    async def __anext__(self) -> ModelEvent:
        if self._delay > 0:
            delay, self._delay = self._delay, 0.0
            await asyncio.sleep(delay)
        i = self._index
        events = self._events
        if i >= len(events):
            raise StopAsyncIteration
        self._index = i + 1
        return events[i]


class _Answer:
    """:class:`FunctionModel`'s events for one call: the function is asked on the first
    step, and the events are built after the reply's delay (a waiting run holds the
    reply, not the events made from it).

    A reply's delay is waited out without a coroutine: the first step returns this
    object as its own awaitable, which hands the task a future that a timer resolves
    (what ``asyncio.sleep`` does inside its coroutine) and, once resumed, builds the
    events and returns the first. A run waiting on the double then holds the future and
    the timer, but no coroutine of the double's, no ``asyncio.sleep`` coroutine and no
    future iterator. Measured on 1,000 concurrent runs x 6 calls x 20 ms
    (``benchmarks/notes/loop.md``, round 7): GC-tracked objects per waiting run 35.8 ->
    32.5, the burst 1,283 M -> 1,268 M instructions, its CPU 183 -> 176 ms and the
    collector's share 38 -> 30 ms (medians of four interleaved pairs, load 5). A
    cancelled wait leaves the timer to fire as a no-op, as ``asyncio.sleep``'s future
    would without its ``finally``.
    """

    __slots__ = ("_events", "_future", "_index", "_model", "_reply", "_request")

    def __init__(self, model: FunctionModel, request: ModelRequest) -> None:
        self._events: tuple[ModelEvent, ...] = ()
        self._index = 0
        self._model = model
        self._request: ModelRequest | None = request
        self._reply: ReplyLike | None = None
        self._future: asyncio.Future[None] | None = None

    def __aiter__(self) -> _Answer:
        return self

    def __anext__(self) -> Awaitable[ModelEvent]:
        request = self._request
        if request is not None:  # the first step: ask, wait, build (failures are events)
            self._request = None
            answer: object = _ASKING
            try:
                answer = self._model._fn(request.messages, request)
                if type(answer) not in _PLAIN and inspect.isawaitable(answer):
                    return self._awaited(answer)
                if type(answer) is Reply and answer.delay > 0:
                    return self._wait(answer)
                # no ``typing.cast``: it is a Python-level call per reply (~430
                # instructions; benchmarks/notes/loop.md, round 9)
                self._events = self._model._stream_of(answer)  # type: ignore[arg-type]
            except Exception as exc:  # the Model contract: failures are data, never raised
                self._events = (self._model._failure(exc, answer, answer is not _ASKING),)
        i = self._index
        events = self._events
        if i >= len(events):
            return _end()
        self._index = i + 1
        return _ready(events[i])

    async def _awaited(self, answer: Awaitable[ReplyLike]) -> ModelEvent:
        reply: object = _ASKING
        try:
            reply = await answer
            if type(reply) is Reply and reply.delay > 0:
                return await self._wait(reply)
            self._events = self._model._stream_of(reply)  # type: ignore[arg-type]
        except Exception as exc:
            self._events = (self._model._failure(exc, reply, reply is not _ASKING),)
        self._index = 1
        return self._events[0]

    def _wait(self, reply: Reply) -> _Answer:
        """The reply's delay: this object is the step's awaitable (see the class doc)."""
        loop = asyncio.get_running_loop()
        future = self._future = loop.create_future()
        loop.call_later(reply.delay, _wake, future)
        self._reply = reply
        return self

    # -- the awaitable of a delayed first step (the protocol ``asyncio.Future`` follows)
    def __await__(self) -> Generator[asyncio.Future[None], None, ModelEvent]:
        return self  # type: ignore[return-value]

    def __next__(self) -> asyncio.Future[None]:
        future = self._future
        assert future is not None
        if not future.done():  # the task waits on the future
            future._asyncio_future_blocking = True
            return future
        self._future = None
        future.result()  # a cancelled wait raises here
        reply, self._reply = self._reply, None
        try:
            self._events = self._model._stream_of(reply)  # type: ignore[arg-type]
        except Exception as exc:  # a malformed reply is a failure event
            self._events = (self._model._failure(exc, reply, returned=True),)
        self._index = 1
        raise StopIteration(self._events[0])

    def send(self, value: None) -> asyncio.Future[None]:
        return self.__next__()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():  # cancelled meanwhile
        future.set_result(None)


async def _ready(event: ModelEvent) -> ModelEvent:
    return event


async def _end() -> ModelEvent:
    raise StopAsyncIteration  # raised in a coroutine, not by __anext__ itself: 3.11's
    # anext(iterator, default) crashes on a StopAsyncIteration raised by __anext__
