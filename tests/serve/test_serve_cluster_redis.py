"""The Redis side of a cluster, without HTTP: job accounting and event numbering shared
by several workers."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Iterator

import pytest
from serve_harness import drop_redis_keys
from tests.services import POSTGRES_ENV, REDIS_ENV, service_url

from loopwright.core.messages import Message
from loopwright.core.run import RunState, RunStop
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.serve.cluster import Cluster, ClusterConfig, Job
from loopwright.serve.clustered import ClusterSessions
from loopwright.store import PostgresStore

pytestmark = pytest.mark.services


@pytest.fixture
async def workers() -> AsyncIterator[tuple[Cluster, Cluster]]:
    url = service_url(REDIS_ENV)
    config = ClusterConfig(url, f"lwtest:cluster:{secrets.token_hex(4)}")
    a, b = Cluster(config), Cluster(config)
    yield a, b
    await a.close()
    await b.close()
    drop_redis_keys(url, config.prefix)


async def test_a_job_taken_from_a_worker_that_looked_dead_is_counted_down_once(
    workers: tuple[Cluster, Cluster],
) -> None:
    a, b = workers

    async def no_control(message: object) -> bool:
        return False

    await a.start(no_control)
    await a.enqueue(Job("s-1", tenant="alpha", agent="echo"))
    claimed = await a.claim(1.0)
    assert claimed is not None and claimed[1].tenant == "alpha"
    assert await a.active("s-1") == 1
    # a's heartbeat lapses (a pause longer than the lease): b hands its job back
    await a.redis.delete(f"{a.prefix}:worker:{a.worker}")
    assert await b.reap() == [a.worker]
    a.complete(claimed[0], "s-1")  # a finishes anyway: the job is still owed to b
    await a.events.flush()
    assert await a.active("s-1") == 1
    again = await b.claim(1.0)
    assert again is not None and again[1].id == claimed[1].id
    b.complete(again[0], "s-1")
    await b.events.flush()
    assert await b.active("s-1") == 0


async def test_events_of_one_session_written_by_two_workers_number_on(
    workers: tuple[Cluster, Cluster],
) -> None:
    a, b = workers
    for n in range(3):
        a.events.append("s-2", "tick", f'{{"n":{n}}}')
    await a.events.flush()
    for n in range(3, 5):
        b.events.append("s-2", "tick", f'{{"n":{n}}}')
    await b.events.flush()
    events = await b.events.read("s-2", 0)
    assert [e.id for e in events] == [1, 2, 3, 4, 5]
    assert [e.data for e in events] == [f'{{"n":{n}}}' for n in range(5)]
    assert [e.id for e in await a.events.read("s-2", 3)] == [4, 5]
    assert await a.events.last_id("s-2") == 5


@pytest.fixture
def pg_store() -> Iterator[PostgresStore]:
    import psycopg

    base = service_url(POSTGRES_ENV)
    schema = f"serve_sweep_{secrets.token_hex(4)}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    store = PostgresStore(f"{base}?options=-csearch_path%3D{schema}")
    yield store
    store.close()
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _served(sid: str, stop: RunStop | None) -> RunState:
    meta = {"serve": {"tenant": "alpha", "agent": "echo"}}
    return RunState(session_id=sid, messages=[Message.user("hi")], metadata=meta, stop=stop)


async def test_the_recovery_sweep_reads_the_store_only_when_redis_lost_jobs(
    workers: tuple[Cluster, Cluster], pg_store: PostgresStore
) -> None:
    """The sweep of a cluster looks at Redis, not at every session ever stored: the
    store is listed in a new cluster or after Redis lost its data, until every
    unfinished session has a job again."""
    cluster, _ = workers
    listed = 0
    list_sessions = pg_store.sessions

    def counting(**kwargs: object) -> list:
        nonlocal listed
        listed += 1
        return list_sessions(**kwargs)  # type: ignore[arg-type]

    pg_store.sessions = counting  # type: ignore[method-assign]
    tag = secrets.token_hex(4)
    done, cut, busy = f"s-{tag}-done", f"s-{tag}-cut", f"s-{tag}-busy"
    for sid, stop in ((done, RunStop.FINAL_ANSWER), (cut, None), (busy, None)):
        pg_store.save(_served(sid, stop))
    pg_store.acquire_lock(busy, "elsewhere:1", 60)  # runs on a worker whose job is lost
    echo = Agent(FunctionModel(lambda messages, request: "hi"))
    sessions = ClusterSessions({"echo": echo}, pg_store, cluster)
    try:
        assert await sessions.resume_interrupted() == [cut]  # a new cluster: searched
        assert listed == 1 and await cluster.active(cut) == 1
        assert not await cluster.jobs_intact()  # busy has no job yet
        assert await sessions.resume_interrupted() == []
        assert listed == 2
        pg_store.release_lock(busy, "elsewhere:1")  # its process died
        assert await sessions.resume_interrupted() == [busy]
        assert listed == 3 and await cluster.jobs_intact()
        for _ in range(3):  # every unfinished session has a job: Redis alone is asked
            assert await sessions.resume_interrupted() == []
        assert listed == 3
        drop_redis_keys(cluster.config.url, cluster.prefix)  # Redis lost its data
        assert sorted(await sessions.resume_interrupted()) == sorted([cut, busy])
        assert listed == 4 and await cluster.jobs_intact()
    finally:
        sessions.aio.close()


async def test_a_stream_says_where_a_dead_worker_may_have_lost_events(
    workers: tuple[Cluster, Cluster],
) -> None:
    """Events a worker had not stored when it died are gone: the stream carries an
    ``events_lost`` event where they were, before the events of the worker that takes
    the session over, or as the last event when the job finds nothing left to run."""
    a, b = workers

    async def no_control(message: object) -> bool:
        return False

    await a.start(no_control)
    for sid in ("s-4", "s-5"):
        await a.enqueue(Job(sid, tenant="alpha", agent="echo"))
    jobs = [await a.claim(1.0), await a.claim(1.0)]
    a.events.append("s-4", "tick", '{"n":0}')
    await a.events.flush()
    # a dies before storing what it made next; b takes both jobs over
    await a.redis.delete(f"{a.prefix}:worker:{a.worker}")
    assert await b.reap() == [a.worker]
    by_sid = {}
    for _ in range(2):
        got = await b.claim(1.0)
        assert got is not None
        by_sid[got[1].session_id] = got[0]
    assert {j[1].session_id for j in jobs if j} == set(by_sid)
    b.events.append("s-4", "tick", '{"n":1}')
    b.complete(by_sid["s-4"], "s-4")
    b.complete(by_sid["s-5"], "s-5")  # its run had ended: nothing to emit
    await b.events.flush()
    four = await b.events.read("s-4", 0)
    assert [(e.id, e.type) for e in four] == [(1, "tick"), (2, "events_lost"), (3, "tick")]
    assert json.loads(four[1].data)["kind"] == "worker_lost"
    assert [(e.id, e.type) for e in await b.events.read("s-5", 0)] == [(1, "events_lost")]
    # a later turn of the session is not marked again
    b.events.append("s-4", "tick", '{"n":2}')
    await b.events.flush()
    assert [e.type for e in await b.events.read("s-4", 3)] == ["tick"]
