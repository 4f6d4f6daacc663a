"""Suite-wide fixtures: every test runs with the network guard on.

Tests marked ``live`` talk to real providers and run only with ``--live``.
"""

from __future__ import annotations

import os

import pytest

from loopwright.testing import network_guard


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--live", action="store_true", help="run tests marked live (real network)")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("--live"):
        network_guard.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--live"):
        return
    deselected = [i for i in items if "live" in i.keywords]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [i for i in items if "live" not in i.keywords]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under CI=true a skipped test is a failure: every dependency and service is installed
    there, so a skip means something is missing, and a skip must never count as a pass."""
    if os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped:
        if reporter is not None:
            reporter.write_line(
                f"CI: {len(skipped)} test(s) skipped; failing the run (a skip is not a pass)",
                red=True,
            )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
