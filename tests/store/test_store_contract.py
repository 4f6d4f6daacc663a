"""One suite, every store: the CheckpointStore contract (see loopwright.store.base)."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid

import pytest
from store_testlib import sid

from loopwright.core.messages import Message, ToolCallPart, ToolResultPart, Usage
from loopwright.core.run import ErrorRecord, LoopState, RunState, RunStop
from loopwright.store import (
    CheckpointNotFound,
    CheckpointRef,
    CheckpointStore,
    CorruptCheckpoint,
    HistoryConflict,
    HistoryRewritten,
    IntentRecord,
    IntentStatus,
    SchemaVersionError,
    SessionLocked,
    SessionNotFound,
    fork,
    lock_owner_id,
)
from loopwright.store.codec import StateEncoder
from loopwright.store.state import Claim, Write


def full_state(session_id: str, n: int = 4) -> RunState:
    msgs = [Message.user("hello")]
    for i in range(1, n):
        msgs.append(Message.assistant(f"reply {i}") if i % 2 else Message.user(f"q {i}"))
    call = ToolCallPart("c1", "send_email", {"to": "a@b.c"}, '{"to": "a@b.c"}')
    return RunState(
        session_id=session_id,
        status=LoopState.PAUSED,
        turn=3,
        messages=msgs,
        usage=Usage(10, 20, 1, 2, 0.5),
        consecutive_errors=1,
        error_log=(ErrorRecord(1, "tool", "timeout", "slow"),),
        pending_calls=(call,),
        held_results=(ToolResultPart("c0", "lookup", "42"),),
        steering=(Message.user("faster"),),
        follow_ups=(Message.user("then summarize"),),
        stop=RunStop.AWAITING_CONFIRMATION,
        detail="needs approval",
        metadata={"model": "scripted"},
    )


def grow(state: RunState, text: str) -> RunState:
    return dataclasses.replace(
        state, messages=[*state.messages, Message.user(text)], turn=state.turn + 1
    )


def test_roundtrip_keeps_every_field(store: CheckpointStore) -> None:
    state = full_state(sid())
    ref = store.save(state)
    assert ref.checkpoint == 1 and ref.message_count == 4
    assert store.load(state.session_id) == state


def test_append_only_history_and_time_travel(store: CheckpointStore) -> None:
    state = RunState(sid(), messages=[Message.user("0")])
    states = [state]
    store.save(state)
    for i in range(1, 6):
        state = grow(state, str(i))
        states.append(state)
        store.save(state)
    refs = store.history(state.session_id)
    assert [r.checkpoint for r in refs] == [1, 2, 3, 4, 5, 6]
    assert [r.message_count for r in refs] == [1, 2, 3, 4, 5, 6]
    for ref, expected in zip(refs, states, strict=True):
        assert store.load(state.session_id, ref.checkpoint) == expected
    assert store.load(state.session_id) == states[-1]


def test_fork_from_an_earlier_checkpoint(store: CheckpointStore) -> None:
    state = RunState(sid(), messages=[Message.user("0")])
    store.save(state)
    later = grow(state, "1")
    store.save(later)
    forked = fork(store, state.session_id, 1)
    assert forked.session_id != state.session_id
    assert forked.parent == f"{state.session_id}@1"
    assert store.load(forked.session_id).messages == state.messages
    branch = grow(forked, "other")
    store.save(branch)
    assert store.load(state.session_id) == later  # the original is untouched
    assert store.load(forked.session_id).messages[-1].text == "other"


def test_unknown_session_and_checkpoint(store: CheckpointStore) -> None:
    missing = sid()
    with pytest.raises(SessionNotFound, match=missing) as err:
        store.load(missing)
    assert "loopwright sessions" in str(err.value)
    with pytest.raises(SessionNotFound):
        store.history(missing)
    state = RunState(sid())
    store.save(state)
    with pytest.raises(CheckpointNotFound, match=r"no checkpoint 7; it has checkpoints 1\.\.1"):
        store.load(state.session_id, 7)
    assert store.delete(missing) is False


def test_sessions_list_status_and_delete(store: CheckpointStore) -> None:
    paused = full_state(sid())
    done = RunState(sid(), status=LoopState.DONE, stop=RunStop.FINAL_ANSWER)
    store.save(paused)
    store.save(done)
    infos = {i.session_id: i for i in store.sessions()}
    assert infos[paused.session_id].display_status == "awaiting_confirmation"
    assert infos[paused.session_id].message_count == 4
    assert infos[done.session_id].display_status == "done"
    assert store.delete(done.session_id) is True
    assert done.session_id not in {i.session_id for i in store.sessions()}
    with pytest.raises(SessionNotFound):
        store.load(done.session_id)
    assert store.load(paused.session_id) == paused


def test_shorter_history_needs_rewrite_from(store: CheckpointStore) -> None:
    state = RunState(sid(), messages=[Message.user("a"), Message.user("b")])
    store.save(state)
    short = dataclasses.replace(state, messages=[Message.user("a")])
    with pytest.raises(HistoryRewritten, match="rewrite_from"):
        store.save(short)
    assert store.load(state.session_id) == state  # nothing written
    rewritten = dataclasses.replace(state, messages=[Message.user("a"), Message.user("B!")])
    store.save(rewritten, rewrite_from=1)
    assert store.load(state.session_id).messages[1].text == "B!"
    # checkpoint 1 referenced the replaced row, so it was dropped
    assert [r.checkpoint for r in store.history(state.session_id)] == [2]


def test_lock_blocks_other_owners_with_a_clear_message(store: CheckpointStore) -> None:
    s = sid()
    me, other = lock_owner_id(), "otherhost:1:abc"
    store.acquire_lock(s, other, ttl=60)
    with pytest.raises(SessionLocked) as err:
        store.acquire_lock(s, me)
    msg = str(err.value)
    assert s in msg and "otherhost:1:abc" in msg and "--break-lock" in msg
    assert store.lock_owner(s) == other
    store.acquire_lock(s, other, ttl=60)  # the holder refreshes
    assert store.break_lock(s) is True
    store.acquire_lock(s, me)
    store.release_lock(s, "not-me")
    assert store.lock_owner(s) == me
    store.release_lock(s, me)
    assert store.lock_owner(s) is None


def test_expired_and_dead_locks_are_taken_over(store: CheckpointStore) -> None:
    import socket

    s = sid()
    store.acquire_lock(s, "otherhost:1:x", ttl=0.05)
    time.sleep(0.1)
    store.acquire_lock(s, lock_owner_id())  # expired
    dead = f"{socket.gethostname()}:999999999:dead"
    s2 = sid()
    store.acquire_lock(s2, dead, ttl=600)
    store.acquire_lock(s2, lock_owner_id())  # holder process does not exist


def test_intents_and_ledger(store: CheckpointStore) -> None:
    s = sid()
    intent = IntentRecord(s, "c1", "send_email", "k-1", {"to": "x"})
    store.put_intent(intent)
    assert store.intents(s) == [intent]
    result = ToolResultPart("c1", "send_email", "sent")
    done = dataclasses.replace(intent, status=IntentStatus.DONE, result=result)
    store.put_intent(done)
    assert store.intents(s) == [done]
    assert store.ledger_get(f"{s}-k") is None
    store.ledger_put(f"{s}-k", result)
    store.ledger_put(f"{s}-k", ToolResultPart("c2", "send_email", "second"))
    assert store.ledger_get(f"{s}-k") == result  # the first result wins


def test_corrupt_row_is_a_precise_error_and_leaves_state_intact(
    store: CheckpointStore, corrupt
) -> None:
    state = RunState(sid(), messages=[Message.user("a")])
    store.save(state)
    store.save(grow(state, "b"))
    corrupt(store, state.session_id, 2, "{not json")
    with pytest.raises(CorruptCheckpoint) as err:
        store.load(state.session_id)
    assert state.session_id in str(err.value) and "checkpoint 2" in str(err.value)
    assert store.load(state.session_id, 1) == state  # earlier checkpoint still loads
    with pytest.raises(CorruptCheckpoint):  # and the bad row was not "repaired" away
        store.load(state.session_id)
    corrupt(
        store,
        state.session_id,
        2,
        json.dumps({"session_id": state.session_id, "schema_version": 1}),
    )
    with pytest.raises(CorruptCheckpoint, match="KeyError"):
        store.load(state.session_id)


def test_newer_schema_version_fails_clearly(store: CheckpointStore, corrupt) -> None:
    state = RunState(sid())
    store.save(state)
    corrupt(store, state.session_id, 1, json.dumps({"schema_version": 99}))
    with pytest.raises(SchemaVersionError, match=r"schema version 99.*upgrade loopwright"):
        store.load(state.session_id)


def test_concurrent_writers(store: CheckpointStore) -> None:
    ids = [sid() for _ in range(8)]
    errors: list[BaseException] = []

    def work(session_id: str) -> None:
        try:
            state = RunState(session_id, messages=[Message.user("0")])
            store.save(state)
            for i in range(10):
                state = grow(state, str(i))
                store.save(state)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i in ids:
        assert len(store.load(i).messages) == 11
        assert len(store.history(i)) == 11


def test_concurrent_writers_of_one_session_lose_nothing(store: CheckpointStore) -> None:
    """Writers outside the session lock: each loads, appends one message and saves. A save
    that did not see another writer's save is refused (HistoryConflict) instead of
    reporting success while its message is dropped; every reported success is stored."""
    session_id = sid()
    store.save(RunState(session_id, messages=[Message.user("base")]))
    saved: list[str] = []
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(6):
                while True:
                    state = store.load(session_id)
                    text = f"w{worker}-{i}"
                    try:
                        store.save(grow(state, text))
                    except (HistoryConflict, HistoryRewritten):
                        continue  # someone else saved first: reload and try again
                    saved.append(text)
                    break
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stored = [m.text for m in store.load(session_id).messages[1:]]
    assert sorted(stored) == sorted(saved) and len(stored) == 36


def test_a_stale_state_is_refused_and_nothing_is_written(store: CheckpointStore) -> None:
    base = RunState(sid(), messages=[Message.user("a")])
    store.save(base)
    store.save(grow(base, "from writer 1"))
    with pytest.raises(HistoryConflict, match="another writer"):
        store.save(grow(base, "from writer 2"))
    assert [m.text for m in store.load(base.session_id).messages] == ["a", "from writer 1"]
    assert len(store.history(base.session_id)) == 2


def test_write_applies_many_sessions_together_and_fails_each_alone(
    store: CheckpointStore,
) -> None:
    """``write``: the group commit's call. Each write gets its own outcome; one that
    conflicts with the stored history fails alone and writes nothing of its own."""
    a, b, c, stale = sid(), sid(), sid(), sid()
    owner = lock_owner_id()
    store.save(RunState(b, messages=[Message.user("b0")]))
    store.save(RunState(stale, messages=[Message.user("s0"), Message.user("s1")]))
    store.acquire_lock(b, owner)
    intent = IntentRecord(a, "call-1", "send", "k-1", {"to": "ann"})
    state_b = RunState(b, messages=[Message.user("b0"), Message.assistant("b1")], turn=1)
    outcomes = store.write(
        [
            Write(RunState(a, messages=[Message.user("a0")]), intents=(intent,)),
            Write(state_b, release=(b, owner)),
            Write(RunState(stale, messages=[Message.user("s0")])),  # shorter: refused
            Write(intents=(dataclasses.replace(intent, session_id=c),)),
            Write(RunState(a, messages=[Message.user("a0"), Message.assistant("a1")])),
        ]
    )
    ref_a, ref_b, refused, only_intent, ref_a2 = outcomes
    assert isinstance(ref_a, CheckpointRef) and ref_a.checkpoint == 1
    assert isinstance(ref_b, CheckpointRef) and ref_b.checkpoint == 2
    assert isinstance(refused, HistoryRewritten)
    assert only_intent is None
    assert isinstance(ref_a2, CheckpointRef) and ref_a2.checkpoint == 2  # in order
    assert [m.text for m in store.load(a).messages] == ["a0", "a1"]
    assert [m.text for m in store.load(b).messages] == ["b0", "b1"]
    assert len(store.load(stale).messages) == 2  # untouched
    assert [i.call_id for i in store.intents(a)] == ["call-1"]
    assert [i.call_id for i in store.intents(c)] == ["call-1"]
    assert store.lock_owner(b) is None
    assert [r.checkpoint for r in store.history(b)] == [1, 2]


def test_write_refuses_a_state_that_does_not_continue_the_stored_history(
    store: CheckpointStore,
) -> None:
    s, other = sid(), sid()
    store.save(RunState(s, messages=[Message.user("x")]))
    conflicting = RunState(s, messages=[Message.user("y"), Message.assistant("z")])
    bad, good = store.write(
        [Write(conflicting), Write(RunState(other, messages=[Message.user("o")]))]
    )
    assert isinstance(bad, HistoryConflict)
    assert isinstance(good, CheckpointRef)
    assert [m.text for m in store.load(s).messages] == ["x"]
    assert store.load(other).messages[0].text == "o"


def test_claim_locks_and_loads_many_sessions_together(store: CheckpointStore) -> None:
    stored, new, held, broken = sid(), sid(), sid(), sid()
    me, other = lock_owner_id(), lock_owner_id()
    store.save(RunState(stored, messages=[Message.user("a"), Message.assistant("b")], turn=1))
    store.save(RunState(broken, messages=[Message.user("x")]))
    store.acquire_lock(held, other)
    store.acquire_lock(broken, other)
    outcomes = store.claim(
        [
            Claim(stored, me, 60),
            Claim(new, me, 60),
            Claim(held, me, 60),
            Claim(broken, me, 60, break_first=True),
            Claim(new, other, 60),  # the same session twice: the first claim holds it
        ]
    )
    loaded, fresh, locked, taken, second = outcomes
    assert isinstance(loaded, RunState) and [m.text for m in loaded.messages] == ["a", "b"]
    assert fresh is None
    assert isinstance(locked, SessionLocked) and isinstance(second, SessionLocked)
    assert isinstance(taken, RunState) and taken.messages[0].text == "x"
    assert store.lock_owner(stored) == me and store.lock_owner(new) == me
    assert store.lock_owner(held) == other and store.lock_owner(broken) == me


def test_a_claim_that_cannot_load_leaves_the_lock_free(store: CheckpointStore, corrupt) -> None:
    s = sid()
    store.save(RunState(s, messages=[Message.user("a")]))
    corrupt(store, s, 1, "{not json")
    (outcome,) = store.claim([Claim(s, lock_owner_id(), 60)])
    assert isinstance(outcome, CorruptCheckpoint)
    assert store.lock_owner(s) is None


def test_a_large_batch_is_written_whole(store: CheckpointStore) -> None:
    """More rows than one statement may carry parameters for (SQL stores split them)."""
    sids = [sid() for _ in range(150)]
    writes = [
        Write(
            RunState(s, messages=[Message.user(f"{s}-{k}") for k in range(3)]),
            intents=(IntentRecord(s, "c1", "send", None, {}),),
        )
        for s in sids
    ]
    assert all(isinstance(o, CheckpointRef) for o in store.write(writes))
    for s in sids[::37]:
        assert [m.text for m in store.load(s).messages] == [f"{s}-{k}" for k in range(3)]
        assert [i.call_id for i in store.intents(s)] == ["c1"]
    claims = store.claim([Claim(s, "me", 60) for s in sids])
    assert all(isinstance(c, RunState) and len(c.messages) == 3 for c in claims)
    assert store.lock_owner(sids[-1]) == "me"


def test_a_batch_continuing_a_thousand_sessions_is_written(store: CheckpointStore) -> None:
    """A second checkpoint of 1,100 sessions in one batch: every save is checked against
    its stored history (SQLite refuses one OR chain of more than 1,000 terms)."""
    sids = [sid() for _ in range(1_100)]
    first = [Write(RunState(s, messages=[Message.user(s)])) for s in sids]
    assert all(isinstance(o, CheckpointRef) for o in store.write(first))
    more = [Write(RunState(s, messages=[Message.user(s), Message.assistant("ok")])) for s in sids]
    assert all(isinstance(o, CheckpointRef) for o in store.write(more))
    assert [m.text for m in store.load(sids[-1]).messages] == [sids[-1], "ok"]


def test_a_thousand_runs_start_together(store: CheckpointStore) -> None:
    """``claim`` of 1,100 sessions in one batch (more than one statement may carry)."""
    sids = [sid() for _ in range(1_100)]
    store.write([Write(RunState(s, messages=[Message.user(s)])) for s in sids[::2]])
    outcomes = store.claim([Claim(s, "me", 60) for s in sids])
    assert [isinstance(o, RunState) for o in outcomes] == [i % 2 == 0 for i in range(1_100)]
    assert outcomes[-1] is None and store.lock_owner(sids[-1]) == "me"
    assert isinstance(outcomes[0], RunState) and outcomes[0].messages[0].text == sids[0]


def test_write_takes_the_writers_encoding_and_checks_the_history_with_it(
    store: CheckpointStore,
) -> None:
    s = sid()
    run = StateEncoder()  # how a durable run hands its checkpoints over (each row once)
    state = RunState(s, messages=[Message.user("x")])
    first = state.snapshot()
    assert isinstance(store.write([Write(first, encoded=run.encode(first))])[0], CheckpointRef)
    state.messages.append(Message.assistant("y"))
    second = state.snapshot()
    (ref,) = store.write([Write(second, encoded=run.encode(second))])
    assert isinstance(ref, CheckpointRef) and ref.message_count == 2
    assert store.load(s) == dataclasses.replace(second, updated_at=store.load(s).updated_at)
    # a writer that did not see that save: its message 1 is not the stored one
    other = RunState(s, messages=[Message.user("x"), Message.assistant("q"), Message.user("w")])
    (bad,) = store.write([Write(other, encoded=StateEncoder().encode(other))])
    assert isinstance(bad, HistoryConflict)
    assert [m.text for m in store.load(s).messages] == ["x", "y"]


def test_unfinished_sessions_are_those_without_a_result(store: CheckpointStore) -> None:
    running, done, later, gone = sid(), sid(), sid(), sid()
    store.save(RunState(session_id=running, messages=[Message.user("a")]))
    store.save(RunState(session_id=done, messages=[Message.user("b")], stop=RunStop.FINAL_ANSWER))
    store.save(RunState(session_id=later, messages=[Message.user("c")]))
    store.save(RunState(session_id=gone, messages=[Message.user("d")]))
    mine = {running, done, later, gone}

    def unfinished() -> list[str]:
        return [i.session_id for i in store.sessions(unfinished=True) if i.session_id in mine]

    assert unfinished() == [gone, later, running]  # most recently updated first
    state = store.load(later)
    state.messages.append(Message.assistant("done"))
    state.stop = RunStop.MAX_TURNS
    store.save(state)  # its run ended: no longer unfinished
    store.delete(gone)
    assert unfinished() == [running]
    assert all(i.stop is None for i in store.sessions(unfinished=True))
    assert {i.session_id for i in store.sessions()} >= {running, done, later}


def test_text_beyond_ascii_is_stored_byte_for_byte_and_appended_after(
    store: CheckpointStore,
) -> None:
    """Non-ASCII text (astral emoji, CJK, control characters, NUL) comes back exactly as
    written, and the next save still finds the stored row equal to its own (the
    continuity check compares the two byte for byte)."""
    text = "naïve 漢字 😀🧪 tab\tnew\nline nul\x00 end"
    state = RunState(session_id=sid(), messages=[Message.user(text)])
    store.save(state)
    assert store.load(state.session_id).messages[0].text == text
    state = grow(state, text + " again")
    store.save(state)
    assert [m.text for m in store.load(state.session_id).messages] == [text, text + " again"]
    store.delete(state.session_id)


def test_a_long_history_saved_at_once_is_stored_whole(store: CheckpointStore) -> None:
    """A first save of thousands of messages (an imported history): backends that send
    rows in chunks (Redis: at most 1,000 values per command) keep every row, in order."""
    state = RunState(session_id=sid(), messages=[Message.user(str(k)) for k in range(2500)])
    store.save(state)
    state = grow(state, "next")
    store.save(state)
    assert [m.text for m in store.load(state.session_id).messages] == [
        *(str(k) for k in range(2500)),
        "next",
    ]
    store.delete(state.session_id)


def test_sessions_filtered_by_id_prefix_and_limited_in_the_store(store: CheckpointStore) -> None:
    """``sessions(prefix=..., limit=...)``: only the ids that start with the prefix (a
    server's tenant tag), newest first, at most ``limit``; characters that are
    wildcards in SQL ``LIKE`` match only themselves."""
    tag = f"t{uuid.uuid4().hex[:8]}"
    mine = [f"{tag}_%-{k}" for k in range(4)]
    others = [f"{tag}x%-9", f"{tag}a_%-8", f"z{tag}_%-7"]  # LIKE would match the first two
    for k, s in enumerate([*mine, *others]):
        store.save(RunState(session_id=s, messages=[Message.user(str(k))], updated_at=k))
    try:
        assert [i.session_id for i in store.sessions(prefix=f"{tag}_%")] == mine[::-1]
        assert [i.session_id for i in store.sessions(prefix=f"{tag}_%", limit=2)] == mine[:1:-1]
        unfinished = store.sessions(prefix=f"{tag}_%", limit=3, unfinished=True)
        assert [i.session_id for i in unfinished] == mine[:0:-1]
    finally:
        for s in [*mine, *others]:
            store.delete(s)
