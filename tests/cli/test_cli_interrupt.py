"""Ctrl-C while the CLI loads the embedded model ends the command (exit 16)."""

from __future__ import annotations

import ctypes
import signal
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from loopwright.cli.exit_codes import exit_code
from loopwright.cli.main import main
from loopwright.core.run import RunStop
from loopwright.providers import registry


class _LoadsThroughACallback:
    """Loads the way llama.cpp does: calling back into Python from C. Ctrl-C arrives
    during one of those callbacks."""

    loaded = False

    def load(self) -> None:
        callback = ctypes.CFUNCTYPE(None)(lambda: signal.raise_signal(signal.SIGINT))
        callback()  # Python drops a KeyboardInterrupt raised in here
        self.loaded = True

    async def stream(self, request: object) -> object:  # pragma: no cover - never reached
        raise AssertionError("the run must not start after Ctrl-C")


@pytest.fixture
def default_ctrl_c() -> Iterator[None]:
    """SIGINT handled as in a terminal: a test process started in the background by a
    non-interactive shell inherits SIGINT *ignored*, and the CLI (rightly) leaves a
    handler it did not expect alone."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("default_ctrl_c")
def test_ctrl_c_during_the_model_load_cancels_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _LoadsThroughACallback()
    monkeypatch.setattr(registry, "resolve_model", lambda *args, **kwargs: model)
    result = CliRunner().invoke(main, ["run", "What is 2 + 2?"], prog_name="loopwright")
    assert model.loaded
    assert result.exit_code == exit_code(RunStop.CANCELLED), result.output
    assert "error: interrupted" in result.stderr
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
