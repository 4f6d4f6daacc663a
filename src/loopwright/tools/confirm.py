"""Human confirmation for tools flagged ``requires_confirmation``.

A :data:`ConfirmHandler` is asked before such a call runs. It answers with a
:class:`Confirmation`: approve, deny with a reason (the model sees the reason), or defer
(nobody can answer now: the call is not executed and its result has kind
``awaiting_confirmation``; the loop pauses the run and resumes later with a decision).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from loopwright.core.messages import ToolCallPart
from loopwright.core.tools import ToolSpec


@dataclass(frozen=True, slots=True)
class Confirmation:
    approved: bool
    reason: str = ""
    defer: bool = False

    @classmethod
    def approve(cls, reason: str = "") -> Confirmation:
        return cls(True, reason)

    @classmethod
    def deny(cls, reason: str = "") -> Confirmation:
        return cls(False, reason)

    @classmethod
    def later(cls, reason: str = "") -> Confirmation:
        return cls(False, reason, defer=True)


ConfirmHandler = Callable[[ToolCallPart, ToolSpec], "Confirmation | Awaitable[Confirmation]"]
