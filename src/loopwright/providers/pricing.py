"""Prices as data, and the one place where a provider's usage is checked and priced.

The table ships in ``prices.json`` beside this module: USD per million tokens per model
(``input``, ``cached_input``, ``output``, optional ``reasoning``), with the ``date`` it was
read and its ``sources``. Keys are ``"<vendor>:<model>"``; dated snapshots match their
base model (``gpt-4o-2024-08-06`` -> ``gpt-4o``, ``claude-sonnet-4-5-20250929`` ->
``claude-sonnet-4-5``), and the Responses adapter shares the ``openai:`` rows. Fine-tuned
models (``ft:...``) have their own prices and are not matched to their base.

Overrides: a JSON or YAML file named by ``$LOOPWRIGHT_PRICES`` (or passed to
:func:`load_prices`) with the same ``{"models": {...}}`` shape adds or replaces rows (a row
set to ``null`` removes one). A model with no row has no prices: its ``Usage.cost`` stays 0
and the loop refuses a ``Limits.cost_budget`` for it up front (never a budget that cannot
fire).

:func:`settle` is the adapter boundary for usage: every adapter's final event passes
through it (in :func:`loopwright.providers._stream.drive`), so negative, NaN, infinite or
non-numeric counts from a provider become 0 and ``cost`` is computed, in one place.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from loopwright.core.errors import ConfigError
from loopwright.core.messages import Usage

PRICES_ENV = "LOOPWRIGHT_PRICES"
"""Environment variable naming a JSON/YAML file of price overrides."""

MAX_COUNT = 10**12
"""Token counts above this are not believable from one call; they are clamped (so a
budget still fires) rather than trusted to overflow later arithmetic."""

_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")
_VENDOR_ALIASES = {"openai-responses": "openai", "openai-compatible": "openai"}


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per million tokens. ``cached_input`` ``None``: cached tokens cost ``input``;
    ``reasoning`` ``None``: reasoning tokens (part of the output) cost ``output``."""

    input: float
    output: float
    cached_input: float | None = None
    reasoning: float | None = None

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` (``input_tokens`` counts all prompt tokens, cached
        included; ``output_tokens`` includes ``reasoning_tokens``)."""
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        reasoning = min(usage.reasoning_tokens, usage.output_tokens)
        reasoning_rate = self.output if self.reasoning is None else self.reasoning
        total = (
            (usage.input_tokens - cached) * self.input
            + cached * cached_rate
            + (usage.output_tokens - reasoning) * self.output
            + reasoning * reasoning_rate
        )
        return total / 1_000_000


def _rate(row: Mapping[str, Any], key: str, where: str, required: bool) -> float | None:
    value = row.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"price table {where}: {key!r} must be a number, got {value!r}")
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"price table {where}: {key!r} must be finite and >= 0")
    return float(value)


def _row(name: str, row: object) -> Prices:
    if not isinstance(row, Mapping):
        raise ConfigError(f"price table entry {name!r} must be a mapping of rates")
    unknown = set(row) - {"input", "output", "cached_input", "reasoning"}
    if unknown:
        raise ConfigError(f"price table entry {name!r}: unknown keys {sorted(unknown)}")
    return Prices(
        _rate(row, "input", name, True) or 0.0,
        _rate(row, "output", name, True) or 0.0,
        _rate(row, "cached_input", name, False),
        _rate(row, "reasoning", name, False),
    )


def _read(path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the price file {path} ({exc.strerror})") from None
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except ValueError as exc:  # json.JSONDecodeError and yaml.YAMLError both derive from it
        raise ConfigError(f"the price file {path} is not valid: {exc}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("models"), Mapping):
        raise ConfigError(f'the price file {path} needs a top-level "models" mapping')
    return data


@functools.cache
def _shipped() -> dict[str, Prices]:
    text = resources.files("loopwright.providers").joinpath("prices.json").read_text("utf-8")
    return {k: _row(k, v) for k, v in json.loads(text)["models"].items()}


@functools.lru_cache(maxsize=8)
def load_prices(override: str | None = None) -> Mapping[str, Prices]:
    """The shipped table with the rows of ``override`` (a JSON/YAML path) applied."""
    table = dict(_shipped())
    if override:
        for name, row in _read(Path(override))["models"].items():
            if row is None:
                table.pop(str(name), None)
            else:
                table[str(name)] = _row(str(name), row)
    return table


def prices_for(vendor: str, model: str, override: str | None = None) -> Prices | None:
    """The prices of ``model`` served by ``vendor``, or ``None`` when none are known.
    ``override`` defaults to ``$LOOPWRIGHT_PRICES``."""
    table = load_prices(override if override is not None else os.environ.get(PRICES_ENV))
    family = _VENDOR_ALIASES.get(vendor, vendor)
    for name in (model, _SNAPSHOT.sub("", model)):
        for prefix in dict.fromkeys((vendor, family)):
            found = table.get(f"{prefix}:{name}")
            if found is not None:
                return found
    return None


def count(value: object) -> int:
    """A provider's raw token count as a safe int: ``NaN``, infinities, negatives, strings
    and ``None`` are 0, huge values are clamped to :data:`MAX_COUNT`. Never raises."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return min(max(int(value), 0), MAX_COUNT)


def settle(usage: Usage, prices: Prices | None) -> Usage:
    """``usage`` from a provider made safe (counts are ints in ``[0, MAX_COUNT]``; NaN,
    infinities, negatives and non-numbers are 0) and priced when ``prices`` are known."""
    counts = (usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.reasoning_tokens)
    clean = [count(v) for v in counts]
    if clean == list(counts) and all(type(v) is int for v in counts) and prices is None:
        cost = usage.cost
        if type(cost) is float and math.isfinite(cost) and cost >= 0:
            return usage  # the common case: nothing to fix, nothing to price
    settled = Usage(clean[0], clean[1], clean[2], clean[3], 0.0)
    if prices is not None:
        return Usage(clean[0], clean[1], clean[2], clean[3], prices.cost(settled))
    return settled
