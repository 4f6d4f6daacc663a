"""Run limits: every way a run is bounded, in one frozen value."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on one run. ``None`` disables a bound.

    * ``max_turns`` -- model calls per run (a turn is one successful THINK; retries of a
      failed call do not count). Reaching it stops the run with ``max_turns``.
    * ``token_budget`` -- input + output tokens summed over the run's model calls.
    * ``cost_budget`` -- summed ``Usage.cost`` (the provider's currency unit).
    * ``max_consecutive_errors`` -- turns in a row whose tool results were all errors, or
      whose reply was empty; reaching it stops with ``too_many_errors``.
    * ``timeout`` -- wall-clock seconds for one ``start``/``run`` (a resumed run gets a
      fresh timeout). Stops with ``timeout``; tool calls cut off get a result saying so.
    * ``repeat_limit`` -- the same tool with equal arguments and the same result this
      many times in a row stops the run with ``loop_detected``. With ``cycle_detection`` a repeating cycle of
      2 to ``max_cycle_period`` calls seen ``repeat_limit`` times in a row does too.
    * ``model_retries`` -- retries of a retryable model error (rate limit, 5xx, timeout,
      cut stream) before the run stops with ``model_error``; the run makes at most
      ``model_retries + 1`` requests per turn (adapters never retry on their own).
      Backoff is exponential from ``retry_base_delay`` (capped at ``retry_max_delay``,
      with jitter); a provider's ``retry_after`` is honoured instead when it sent one, and
      one longer than ``retry_max_delay`` stops the run instead of waiting.
    * ``max_tool_calls_per_turn`` -- tool calls run from one model reply; calls past the
      cap are not executed and get a ``skipped`` result saying so (a reply of 1,000 calls
      to a side-effecting tool must not run them all before loop detection can act).
    * ``context_budget`` -- tokens handed to the agent's context policy; when ``None`` the
      model's ``context_window`` attribute (if any) minus ``settings.max_tokens`` is used.

    Budgets are checked after each turn, so one turn may overshoot them; the run then
    stops with the best answer so far.
    """

    max_turns: int | None = 20
    token_budget: int | None = None
    cost_budget: float | None = None
    max_consecutive_errors: int | None = 3
    timeout: float | None = None
    repeat_limit: int | None = 3
    cycle_detection: bool = True
    max_cycle_period: int = 4
    model_retries: int = 3
    retry_base_delay: float = 0.5
    retry_max_delay: float = 30.0
    context_budget: int | None = None
    max_tool_calls_per_turn: int | None = 32

    def __post_init__(self) -> None:
        for name in (
            "max_turns",
            "token_budget",
            "max_consecutive_errors",
            "context_budget",
            "max_tool_calls_per_turn",
        ):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"Limits.{name} must be a positive int or None, got {value!r}")
        for name in ("cost_budget", "timeout"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"Limits.{name} must be > 0 or None, got {value!r}")
        if self.repeat_limit is not None and self.repeat_limit < 2:
            raise ValueError(f"Limits.repeat_limit must be >= 2 or None, got {self.repeat_limit!r}")
        if self.max_cycle_period < 2:
            raise ValueError(f"Limits.max_cycle_period must be >= 2, got {self.max_cycle_period}")
        if self.model_retries < 0:
            raise ValueError(f"Limits.model_retries must be >= 0, got {self.model_retries}")
        if self.retry_base_delay < 0 or self.retry_max_delay < 0:
            raise ValueError("Limits.retry_base_delay and retry_max_delay must be >= 0")
