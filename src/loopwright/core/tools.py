"""Tool contracts as plain data.

A :class:`ToolSpec` is what a model is shown (name, description, JSON Schema) plus the
runtime flags the dispatcher enforces. The executable side (the function, validators)
lives in :mod:`loopwright.tools`; providers only ever see specs.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopwright.core.messages import MediaPart, ToolCallPart, ToolResultPart

ToolCall = ToolCallPart
ToolResult = ToolResultPart


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool may return when its result carries images besides text: ``text`` is
    the result's content (cut to the tool's budget like any result), ``media`` goes with
    it (:attr:`ToolResultPart.media`) to models that take images in tool results."""

    text: str
    media: tuple[MediaPart, ...] = ()


class Permission(enum.IntEnum):
    """Ordered permission levels. A caller at level L may run tools whose level <= L."""

    READ = 0
    WRITE = 1
    ADMIN = 2

    @classmethod
    def parse(cls, value: str | int | Permission) -> Permission:
        if isinstance(value, Permission):
            return value
        if isinstance(value, int):
            return cls(value)
        try:
            return cls[value.strip().upper()]
        except KeyError:
            names = ", ".join(p.name.lower() for p in cls)
            raise ValueError(f"unknown permission {value!r}; use one of {names}") from None


class UnknownOutcomePolicy(enum.StrEnum):
    """What to do on resume when a non-idempotent call started but never recorded a result."""

    REPORT = "report"  # tell the model the outcome is unknown
    ASK_TOOL = "ask_tool"  # ask the tool (by idempotency key) whether it already ran


class _NotRun:
    """Sentinel an ``outcome_check`` returns when the keyed call certainly never ran.

    It lives in core (re-exported as ``loopwright.durable.NOT_RUN``) so tools, which sit
    below ``durable`` in the layers, can return it."""

    def __repr__(self) -> str:
        return "NOT_RUN"


NOT_RUN = _NotRun()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool's public contract.

    ``parameters`` is a Draft 2020-12 JSON Schema of ``type: object``.
    ``timeout`` is seconds (``None``: no limit). ``max_result_chars`` is the budget the
    dispatcher truncates results to. ``idempotent`` tools may be retried on transient
    failure; others are retried only when a call carries an idempotency key.
    """

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    requires_confirmation: bool = False
    permission: Permission = Permission.READ
    idempotent: bool = False
    timeout: float | None = 30.0
    max_result_chars: int = 20_000
    unknown_outcome: UnknownOutcomePolicy = UnknownOutcomePolicy.REPORT

    @property
    def summary(self) -> str:
        """One line: the name and the first sentence of the description."""
        first = self.description.strip().split("\n", 1)[0]
        cut = first.find(". ")
        if cut != -1:
            first = first[: cut + 1]
        return f"{self.name}: {first}" if first else self.name

    def definition(self) -> dict[str, Any]:
        """Neutral definition (name, description, parameters); adapters reshape it."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
        }
