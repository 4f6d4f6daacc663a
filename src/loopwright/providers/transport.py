"""Time and size limits of one model call, the same for every adapter.

:class:`CallLimits` bounds a call four ways in time and one in size:

* ``connect`` -- opening the TCP/TLS connection (enforced by the HTTP client);
* ``first_byte`` -- from sending the request to the first wire event (a stalled server);
* ``idle`` -- the longest gap between two wire events mid-stream (a stream that stalls);
* ``total`` -- the whole call, however busy the stream (keep-alives forever);
* ``max_response_bytes`` -- the decoded response body (after gzip/deflate).

The time limits other than ``connect`` are enforced by the shared stream driver
(:func:`loopwright.providers._stream.drive`) around every wait, so they hold for every SDK;
the HTTP clients also get ``connect`` and a read timeout so that a blocked socket read in a
worker thread (botocore) ends too. The size cap is enforced where the bytes are decoded
(:mod:`loopwright.providers.transport` for the httpx-based SDKs, the event-stream reader for
Bedrock). Every breach is a typed error: :class:`~loopwright.core.errors.ModelTimeout`
(retryable, ``phase`` names the limit) or :class:`~loopwright.core.errors.ResponseTooLarge`.

Override per adapter (``OpenAIChatModel(..., call_limits=CallLimits(total=60))``), per
model string (``"openai:gpt-4o?total_timeout=60&idle_timeout=20"``, see
:data:`OPTION_NAMES`), or through ``resolve_model(..., call_limits=...)``.

**HTTP clients for the httpx-based SDKs (openai, anthropic, google-genai), bounded.**

Each adapter hands its SDK an ``AsyncClient`` built here instead of letting the SDK build
its own, for three reasons:

* **Size.** The transport wraps every response stream and counts the *decoded* bytes, so
  a 200 MB reply or a 300 KB gzip body that inflates to 1 GB fails with
  :class:`~loopwright.core.errors.ResponseTooLarge` after ``max_response_bytes``, holding
  at most one 64 KiB piece more. Compressed bodies are inflated here with a bounded
  ``zlib`` decompressor (the request asks only for ``gzip, deflate``; any other encoding
  is refused) and reach the SDK as identity bodies, so the client never inflates again.
* **Time.** Every request carries the call's connect and read timeouts (the stream driver
  enforces first-byte, idle and total deadlines above this).
* **Lines.** An adapter may ask for the lines of its ``text/event-stream`` responses to be
  rewritten for an SDK decoder stricter than the SSE format (:class:`SSELines`).
* **Lifecycle.** The SDKs' default clients close themselves from ``__del__`` by scheduling
  ``aclose()`` on whatever event loop is running then; a model dropped after its loop
  closed printed "Event loop is closed" from a new loop. A client passed in is never
  closed that way: its connections die with their own (closed) loop.

The SDKs import ``httpx2`` (openai, anthropic) or either ``httpx``/``httpx2`` (google-genai);
the client is built from the package the SDK's own client class comes from.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import math
import re
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, TypeVar

from loopwright.core.errors import ConfigError, MalformedResponse, ModelTimeout, ResponseTooLarge

T = TypeVar("T")

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class CallLimits:
    """Deadlines (seconds) and the response size cap (bytes) of one model call.

    Defaults: a server that never answers fails after ``first_byte`` (2 minutes), one that
    stalls mid-stream after ``idle`` (2 minutes without a wire event), and nothing runs
    longer than ``total`` (15 minutes), keep-alives or not. Reasoning models can think for
    minutes before their first token: raise ``first_byte``/``idle`` for them rather than
    turning the limits off.
    """

    connect: float = 10.0
    first_byte: float = 120.0
    idle: float = 120.0
    total: float = 900.0
    max_response_bytes: int = 32 * MIB

    def __post_init__(self) -> None:
        for name in ("connect", "first_byte", "idle", "total"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"CallLimits.{name} must be a number of seconds, got {value!r}")
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"CallLimits.{name} must be a finite number > 0, got {value!r}")
        size = self.max_response_bytes
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"CallLimits.max_response_bytes must be an int >= 1, got {size!r}")

    @property
    def read_timeout(self) -> float:
        """The HTTP client's per-read timeout: it also covers waiting for the response
        headers, so it is not shorter than ``first_byte``, and a second longer than the
        driver's deadlines so that their typed phase is what a caller sees."""
        return max(self.first_byte, self.idle) + 1.0

    def with_options(self, options: Mapping[str, str]) -> CallLimits:
        """These limits with model-string options applied (names in :data:`OPTION_NAMES`);
        an unknown name or a bad value raises :class:`ConfigError` naming it."""
        changes: dict[str, Any] = {}
        for key, text in options.items():
            name = OPTION_NAMES.get(key)
            if name is None:
                known = ", ".join(OPTION_NAMES)
                raise ConfigError(f"unknown model option {key!r}; known options: {known}")
            try:
                changes[name] = int(text) if name == "max_response_bytes" else float(text)
            except ValueError:
                raise ConfigError(f"model option {key}={text!r} is not a number") from None
        return replace(self, **changes) if changes else self


OPTION_NAMES: Mapping[str, str] = {
    "connect_timeout": "connect",
    "first_byte_timeout": "first_byte",
    "idle_timeout": "idle",
    "total_timeout": "total",
    "max_response_bytes": "max_response_bytes",
}
"""Model-string option -> :class:`CallLimits` field
(``"anthropic:claude-sonnet-4-5?first_byte_timeout=300"``)."""

DEFAULT_CALL_LIMITS = CallLimits()


class Deadline:
    """The clock of one call: :meth:`wait` bounds one await by the phase's deadline."""

    __slots__ = ("_end", "_limits", "_provider", "_time", "started")

    def __init__(self, limits: CallLimits, provider: str) -> None:
        self._time = asyncio.get_running_loop().time
        self._limits = limits
        self._provider = provider
        self.started = self._time()
        self._end = self.started + limits.total

    async def wait(self, awaitable: Awaitable[T], first: bool) -> T:
        """Await ``awaitable`` until the first-byte deadline (``first``) or for at most the
        idle gap, never past the total deadline; a breach raises :class:`ModelTimeout`."""
        limits = self._limits
        if first:
            when, phase = self.started + limits.first_byte, "first_byte"
        else:
            when, phase = self._time() + limits.idle, "idle"
        if when >= self._end:
            when, phase = self._end, "total"
        try:
            async with asyncio.timeout_at(when) as scope:
                return await awaitable
        except TimeoutError:
            if not scope.expired():
                raise  # a TimeoutError from inside the SDK: classified by the caller
            raise self.timeout(phase) from None

    def timeout(self, phase: str) -> ModelTimeout:
        limit = {"first_byte": "first_byte", "idle": "idle", "total": "total"}[phase]
        seconds = getattr(self._limits, limit)
        what = {
            "first_byte": "no response",
            "idle": "no stream event",
            "total": "the call did not finish",
        }[phase]
        return ModelTimeout(
            f"{self._provider}: {what} within {seconds:g}s ({phase} deadline; raise"
            f" CallLimits.{limit} or the model option {_option(limit)} to wait longer)",
            phase=phase,
            provider=self._provider,
        )


def _option(field_name: str) -> str:
    return next(k for k, v in OPTION_NAMES.items() if v == field_name)


PIECE = 64 * 1024
"""Largest decoded piece handed on at a time (bounds what one gzip chunk may inflate to)."""

ACCEPT_ENCODING = "gzip, deflate"
"""The encodings the bounded decoder inflates; nothing else is asked for."""


class _Inflater:
    """Bounded gzip / zlib / raw-deflate decoding, one piece of at most :data:`PIECE`."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        # 32 + MAX_WBITS: detect a gzip or zlib header; "deflate" may also be raw.
        self._z = zlib.decompressobj(32 + zlib.MAX_WBITS)
        self._started = False

    def feed(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        while data:
            try:
                piece = self._z.decompress(data, PIECE)
            except zlib.error:
                if self._started or self.encoding != "deflate":
                    raise
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, no header
                self._started = True
                continue
            self._started = True
            if piece:
                out.append(piece)
            data = self._z.unconsumed_tail
            if self._z.eof:
                break
        return out

    def finish(self) -> bytes:
        """What the decompressor still holds at the end of the body (at most a window)."""
        return self._z.flush()


def _decoder(encoding: str) -> _Inflater | None:
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        return _Inflater("deflate" if encoding == "deflate" else "gzip")
    raise MalformedResponse(
        f"the server answered with content-encoding {encoding!r}, which was not asked for"
        f" (accepted: {ACCEPT_ENCODING})",
        raw=encoding[:200],
    )


class _Counter:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.size = 0

    def add(self, piece: bytes) -> bytes:
        self.size += len(piece)
        if self.size > self.cap:
            raise ResponseTooLarge(
                f"the response exceeded {self.cap} bytes once decoded (raise"
                " CallLimits.max_response_bytes or the model option max_response_bytes)"
            )
        return piece


_DROPPED = re.compile(rb"^(?::|id:|retry:)[^\n]*\n", re.MULTILINE)
_DROPPED_WITH_EVENTS = re.compile(rb"^(?::|id:|retry:|event:)[^\n]*\n", re.MULTILINE)
_DATA_WITHOUT_SPACE = re.compile(rb"^data:(?![ \r\n])", re.MULTILINE)


class SSELines:
    """Rewrites one event-stream body for an SDK decoder stricter than the SSE format.

    The format allows more than ``data: ...`` lines: comments (``: keep-alive``, sent by
    proxies and gateways to hold a connection open), ``event:``, ``id:`` and ``retry:``
    fields, and ``data:`` without the space. google-genai reads only lines starting with
    exactly ``data: `` and takes any other line for part of a JSON error body, so one
    keep-alive comment, an ``event:`` line or a ``data:{...}`` line ended the call as
    "Failed to parse response as JSON"; the openai SDK dispatches an event holding only
    ``id:`` or ``retry:``, which the format says to skip, and fails on its empty data.

    Line by line (a line split across network chunks is held until its end arrives),
    comment, ``id:`` and ``retry:`` lines are dropped, ``event:`` lines too unless
    ``keep_events``, and ``data:`` gets its space; data lines, blank lines (event
    boundaries) and anything else pass unchanged. :func:`bounded_client` applies it to
    the ``text/event-stream`` responses of the adapters that ask for it.
    """

    __slots__ = ("_carry", "_dropped")

    def __init__(self, keep_events: bool = True) -> None:
        self._carry = b""
        self._dropped = _DROPPED if keep_events else _DROPPED_WITH_EVENTS

    def feed(self, chunk: bytes) -> bytes:
        """The complete lines of what arrived so far, rewritten; an unfinished last line
        is kept for the next chunk."""
        data = self._carry + chunk if self._carry else chunk
        end = data.rfind(b"\n") + 1
        self._carry = data[end:]
        return self._clean(data[:end]) if end else b""

    def finish(self) -> bytes:
        """The last line when the body did not end with a line break."""
        rest, self._carry = self._carry, b""
        return self._clean(rest + b"\n")[:-1] if rest else b""

    def _clean(self, lines: bytes) -> bytes:
        lines = self._dropped.sub(b"", lines)
        return _DATA_WITHOUT_SPACE.sub(b"data: ", lines)


SSEFix = Callable[[], SSELines] | None
"""What builds an event-stream line rewriter for one response (``None``: bodies pass
unchanged)."""


@functools.cache
def _classes(module_name: str) -> tuple[type, type]:
    """The bounded stream and transport classes for ``httpx`` or ``httpx2``."""
    httpx = importlib.import_module(module_name)

    class BoundedStream(httpx.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(
            self, inner: Any, decoder: _Inflater | None, cap: int, lines: SSELines | None
        ) -> None:
            self._inner = inner
            self._decoder = decoder
            self._cap = cap
            self._lines = lines

        async def __aiter__(self) -> AsyncIterator[bytes]:
            lines = self._lines
            if lines is None:
                async for piece in self._decoded():
                    yield piece
                return
            async for piece in self._decoded():
                kept = lines.feed(piece)
                if kept:
                    yield kept
            tail = lines.finish()
            if tail:
                yield tail

        async def _decoded(self) -> AsyncIterator[bytes]:
            count = _Counter(self._cap)
            decoder = self._decoder
            try:
                async for chunk in self._inner:
                    if decoder is None:
                        yield count.add(chunk)
                        continue
                    for piece in decoder.feed(chunk):
                        yield count.add(piece)
                if decoder is not None:
                    tail = decoder.finish()
                    if tail:
                        yield count.add(tail)
            except zlib.error as exc:
                raise MalformedResponse(f"corrupt compressed response body ({exc})") from None

        async def aclose(self) -> None:
            await self._inner.aclose()

    class BoundedTransport(httpx.AsyncBaseTransport):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any, limits: CallLimits, sse: SSEFix = None) -> None:
            self._inner = inner
            self._sse = sse
            self._cap = limits.max_response_bytes
            read = limits.read_timeout
            self._timeouts = {"connect": limits.connect, "read": read, "write": read, "pool": read}

        async def handle_async_request(self, request: Any) -> Any:
            request.extensions = {**request.extensions, "timeout": self._timeouts}
            request.headers["accept-encoding"] = ACCEPT_ENCODING
            response = await self._inner.handle_async_request(request)
            encoding = response.headers.get("content-encoding", "").strip().lower()
            try:
                decoder = _decoder(encoding)
            except MalformedResponse:
                await response.aclose()
                raise
            headers = response.headers.raw
            if decoder is not None:
                dropped = (b"content-encoding", b"content-length")
                headers = [(k, v) for k, v in headers if k.lower() not in dropped]
            lines = None
            if self._sse is not None and "event-stream" in response.headers.get("content-type", ""):
                lines = self._sse()
            return httpx.Response(
                response.status_code,
                headers=headers,
                stream=BoundedStream(response.stream, decoder, self._cap, lines),
                extensions=response.extensions,
            )

        async def aclose(self) -> None:
            await self._inner.aclose()

    return BoundedStream, BoundedTransport


def _package_of(client_class: type) -> str:
    for cls in client_class.__mro__:
        if cls.__name__ == "AsyncClient" and cls.__module__.split(".")[0] in ("httpx", "httpx2"):
            return cls.__module__.split(".")[0]
    raise TypeError(f"{client_class!r} is not an httpx/httpx2 AsyncClient")


def bounded_client(
    client_class: type, limits: CallLimits, sse: SSEFix = None, **kwargs: Any
) -> Any:
    """An instance of ``client_class`` (an SDK's default ``AsyncClient`` subclass, or
    ``httpx2.AsyncClient`` / ``httpx.AsyncClient``) whose every transport is bounded by
    ``limits`` (proxy transports from the environment included). ``sse`` builds the
    line rewriter of each ``text/event-stream`` response (:class:`SSELines`), for an
    SDK whose decoder cannot take every line the format allows."""
    package = _package_of(client_class)
    httpx: ModuleType = importlib.import_module(package)
    _, transport_class = _classes(package)
    pool = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
    read = limits.read_timeout
    client = client_class(
        transport=transport_class(httpx.AsyncHTTPTransport(limits=pool), limits, sse),
        timeout=httpx.Timeout(read, connect=limits.connect),
        **kwargs,
    )
    mounts = getattr(client, "_mounts", None)
    if isinstance(mounts, dict):  # HTTP(S)_PROXY transports: bound them as well
        for pattern, mounted in list(mounts.items()):
            if mounted is not None and not isinstance(mounted, transport_class):
                mounts[pattern] = transport_class(mounted, limits, sse)
    return client


def default_httpx_client_class() -> type:
    """``httpx2.AsyncClient`` when installed (what the newer SDKs use), else httpx's."""
    for package in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        cls: type = module.AsyncClient
        return cls
    raise ImportError("no httpx or httpx2 installed")
