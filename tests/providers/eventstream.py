"""A minimal AWS event-stream *encoder* for the Bedrock fake server.

botocore only decodes the format (``botocore.eventstream``), so the test helper writes
frames itself, byte for byte as the spec describes
(https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream):

    [total length: u32][headers length: u32][prelude CRC32: u32]
    [headers: (name len u8, name, type 7 = string, value len u16, value)*]
    [payload][message CRC32: u32 over everything before it]
"""

from __future__ import annotations

import json
import struct
from binascii import crc32
from collections.abc import Iterable, Mapping
from typing import Any

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7


def _headers(headers: Mapping[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        out += struct.pack("!B", len(raw_name)) + raw_name
        out += struct.pack("!BH", _STRING, len(raw_value)) + raw_value
    return bytes(out)


def frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event-stream message with valid prelude and message CRCs."""
    raw_headers = _headers(headers)
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack("!II", total, len(raw_headers))
    prelude += struct.pack("!I", crc32(prelude) & 0xFFFFFFFF)
    body = prelude + raw_headers + payload
    return body + struct.pack("!I", crc32(body) & 0xFFFFFFFF)


def event(event_type: str, payload: Mapping[str, Any]) -> bytes:
    """A ``:message-type event`` frame, e.g. ``event("contentBlockDelta", {...})``."""
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return frame(headers, json.dumps(payload).encode())


def exception(exception_type: str, message: str) -> bytes:
    """An in-stream exception frame (``throttlingException``, ``validationException`` ...)."""
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return frame(headers, json.dumps({"message": message}).encode())


def stream(events: Iterable[tuple[str, Mapping[str, Any]] | bytes]) -> tuple[bytes, ...]:
    """Frames for ``(event_type, payload)`` pairs; raw ``bytes`` pass through (garbage)."""
    return tuple(e if isinstance(e, bytes) else event(e[0], e[1]) for e in events)
