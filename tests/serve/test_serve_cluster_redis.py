"""The Redis side of a cluster, without HTTP: job accounting and event numbering shared
by several workers."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest
from serve_harness import drop_redis_keys
from tests.services import REDIS_ENV, service_url

from loopwright.serve.cluster import Cluster, ClusterConfig, Job

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
