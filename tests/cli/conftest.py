"""Every CLI test gets its own store and session key: nothing is written to the user's
data or configuration folders."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_cli_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_STORE_URL", f"sqlite://{tmp_path / 'sessions.db'}")
    monkeypatch.delenv("LOOPWRIGHT_STORE", raising=False)
    monkeypatch.delenv("LOOPWRIGHT_MODEL", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("LOOPWRIGHT_SESSION_KEY_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
