"""The URL of a real service the tests need (Redis, PostgreSQL), from the environment that
``source .ci/services.sh`` sets. Under CI=true a missing URL FAILS the test (CI must run
it: a skip is not a pass); locally the test skips with the command to run."""

from __future__ import annotations

import os

import pytest

REDIS_ENV = "LOOPWRIGHT_TEST_REDIS_URL"
POSTGRES_ENV = "LOOPWRIGHT_TEST_POSTGRES_URL"


def service_url(env: str) -> str:
    url = os.environ.get(env)
    if url:
        return url
    msg = f"{env} is not set: run `source .ci/services.sh` to start Redis/PostgreSQL"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true but {msg}", pytrace=False)
    pytest.skip(msg)
