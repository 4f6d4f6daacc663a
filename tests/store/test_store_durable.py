"""Durable runs: pause for approval, resume in a new agent (another process's view),
crash recovery of interrupted tool calls, locks, chat continuation, policies."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Sequence
from pathlib import Path

import pytest
from store_testlib import sid

from loopwright.core.errors import ToolErrorKind, UserError
from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.run import LoopState, RunState, RunStop
from loopwright.durable import NOT_RUN, CheckpointPolicy, Durable, DurableConfig
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.store import (
    CheckpointStore,
    IntentRecord,
    SessionLocked,
    SessionNotFound,
    SQLiteStore,
    StoreUnavailable,
    fork,
)
from loopwright.store.base import write_each
from loopwright.store.state import Write, WriteOutcome
from loopwright.tools import Confirmation, DispatchConfig, tool


class Outbox:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.nonce = sid()  # ledger keys are global: keep tests apart on shared servers

    def tool(self, **flags: object):
        outbox = self

        @tool(idempotency_key=lambda a: f"k-{outbox.nonce}-{a['to']}", **flags)
        def send_email(to: str) -> str:
            """Send an email."""
            outbox.sent.append(to)
            return f"sent to {to}"

        return send_email


def email_model(recipients: list[str]) -> FunctionModel:
    """Asks for one send_email per recipient (all in one turn), then answers."""

    def reply(messages, request):
        last = messages[-1]
        if last.role == "tool":
            return "; ".join(f"{r.call_id}={r.content}" for r in last.tool_results_parts)
        if last.role == "user" and last.text.startswith("again"):
            return "hello again"
        calls = [ToolCallPart(f"call-{to}", "send_email", {"to": to}) for to in recipients]
        return Message("assistant", tuple(calls))

    return FunctionModel(reply)


def later(call, spec) -> Confirmation:
    return Confirmation.later()


def make(store: CheckpointStore, box: Outbox, recipients: list[str], **flags: object) -> Durable:
    agent = Agent(
        email_model(recipients),
        [box.tool(**flags)],
        dispatch=DispatchConfig(confirm=later),
    )
    return Durable(agent, store)


def test_pause_then_approve_in_a_new_agent(store: CheckpointStore) -> None:
    box = Outbox()
    s = sid()
    first = make(store, box, ["ann"], requires_confirmation=True).run("send it", session_id=s)
    assert first.stop is RunStop.AWAITING_CONFIRMATION
    assert first.session_id == s and box.sent == []
    saved = store.load(s)
    assert saved.awaiting_confirmation and saved.status is LoopState.PAUSED
    assert [c.id for c in saved.pending_calls] == ["call-ann"]
    info = next(i for i in store.sessions() if i.session_id == s)
    assert info.display_status == "awaiting_confirmation"
    # another process: a fresh agent and Durable over the same store
    again = make(store, box, ["ann"], requires_confirmation=True)
    with pytest.raises(UserError, match="awaits confirmation for call-ann"):
        again.resume(s)
    done = again.resume(s, approve=True)
    assert done.stop is RunStop.FINAL_ANSWER
    assert box.sent == ["ann"]
    assert done.answer == "call-ann=sent to ann"
    assert store.load(s).stop is RunStop.FINAL_ANSWER
    # resuming a finished session returns its stored result and runs nothing
    assert again.resume(s).answer == done.answer and box.sent == ["ann"]


def test_deny_and_per_call_decisions(store: CheckpointStore) -> None:
    box = Outbox()
    s = sid()
    durable = make(store, box, ["ann", "bob"], requires_confirmation=True)
    assert durable.run("send", session_id=s).stop is RunStop.AWAITING_CONFIRMATION
    with pytest.raises(UserError, match=r"no pending call\(s\) \['nope'\]"):
        durable.resume(s, approve=["nope"])
    with pytest.raises(UserError, match=r"\['call-ann'\] .* both approved and denied"):
        durable.resume(s, approve=["call-ann"], deny={"call-ann": "not ann"})
    assert box.sent == []  # the approval used to win: ann was emailed
    result = durable.resume(s, approve=["call-bob"], deny="not ann")
    assert box.sent == ["bob"]
    tool_msg = result.messages[-2]
    by_id = {r.call_id: r for r in tool_msg.tool_results_parts}
    assert by_id["call-ann"].error_kind == ToolErrorKind.DENIED_BY_USER.value
    assert "not ann" in by_id["call-ann"].content
    assert not by_id["call-bob"].is_error


def _crashed_state(store: CheckpointStore, s: str, to: str) -> None:
    call = ToolCallPart(f"call-{to}", "send_email", {"to": to})
    state = RunState(
        s,
        status=LoopState.ACT,
        turn=1,
        messages=[Message.user("send"), Message("assistant", (call,))],
    )
    store.save(state)


@pytest.mark.parametrize(
    ("flags", "intent", "expect_sent", "expect_kind"),
    [
        ({}, None, ["ann"], None),  # never started: run
        ({}, "started", [], "outcome_unknown"),  # report policy
        ({"idempotent": True}, "started", ["ann"], None),  # idempotent: re-run
        (
            {"unknown_outcome": "ask_tool", "outcome_check": lambda k: "already sent"},
            "started",
            [],
            None,
        ),
        (
            {"unknown_outcome": "ask_tool", "outcome_check": lambda k: NOT_RUN},
            "started",
            ["ann"],
            None,
        ),
        (
            {"unknown_outcome": "ask_tool", "outcome_check": lambda k: None},
            "started",
            [],
            "outcome_unknown",
        ),
        ({}, "deferred", ["ann"], None),
    ],
)
def test_crash_recovery_per_policy(
    tmp_path: Path, flags: dict, intent: str | None, expect_sent: list[str], expect_kind: str | None
) -> None:
    from loopwright.store import IntentStatus

    store = SQLiteStore(tmp_path / "db.sqlite")
    s = sid()
    _crashed_state(store, s, "ann")
    if intent is not None:
        store.put_intent(
            IntentRecord(s, "call-ann", "send_email", "k-ann", {"to": "ann"}, IntentStatus(intent))
        )
    box = Outbox()
    durable = Durable(Agent(email_model(["ann"]), [box.tool(**flags)]), store)
    result = durable.resume(s)
    assert result.stop is RunStop.FINAL_ANSWER
    assert box.sent == expect_sent
    tool_result = result.messages[2].tool_results_parts[0]
    assert tool_result.error_kind == expect_kind
    if flags.get("outcome_check") is not None and expect_kind is None and not expect_sent:
        assert tool_result.content == "already sent"


def test_recovery_uses_recorded_result_or_ledger(tmp_path: Path) -> None:
    from loopwright.core.messages import ToolResultPart
    from loopwright.store import IntentStatus

    store = SQLiteStore(tmp_path / "db.sqlite")
    box = Outbox()
    s1, s2 = sid(), sid()
    _crashed_state(store, s1, "ann")
    done = ToolResultPart("call-ann", "send_email", "sent to ann (recorded)")
    store.put_intent(
        IntentRecord(s1, "call-ann", "send_email", "k-ann", {"to": "ann"}, IntentStatus.DONE, done)
    )
    _crashed_state(store, s2, "bob")
    store.put_intent(IntentRecord(s2, "call-bob", "send_email", "k-bob", {"to": "bob"}))
    store.ledger_put("k-bob", ToolResultPart("x", "send_email", "sent to bob (ledger)"))
    durable = Durable(Agent(email_model(["ann"]), [box.tool()]), store)
    assert "recorded" in durable.resume(s1).answer
    assert "ledger" in durable.resume(s2).answer
    assert box.sent == []


def test_session_locked_elsewhere(store: CheckpointStore) -> None:
    box = Outbox()
    s = sid()
    durable = make(store, box, ["ann"], requires_confirmation=True)
    durable.run("send", session_id=s)
    before = store.load(s)
    store.acquire_lock(s, "otherhost:4242:abcd", ttl=300)
    with pytest.raises(SessionLocked) as err:
        durable.resume(s, approve=True)
    assert s in str(err.value) and "otherhost:4242" in str(err.value)
    assert "--break-lock" in str(err.value)
    assert store.load(s) == before and box.sent == []
    assert durable.resume(s, approve=True, break_lock=True).ok
    assert box.sent == ["ann"]
    assert store.lock_owner(s) is None  # released at the end of the run


def test_unknown_session(store: CheckpointStore) -> None:
    durable = make(store, Outbox(), ["ann"])
    with pytest.raises(SessionNotFound, match="nope-123"):
        durable.resume("nope-123", approve=True)


def test_chat_continues_a_conversation(store: CheckpointStore) -> None:
    box = Outbox()
    s = sid()
    durable = make(store, box, ["ann"])
    assert durable.run("send", session_id=s).ok
    second = make(store, box, ["ann"]).run("again please", session_id=s)
    assert second.answer == "hello again"
    history = store.load(s).messages
    assert [m.role for m in history] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert len(store.history(s)) >= 3  # checkpoints were written during both runs


def test_fork_and_continue(store: CheckpointStore) -> None:
    box = Outbox()
    s = sid()
    durable = make(store, box, ["ann"])
    durable.run("send", session_id=s)
    first = store.history(s)[0]  # a checkpoint from before the send ran
    assert first.message_count <= 2
    forked = fork(store, s, first.checkpoint)
    result = durable.resume(forked.session_id)
    # the fork re-plans the same send: the persistent idempotency ledger answers it
    assert result.ok and box.sent == ["ann"]
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert store.load(forked.session_id).parent == f"{s}@{first.checkpoint}"


@pytest.mark.parametrize(
    ("policy", "most"), [("every_step", 99), ("tool_calls", 4), ("interval", 3)]
)
def test_checkpoint_policies(tmp_path: Path, policy: str, most: int) -> None:
    store = SQLiteStore(tmp_path / "db.sqlite")
    box = Outbox()
    agent = Agent(email_model(["ann"]), [box.tool()])
    config = DurableConfig(policy=CheckpointPolicy(policy), interval=3600)
    s = sid()
    assert Durable(agent, store, config).run("send", session_id=s).ok
    refs = store.history(s)
    assert len(refs) <= most
    assert refs[-1].stop is RunStop.FINAL_ANSWER and refs[-1].message_count == 4
    if policy == "tool_calls":  # the calls were stored before the side effect ran
        assert refs[0].message_count == 2


def test_a_policy_given_by_name_checkpoints_as_the_member_does(tmp_path: Path) -> None:
    # was: DurableConfig(policy="tool_calls") (or any string) was kept as is, matched no
    # member and meant the interval policy: one checkpoint at the end, before the
    # side effect nothing; "nope" was accepted
    store = SQLiteStore(tmp_path / "db.sqlite")
    box = Outbox()
    config = DurableConfig(policy="tool_calls", interval=3600)  # type: ignore[arg-type]
    assert config.policy is CheckpointPolicy.TOOL_CALLS
    s = sid()
    assert (
        Durable(Agent(email_model(["ann"]), [box.tool()]), store, config)
        .run("send", session_id=s)
        .ok
    )
    assert store.history(s)[0].message_count == 2  # the calls, stored before they ran
    with pytest.raises(UserError, match=r"DurableConfig\.policy must be one of 'every_step'"):
        DurableConfig(policy="nope")  # type: ignore[arg-type]


def test_store_down_is_a_precise_error() -> None:
    from loopwright.store.redis_store import RedisStore

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = RedisStore(f"redis://127.0.0.1:{port}/0", socket_timeout=0.5)
    durable = make(store, Outbox(), ["ann"])
    with pytest.raises(
        StoreUnavailable, match=rf"redis store at redis://127.0.0.1:{port}/0 is unavailable"
    ):
        durable.run("send")


def test_postgres_down_is_a_precise_error() -> None:
    from loopwright.store.postgres import PostgresStore

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(
        StoreUnavailable, match=rf"postgres store at postgresql://127.0.0.1:{port}/x"
    ):
        PostgresStore(f"postgresql://u@127.0.0.1:{port}/x", connect_timeout=1)


def test_rewritten_history_state_roundtrip(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "db.sqlite")
    s = sid()
    state = RunState(s, messages=[Message.user("a")])
    store.save(state)
    assert store.load(s) == dataclasses.replace(state)


def test_resume_with_nothing_to_continue_is_an_error_not_a_fake_finish(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "db.sqlite")
    s = sid()
    store.save(RunState(s))  # e.g. a session saved before its first prompt
    durable = make(store, Outbox(), ["ann"])
    with pytest.raises(UserError, match="has nothing to continue"):
        durable.resume(s)
    assert durable.run("send", session_id=s).ok  # a prompt continues it


def test_lock_heartbeat_keeps_a_long_tool_call_locked(tmp_path: Path) -> None:
    import time as _time

    store = SQLiteStore(tmp_path / "db.sqlite")
    seen: list[str | None] = []
    s = sid()

    @tool(idempotent=True)
    def slow() -> str:
        """Take longer than the lock TTL."""
        _time.sleep(0.5)
        seen.append(store.lock_owner(s))
        return "ok"

    def reply(messages, request):
        if messages[-1].role == "tool":
            return "done"
        return Message("assistant", (ToolCallPart("c1", "slow", {}),))

    config = DurableConfig(lock_ttl=0.15)
    assert Durable(Agent(FunctionModel(reply), [slow]), store, config).run("go", session_id=s).ok
    assert seen and seen[0] is not None  # still held after 3 TTLs without a checkpoint
    assert store.lock_owner(s) is None


def test_reused_call_id_does_not_borrow_an_old_result(tmp_path: Path) -> None:
    from loopwright.core.messages import ToolResultPart
    from loopwright.store import IntentStatus

    store = SQLiteStore(tmp_path / "db.sqlite")
    s = sid()
    _crashed_state(store, s, "bob")  # the unanswered call is call-bob with to=bob
    old = ToolResultPart("call-bob", "send_email", "sent to ann long ago")
    store.put_intent(
        IntentRecord(s, "call-bob", "send_email", "k-old", {"to": "ann"}, IntentStatus.DONE, old)
    )
    box = Outbox()
    result = Durable(Agent(email_model(["bob"]), [box.tool()]), store).resume(s)
    assert box.sent == ["bob"] and "long ago" not in result.answer


class _FailingDoneRecords:
    """A store whose intent writes fail once the tool has run (``status=done``)."""

    def __init__(self, inner: CheckpointStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        return write_each(self, writes)  # type: ignore[arg-type]  # through put_intent below

    def put_intent(self, intent: IntentRecord) -> None:
        if intent.status.value == "done":
            raise StoreUnavailable("test", "nowhere", "connection reset")
        self._inner.put_intent(intent)


def test_a_failed_result_record_keeps_the_real_result_and_runs_once(
    store: CheckpointStore,
) -> None:
    charges: list[int] = []

    @tool
    def charge(amount: int) -> str:
        """Charge a card (not idempotent)."""
        charges.append(amount)
        return f"charged {amount}"

    def reply(messages, request):
        last = messages[-1]
        if last.role == "tool":
            result = last.tool_results_parts[0]
            if result.is_error:  # what a model does with an error: try again
                return [ToolCallPart(f"c{len(messages)}", "charge", {"amount": 5})]
            return f"done: {result.content}"
        return [ToolCallPart("c1", "charge", {"amount": 5})]

    durable = Durable(Agent(FunctionModel(reply), [charge]), _FailingDoneRecords(store))  # type: ignore[arg-type]
    result = durable.run("pay", session_id=sid())
    assert result.ok and result.answer == "done: charged 5"
    assert charges == [5]
    (intent,) = store.intents(result.session_id or "")
    assert intent.status.value == "started"  # a crash now reports "outcome unknown"
