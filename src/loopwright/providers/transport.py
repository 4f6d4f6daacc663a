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
(:mod:`loopwright.providers._http` for the httpx-based SDKs, the event-stream reader for
Bedrock). Every breach is a typed error: :class:`~loopwright.core.errors.ModelTimeout`
(retryable, ``phase`` names the limit) or :class:`~loopwright.core.errors.ResponseTooLarge`.

Override per adapter (``OpenAIChatModel(..., call_limits=CallLimits(total=60))``), per
model string (``"openai:gpt-4o?total_timeout=60&idle_timeout=20"``, see
:data:`OPTION_NAMES`), or through ``resolve_model(..., call_limits=...)``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from loopwright.core.errors import ConfigError, ModelTimeout

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
