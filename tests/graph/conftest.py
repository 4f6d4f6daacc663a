"""Fixtures of the graph tests: a ``store`` over every loopwright backend.

Redis and PostgreSQL need the servers ``source .ci/services.sh`` starts (their URLs come
from LOOPWRIGHT_TEST_REDIS_URL / LOOPWRIGHT_TEST_POSTGRES_URL); under CI=true a missing
URL fails the test, locally it skips. Thread ids are unique per test because other test
runs share the servers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.services import POSTGRES_ENV, REDIS_ENV, service_url

from loopwright.store import MemoryStore, SQLiteStore

KINDS = [
    "memory",
    "sqlite",
    pytest.param("redis", marks=pytest.mark.services),
    pytest.param("postgres", marks=pytest.mark.services),
]


def open_store(kind: str, tmp_path: Path) -> Any:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "graph.db")
    if kind == "redis":
        from loopwright.store import RedisStore

        return RedisStore(service_url(REDIS_ENV))
    from loopwright.store import PostgresStore

    return PostgresStore(service_url(POSTGRES_ENV))


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    s = open_store(request.param, tmp_path)
    yield s
    s.close()


@pytest.fixture
def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"g-{uuid.uuid4().hex[:12]}"}}
