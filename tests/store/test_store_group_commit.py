"""The group commit (``AsyncStore``): one batch's outcomes, one per caller."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from store_testlib import make_store, sid

from loopwright.core.messages import Message
from loopwright.core.run import RunState
from loopwright.store import AsyncStore, CheckpointStore, MemoryStore, SessionNotFound, Write
from loopwright.store.base import write_each
from loopwright.store.state import WriteOutcome


@contextmanager
def _poisoned(
    store: CheckpointStore, session_id: str, table: str = "lw_sessions"
) -> Iterator[None]:
    """A database constraint (a trigger) that rejects a new ``table`` row of
    ``session_id``: an error that one session's write causes inside a shared
    transaction."""
    name = f"lw_poison_{uuid.uuid4().hex[:10]}"
    with store._tx() as cur:  # type: ignore[attr-defined]
        if store.kind == "sqlite":
            cur.execute(
                f"CREATE TRIGGER {name} BEFORE INSERT ON {table} "
                f"WHEN NEW.session_id = '{session_id}' "
                "BEGIN SELECT RAISE(ABORT, 'poisoned session'); END"
            )
        else:
            cur.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF NEW.session_id = '{session_id}' THEN RAISE EXCEPTION 'poisoned session' "
                "USING ERRCODE = 'check_violation'; END IF; RETURN NEW; END $$"
            )
            cur.execute(
                f"CREATE TRIGGER {name} BEFORE INSERT ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION {name}()"
            )
    try:
        yield
    finally:
        with store._tx() as cur:  # type: ignore[attr-defined]
            if store.kind == "sqlite":
                cur.execute(f"DROP TRIGGER {name}")
            else:
                cur.execute(f"DROP TRIGGER {name} ON {table}")
                cur.execute(f"DROP FUNCTION {name}()")


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.services)])
async def test_a_write_the_database_rejects_fails_only_its_caller(
    kind: str, tmp_path: Path
) -> None:
    store = make_store(kind, tmp_path)
    adapter = AsyncStore(store)
    states = [RunState(session_id=sid(), messages=[Message.user(str(i))]) for i in range(4)]
    culprit = states[2].session_id
    try:
        with _poisoned(store, culprit):
            # submitted before the caller suspends: one batch, one transaction
            futures = [adapter.submit(Write(s)) for s in states]
            outcomes = await asyncio.gather(*futures, return_exceptions=True)
        assert [isinstance(o, Exception) for o in outcomes] == [False, False, True, False]
        assert "poisoned session" in str(outcomes[2])
        for s in states:
            if s.session_id == culprit:
                with pytest.raises(SessionNotFound):
                    store.load(culprit)
            else:
                assert [m.text for m in store.load(s.session_id).messages] == [s.messages[0].text]
    finally:
        adapter.close()
        for s in states:
            store.delete(s.session_id)
        store.close()


async def test_a_waiter_cancelled_while_queued_leaves_the_others_paired(tmp_path: Path) -> None:
    store = make_store("sqlite", tmp_path)
    adapter = AsyncStore(store)
    states = [RunState(session_id=sid(), messages=[Message.user(str(i))]) for i in range(3)]
    try:
        futures = [adapter.submit(Write(states[0])), adapter.submit(lambda: Write(states[1]))]
        futures.append(adapter.submit(Write(states[2])))
        futures[0].cancel()  # cancelled directly, before its batch starts
        refs = await asyncio.wait_for(asyncio.gather(*futures[1:]), 10)
        # each caller got its own write's reference, not a neighbour's
        assert [r.session_id for r in refs] == [s.session_id for s in states[1:]]
        # what was queued is applied all the same (it may have released a lock)
        assert [store.load(s.session_id).messages[0].text for s in states] == ["0", "1", "2"]
    finally:
        adapter.close()
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.services)])
async def test_a_claim_the_database_rejects_fails_only_its_caller(
    kind: str, tmp_path: Path
) -> None:
    store = make_store(kind, tmp_path)
    adapter = AsyncStore(store)
    sids = [sid() for _ in range(3)]
    owner = f"host:1:{uuid.uuid4().hex[:6]}"
    try:
        with _poisoned(store, sids[1], "lw_locks"):
            # started together: their claims share one batch
            outcomes = await asyncio.gather(
                *(adapter.lock_and_load(s, owner) for s in sids), return_exceptions=True
            )
        assert outcomes[0] is None and outcomes[2] is None  # locked, not stored yet
        assert isinstance(outcomes[1], Exception) and "poisoned" in str(outcomes[1])
        assert [store.lock_owner(s) for s in sids] == [owner, None, owner]
    finally:
        adapter.close()
        for s in sids:
            store.release_lock(s, owner)
        store.close()


async def test_a_failed_batch_is_retried_in_halves_down_to_the_culprit() -> None:
    """A batch whose transaction fails as a whole is split in halves (each half one
    transaction) until the write that fails alone: 16 writes with one culprit cost 9
    transactions, not 17, and every other write is stored."""
    culprit = sid()

    class Rejecting(MemoryStore):
        blocking = True  # through the adapter's queue and worker, like a database
        transactions = 0

        def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
            Rejecting.transactions += 1
            if any(w.state is not None and w.state.session_id == culprit for w in writes):
                raise RuntimeError("constraint violated")  # the whole transaction rolls back
            return write_each(self, writes)

    store = Rejecting()
    adapter = AsyncStore(store)
    states = [RunState(session_id=sid(), messages=[Message.user(str(i))]) for i in range(16)]
    states[11] = RunState(session_id=culprit, messages=[Message.user("11")])
    try:
        futures = [adapter.submit(Write(s)) for s in states]  # one batch
        outcomes = await asyncio.gather(*futures, return_exceptions=True)
    finally:
        adapter.close()
    assert [isinstance(o, RuntimeError) for o in outcomes] == [i == 11 for i in range(16)]
    assert Rejecting.transactions == 1 + 2 * 4  # the batch, then two halves per level
    assert all(store.load(s.session_id).messages for i, s in enumerate(states) if i != 11)
