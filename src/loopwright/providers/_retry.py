"""Retry with exponential backoff, only before the first event of a stream.

Adapters own retries (SDK clients are built with ``max_retries=0``) so that the policy is
the same for every protocol: 429, 5xx, timeouts and connection resets are retried with
exponential backoff that honours ``Retry-After``; auth, bad-request and context-overflow
errors never are. Once an event has been yielded a failure is reported as a
``StreamError`` instead: replaying would duplicate text the caller already saw.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from loopwright.core.errors import ProviderError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``max_attempts`` counts the first try. Delay for retry *n* (1-based) is
    ``min(max_delay, initial_delay * multiplier**(n-1))`` plus up to ``jitter`` of it, or the
    server's ``Retry-After`` when given (capped at ``max_retry_after``; a longer wait is
    not attempted and the error is returned)."""

    max_attempts: int = 3
    initial_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 20.0
    jitter: float = 0.1
    max_retry_after: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, compare=False)

    def delay(self, attempt: int, error: ProviderError) -> float | None:
        """Seconds before retry number ``attempt`` (1-based), or ``None``: do not retry."""
        if not error.retryable or attempt >= self.max_attempts:
            return None
        if error.retry_after is not None:
            return None if error.retry_after > self.max_retry_after else error.retry_after
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 1))
        return base + random.uniform(0.0, self.jitter * base)


NO_RETRY = RetryPolicy(max_attempts=1)


async def with_retries(
    call: Callable[[], Awaitable[T]],
    classify: Callable[[BaseException], ProviderError],
    policy: RetryPolicy,
    on_retry: Callable[[int, ProviderError, float], None] | None = None,
) -> T:
    """Await ``call()`` until it succeeds or the policy gives up; raise the mapped error.

    ``classify`` turns any exception into the taxonomy; ``on_retry(attempt, error, delay)``
    observes each scheduled retry (tests, logging).
    """
    attempt = 1
    while True:
        try:
            return await call()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = classify(exc)
            wait = policy.delay(attempt, error)
            if wait is None:
                raise error from exc
            if on_retry is not None:
                on_retry(attempt, error, wait)
            await policy.sleep(wait)
            attempt += 1
