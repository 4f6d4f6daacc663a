"""The Bedrock wire below the adapter: botocore's errors mapped to the provider error
taxonomy (:func:`classify`), and the binary event-stream frames of ``ConverseStream``
read into ``{event_type: payload}`` events (:func:`events`).

The adapter itself (:mod:`loopwright.providers.bedrock`) encodes requests and decodes
those events into model events.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from loopwright.core.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    MalformedResponse,
    ProviderError,
    RateLimited,
    ResponseTooLarge,
    TransientProviderError,
)
from loopwright.providers._common import (
    error_from_exception,
    error_from_http,
    is_context_overflow,
    parse_retry_after,
)

PROVIDER = "bedrock"

# botocore error codes (HTTP errors are PascalCase, in-stream exception events camelCase).
_ERROR_CODES: Mapping[str, type[ProviderError]] = {
    "throttlingexception": RateLimited,
    "toomanyrequestsexception": RateLimited,
    "servicequotaexceededexception": RateLimited,
    "internalserverexception": TransientProviderError,
    "serviceunavailableexception": TransientProviderError,
    "modelstreamerrorexception": TransientProviderError,
    "modeltimeoutexception": TransientProviderError,
    "modelnotreadyexception": TransientProviderError,
    "modelerrorexception": TransientProviderError,
    "accessdeniedexception": AuthError,
    "unrecognizedclientexception": AuthError,
    "expiredtokenexception": AuthError,
    "invalidsignatureexception": AuthError,
    "validationexception": BadRequest,
    "resourcenotfoundexception": BadRequest,
}


def coded_error(code: str, message: str, status: int | None, raw: str) -> ProviderError:
    text = f"bedrock {code}: {message}"
    cls = _ERROR_CODES.get(code.lower())
    # Only a rejected request can be an overflow: a throttle says "Too many tokens" too.
    if cls in (BadRequest, None) and is_context_overflow(PROVIDER, None, message):
        return ContextOverflow(text, status=status, raw=raw, provider=PROVIDER)
    if cls is None:
        return error_from_http(PROVIDER, status, raw)
    return cls(text, status=status, raw=raw, provider=PROVIDER)


captured = threading.local()
"""The raw body of the last failed HTTP response, per worker thread (see ``capture``)."""


def capture(response_dict: Mapping[str, Any] | None = None, **_: Any) -> None:
    """botocore ``before-parse`` hook: keep an error body so a proxy's HTML page reaches
    the error as its raw snippet (botocore's parsed error drops it)."""
    if response_dict and int(response_dict.get("status_code", 200)) >= 300:
        body = response_dict.get("body")
        captured.body = body.decode("utf-8", "replace") if isinstance(body, bytes) else ""


def classify(exc: BaseException, body: str | None = None) -> ProviderError:
    """botocore ``ClientError`` / ``EventStreamError`` / transport errors -> taxonomy."""
    if isinstance(exc, ProviderError):
        return exc
    if type(exc).__name__ in ("NoCredentialsError", "PartialCredentialsError"):
        return AuthError(
            f"bedrock: {exc}; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or"
            " AWS_BEARER_TOKEN_BEDROCK",
            raw=str(exc),
            provider=PROVIDER,
        )
    response = getattr(exc, "response", None)
    if not isinstance(response, dict) or "Error" not in response:
        return error_from_exception(PROVIDER, exc)
    error = response.get("Error") or {}
    meta = response.get("ResponseMetadata") or {}
    status = meta.get("HTTPStatusCode")
    status = status if isinstance(status, int) else None
    headers = meta.get("HTTPHeaders") or {}
    code = str(error.get("Code") or "")
    message = str(error.get("Message") or error.get("message") or "")
    raw = body or json.dumps({"Error": error}, default=str)
    if body and not body.lstrip().startswith("{"):
        return error_from_http(PROVIDER, status, body, headers)
    mapped = coded_error(code, message, status, raw)
    if isinstance(mapped, RateLimited | TransientProviderError):
        mapped.retry_after = parse_retry_after(headers)
    return mapped


def _frames(stream: Any, cap: int) -> Iterator[Mapping[str, Any]]:
    """Decode the event-stream frames ourselves (botocore's ``EventStreamBuffer``) rather
    than botocore's parsed events: its parser turns an unparseable payload into an empty
    event, which would lose the raw bytes a malformed-response error must carry. Falls
    back to the parsed iterator if the raw body is not reachable."""
    from botocore.eventstream import EventStreamBuffer, ParserError

    raw_stream = getattr(stream, "_raw_stream", None)
    if raw_stream is None:
        yield from stream
        return
    buffer = EventStreamBuffer()
    size = 0
    for chunk in raw_stream.stream():
        size += len(chunk)
        if size > cap:
            raise ResponseTooLarge(
                f"bedrock: the response exceeded {cap} bytes (raise"
                " CallLimits.max_response_bytes or the model option max_response_bytes)",
                provider=PROVIDER,
            )
        buffer.add_data(chunk)
        try:
            messages = list(buffer)
        except ParserError as exc:
            raise MalformedResponse(
                f"bedrock: broken event-stream frame ({exc})",
                raw=repr(bytes(chunk[:200])),
                provider=PROVIDER,
            ) from exc
        for message in messages:
            yield _frame_event(message.headers, message.payload)


def _frame_event(headers: Mapping[str, Any], payload: bytes) -> Mapping[str, Any]:
    """One frame -> ``{event_type: payload}``; exception frames raise."""
    text = payload.decode("utf-8", "replace")
    kind = headers.get(":message-type")
    if kind in ("exception", "error"):
        code = str(headers.get(":exception-type") or headers.get(":error-code") or "error")
        message = str(headers.get(":error-message") or "")
        if not message:
            try:
                message = str(json.loads(text).get("message") or text)
            except (ValueError, AttributeError):
                message = text
        raise coded_error(code, message, None, text[:500])
    try:
        body = json.loads(text) if text else {}
    except ValueError as exc:
        raise MalformedResponse(
            f"bedrock: {headers.get(':event-type')} event is not valid JSON ({exc})",
            raw=text[:500],
            provider=PROVIDER,
        ) from exc
    return {str(headers.get(":event-type")): body}


async def events(stream: Any, cap: int) -> AsyncIterator[Mapping[str, Any]]:
    """Bridge the blocking frame reader to async, one ``next()`` per thread hop."""
    iterator = _frames(stream, cap)
    try:
        while True:
            try:
                event = await asyncio.to_thread(next, iterator, None)
            except Exception as exc:
                raise classify(exc) from exc
            if event is None:
                return
            yield event
    finally:
        await asyncio.to_thread(stream.close)
