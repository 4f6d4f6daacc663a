"""Canonical messages: lossless JSON round trip; malformed input is a CodecError only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwright.core.messages import (
    ROLES,
    CodecError,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    message_from_dict,
    messages_from_list,
    messages_to_list,
)

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)  # includes emoji, CJK, NUL
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(text, c, max_size=4),
    max_leaves=15,
)
json_objects = st.dictionaries(text, json_values, max_size=4)
metas = st.one_of(
    st.just({}),
    st.dictionaries(
        st.sampled_from(["anthropic", "gemini", "openai"]) | text, json_values, max_size=2
    ),
)

parts = st.one_of(
    st.builds(TextPart, text, metas),
    st.builds(ReasoningPart, text, metas),
    st.builds(ToolCallPart, text, text, json_objects, text, metas),
    st.builds(
        ToolResultPart,
        text,
        text,
        text,
        st.booleans(),
        st.none() | st.sampled_from(["timeout", "permanent", "skipped"]) | text,
        metas,
    ),
)
messages = st.builds(Message, st.sampled_from(ROLES), st.lists(parts, max_size=5).map(tuple), metas)


@PROPS
@given(messages)
def test_message_survives_json_round_trip(msg: Message) -> None:
    wire = json.dumps(msg.to_dict(), ensure_ascii=False)
    back = message_from_dict(json.loads(wire))
    assert back == msg
    assert back.to_dict() == msg.to_dict()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, max_size=4))
def test_message_list_round_trip(msgs: list[Message]) -> None:
    wire = json.dumps(messages_to_list(msgs))
    assert messages_from_list(json.loads(wire)) == msgs


part_dicts = st.fixed_dictionaries(
    {"kind": st.sampled_from(["text", "reasoning", "tool_call", "tool_result", "image", 3])},
    optional={
        "text": json_values,
        "id": json_values,
        "name": json_values,
        "arguments": json_values,
        "raw_arguments": json_values,
        "call_id": json_values,
        "content": json_values,
        "is_error": json_values,
        "error_kind": json_values,
        "provider_meta": json_values,
    },
)
message_dicts = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from([*ROLES, "robot"]) | json_values,
        "parts": st.lists(part_dicts | json_values, max_size=3) | json_values,
        "provider_meta": json_values,
    },
)


@PROPS
@given(st.one_of(message_dicts, json_values))
def test_malformed_dicts_raise_codec_error_only(data: Any) -> None:
    try:
        msg = message_from_dict(data)
    except CodecError:
        return
    assert isinstance(msg, Message)
    # Whatever was accepted must itself round-trip.
    assert message_from_dict(json.loads(json.dumps(msg.to_dict()))) == msg


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"role": "user"},
        {"role": "wizard", "parts": []},
        {"role": "user", "parts": "nope"},
        {"role": "user", "parts": [{"kind": "video"}]},
        {"role": "user", "parts": [{"kind": "text"}]},
        {"role": "user", "parts": [5]},
        {"role": "user", "parts": [{"kind": "text", "text": "x", "provider_meta": [1]}]},
        {"role": "user", "parts": [], "provider_meta": 5},
        [1, 2],
        "message",
        None,
    ],
)
def test_specific_malformed_inputs(data: Any) -> None:
    with pytest.raises(CodecError):
        message_from_dict(data)
