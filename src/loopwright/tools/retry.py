"""Retry policy for transient tool failures: exponential backoff with full jitter.

Only calls that are safe to repeat are retried: the tool is declared ``idempotent`` or
the call carries an idempotency key (so a ledger-aware tool can deduplicate). Which
error kinds count as retryable is part of the policy (default: ``transient`` only; a
dispatcher timeout is not retried by default because the tool may still be running).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
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
        for name in ("base_delay", "max_delay"):
            value = getattr(self, name)  # nan slept for nan seconds (an error per retry)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (0 <= value < math.inf)
            ):
                raise ValueError(
                    f"RetryPolicy.{name} must be a finite number of seconds >= 0, got {value!r}"
                )
        object.__setattr__(self, "retry_on", _kinds(self.retry_on))

    def delay(self, retry_number: int, rand: float = 1.0) -> float:
        """Seconds to wait before retry ``retry_number`` (1-based); ``rand`` in [0, 1)."""
        capped = min(self.max_delay, self.base_delay * (2.0 ** max(0, retry_number - 1)))
        return capped * rand if self.jitter else capped

    def should_retry(self, kind: str, attempt: int, *, repeatable: bool) -> bool:
        """Whether a call that failed with ``kind`` on ``attempt`` (1-based) runs again."""
        return repeatable and attempt < self.max_attempts and kind in self.retry_on


def _kinds(value: object) -> frozenset[str]:
    """``retry_on`` as a set of error kinds: a str was tested by substring (``"timeout"``
    matched nothing, ``"transient"`` only by luck) and a misspelt kind never retried."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(
            f"RetryPolicy.retry_on must be a set of error kinds, e.g. "
            f"retry_on=frozenset({{'transient', 'timeout'}}), got {value!r}"
        )
    kinds = frozenset(value)
    known = {k.value for k in ToolErrorKind}
    unknown = sorted(map(str, kinds - known))
    if unknown:
        raise ValueError(
            f"RetryPolicy.retry_on names unknown error kinds {unknown}; use "
            f"{', '.join(sorted(known))}"
        )
    return kinds


NO_RETRY = RetryPolicy(max_attempts=1)
