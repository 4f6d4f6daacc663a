"""What a group-commit batch costs on a database server: its round trips and statements
do not grow with the number of runs in it, and a batch that fails part-way stores
nothing (``store.postgres``: pipeline mode, one array per column)."""

from __future__ import annotations

import itertools
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from store_testlib import POSTGRES_ENV, make_store, service_url, sid

from loopwright.core.messages import Message
from loopwright.core.run import RunState
from loopwright.store import SessionNotFound, StoreUnavailable, Write
from loopwright.store.state import Claim


def _traced(store: object, action: Callable[[], object]) -> tuple[int, set[str]]:
    """``action()``'s round trips on the store's connection (the times the client sent
    and then waited for the server: libpq's protocol trace) and the text of the
    statements it parsed. One thread, one transaction at a time: the pool's one idle
    connection serves every call."""
    from psycopg import pq

    (conn,) = store._idle  # type: ignore[attr-defined]
    with tempfile.TemporaryFile("w+") as trace:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            action()
        finally:
            conn.pgconn.untrace()
        trace.seek(0)
        lines = trace.read().splitlines()
    sides = [line[0] for line in lines if line[:1] in ("F", "B")]
    trips = sum(1 for a, b in itertools.pairwise(sides) if (a, b) == ("F", "B"))
    parsed = {line.split('"')[3] for line in lines if line.startswith("F") and "\tParse" in line}
    return trips, parsed


@pytest.mark.services
def test_a_postgres_batch_costs_the_same_round_trips_and_statements_at_any_size(
    tmp_path: Path,
) -> None:
    store = make_store("postgres", tmp_path)
    owner = f"host:1:{uuid.uuid4().hex[:6]}"
    seen: dict[str, list[tuple[int, set[str]]]] = {"claim": [], "first": [], "next": []}
    ids: list[str] = []
    try:
        for n in (3, 40):
            sids = [sid() for _ in range(n)]
            ids += sids
            claims = [Claim(s, owner, 60.0) for s in sids]
            seen["claim"].append(_traced(store, lambda c=claims: store.claim(c)))
            states = [RunState(session_id=s, messages=[Message.user("go")]) for s in sids]
            first = [Write(s) for s in states]
            seen["first"].append(_traced(store, lambda w=first: store.write(w)))
            for s in states:
                s.messages.append(Message.assistant("ok"))
            # appends (the continuity check) with intents' neighbours: lock releases
            rest = [Write(s.snapshot(), release=(s.session_id, owner)) for s in states]
            seen["next"].append(_traced(store, lambda w=rest: store.write(w)))
        for kind, (small, large) in seen.items():
            assert small == large, kind  # same round trips and statement texts
        # BEGIN with the row-locking read, then the inserts with COMMIT
        assert seen["first"][0][0] == 2 and seen["next"][0][0] == 2
        # new sessions: BEGIN with the lock rows (and any stored checkpoint), then the
        # locks taken with COMMIT
        assert seen["claim"][0][0] == 2
        assert all(len(store.load(s).messages) == 2 and not store.lock_owner(s) for s in ids)
    finally:
        for s in ids:
            store.delete(s)
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.services)])
def test_a_batch_that_fails_part_way_stores_nothing(kind: str, tmp_path: Path) -> None:
    """An error after some of a batch's statements were sent (here raised between two
    of them) rolls the whole batch back; the connection serves the next batch."""
    store = make_store(kind, tmp_path)
    first, second = RunState(session_id=sid()), RunState(session_id=sid())
    first.messages.append(Message.user("go"))
    second.messages.append(Message.user("go"))
    calls = 0
    original = store._insert_checkpoints  # type: ignore[attr-defined]

    def failing(*args: object) -> None:
        nonlocal calls
        calls += 1
        original(*args)
        if calls == 1:
            raise RuntimeError("failed between two statements")

    store._insert_checkpoints = failing  # type: ignore[attr-defined]
    try:
        with pytest.raises(RuntimeError):
            store.write([Write(first)])
        with pytest.raises(SessionNotFound):  # its message rows were sent, not kept
            store.load(first.session_id)
        (ref,) = store.write([Write(second)])  # the same connection, usable
        assert not isinstance(ref, Exception) and store.load(second.session_id).messages
    finally:
        for s in (first, second):
            store.delete(s.session_id)
        store.close()


@pytest.mark.services
def test_a_redis_batch_is_two_commands_at_any_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch is two commands whatever its size: for writes one script call reads what
    every save depends on, one writes everything (rows, checkpoint entries, session meta
    and indexes, intents, lock releases); for claims one reads the locks and sessions,
    one takes the locks. redis-py's cost per command was most of the client's CPU, and
    each round trip a wait."""
    from redis.client import Pipeline, Redis

    store = make_store("redis", tmp_path)
    sent: list[str] = []
    direct, queued = Redis.execute_command, Pipeline.pipeline_execute_command

    def execute(self: Redis, *args: object, **options: object) -> object:
        if not isinstance(self, Pipeline):
            sent.append(str(args[0]).upper())
        return direct(self, *args, **options)

    def pipelined(self: Pipeline, *args: object, **options: object) -> object:
        sent.append(str(args[0]).upper())
        return queued(self, *args, **options)

    monkeypatch.setattr(Redis, "execute_command", execute)
    monkeypatch.setattr(Pipeline, "pipeline_execute_command", pipelined)
    owner = f"host:1:{uuid.uuid4().hex[:6]}"
    for n in (3, 40):
        sids = [sid() for _ in range(n)]
        sent.clear()
        store.claim([Claim(s, owner, 60.0) for s in sids])
        # one read of the locks and sessions, one that takes the locks
        assert [c for c in sent if c != "SCRIPT LOAD"] == ["EVALSHA"] * 2, sent
        states = [RunState(session_id=s, messages=[Message.user("go")]) for s in sids]
        sent.clear()
        assert not any(isinstance(o, Exception) for o in store.write([Write(s) for s in states]))
        for s in states:
            s.messages.append(Message.assistant("ok"))
        store.write([Write(s.snapshot(), release=(s.session_id, owner)) for s in states])
        # per batch: one read, one write (a server that lost the scripts gets them
        # again: SCRIPT LOAD, then EVALSHA)
        assert [c for c in sent if c != "SCRIPT LOAD"] == ["EVALSHA"] * 4, sent
        assert all(len(store.load(s).messages) == 2 and not store.lock_owner(s) for s in sids)
    store.close()


@pytest.mark.services
def test_postgres_connections_are_pooled_across_threads_and_a_dead_one_is_replaced(
    tmp_path: Path,
) -> None:
    """Calls from many threads, one after another, share the connection ``migrate``
    opened (not one per thread: a connection costs 5-10 ms); a connection the server
    dropped fails its call as ``StoreUnavailable`` and is replaced on the next."""
    store = make_store("postgres", tmp_path)
    ids: list[str] = []

    def save() -> None:
        ids.append(sid())
        store.save(RunState(session_id=ids[-1], messages=[Message.user("go")]))

    try:
        for _ in range(6):
            worker = threading.Thread(target=save)
            worker.start()
            worker.join()
        assert len(ids) == 6 and len(store._all) == 1  # type: ignore[attr-defined]
        (conn,) = store._idle  # type: ignore[attr-defined]
        import psycopg

        with psycopg.connect(service_url(POSTGRES_ENV), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        with pytest.raises(StoreUnavailable):
            save()
        save()
        assert store.load(ids[-1]).messages[0].text == "go"
        assert len(store._all) == 1  # type: ignore[attr-defined]
    finally:
        for s in ids:
            store.delete(s)
        store.close()
