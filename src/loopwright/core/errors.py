"""The small error taxonomy.

Provider adapters map every wire failure to one :class:`ProviderError` subclass, once,
in the adapter. Tool failures never escape the dispatcher as exceptions: they become
``ToolResultPart(is_error=True, error_kind=<ToolErrorKind>)``. ``UserError`` is for bad
input from a person (a flag, a model string, a file); its message names the fix and the
CLI prints it as one line.
"""

from __future__ import annotations

import enum
import math


class LoopwrightError(Exception):
    """Base class of every error loopwright raises on purpose."""


class UserError(LoopwrightError):
    """Bad input from the user. ``str(err)`` is one line that names the fix."""


class ConfigError(UserError):
    """Invalid configuration (model string, missing API key, bad option)."""


class ProviderError(LoopwrightError):
    """A model provider failed. ``retryable`` tells the loop whether to back off and retry.

    ``raw`` keeps a snippet of what the server sent (for debugging proxies that answer
    with HTML, truncated bodies, ...). ``status`` is the HTTP status when there was one.
    ``retry_after`` is the server's requested wait in seconds: only a finite, non-negative
    number is kept (``NaN``, infinities and negatives become ``None``, "no hint"), so a
    hostile ``Retry-After: nan`` can never mean "retry now".
    """

    retryable: bool = False
    kind: str = "provider_error"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        raw: str | None = None,
        retry_after: float | None = None,
        provider: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.raw = raw[:2000] if raw else raw
        self.retry_after = retry_after
        self.provider = provider

    @property
    def retry_after(self) -> float | None:
        return self._retry_after

    @retry_after.setter
    def retry_after(self, value: float | None) -> None:
        self._retry_after = _wait_hint(value)


def _wait_hint(value: float | None) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0.0 else None


class RateLimited(ProviderError):
    retryable = True
    kind = "rate_limited"


class TransientProviderError(ProviderError):
    """5xx, timeouts, connection resets, a stream cut midway."""

    retryable = True
    kind = "transient"


class ModelTimeout(TransientProviderError):
    """A model call exceeded one of its deadlines. ``phase`` names which one:
    ``"connect"``, ``"first_byte"`` (no wire event since the request was sent),
    ``"idle"`` (no wire event for too long mid-stream) or ``"total"`` (the whole call).
    See ``docs/providers.md`` for the defaults and how to override them."""

    kind = "timeout"

    def __init__(self, message: str, *, phase: str, provider: str | None = None) -> None:
        super().__init__(message, provider=provider)
        self.phase = phase


class ResponseTooLarge(ProviderError):
    """The decoded response exceeded the configured size cap (compressed bodies are
    counted after decompression). Not retryable: the same request would be as large."""

    kind = "response_too_large"


class ContextOverflow(ProviderError):
    kind = "context_overflow"


class AuthError(ProviderError):
    kind = "auth"


class BadRequest(ProviderError):
    kind = "bad_request"


class MalformedResponse(ProviderError):
    """The provider answered, but not in a shape we can parse."""

    retryable = True
    kind = "malformed_response"


class IncompleteTurn(ProviderError):
    """The provider stopped before the model's turn was complete and expects the caller to
    continue it with a follow-up request (Anthropic ``pause_turn``, Gemini
    ``CONTINUATION``, a Responses ``incomplete`` response for ``max_messages`` or
    ``steered``). The loop does not send such continuations, so the run stops with this
    error naming the provider's reason instead of taking the partial turn for an answer.
    Not retryable: the same request pauses at the same point again."""

    kind = "incomplete_turn"


class ToolErrorKind(enum.StrEnum):
    """Machine-readable kinds carried by error tool results."""

    INVALID_ARGUMENTS = "invalid_arguments"
    NOT_FOUND = "not_found"
    PERMISSION_DENIED = "permission_denied"
    DENIED_BY_USER = "denied_by_user"
    TIMEOUT = "timeout"
    TRANSIENT = "transient"
    PERMANENT = "permanent"
    SKIPPED = "skipped"
    AWAITING_CONFIRMATION = "awaiting_confirmation"
    OUTCOME_UNKNOWN = "outcome_unknown"


class ToolError(LoopwrightError):
    """Raise inside a tool to choose the result's kind and the message the model sees.

    Any other exception from a tool is classified ``permanent`` (or ``transient`` for
    :class:`TransientToolError`, ``TimeoutError``, ``ConnectionError``).
    """

    kind: ToolErrorKind = ToolErrorKind.PERMANENT

    def __init__(self, message: str, *, kind: ToolErrorKind | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind


class TransientToolError(ToolError):
    """A failure worth retrying (the service was busy, the network blinked)."""

    kind = ToolErrorKind.TRANSIENT
