"""pytest support for cassettes: a ``cassette`` fixture and a ``cassette`` marker.

Enable it in your ``conftest.py``::

    pytest_plugins = ["loopwright.testing.cassette_pytest"]

Then::

    @pytest.mark.cassette("cassettes/weather.json")      # optional; see below
    def test_weather(cassette):
        agent = Agent(cassette.model("openai:gpt-4o"), tools=[get_weather])
        assert "sunny" in agent.run("Weather in Paris?").answer

The file defaults to ``cassettes/<test module>/<test name>.json`` next to the test module;
the marker's first argument overrides it (relative to the test module's folder), and
``mode=`` overrides the mode. The mode otherwise comes from ``$LOOPWRIGHT_CASSETTE_MODE``
(``replay`` by default; ``record`` or ``auto`` to (re)record against the real model).
After the test, a recording is written; a replay fails the test if a request differed
from the recording (with a diff) or if recorded calls were never made.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopwright.testing.cassette import Cassette, CassetteMismatch


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cassette(path=None, mode=None): record/replay this test's model calls "
        "(loopwright.testing.cassette)",
    )


def _default_path(request: pytest.FixtureRequest) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")
    module = Path(str(request.path))
    return module.parent / "cassettes" / module.stem / f"{name}.json"


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    """A :class:`~loopwright.testing.cassette.Cassette` for this test, finished after it."""
    marker = request.node.get_closest_marker("cassette")
    path = _default_path(request)
    mode = None
    if marker is not None:
        if marker.args:
            path = Path(str(request.path)).parent / str(marker.args[0])
        mode = marker.kwargs.get("mode")
    tape = Cassette(path, mode)
    yield tape
    try:
        tape.finish()
    except CassetteMismatch as exc:
        pytest.fail(str(exc), pytrace=False)
