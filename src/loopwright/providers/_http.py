"""HTTP clients for the httpx-based SDKs (openai, anthropic, google-genai), bounded.

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
* **Lifecycle.** The SDKs' default clients close themselves from ``__del__`` by scheduling
  ``aclose()`` on whatever event loop is running then; a model dropped after its loop
  closed printed "Event loop is closed" from a new loop. A client passed in is never
  closed that way: its connections die with their own (closed) loop.

The SDKs import ``httpx2`` (openai, anthropic) or either ``httpx``/``httpx2`` (google-genai);
the client is built from the package the SDK's own client class comes from.
"""

from __future__ import annotations

import functools
import importlib
import zlib
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from loopwright.core.errors import MalformedResponse, ResponseTooLarge
from loopwright.providers.transport import CallLimits

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


@functools.cache
def _classes(module_name: str) -> tuple[type, type]:
    """The bounded stream and transport classes for ``httpx`` or ``httpx2``."""
    httpx = importlib.import_module(module_name)

    class BoundedStream(httpx.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any, decoder: _Inflater | None, cap: int) -> None:
            self._inner = inner
            self._decoder = decoder
            self._cap = cap

        async def __aiter__(self) -> AsyncIterator[bytes]:
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
        def __init__(self, inner: Any, limits: CallLimits) -> None:
            self._inner = inner
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
            return httpx.Response(
                response.status_code,
                headers=headers,
                stream=BoundedStream(response.stream, decoder, self._cap),
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


def bounded_client(client_class: type, limits: CallLimits, **kwargs: Any) -> Any:
    """An instance of ``client_class`` (an SDK's default ``AsyncClient`` subclass, or
    ``httpx2.AsyncClient`` / ``httpx.AsyncClient``) whose every transport is bounded by
    ``limits`` (proxy transports from the environment included)."""
    package = _package_of(client_class)
    httpx: ModuleType = importlib.import_module(package)
    _, transport_class = _classes(package)
    pool = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
    read = limits.read_timeout
    client = client_class(
        transport=transport_class(httpx.AsyncHTTPTransport(limits=pool), limits),
        timeout=httpx.Timeout(read, connect=limits.connect),
        **kwargs,
    )
    mounts = getattr(client, "_mounts", None)
    if isinstance(mounts, dict):  # HTTP(S)_PROXY transports: bound them as well
        for pattern, mounted in list(mounts.items()):
            if mounted is not None and not isinstance(mounted, transport_class):
                mounts[pattern] = transport_class(mounted, limits)
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
