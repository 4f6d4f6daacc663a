"""Retry policy for transient tool failures: exponential backoff with full jitter.

Only calls that are safe to repeat are retried: the tool is declared ``idempotent`` or
the call carries an idempotency key (so a ledger-aware tool can deduplicate). Which
error kinds count as retryable is part of the policy (default: ``transient`` only; a
dispatcher timeout is not retried by default because the tool may still be running).
"""

from __future__ import annotations

from dataclasses import dataclass

from loopwright.core.errors import ToolErrorKind


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``max_attempts`` counts the first try (1 = never retry).

    Delay before retry ``n`` (n = 1 for the first retry) is
    ``min(max_delay, base_delay * 2 ** (n - 1))``, scaled by a uniform random factor in
    [0, 1) when ``jitter`` is true ("full jitter", AWS architecture blog 2015).
    """

    max_attempts: int = 3
    base_delay: float = 0.2
    max_delay: float = 5.0
    jitter: bool = True
    retry_on: frozenset[str] = frozenset({ToolErrorKind.TRANSIENT.value})

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("RetryPolicy.base_delay and max_delay must be >= 0 seconds")

    def delay(self, retry_number: int, rand: float = 1.0) -> float:
        """Seconds to wait before retry ``retry_number`` (1-based); ``rand`` in [0, 1)."""
        capped = min(self.max_delay, self.base_delay * (2.0 ** max(0, retry_number - 1)))
        return capped * rand if self.jitter else capped

    def should_retry(self, kind: str, attempt: int, *, repeatable: bool) -> bool:
        """Whether a call that failed with ``kind`` on ``attempt`` (1-based) runs again."""
        return repeatable and attempt < self.max_attempts and kind in self.retry_on


NO_RETRY = RetryPolicy(max_attempts=1)
