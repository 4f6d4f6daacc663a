"""What THINK does when the model fails: a call that ends in an error (retried with
backoff, or the run stops) and a reply with neither text nor a tool call.

The loop is the one retry owner: an adapter makes exactly one request per ``stream()``,
so the ``attempt`` counted here is the number of requests really sent
(``docs/providers.md``). These helpers report; the engine (``loop/steps.py``) turns what
they report into the next step.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from loopwright.core.errors import ProviderError
from loopwright.core.events import ModelCallFailed, StreamError
from loopwright.core.messages import Message, TextPart
from loopwright.core.run import ErrorRecord
from loopwright.loop.limits import Limits
from loopwright.loop.notices import EMPTY_REPLY_OBSERVATION

if TYPE_CHECKING:
    from loopwright.loop.steps import RunEngine


async def model_failed(engine: RunEngine, failure: StreamError, attempt: int) -> str | None:
    """Account a failed call; back off and return ``None`` to retry, or why the run
    stops (the detail of its ``model_error`` stop)."""
    state = engine.state
    limits = engine.config.limits
    error = failure.error
    if failure.usage.input_tokens or failure.usage.output_tokens or failure.usage.cost:
        state.usage = state.usage + failure.usage
    state.log_error(ErrorRecord(state.turn, "model", error.kind, str(error)))
    delay: float | None = None
    why = ""
    if error.retryable and attempt <= limits.model_retries:
        delay = backoff(limits, attempt, error)
        if delay is None:
            why = (
                f"; the provider asked to wait {error.retry_after:g}s, over"
                f" retry_max_delay={limits.retry_max_delay:g}s (gave up after"
                f" {_attempts(attempt)})"
            )
    elif error.retryable:
        why = f" (gave up after {_attempts(attempt)})"
    if engine.emit is not None:
        engine.emit(ModelCallFailed(state.turn, error, attempt, delay is not None))
    if delay is None:
        return f"{error.kind}: {error}{why}"
    await engine.config.sleep(delay)
    return None


def backoff(limits: Limits, attempt: int, error: ProviderError) -> float | None:
    """Seconds before retry ``attempt``: the provider's ``retry_after`` when it sent one
    (``None`` if that exceeds ``retry_max_delay``), else exponential with equal jitter."""
    if error.retry_after is not None:  # finite and >= 0: ProviderError checks it
        wait = error.retry_after
        return wait if wait <= limits.retry_max_delay else None
    capped = min(limits.retry_max_delay, limits.retry_base_delay * 2.0 ** (attempt - 1))
    return capped / 2 + random.random() * capped / 2


def empty_reply(engine: RunEngine) -> None:
    """Malformed output: log it and tell the model (the turn counts as a failed one)."""
    state = engine.state
    state.log_error(ErrorRecord(state.turn, "reply", "empty_reply", "the model's reply was empty"))
    engine.append(Message("user", (TextPart(EMPTY_REPLY_OBSERVATION),)), "observation")


def _attempts(count: int) -> str:
    return f"{count} attempt" if count == 1 else f"{count} attempts"
