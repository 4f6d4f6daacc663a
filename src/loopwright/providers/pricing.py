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
non-numeric counts from a provider become 0 and ``cost`` is computed, in one place. It
and the :class:`Prices` it applies are defined in :mod:`loopwright.providers._stream`,
beside that one caller, and re-exported here: this module reads the table (once per
model, when an adapter is built); a model call only settles.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from loopwright.core.errors import ConfigError
from loopwright.providers._stream import MAX_COUNT, Prices, count, settle

__all__ = [
    "MAX_COUNT",
    "PRICES_ENV",
    "Prices",
    "count",
    "load_prices",
    "prices_for",
    "settle",
]

PRICES_ENV = "LOOPWRIGHT_PRICES"
"""Environment variable naming a JSON/YAML file of price overrides."""

_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")
_VENDOR_ALIASES = {"openai-responses": "openai", "openai-compatible": "openai"}


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
            table_key = str(name)
            try:
                if ":" not in table_key.strip(":"):
                    # a row keyed "gpt-4o" matched no model and was silently never used
                    raise ConfigError(
                        f"row {table_key!r} names no vendor; key rows vendor:model, e.g. "
                        f"'openai:{table_key}'"
                    )
                if row is None:
                    table.pop(table_key, None)
                else:
                    table[table_key] = _row(table_key, row)
            except ConfigError as exc:  # which file, not only which row
                raise ConfigError(f"the price file {override} ({PRICES_ENV}): {exc}") from None
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
