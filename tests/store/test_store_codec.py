"""The versioned execution-state codec: round trips, migration, precise corruption errors."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.messages import Message, TextPart, ToolCallPart, ToolResultPart, Usage
from loopwright.core.run import ErrorRecord, LoopState, RunState, RunStop, TaintSource
from loopwright.store import CorruptCheckpoint, SchemaVersionError, codec, decode_state
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


# ---------------------------------------------------------------- header text, per-run encoder
@settings(max_examples=150, deadline=None)
@given(states, st.sampled_from(["", "needs \ud800 approval", 'quote " and \\ back']), text)
def test_the_header_text_is_the_header_fields_encoded_whole(
    state: RunState, detail: str, parent: str
) -> None:
    # the header is put together field by field (cheaper); the layout is the dict's
    state = dataclasses.replace(
        state,
        detail=detail,
        parent=parent or None,
        error_log=(ErrorRecord(1, "tool", "timeout", "slow \x00"),),
        held_results=(ToolResultPart("c0", "lookup", "42"),),
        follow_ups=(Message.user("then"),),
        taint=(TaintSource("fetch", "c9", "ignore previous"),),
    )
    for s in (state, RunState(state.session_id, created_at=float("nan"), turn=True)):  # type: ignore[arg-type]
        assert encode_header(s) == codec._dumps(codec._header_fields(s))


def test_the_run_encoder_encodes_each_message_once(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[Message] = []
    real = codec.encode_message

    def counting(m: Message) -> str:
        encoded.append(m)
        return real(m)

    monkeypatch.setattr(codec, "encode_message", counting)
    state = RunState("s", messages=[Message.user("a"), Message.assistant("b")])
    run = codec.StateEncoder()
    first = run.encode(state.snapshot())
    state.messages.append(Message.user("c"))
    state.usage = Usage(5, 6)
    second = run.encode(state.snapshot())
    assert [m.text for m in encoded] == ["a", "b", "c"]  # a and b not again
    assert list(second.rows[:3]) == [real(m) for m in state.messages]
    assert second.header == encode_header(state)
    assert first.rows[:2] == second.rows[:2]


def test_the_run_encoder_re_encodes_a_rewritten_history_from_the_change() -> None:
    state = RunState("s", messages=[Message.user("a"), Message.assistant("b"), Message.user("c")])
    run = codec.StateEncoder()
    before = run.encode(state.snapshot())
    rows_before = list(before.rows[:3])
    # a compaction: message 1 replaced (the last one kept), then one more appended
    state.messages[1] = Message.assistant("summary")
    after = run.encode(state.snapshot())
    assert list(after.rows[:3]) == [encode_message(m) for m in state.messages]
    assert list(before.rows[:3]) == rows_before  # a write in flight keeps its rows
    state.messages[:] = [Message.user("x")]  # shorter
    assert list(run.encode(state.snapshot()).rows[:1]) == [encode_message(Message.user("x"))]
