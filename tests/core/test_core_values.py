"""``core.values.slot_init``: the values a step builds keep every property of a frozen
dataclass whatever builds their ``__init__`` (parameters and defaults are the fields',
a ``default_factory`` runs per instance, assignment raises, ``replace``, equality,
hashing, ``repr`` and pickling are the dataclass's)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from loopwright.core import messages, protocols
from loopwright.core.messages import Message, TextPart, ToolCallPart, ToolResultPart
from loopwright.core.values import slot_init
from loopwright.loop.steps import Act
from loopwright.providers.scripted import RecordedRequest, Reply
from loopwright.tools.dispatcher import DispatchOutcome

HOT_VALUES = [
    messages.TextPart,
    messages.ReasoningPart,
    messages.ToolCallPart,
    messages.MediaPart,
    messages.ToolResultPart,
    messages.Usage,
    messages.Message,
    protocols.TextDelta,
    protocols.ReasoningDelta,
    protocols.ToolCallDelta,
    protocols.ResponseDone,
    protocols.StreamError,
    protocols.ModelRequest,
    DispatchOutcome,
    Act,
    Reply,
    RecordedRequest,
]


@pytest.mark.parametrize("cls", HOT_VALUES, ids=lambda c: c.__name__)
def test_a_hot_value_init_takes_exactly_its_fields_with_their_defaults(cls: type) -> None:
    init = cls.__init__
    # built by slot_init: it writes each field through the slot's own setter
    assert all(f"_set_{f.name}" in init.__globals__ for f in dataclasses.fields(cls))
    params = inspect.signature(cls).parameters
    fields = dataclasses.fields(cls)
    assert list(params) == [f.name for f in fields]
    for f in fields:
        if f.default is not dataclasses.MISSING:
            assert params[f.name].default == f.default, f.name
        elif f.default_factory is dataclasses.MISSING:
            assert params[f.name].default is inspect.Parameter.empty, f.name
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert "__slots__" in vars(cls)


def test_default_factories_run_per_instance_and_given_values_are_kept() -> None:
    a, b = TextPart("x"), TextPart("y")
    assert a.provider_meta == {} and a.provider_meta is not b.provider_meta
    meta = {"k": 1}
    assert TextPart("x", meta).provider_meta is meta
    call = ToolCallPart("c1", "add")
    assert call.arguments == {} and call.raw_arguments == "" and call.kind == "tool_call"
    request = protocols.ModelRequest([])
    assert request.settings == protocols.ModelSettings() and request.metadata == {}


def test_a_value_built_this_way_is_the_same_frozen_value() -> None:
    result = ToolResultPart("c1", "add", "3")
    assert (result.is_error, result.error_kind, result.media) == (False, None, ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.content = "4"  # type: ignore[misc]
    message = Message("tool", (result,))
    assert message == Message("tool", (ToolResultPart("c1", "add", "3"),))
    assert dataclasses.replace(message, role="user").role == "user"
    assert pickle.loads(pickle.dumps(message)) == message
    assert hash(messages.Usage(1, 2)) == hash(messages.Usage(1, 2))
    assert repr(TextPart("x")) == "TextPart(text='x', provider_meta={}, kind='text')"
    with pytest.raises(TypeError):
        Message("user")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        TextPart("x", text="y")  # type: ignore[misc]


def test_slot_init_refuses_fields_it_cannot_build_and_runs_post_init() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class NotInit:
        items: tuple[int, ...] = dataclasses.field(default=(), init=False)

    with pytest.raises(TypeError, match="plain init fields only"):
        slot_init(NotInit)

    @dataclasses.dataclass(frozen=True, slots=True)
    class WithInitVar:
        n: int

        def __post_init__(self, scale: int) -> None:  # what an InitVar field would need
            pass

    with pytest.raises(TypeError, match="no InitVar"):
        slot_init(WithInitVar)

    @slot_init
    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("n must be >= 0")

    assert Checked(1).n == 1
    with pytest.raises(ValueError, match="n must be"):
        Checked(-1)
