"""The event vocabulary.

Two families, one import path:

* **Model stream events** (``TextDelta`` ... ``ResponseDone`` / ``StreamError``) are what a
  :class:`~loopwright.core.protocols.Model` yields. They are defined beside that protocol
  (in :mod:`loopwright.core.protocols`: the model contract is the request in and these
  events out) and re-exported here. A stream always ends with exactly one
  ``ResponseDone`` or one ``StreamError``; once streaming has started, failures are
  *data* (``StreamError``), never exceptions.
* **Run events** (``RunStarted`` ... ``RunFinished``) are what the loop emits. Tracing,
  checkpointing and the CLI subscribe to them; they are never called from adapters.

All events are frozen, slotted dataclasses with a ``type`` tag for exhaustive matching
and JSON export. The tag is a class attribute, not a field: a field costs every event
one more slot write in ``__init__`` (a step builds nine events when someone observes the
run; measured in ``benchmarks/loop.py``, "subscriber" and "stream"). The run events the
loop builds per step get their ``__init__`` from :func:`~loopwright.core.values.slot_init`
(see there why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal, TypeAlias

from loopwright.core.errors import ProviderError
from loopwright.core.messages import (
    JSONValue,
    Message,
    StopReason,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from loopwright.core.protocols import (
    ModelEvent,
    ReasoningDelta,
    ResponseDone,
    StreamError,
    TextDelta,
    ToolCallDelta,
)
from loopwright.core.run import LoopState, RunResult, RunStop
from loopwright.core.values import slot_init

__all__ = [
    "LimitReached",
    "MessageAppended",
    "ModelCallFailed",
    "ModelCallFinished",
    "ModelCallStarted",
    "ModelEvent",
    "ModelStreamed",
    "ReasoningDelta",
    "ResponseDone",
    "RunEvent",
    "RunFinished",
    "RunStarted",
    "StateChanged",
    "StrategyStep",
    "StreamError",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallStarted",
]

# ---------------------------------------------------------------- run events


@slot_init
@dataclass(frozen=True, slots=True)
class RunStarted:
    """``input`` is the new user message, or ``None`` when a run resumes without one."""

    session_id: str | None
    input: Message | None
    type: ClassVar[Literal["run_started"]] = "run_started"


@slot_init
@dataclass(frozen=True, slots=True)
class StateChanged:
    previous: LoopState
    current: LoopState
    turn: int
    type: ClassVar[Literal["state_changed"]] = "state_changed"


@slot_init
@dataclass(frozen=True, slots=True)
class ModelCallStarted:
    turn: int
    model: str
    message_count: int
    prompt_fingerprints: tuple[str, ...] = ()
    attempt: int = 1
    type: ClassVar[Literal["model_call_started"]] = "model_call_started"


@slot_init
@dataclass(frozen=True, slots=True)
class ModelStreamed:
    """A model stream event forwarded by the loop (text/reasoning/tool-call deltas)."""

    turn: int
    event: TextDelta | ReasoningDelta | ToolCallDelta
    type: ClassVar[Literal["model_streamed"]] = "model_streamed"


@slot_init
@dataclass(frozen=True, slots=True)
class ModelCallFinished:
    turn: int
    message: Message
    stop_reason: StopReason
    usage: Usage
    duration_s: float
    prompt_fingerprints: tuple[str, ...] = ()
    response_model: str = ""
    """The model that answered, as the provider reported it (``ResponseDone.model``);
    may differ from the requested one (an alias resolved to a dated snapshot)."""
    type: ClassVar[Literal["model_call_finished"]] = "model_call_finished"


@slot_init
@dataclass(frozen=True, slots=True)
class ModelCallFailed:
    turn: int
    error: ProviderError
    attempt: int
    will_retry: bool
    type: ClassVar[Literal["model_call_failed"]] = "model_call_failed"


@slot_init
@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    turn: int
    call: ToolCallPart
    type: ClassVar[Literal["tool_call_started"]] = "tool_call_started"


@slot_init
@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    turn: int
    call: ToolCallPart
    result: ToolResultPart
    duration_s: float
    attempts: int = 1
    repairs: tuple[str, ...] = ()
    type: ClassVar[Literal["tool_call_finished"]] = "tool_call_finished"


@slot_init
@dataclass(frozen=True, slots=True)
class MessageAppended:
    """A message joined the canonical history (user input, steering, results ...)."""

    turn: int
    message: Message
    source: Literal["input", "model", "tools", "steering", "follow_up", "observation"]
    type: ClassVar[Literal["message_appended"]] = "message_appended"


@slot_init
@dataclass(frozen=True, slots=True)
class LimitReached:
    turn: int
    stop: RunStop
    detail: str
    type: ClassVar[Literal["limit_reached"]] = "limit_reached"


@dataclass(frozen=True, slots=True)
class StrategyStep:
    """Progress of a reasoning strategy (``loopwright.strategies``) between its model
    calls: a plan made, a step finished, a reflection's decision, a vote counted.

    ``strategy`` names the strategy (``"plan_execute"``, ``"self_consistency"`` ...),
    ``kind`` the step (``"plan"``, ``"step_finished"``, ``"vote"`` ...); ``detail`` is
    JSON data whose keys each strategy documents in ``docs/strategies.md``."""

    strategy: str
    kind: str
    detail: Mapping[str, JSONValue] = field(default_factory=dict)
    type: ClassVar[Literal["strategy_step"]] = "strategy_step"


@slot_init
@dataclass(frozen=True, slots=True)
class RunFinished:
    result: RunResult
    type: ClassVar[Literal["run_finished"]] = "run_finished"


RunEvent: TypeAlias = (
    RunStarted
    | StateChanged
    | ModelCallStarted
    | ModelStreamed
    | ModelCallFinished
    | ModelCallFailed
    | ToolCallStarted
    | ToolCallFinished
    | MessageAppended
    | LimitReached
    | StrategyStep
    | RunFinished
)
