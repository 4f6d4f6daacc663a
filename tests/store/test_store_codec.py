"""The versioned execution-state codec: round trips, migration, precise corruption errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.messages import Message, TextPart, ToolCallPart, ToolResultPart, Usage
from loopwright.core.run import LoopState, RunState, RunStop
from loopwright.store import CorruptCheckpoint, SchemaVersionError, decode_state
from loopwright.store.codec import encode_header, encode_message, encode_state

text = st.text(max_size=40)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), text)
args = st.dictionaries(st.text(min_size=1, max_size=8), json_scalar, max_size=4)
parts = st.one_of(
    st.builds(TextPart, text),
    st.builds(ToolCallPart, text, st.from_regex(r"[a-z_]{1,10}", fullmatch=True), args, text),
    st.builds(ToolResultPart, text, text, text, st.booleans()),
)
messages = st.builds(
    Message,
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.lists(parts, max_size=3).map(tuple),
)
states = st.builds(
    RunState,
    session_id=st.from_regex(r"[a-z0-9-]{1,20}", fullmatch=True),
    status=st.sampled_from(list(LoopState)),
    turn=st.integers(0, 1000),
    messages=st.lists(messages, max_size=6),
    usage=st.builds(Usage, st.integers(0, 10**6), st.integers(0, 10**6)),
    pending_calls=st.lists(st.builds(ToolCallPart, text, st.just("t"), args, text), max_size=2).map(
        tuple
    ),
    steering=st.lists(messages, max_size=2).map(tuple),
    stop=st.one_of(st.none(), st.sampled_from(list(RunStop))),
    metadata=args,
    created_at=st.floats(0, 2e9),
    updated_at=st.floats(0, 2e9),
    output_retries_used=st.integers(0, 5),
)


@settings(max_examples=150, deadline=None)
@given(states)
def test_header_plus_rows_round_trip(state: RunState) -> None:
    rows = [encode_message(m) for m in state.messages]
    assert decode_state(encode_header(state), rows, session_id=state.session_id) == state
    assert decode_state(encode_state(state), [], session_id=state.session_id) == state


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60) | st.binary(max_size=60))
def test_garbage_header_is_corrupt_never_a_crash(raw: str | bytes) -> None:
    try:
        decode_state(raw, [], session_id="s")
    except (CorruptCheckpoint, SchemaVersionError):
        pass


def test_bad_message_row_names_the_row() -> None:
    state = RunState("s", messages=[Message.user("a"), Message.user("b")])
    rows = [encode_message(state.messages[0]), '{"role": "robot", "parts": []}']
    with pytest.raises(CorruptCheckpoint, match=r"session 's' at message 1: unknown role 'robot'"):
        decode_state(encode_header(state), rows, session_id="s")
    with pytest.raises(CorruptCheckpoint, match="expects 2 messages, only 1 stored"):
        decode_state(encode_header(state), rows[:1], session_id="s")


def test_seed_v0_state_migrates() -> None:
    v0 = {
        "session_id": "old",
        "status": "AgentState.ACT",
        "turn_count": 2,
        "message_history": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "function": {"name": "calc", "arguments": '{"x": 1}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "calc", "content": "1"},
        ],
        "task_goal": "add",
        "current_plan": ["a", "b"],
        "completed_steps": ["a"],
        "total_input_tokens": 5,
        "total_output_tokens": 7,
        "consecutive_errors": 0,
        "error_log": [],
        "created_at": 1.0,
        "updated_at": 2.0,
    }
    state = decode_state(json.dumps(v0), [], session_id="old")
    assert state.status is LoopState.ACT and state.turn == 2
    assert state.usage == Usage(5, 7)
    assert state.messages[1].tool_calls[0].arguments == {"x": 1}
    assert state.messages[2].tool_results_parts[0].call_id == "c1"
    # fields no run writes are kept, in metadata
    assert state.metadata == {"goal": "add", "plan": ["a", "b"], "completed_steps": ["a"]}


def test_newer_version_is_refused() -> None:
    with pytest.raises(SchemaVersionError, match=r"version 7.*reads versions 0\.\.2"):
        decode_state(json.dumps({"schema_version": 7}), [], session_id="s")


def test_a_status_this_version_has_no_state_for_reads_as_observe() -> None:
    """Older versions entered a ``reflect`` state between ACT and THINK; a checkpoint
    holding it still loads (a resumed run continues from OBSERVE anyway)."""
    state = RunState(session_id="s-old", status=LoopState.ACT, messages=[Message.user("hi")])
    header = json.loads(encode_header(state))
    header["status"] = "reflect"
    rows = [encode_message(m) for m in state.messages]
    assert decode_state(json.dumps(header), rows, session_id="s-old").status is LoopState.OBSERVE
