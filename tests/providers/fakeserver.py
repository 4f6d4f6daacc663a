"""A scripted HTTP server on 127.0.0.1 for adapter tests.

It records every request and answers from a queue of :class:`Reply` values: JSON bodies,
SSE (or any byte) streams sent with chunked transfer encoding, streams cut midway
(the connection closes without the terminating chunk, which clients report as an
incomplete read), HTML error pages, any status and headers.

Usage::

    with FakeServer() as server:
        server.push(Reply.json({"ok": True}), Reply.sse([{"a": 1}], done=True))
        model = SomeModel("m", base_url=server.url + "/v1", api_key="k")
        ...
        server.requests[0].json  # the body the SDK sent

An empty queue answers 500 with a JSON error naming the problem, so a missing script
fails loudly instead of hanging.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass(frozen=True)
class Reply:
    """One scripted answer. ``chunks`` are written one by one (chunked encoding); a float
    among them is a pause of that many seconds (a stalled or trickling stream); ``cut``
    closes the socket after them without finishing the body; ``delay`` is slept before
    the status line (a server that does not answer)."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    chunks: Sequence[bytes | float] = ()
    cut: bool = False
    delay: float = 0.0

    @classmethod
    def json(cls, body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
        data = json.dumps(body).encode()
        return cls(status, {"content-type": "application/json", **(headers or {})}, (data,))

    @classmethod
    def text(
        cls, body: str, status: int = 200, content_type: str = "text/plain", **headers: str
    ) -> Reply:
        return cls(status, {"content-type": content_type, **headers}, (body.encode(),))

    @classmethod
    def html(cls, status: int = 502) -> Reply:
        page = (
            "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>"
            "<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center>"
            "</body></html>\n"
        )
        return cls.text(page, status, "text/html")

    @classmethod
    def sse(
        cls,
        events: Iterable[Any],
        *,
        done: bool = False,
        cut_after: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """An SSE stream. Each event is a dict (``data:`` JSON), a ``(name, dict)`` pair
        (``event:`` + ``data:``), or a raw ``str`` written as-is (garbage lines).
        ``cut_after=n`` sends only the first n events and cuts the connection."""
        chunks = [sse_event(e) for e in events]
        if done:
            chunks.append(b"data: [DONE]\n\n")
        cut = cut_after is not None
        if cut_after is not None:
            chunks = chunks[:cut_after]
        return cls(
            200, {"content-type": "text/event-stream", **(headers or {})}, tuple(chunks), cut
        )


def sse_event(event: Any) -> bytes:
    if isinstance(event, str):
        return event.encode()
    if isinstance(event, bytes):
        return event
    if isinstance(event, tuple):
        name, data = event
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
    return f"data: {json.dumps(event)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        fake = self.server.fake
        fake.record(Recorded(self.command, self.path, dict(self.headers.items()), body))
        reply = fake.next_reply()
        if reply.delay:
            time.sleep(reply.delay)
        self.send_response(reply.status)
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk in reply.chunks:
            if isinstance(chunk, float):
                time.sleep(chunk)
                continue
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        if reply.cut:
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = _handle
    do_POST = _handle
    do_PUT = _handle
    do_DELETE = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # clients hanging up on cut streams are expected here


class FakeServer:
    """See module docstring. Thread-safe; use as a context manager."""

    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def push(self, *replies: Reply) -> FakeServer:
        with self._lock:
            self._replies.extend(replies)
        return self

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def next_reply(self) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return Reply.json({"error": {"message": "fake server: no scripted reply left"}}, 500)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
