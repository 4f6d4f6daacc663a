"""Run events are frozen values whatever builds their ``__init__`` (core/values.py,
``slot_init``): assignment raises, parameters and defaults are the fields', and
``replace``, equality and hashing behave as for any frozen dataclass."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from loopwright.core import events
from loopwright.core.messages import Message, StopReason, ToolCallPart, Usage
from loopwright.core.run import LoopState

RUN_EVENTS = [
    cls
    for cls in vars(events).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == events.__name__
]


def test_every_run_event_is_a_frozen_slotted_dataclass_whose_init_takes_its_fields() -> None:
    assert len(RUN_EVENTS) == 12
    for cls in RUN_EVENTS:
        params = inspect.signature(cls).parameters
        fields = dataclasses.fields(cls)
        assert list(params) == [f.name for f in fields], cls
        for f in fields:
            if f.default is not dataclasses.MISSING:
                assert params[f.name].default == f.default, (cls, f.name)
        assert cls.__dataclass_params__.frozen, cls  # type: ignore[attr-defined]
        assert "__slots__" in vars(cls), cls


def test_a_run_event_built_with_keywords_and_defaults_is_an_immutable_value() -> None:
    call = ToolCallPart("c1", "add", {"a": 1})
    message = Message("assistant", (call,))
    started = events.ModelCallStarted(3, "m", 5, attempt=2)
    assert (started.turn, started.model, started.message_count) == (3, "m", 5)
    assert started.prompt_fingerprints == () and started.attempt == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        started.turn = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        events.ModelCallStarted(3, "m")  # type: ignore[call-arg]
    finished = events.ModelCallFinished(1, message, StopReason.TOOL_USE, Usage(), 0.5)
    assert finished.response_model == "" and finished.type == "model_call_finished"
    assert dataclasses.replace(finished, turn=2).turn == 2
    changed = events.StateChanged(LoopState.THINK, LoopState.ACT, 1)
    assert changed == events.StateChanged(LoopState.THINK, LoopState.ACT, 1)
    assert hash(changed) == hash(events.StateChanged(LoopState.THINK, LoopState.ACT, 1))
    assert repr(changed).startswith("StateChanged(previous=")
