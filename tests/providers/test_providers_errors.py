"""Error mapping, Retry-After parsing and context-overflow detection."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    MalformedResponse,
    RateLimited,
    TransientProviderError,
)
from loopwright.providers._errors import (
    error_from_exception,
    error_from_http,
    is_context_overflow,
    parse_retry_after,
)

OVERFLOW_BODIES = {
    "openai-chat": {
        "error": {
            "message": "This model's maximum context length is 8192 tokens."
            " However, your messages resulted in 9000 tokens.",
            "code": "context_length_exceeded",
        }
    },
    "anthropic": {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 208310 tokens > 200000 maximum",
        },
    },
    "gemini": {
        "error": {
            "code": 400,
            "status": "INVALID_ARGUMENT",
            "message": "The input token count (1200000) exceeds the maximum"
            " number of tokens allowed (1048576).",
        }
    },
    "bedrock": {"message": "Input is too long for requested model."},
    "vllm": {
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens."
        " However, you requested 5000 tokens",
        "type": "BadRequestError",
        "code": 400,
    },
    "llamacpp": {"error": {"message": "Requested tokens (5000) exceed context window of 4096"}},
}


@pytest.mark.parametrize("provider", list(OVERFLOW_BODIES))
def test_context_overflow_per_provider(provider):
    body = json.dumps(OVERFLOW_BODIES[provider])
    assert is_context_overflow(provider, 400, body)
    err = error_from_http(provider, 400, body)
    assert isinstance(err, ContextOverflow) and not err.retryable
    assert err.raw == body


def test_overflow_words_in_a_500_are_still_transient():
    body = json.dumps({"error": {"message": "maximum context length cache crashed"}})
    assert isinstance(error_from_http("openai-chat", 500, body), TransientProviderError)


def test_plain_bad_request_is_not_overflow():
    body = json.dumps({"error": {"message": "Invalid value for 'temperature'"}})
    err = error_from_http("openai-chat", 400, body)
    assert type(err) is BadRequest
    assert "Invalid value for 'temperature'" in str(err)


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (429, RateLimited),
        (500, TransientProviderError),
        (503, TransientProviderError),
        (529, TransientProviderError),
        (408, TransientProviderError),
        (401, AuthError),
        (403, AuthError),
        (404, BadRequest),
        (422, BadRequest),
    ],
)
def test_status_classes(status, cls):
    err = error_from_http("anthropic", status, '{"error": {"message": "x"}}', {"Retry-After": "3"})
    assert type(err) is cls
    assert err.status == status and err.provider == "anthropic"
    if cls is RateLimited:
        assert err.retry_after == 3.0 and err.retryable


def test_html_page_is_malformed_with_snippet():
    page = "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"
    err = error_from_http("openai-chat", 502, page)
    assert isinstance(err, MalformedResponse)
    assert "HTML" in str(err) and err.raw == page


def test_retry_after_forms():
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "garbage"}) is None
    assert parse_retry_after({}) is None
    future = parse_retry_after({"retry-after": "Wed, 21 Oct 2099 07:28:00 GMT"})
    assert future is not None and future > 1000
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2001 07:28:00 GMT"}) == 0.0


@pytest.mark.parametrize(
    "value", ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "-5", "-0.5", "1e400"]
)
@pytest.mark.parametrize("header", ["retry-after", "retry-after-ms", "x-ratelimit-reset-after"])
def test_unusable_retry_after_is_no_hint_never_retry_now(header, value):
    # "Retry-After: nan" used to parse as 0 (max(0, nan)): "retry now", in a tight loop.
    assert parse_retry_after({header: value}) is None
    err = error_from_http("openai-chat", 429, "{}", {header: value})
    assert err.retryable and err.retry_after is None


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, "soon", True])
def test_provider_error_keeps_only_a_finite_non_negative_wait(value):
    err = RateLimited("x", retry_after=value)
    assert err.retry_after is None
    err.retry_after = value  # an adapter setting it later goes through the same check
    assert err.retry_after is None
    err.retry_after = 2
    assert err.retry_after == 2.0


class _StatusError(Exception):
    def __init__(self, status: int, text: str, headers: dict[str, str]) -> None:
        super().__init__(text)
        self.status_code = status
        self.response = type("R", (), {"text": text, "headers": headers})()


def test_exception_duck_typing():
    err = error_from_exception(
        "x", _StatusError(429, '{"error": "slow down"}', {"retry-after": "1"})
    )
    assert isinstance(err, RateLimited) and err.retry_after == 1.0
    assert isinstance(error_from_exception("x", TimeoutError()), TransientProviderError)
    assert isinstance(error_from_exception("x", ConnectionResetError()), TransientProviderError)
    bad = json.JSONDecodeError("Expecting value", "<html>", 0)
    mapped = error_from_exception("x", bad)
    assert isinstance(mapped, MalformedResponse) and mapped.raw == "<html>"


@settings(deadline=None)
@given(st.integers(100, 599), st.text(max_size=300))
def test_error_from_http_never_raises(status, body):
    err = error_from_http("openai-chat", status, body)
    assert err.status == status
    assert err.raw == body[:500]


@pytest.mark.parametrize("spec", ["openai:m", "anthropic:m", "openai-responses:m"])
async def test_a_refused_connection_names_the_url_and_the_cause(spec: str) -> None:
    """It said "connection failed (APIConnectionError: Connection error.)": no URL tried,
    no refusal, nothing to act on for a wrong port or a stopped server."""
    import socket

    from loopwright.core.events import StreamError
    from loopwright.core.messages import Message
    from loopwright.core.protocols import ModelRequest, complete
    from loopwright.providers.registry import resolve_model

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = resolve_model(spec, base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
    final = await complete(model, ModelRequest([Message.user("hi")]))
    assert isinstance(final, StreamError)
    text = str(final.error)
    assert f"connection to http://127.0.0.1:{port}/v1" in text, text
    assert "ConnectError" in text
    assert "no running event loop" not in text


def test_the_connection_message_follows_causes_not_suppressed_contexts() -> None:
    try:
        try:
            raise KeyError("unrelated, handled")
        except KeyError:
            raise ConnectionRefusedError("[Errno 111] Connection refused") from None
    except ConnectionRefusedError as exc:
        error = error_from_exception("p", exc)
    assert "Connection refused" in str(error) and "unrelated" not in str(error)
