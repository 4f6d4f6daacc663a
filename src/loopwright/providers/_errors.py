"""Wire failures -> the core :class:`~loopwright.core.errors.ProviderError` taxonomy.

One place for every adapter:

* :func:`error_from_http` maps an HTTP status + body + headers (429 -> RateLimited with
  Retry-After, 5xx/408 -> Transient, 401/403 -> Auth, 4xx -> BadRequest or ContextOverflow,
  HTML pages and unparseable bodies -> MalformedResponse with the raw snippet).
* :func:`is_context_overflow` recognises "the prompt is too long" per provider, from the
  error texts each vendor documents (sources in :data:`OVERFLOW_PATTERNS`).
* :func:`error_from_exception` maps SDK / transport exceptions by duck typing (``status_code``
  + ``response``), so no vendor SDK is imported here.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import re
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from loopwright.core.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    MalformedResponse,
    ModelTimeout,
    ProviderError,
    RateLimited,
    TransientProviderError,
)

SNIPPET = 500
"""How much of a raw body an error keeps (ProviderError itself caps at 2000)."""

_GENERIC_OVERFLOW = (
    r"context[_ ]length[_ ]exceeded",
    r"maximum context length",
    r"context window",
    r"too many (input )?tokens",
    r"prompt is too long",
    r"input is too long",
    r"reduce the length of the (messages|prompt)",
)

OVERFLOW_PATTERNS: Mapping[str, tuple[str, ...]] = {
    # OpenAI: code "context_length_exceeded", "This model's maximum context length is
    # 8192 tokens. However, your messages resulted in ..." (Chat and Responses).
    "openai": (
        r"context_length_exceeded",
        r"maximum context length",
        r"exceeds the context window",
    ),
    # Anthropic: 400 "prompt is too long: 208310 tokens > 200000 maximum"; 413
    # request_too_large; stop_reason model_context_window_exceeded.
    "anthropic": (
        r"prompt is too long",
        r"model_context_window_exceeded",
        r"input length and `max_tokens` exceed context limit",
    ),
    # Gemini: 400 INVALID_ARGUMENT "The input token count (N) exceeds the maximum number
    # of tokens allowed (M)."
    "gemini": (r"input token count.*exceeds the maximum", r"exceeds the maximum number of tokens"),
    # Bedrock: ValidationException "Input is too long for requested model." /
    # "too many input tokens" / "model_context_window_exceeded".
    "bedrock": (
        r"input is too long",
        r"too many input tokens",
        r"model_context_window_exceeded",
        r"prompt is too long",
    ),
    # vLLM / DeepSeek / OpenRouter / Groq: "This model's maximum context length is N
    # tokens. However, you requested M tokens"; llama-cpp-python: "Requested tokens (N)
    # exceed context window of M"; Mistral: "... too large for model with N maximum
    # context length".
    "openai-compatible": (
        r"maximum context length",
        r"exceed(s)? context window",
        r"context length",
        r"context_length_exceeded",
    ),
}


_BAD_INPUT_CODES = (
    "invalid_prompt",
    "data_residency_mismatch",
    "bio_policy",
    "misalignment_policy_violation",
    "invalid_image",
    "invalid_image_format",
    "invalid_base64_image",
    "invalid_image_url",
    "image_too_large",
    "image_too_small",
    "image_parse_error",
    "image_content_policy_violation",
    "invalid_image_mode",
    "image_file_too_large",
    "unsupported_image_media_type",
    "empty_image_file",
    "failed_to_download_image",
    "image_file_not_found",
)

IN_STREAM_CODES: Mapping[str, type[ProviderError]] = {
    "rate_limit_exceeded": RateLimited,
    "server_error": TransientProviderError,
    "vector_store_timeout": TransientProviderError,
    "context_length_exceeded": ContextOverflow,
    **dict.fromkeys(_BAD_INPUT_CODES, BadRequest),
}
"""String error ``code`` of an error that arrives without an HTTP status (a Responses
``response.failed``'s ``error.code``, an in-stream ``error`` event, Chat Completions'
in-stream ``{"error": {...}}``) -> its class. These are the codes of the openai SDK's
``ResponseError``: a prompt or image the API refused, or a policy block, fails the same
way on every retry, so it is a :class:`BadRequest`; the others say which retry applies.
An unknown or missing code leaves the error transient (the server failed mid-answer)."""


def _protocol_family(provider: str) -> str:
    if provider.startswith("openai"):
        return "openai"
    return provider if provider in OVERFLOW_PATTERNS else "openai-compatible"


def is_context_overflow(provider: str, status: int | None, body: str) -> bool:
    """True when ``body`` (an error body or message) says the prompt exceeded the context.

    Only 400/413/422 statuses (or no status: an in-stream error) qualify: a 500 that
    mentions tokens is still a server failure.
    """
    if status is not None and status not in (400, 413, 422):
        return False
    text = body.lower()
    patterns = OVERFLOW_PATTERNS[_protocol_family(provider)] + _GENERIC_OVERFLOW
    return any(re.search(p, text) for p in patterns)


def looks_like_html(body: str) -> bool:
    head = body.lstrip()[:200].lower()
    return head.startswith(("<!doctype", "<html", "<head", "<body")) or "<html" in head


def error_message(body: str) -> str | None:
    """The human message inside a JSON error body, in any vendor's shape."""
    try:
        data = json.loads(body)
    except (ValueError, TypeError):
        return None
    return _find_message(data)


def error_code(body: str) -> str | None:
    """The string ``code`` of a JSON error body (``{"code": ...}`` or ``{"error":
    {"code": ...}}``), or ``None``. Numeric codes (Gemini's HTTP-like ones) are not
    returned."""
    try:
        data = json.loads(body)
    except (ValueError, TypeError):
        return None
    for _ in range(2):
        if not isinstance(data, dict):
            return None
        code = data.get("code")
        if isinstance(code, str) and code:
            return code
        data = data.get("error")
    return None


def _find_message(data: object) -> str | None:
    if isinstance(data, list) and data:
        return _find_message(data[0])  # Gemini streams errors as a one-element list
    if not isinstance(data, dict):
        return data if isinstance(data, str) and data else None
    for key in ("error", "message", "Message", "detail", "errorMessage"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, dict | list):
            found = _find_message(value)
            if found:
                return found
    return None


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if not headers:
        return None
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI), ``retry-after`` (seconds or an
    HTTP date), or ``x-ratelimit-reset-after``; ``None`` when absent or unusable.

    ``NaN``, infinities and negative numbers are no hint at all (``None``: the loop's own
    backoff applies), never "retry now"; a date in the past means 0. How long a wait is
    acceptable is the retry owner's decision (``Limits.retry_max_delay``).
    """
    ms = _header(headers, "retry-after-ms")
    if ms:
        seconds = _finite(ms)
        if seconds is not None:
            return seconds / 1000.0
    value = _header(headers, "retry-after") or _header(headers, "x-ratelimit-reset-after")
    if not value:
        return None
    try:
        float(value)
    except ValueError:
        pass
    else:
        return _finite(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _finite(text: str) -> float | None:
    try:
        seconds = float(text)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0.0 else None


def _describe(provider: str, status: int | None, body: str) -> str:
    msg = error_message(body)
    if msg is None:
        msg = " ".join(body.split())[:200] or "(empty body)"
    where = f"{provider} HTTP {status}" if status is not None else provider
    return f"{where}: {msg}"


def error_from_http(
    provider: str,
    status: int | None,
    body: str,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """Classify one failed HTTP exchange (or an in-stream error payload, ``status=None``)."""
    raw = body[:SNIPPET]
    kw: dict[str, Any] = {"status": status, "raw": raw, "provider": provider}
    if status == 429:
        return RateLimited(
            _describe(provider, status, body), retry_after=parse_retry_after(headers), **kw
        )
    if status in (401, 403):
        return AuthError(
            _describe(provider, status, body) + " (check the API key and its permissions)", **kw
        )
    if looks_like_html(body):
        return MalformedResponse(
            f"{provider} answered HTTP {status} with an HTML page instead of JSON"
            " (a proxy or gateway error page?)",
            **kw,
        )
    if status is not None and (status >= 500 or status in (408, 409, 425)):
        return TransientProviderError(
            _describe(provider, status, body), retry_after=parse_retry_after(headers), **kw
        )
    if is_context_overflow(provider, status, body):
        return ContextOverflow(_describe(provider, status, body), **kw)
    if status is not None and 400 <= status < 500:
        return BadRequest(_describe(provider, status, body), **kw)
    if status is None and error_message(body) is not None:
        # An error event inside a stream: classified by its code when it has a known one,
        # else the server failed mid-answer.
        code = error_code(body)
        cls = IN_STREAM_CODES.get(code or "", TransientProviderError)
        if cls is not TransientProviderError:
            return cls(f"{_describe(provider, status, body)} (code {code})", **kw)
        return TransientProviderError(_describe(provider, status, body), **kw)
    return MalformedResponse(_describe(provider, status, body), **kw)


_TRANSIENT_NAMES = (
    "Timeout",
    "ConnectError",
    "ConnectionError",
    "RemoteProtocolError",
    "ReadError",
    "WriteError",
    "NetworkError",
    "ProtocolError",
    "IncompleteRead",
    "ClosedResourceError",
    "EndOfStream",
)


def cut_connection(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from, through an SDK's wrappers) is
    the connection failing, a reset or a body ended early, or a stall (``ModelTimeout``
    mid-stream), rather than an error the server sent. Used to keep a response whose
    stop signal had already arrived when the connection dropped."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        if isinstance(current, ModelTimeout):
            return current.phase in ("idle", "total", "read")
        if isinstance(current, ConnectionError) or any(
            n in type(current).__name__ for n in _CUT_NAMES
        ):
            return True
        current = current.__cause__ or current.__context__
    return False


_CUT_NAMES = (
    "RemoteProtocolError",
    "ReadError",
    "IncompleteRead",
    "ClosedResourceError",
    "EndOfStream",
    "ProtocolError",
    "NetworkError",
)
"""Exception type names (httpx/httpx2, urllib3/botocore, anyio) of a connection cut
while a response body was being read."""


def _status_of(exc: BaseException) -> int | None:
    for attr in ("status_code", "status", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    return None


def _body_and_headers(exc: BaseException) -> tuple[str, Mapping[str, str] | None]:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    body = ""
    try:
        text = getattr(response, "text", None)
        if isinstance(text, str):
            body = text
    except Exception:  # a streamed response whose body was not read
        body = ""
    if not body:
        raw_body = getattr(exc, "body", None)
        if raw_body is not None:
            body = raw_body if isinstance(raw_body, str) else json.dumps(raw_body, default=str)
    if not body:
        body = str(exc)
    return body, headers


_TIMEOUT_PHASES = (("ConnectTimeout", "connect"), ("Timeout", "read"))
"""Exception type names (httpx/httpx2 ``ConnectTimeout``/``ReadTimeout``, botocore
``ConnectTimeoutError``/``ReadTimeoutError``, the SDKs' ``APITimeoutError``) -> phase."""


def _raised_below(provider: str, exc: BaseException) -> ProviderError | None:
    """A typed error raised under an SDK's wrapper: our HTTP layer's size/encoding errors
    (``APIConnectionError`` from a ``ResponseTooLarge``) and transport timeouts, found
    along the ``__cause__``/``__context__`` chain (``APITimeoutError`` wraps httpx's
    ``ConnectTimeout``, which wraps a bare ``TimeoutError``: a connect timeout anywhere in
    the chain makes the phase ``connect``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    timeout: tuple[str, BaseException] | None = None
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        if isinstance(current, ProviderError):  # only loopwright raises these
            return current
        name = type(current).__name__
        if _status_of(current) is None:
            phase = next((p for marker, p in _TIMEOUT_PHASES if marker in name), None)
            if phase is not None and (timeout is None or timeout[0] != "connect"):
                timeout = (phase, current)  # a connect timeout anywhere names the phase
        current = current.__cause__ or current.__context__
    if timeout is None:
        return None
    phase, found = timeout
    return ModelTimeout(
        f"{provider}: {phase} timed out ({type(found).__name__}: {found})"[:300],
        phase=phase,
        provider=provider,
    )


def _connection_failed(provider: str, exc: BaseException) -> str:
    """What a failed connection tried and why it failed, from the exception chain: the
    SDKs wrap the cause in a wrapper whose own text says nothing (openai's
    ``APIConnectionError``: "Connection error."), so a wrong port or a stopped server was
    reported without the URL tried or the refusal. The query string is left out (a key
    may ride in it)."""
    url: str | None = None
    root: BaseException = exc
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        if url is None:
            try:  # httpx's ``.request`` raises RuntimeError when it was never set
                request = getattr(current, "request", None)
            except RuntimeError:
                request = None
            found = getattr(request, "url", None)
            if found is not None:
                url = urlsplit(str(found))._replace(query="", fragment="").geturl()
        root = current
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    cause = f"{type(root).__name__}: {root}" if str(root) else type(root).__name__
    if root is not exc:
        cause = f"{type(exc).__name__}: {cause}"
    if url is None:
        return f"{provider}: connection failed ({cause})"
    return (
        f"{provider}: connection to {url} failed ({cause}); check that the server is "
        "running and reachable, and the base URL"
    )


def error_from_exception(provider: str, exc: BaseException) -> ProviderError:
    """Map any exception raised while talking to a provider to the taxonomy.

    Order: already-mapped errors pass through; objects with an HTTP status go through
    :func:`error_from_http`; transport failures (timeouts, resets) are transient; JSON
    decoding failures are malformed responses; anything else is a transient failure with
    the exception text kept (an adapter bug must not be silently retried forever: the
    loop bounds retries).
    """
    if isinstance(exc, ProviderError):
        return exc
    inner = _raised_below(provider, exc)
    if inner is not None:
        return inner
    status = _status_of(exc)
    if status is not None:
        body, headers = _body_and_headers(exc)
        return error_from_http(provider, status, body, headers)
    name = type(exc).__name__
    if isinstance(exc, asyncio.TimeoutError | TimeoutError | ConnectionError) or any(
        n in name for n in _TRANSIENT_NAMES
    ):
        return TransientProviderError(
            _connection_failed(provider, exc), raw=str(exc), provider=provider
        )
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        doc = getattr(exc, "doc", None)
        snippet = doc[:SNIPPET] if isinstance(doc, str) else str(exc)
        return MalformedResponse(
            f"{provider}: response is not valid JSON ({exc})", raw=snippet, provider=provider
        )
    body, _ = _body_and_headers(exc)
    if error_message(body) is not None or "error" in name.lower():
        return error_from_http(provider, None, body)
    return MalformedResponse(
        f"{provider}: unexpected failure while reading the response ({name}: {exc})",
        raw=body,
        provider=provider,
    )
