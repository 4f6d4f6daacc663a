"""Run-level values: the loop's states, why a run stopped, and what it returns."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from loopwright.core.messages import Message, Usage, messages_to_list


class LoopState(enum.StrEnum):
    """The seed's state machine. DONE, ERROR and PAUSED are terminal for one run."""

    OBSERVE = "observe"
    THINK = "think"
    ACT = "act"
    REFLECT = "reflect"
    DONE = "done"
    ERROR = "error"
    PAUSED = "paused"


class RunStop(enum.StrEnum):
    """Why a whole run stopped. (The command line maps each to an exit code in
    :mod:`loopwright.cli.exit_codes`.)"""

    FINAL_ANSWER = "final_answer"
    MAX_TURNS = "max_turns"
    TOKEN_BUDGET = "token_budget"
    COST_BUDGET = "cost_budget"
    TOO_MANY_ERRORS = "too_many_errors"
    LOOP_DETECTED = "loop_detected"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    AWAITING_CONFIRMATION = "awaiting_confirmation"
    MODEL_ERROR = "model_error"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    CONTEXT_ERROR = "context_error"


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run returns. ``answer`` is the final answer, or the best text so far when a
    limit stopped the run (``stop`` says which)."""

    answer: str
    stop: RunStop
    turns: int
    usage: Usage
    messages: Sequence[Message]
    session_id: str | None = None
    detail: str = ""
    pending_calls: Sequence[Any] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.stop is RunStop.FINAL_ANSWER

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "stop_reason": self.stop.value,
            "turns": self.turns,
            "usage": self.usage.to_dict(),
            "messages": messages_to_list(self.messages),
            "session_id": self.session_id,
            "detail": self.detail,
        }
