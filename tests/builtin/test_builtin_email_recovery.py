"""send_email exactly once across a crash: resume asks the outbox (ASK_TOOL policy)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.run import LoopState, RunState, RunStop
from loopwright.core.tools import NOT_RUN, UnknownOutcomePolicy
from loopwright.durable import NOT_RUN as DURABLE_NOT_RUN
from loopwright.durable import Durable
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.store import IntentRecord, IntentStatus, SQLiteStore
from loopwright.tools.builtin import BuiltinConfig, make_tools
from loopwright.tools.builtin.email import SPEC, Outbox, email_key

ARGS = {"to": "ana@example.com", "subject": "Meeting moved", "body": "Now at 3 pm."}


def _answer_after_tool() -> FunctionModel:
    def reply(messages: list[Message], request: object) -> str:
        results = messages[-1].tool_results_parts
        return "; ".join(r.content for r in results) or "nothing to do"

    return FunctionModel(reply)


def _crash_mid_send(tmp_path: Path) -> tuple[SQLiteStore, str, str]:
    """A checkpoint whose last message calls send_email, with an intent record marked
    started and no result: the process died while the tool ran."""
    store = SQLiteStore(tmp_path / "state.sqlite")
    session = f"s-{uuid.uuid4().hex[:8]}"
    call = ToolCallPart("call-1", "send_email", dict(ARGS))
    store.save(
        RunState(
            session,
            status=LoopState.ACT,
            turn=1,
            messages=[Message.user("email ana"), Message("assistant", (call,))],
        )
    )
    key = email_key(ARGS)
    store.put_intent(
        IntentRecord(session, "call-1", "send_email", key, dict(ARGS), IntentStatus.STARTED)
    )
    return store, session, key


def _resume(tmp_path: Path, store: SQLiteStore, session: str) -> tuple[object, Outbox]:
    config = BuiltinConfig(outbox=tmp_path / "outbox.jsonl")
    durable = Durable(Agent(_answer_after_tool(), make_tools(["send_email"], config)), store)
    return durable.resume(session), Outbox(config.outbox)


def test_send_email_declares_ask_tool() -> None:
    assert SPEC.unknown_outcome is UnknownOutcomePolicy.ASK_TOOL
    (tool,) = make_tools(["send_email"])
    assert tool.spec.unknown_outcome is UnknownOutcomePolicy.ASK_TOOL
    assert NOT_RUN is DURABLE_NOT_RUN


def test_outcome_check_reports_recorded_entry_or_not_run(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "out.jsonl")
    key = email_key(ARGS)
    assert box.outcome(key) is NOT_RUN
    box.send(ARGS["to"], ARGS["subject"], ARGS["body"], key)
    found = box.outcome(key)
    assert isinstance(found, dict)
    assert found["status"] == "already_sent"
    assert found["key"] == key
    assert found["to"] == ARGS["to"]
    assert box.outcome(email_key({**ARGS, "body": "other"})) is NOT_RUN


def test_crash_after_the_write_does_not_send_twice(tmp_path: Path) -> None:
    store, session, key = _crash_mid_send(tmp_path)
    # The write reached the outbox before the process died.
    Outbox(tmp_path / "outbox.jsonl").send(ARGS["to"], ARGS["subject"], ARGS["body"], key)
    result, box = _resume(tmp_path, store, session)
    assert result.stop is RunStop.FINAL_ANSWER  # type: ignore[attr-defined]
    assert len(box.entries()) == 1
    tool_result = result.messages[2].tool_results_parts[0]  # type: ignore[attr-defined]
    assert not tool_result.is_error
    assert json.loads(tool_result.content)["status"] == "already_sent"


def test_crash_before_the_write_sends_exactly_once(tmp_path: Path) -> None:
    store, session, key = _crash_mid_send(tmp_path)
    result, box = _resume(tmp_path, store, session)
    assert result.stop is RunStop.FINAL_ANSWER  # type: ignore[attr-defined]
    entries = box.entries()
    assert [e["key"] for e in entries] == [key]
    assert entries[0]["to"] == ARGS["to"]
    tool_result = result.messages[2].tool_results_parts[0]  # type: ignore[attr-defined]
    assert json.loads(tool_result.content)["status"] == "queued"


@pytest.mark.parametrize("crash_after_write", [True, False])
def test_second_resume_is_a_no_op(tmp_path: Path, crash_after_write: bool) -> None:
    store, session, key = _crash_mid_send(tmp_path)
    if crash_after_write:
        Outbox(tmp_path / "outbox.jsonl").send(ARGS["to"], ARGS["subject"], ARGS["body"], key)
    _resume(tmp_path, store, session)
    # Replaying the same crashed checkpoint again (e.g. a second crash before the new
    # checkpoint) still leaves exactly one email.
    store2, session2, _ = _crash_mid_send(tmp_path / "again")
    config = BuiltinConfig(outbox=tmp_path / "outbox.jsonl")
    Durable(Agent(_answer_after_tool(), make_tools(["send_email"], config)), store2).resume(
        session2
    )
    assert len(Outbox(config.outbox).entries()) == 1
