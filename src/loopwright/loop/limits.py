"""Run limits: every way a run is bounded, in one frozen value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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
        for name, (fits, wanted), optional in _BOUNDS:
            value = getattr(self, name)
            if (value is None and optional) or (_is_number(value) and fits(value)):
                continue
            raise ValueError(
                f"Limits.{name} must be {wanted}{' or None' if optional else ''}, got {value!r}"
            )


def _is_number(value: object) -> bool:
    """An int or float, never a bool (``max_turns=True`` is a mistake, not 1 turn); a
    string is refused here rather than by a ``TypeError`` from comparing it."""
    return isinstance(value, int | float) and not isinstance(value, bool)


_Rule = tuple[Callable[[Any], bool], str]
_POSITIVE_INT: _Rule = (lambda v: isinstance(v, int) and v >= 1, "a positive int")
_AT_LEAST_2: _Rule = (lambda v: isinstance(v, int) and v >= 2, "an int >= 2")
_NATURAL: _Rule = (lambda v: isinstance(v, int) and v >= 0, "an int >= 0")
# a zero budget or timeout would end every run before its first turn (NaN fails too)
_POSITIVE: _Rule = (lambda v: v > 0, "a number > 0")
_NOT_NEGATIVE: _Rule = (lambda v: v >= 0, "a number >= 0")
_BOUNDS: tuple[tuple[str, _Rule, bool], ...] = (
    ("max_turns", _POSITIVE_INT, True),
    ("token_budget", _POSITIVE_INT, True),
    ("max_consecutive_errors", _POSITIVE_INT, True),
    ("context_budget", _POSITIVE_INT, True),
    ("max_tool_calls_per_turn", _POSITIVE_INT, True),
    ("cost_budget", _POSITIVE, True),
    ("timeout", _POSITIVE, True),
    ("repeat_limit", _AT_LEAST_2, True),
    ("max_cycle_period", _AT_LEAST_2, False),
    ("model_retries", _NATURAL, False),
    ("retry_base_delay", _NOT_NEGATIVE, False),
    ("retry_max_delay", _NOT_NEGATIVE, False),
)
