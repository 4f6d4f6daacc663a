"""The mutable state of one run, and its JSON codec.

A :class:`RunState` is owned by exactly one run at a time. The loop only ever *appends*
to ``messages`` (never copies or rewrites it), so a state can be checkpointed after any
event and resumed with :meth:`Agent.start(state=...) <loopwright.loop.agent.Agent.start>`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopwright.core.messages import (
    Message,
    ToolCallPart,
    ToolResultPart,
    Usage,
    message_from_dict,
    part_from_dict,
    part_to_dict,
)
from loopwright.core.run import LoopState

ERROR_LOG_SIZE = 100
"""How many :class:`ErrorRecord` entries a state keeps (oldest dropped first)."""
_NO_USAGE = Usage()


@dataclass(frozen=True, slots=True)
class ErrorRecord:
    """One failure seen during a run. ``source`` is ``"model"``, ``"tool"`` or ``"reply"``
    (malformed model output); ``kind`` is the provider error kind or tool error kind."""

    turn: int
    source: str
    kind: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "source": self.source,
            "kind": self.kind,
            "message": self.message,
        }


@dataclass(slots=True)
class RunState:
    """Everything a run needs to continue.

    * ``messages`` -- the canonical history, append-only during a run.
    * ``turn`` -- model turns completed so far.
    * ``usage`` -- running total over all model calls (including failed ones that
      reported usage).
    * ``pending_calls`` -- tool calls waiting for a confirmation decision (status
      ``PAUSED``); ``held_results`` -- results of the same batch that already completed.
      Both are consumed by ``Agent.resume``.
    * ``steering`` / ``follow_ups`` -- queued user messages (see ``Run.steer`` and
      ``Run.follow_up``).
    * ``started_at`` / ``updated_at`` -- ``time.time()`` stamps.
    """

    session_id: str | None = None
    status: LoopState = LoopState.OBSERVE
    turn: int = 0
    messages: list[Message] = field(default_factory=list)
    usage: Usage = _NO_USAGE  # frozen: one shared zero value, no allocation per run
    consecutive_errors: int = 0
    error_log: list[ErrorRecord] = field(default_factory=list)
    pending_calls: list[ToolCallPart] = field(default_factory=list)
    held_results: list[ToolResultPart] = field(default_factory=list)
    # lists, not deques: an empty deque costs ~600 bytes and these queues hold 0-2 items
    steering: list[Message] = field(default_factory=list)
    follow_ups: list[Message] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    def log_error(self, record: ErrorRecord) -> None:
        """Append to ``error_log``, keeping only the last :data:`ERROR_LOG_SIZE` records."""
        log = self.error_log
        log.append(record)
        if len(log) > ERROR_LOG_SIZE:
            del log[: len(log) - ERROR_LOG_SIZE]

    @property
    def paused(self) -> bool:
        return self.status is LoopState.PAUSED

    def best_answer(self) -> str:
        """The text of the latest assistant message that has text ("" if none).

        Scans backwards and stops at the first hit, so it is cheap at the end of a run.
        """
        for message in reversed(self.messages):
            if message.role == "assistant":
                text = message.text
                if text:
                    return text
        return ""

    # ------------------------------------------------------------------ codec
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_dict` restores an equal state."""
        return {
            "session_id": self.session_id,
            "status": self.status.value,
            "turn": self.turn,
            "messages": [m.to_dict() for m in self.messages],
            "usage": self.usage.to_dict(),
            "consecutive_errors": self.consecutive_errors,
            "error_log": [e.to_dict() for e in self.error_log],
            "pending_calls": [part_to_dict(c) for c in self.pending_calls],
            "held_results": [part_to_dict(r) for r in self.held_results],
            "steering": [m.to_dict() for m in self.steering],
            "follow_ups": [m.to_dict() for m in self.follow_ups],
            "started_at": self.started_at,
            "updated_at": self.updated_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunState:
        try:
            return cls(
                session_id=data.get("session_id"),
                status=LoopState(data.get("status", LoopState.OBSERVE.value)),
                turn=int(data.get("turn", 0)),
                messages=[message_from_dict(m) for m in data.get("messages", ())],
                usage=Usage.from_dict(data.get("usage") or {}),
                consecutive_errors=int(data.get("consecutive_errors", 0)),
                error_log=[ErrorRecord(**e) for e in data.get("error_log", ())][-ERROR_LOG_SIZE:],
                pending_calls=[_call(p) for p in data.get("pending_calls", ())],
                held_results=[_result(p) for p in data.get("held_results", ())],
                steering=[message_from_dict(m) for m in data.get("steering", ())],
                follow_ups=[message_from_dict(m) for m in data.get("follow_ups", ())],
                started_at=float(data.get("started_at", time.time())),
                updated_at=float(data.get("updated_at", time.time())),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"RunState.from_dict: malformed state: {exc}") from exc


def _call(data: Mapping[str, Any]) -> ToolCallPart:
    part = part_from_dict(data)
    if not isinstance(part, ToolCallPart):
        raise ValueError(f"pending_calls entries must be tool_call parts, got {part.kind!r}")
    return part


def _result(data: Mapping[str, Any]) -> ToolResultPart:
    part = part_from_dict(data)
    if not isinstance(part, ToolResultPart):
        raise ValueError(f"held_results entries must be tool_result parts, got {part.kind!r}")
    return part
