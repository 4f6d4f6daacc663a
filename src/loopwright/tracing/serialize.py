"""Run events as JSON objects: the line format of a JSONL trace.

``event_to_dict(event)`` gives ``{"type": ..., <fields>}`` for every event of
:mod:`loopwright.core.events`, with messages, parts, usage and errors in their canonical
JSON shapes (``Message.to_dict`` ...). ``RunFinished`` carries the result *without* its
history (every message of the run is already in the trace as ``message_appended``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import assert_never

from loopwright.core.errors import ProviderError
from loopwright.core.events import (
    LimitReached,
    MessageAppended,
    ModelCallFailed,
    ModelCallFinished,
    ModelCallStarted,
    ModelEvent,
    ModelStreamed,
    ReasoningDelta,
    ResponseDone,
    RunEvent,
    RunFinished,
    RunStarted,
    StateChanged,
    StrategyStep,
    StreamError,
    TextDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from loopwright.core.messages import JSONValue, Message, Usage, part_to_dict
from loopwright.core.run import RunResult

TRACE_FORMAT = 1
"""Version of the JSONL line format (written in each trace's header line)."""


def error_to_dict(error: BaseException) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {"kind": type(error).__name__, "message": str(error)}
    if isinstance(error, ProviderError):
        out["kind"] = error.kind
        out["retryable"] = error.retryable
        if error.status is not None:
            out["status"] = error.status
        if error.retry_after is not None:
            out["retry_after"] = error.retry_after
    return out


def result_to_dict(result: RunResult) -> dict[str, JSONValue]:
    return {
        "answer": result.answer,
        "stop_reason": result.stop.value,
        "turns": result.turns,
        "usage": result.usage.to_dict(),
        "session_id": result.session_id,
        "detail": result.detail,
        "message_count": len(result.messages),
    }


def _value(value: object) -> JSONValue:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Message):
        return value.to_dict()
    if isinstance(value, Usage):
        return value.to_dict()
    if isinstance(value, BaseException):
        return error_to_dict(value)
    if isinstance(value, Mapping):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    if is_dataclass(value) and hasattr(value, "kind") and hasattr(value, "provider_meta"):
        return part_to_dict(value)  # type: ignore[arg-type]
    return repr(value)


def model_event_to_dict(event: ModelEvent) -> dict[str, JSONValue]:
    match event:
        case TextDelta() | ReasoningDelta():
            return {"type": event.type, "text": event.text}
        case ToolCallDelta():
            out: dict[str, JSONValue] = {"type": event.type, "index": event.index}
            if event.id is not None:
                out["id"] = event.id
            if event.name is not None:
                out["name"] = event.name
            if event.arguments_delta:
                out["arguments_delta"] = event.arguments_delta
            return out
        case ResponseDone():
            return {
                "type": event.type,
                "message": event.message.to_dict(),
                "stop_reason": event.stop_reason.value,
                "usage": event.usage.to_dict(),
                "model": event.model,
            }
        case StreamError():
            return {
                "type": event.type,
                "error": error_to_dict(event.error),
                "usage": event.usage.to_dict(),
            }
        case _:
            assert_never(event)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """The field names of an event class, looked up once (``dataclasses.fields`` costs
    a few microseconds per call, and a served session serialises ~20 such events)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def event_to_dict(event: RunEvent) -> dict[str, JSONValue]:
    """One run event as a JSON object (see the module docstring)."""
    # the most frequent events first, written out: this runs for every event of a trace
    if isinstance(event, StateChanged):
        return {
            "previous": event.previous.value,
            "current": event.current.value,
            "turn": event.turn,
            "type": event.type,
        }
    if isinstance(event, MessageAppended):
        return {
            "turn": event.turn,
            "message": event.message.to_dict(),
            "source": event.source,
            "type": event.type,
        }
    match event:
        case RunFinished():
            return {"type": event.type, "result": result_to_dict(event.result)}
        case ModelStreamed():
            return {
                "type": event.type,
                "turn": event.turn,
                "event": model_event_to_dict(event.event),
            }
        case (
            RunStarted()
            | StateChanged()
            | ModelCallStarted()
            | ModelCallFinished()
            | ModelCallFailed()
            | ToolCallStarted()
            | ToolCallFinished()
            | MessageAppended()
            | LimitReached()
            | StrategyStep()
        ):
            out = {name: _value(getattr(event, name)) for name in _field_names(type(event))}
            out["type"] = event.type  # a class attribute, not a field
            return out
        case _:
            assert_never(event)
