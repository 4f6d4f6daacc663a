"""Fixtures of the serve tests (helpers in serve_harness.py)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from serve_harness import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve")
    srv = Server(tmp / "sessions.db", tmp / "outbox.jsonl")
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def http(server: Server) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client
