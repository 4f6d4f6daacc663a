"""Fixtures shared by the store tests: one parametrised ``store`` over every backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from store_testlib import corrupt_header, make_store

from loopwright.store import CheckpointStore

KINDS = [
    "memory",
    "sqlite",
    pytest.param("redis", marks=pytest.mark.services),
    pytest.param("postgres", marks=pytest.mark.services),
]


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CheckpointStore]:
    s = make_store(request.param, tmp_path)
    yield s
    s.close()


@pytest.fixture
def corrupt() -> Callable[[CheckpointStore, str, int, str], None]:
    return corrupt_header
