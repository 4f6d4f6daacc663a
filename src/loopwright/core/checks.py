"""Checks of configuration numbers and options, shared by the config values of every layer.

A config value is checked when it is built, so a bad number fails where it was written,
naming the field, instead of in the middle of a run: a ``lock_ttl`` of 0 let a second
process take a session while its run went on, ``max_concurrency=0`` was a semaphore
nothing could pass, a negative body limit answered every request with 413. Each check
raises :class:`~loopwright.core.errors.ConfigError` (a ``UserError``: the CLI reports it
as a usage error, one line).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence

from loopwright.core.errors import ConfigError


def check_count(owner: str, value: object, minimum: int = 1) -> int:
    """``value`` when it is a whole number >= ``minimum`` (``owner`` names the field, e.g.
    ``"SearchConfig.beam"``); a bool is refused (``True`` is a mistake, not 1)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{owner} must be a whole number >= {minimum}, got {value!r}")
    return value


def check_seconds(owner: str, value: object, *, zero: bool = False) -> float:
    """``value`` when it is a finite number of seconds > 0 (>= 0 with ``zero``)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or (value == 0 and not zero)
    ):
        wanted = ">= 0" if zero else "> 0"
        raise ConfigError(f"{owner} must be a finite number of seconds {wanted}, got {value!r}")
    return float(value)


def check_number(
    owner: str, value: object, low: float = -math.inf, high: float = math.inf, why: str = ""
) -> float:
    """``value`` when it is a finite number in ``low``-``high``; ``why`` ends the error
    (what sets the range, e.g. the scale of the scores a threshold is compared with)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        bounds = f" in {low:g}-{high:g}" if math.isfinite(low) and math.isfinite(high) else ""
        raise ConfigError(f"{owner} must be a finite number{bounds}{why}, got {value!r}")
    return float(value)


def check_score(owner: str, value: object) -> float:
    """``value`` when it is a number in 0-1 (a threshold on scores); nan is refused."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ConfigError(f"{owner} must be a score in 0-1, got {value!r}")
    return float(value)


def check_choice(owner: str, value: object, choices: Sequence[str]) -> str:
    """``value`` when it is one of ``choices`` (a ``Literal`` option), else name them."""
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(f"{owner} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_function(owner: str, value: object, params: Sequence[str]) -> None:
    """Refuse ``value`` unless it is a function that can be called with the positional
    arguments ``params`` names (``("call", "spec")``): a handler with the wrong signature
    otherwise failed on every call it was asked, as a tool error the model could not fix.
    A callable whose signature cannot be read is accepted (a builtin, a C extension)."""
    if not callable(value):
        raise ConfigError(
            f"{owner} must be a function ({', '.join(params)}), got {type(value).__name__}"
        )
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*params)
    except TypeError as exc:
        raise ConfigError(
            f"{owner} is called with ({', '.join(params)}), which "
            f"{getattr(value, '__qualname__', type(value).__name__)}{signature} cannot take "
            f"({exc})"
        ) from None
