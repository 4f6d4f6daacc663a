"""Run prompt regression suites from pytest (CI with test doubles, or a real model).

Use the fixture in a test module or ``conftest.py``::

    from loopwright.testing.prompt_suite import prompt_suite  # noqa: F401  (the fixture)

    def test_router_prompt(prompt_suite):
        model = FunctionModel(lambda messages, request: '{"tool_name": "calculator", ...}')
        report = prompt_suite("examples/prompts/router_suite.yaml", model)
        assert report.pass_rate == 1.0

``prompt_suite(path, model=None, runs=None, threshold=None)`` runs the suite and fails
the test (showing the per-case table) when the pass rate is below the threshold. With
``model=None`` it uses the model named by the ``LOOPWRIGHT_PROMPT_MODEL`` environment
variable (e.g. ``openai:gpt-4o-mini``), so the same test runs against a real model
when someone points it at one, and is skipped otherwise.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from loopwright.core.protocols import Model
from loopwright.core.run import in_running_loop
from loopwright.prompts.testing import SuiteReport, load_suite, run_suite

ENV_MODEL = "LOOPWRIGHT_PROMPT_MODEL"

SuiteRunner = Callable[..., SuiteReport]


def model_from_env() -> Model | None:
    """The model named by ``$LOOPWRIGHT_PROMPT_MODEL``, or None when it is unset."""
    spec = os.environ.get(ENV_MODEL)
    if not spec:
        return None
    from loopwright.providers.registry import resolve_model

    return resolve_model(spec)


def check_suite(
    path: str | Path,
    model: Model | None = None,
    *,
    runs: int | None = None,
    threshold: float | None = None,
) -> SuiteReport:
    """Run the suite at ``path``; ``pytest.fail`` with the table when it is under threshold."""
    if model is None:
        model = model_from_env()
        if model is None:
            pytest.skip(f"no model given and ${ENV_MODEL} is not set")
    suite = load_suite(path)
    report = _run(run_suite(suite, model, runs=runs, threshold=threshold))
    if not report.passed:
        pytest.fail(
            f"prompt suite {suite.name!r} below threshold:\n{report.table()}", pytrace=False
        )
    return report


def _run(coro):  # type: ignore[no-untyped-def]
    if not in_running_loop():
        return asyncio.run(coro)
    # called from an async test: run in a private loop on a worker thread
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@pytest.fixture
def prompt_suite() -> SuiteRunner:
    """``prompt_suite(path, model=None, runs=None, threshold=None) -> SuiteReport``."""
    return check_suite
