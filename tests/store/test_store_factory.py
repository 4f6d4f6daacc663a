"""open_store: a kind, a URL, or both; what is wrong is named with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.core.errors import ConfigError
from loopwright.store import open_store
from loopwright.store.memory import MemoryStore
from loopwright.store.sqlite import SQLiteStore


@pytest.fixture(autouse=True)
def _no_store_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPWRIGHT_STORE", raising=False)
    monkeypatch.delenv("LOOPWRIGHT_STORE_URL", raising=False)


def test_a_url_given_as_the_kind_says_to_pass_it_by_name(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with pytest.raises(ConfigError, match=r"first argument is the kind.*open_store\(url="):
        open_store(url)
    assert isinstance(open_store(url=url), SQLiteStore)


def test_kinds_and_urls() -> None:
    assert isinstance(open_store("memory"), MemoryStore)
    with pytest.raises(ConfigError, match="unknown store 'mysql'"):
        open_store("mysql")
    with pytest.raises(ConfigError, match="unknown scheme 'mysql'"):
        open_store(url="mysql://db/x")
    with pytest.raises(ConfigError, match="does not match the store URL"):
        open_store("redis", url="memory://")


@pytest.mark.parametrize("session_id", ["", " x", "a\nb", 5])
def test_durable_refuses_a_session_id_that_cannot_name_a_session(session_id: object) -> None:
    from loopwright import Agent, ScriptedModel, UserError
    from loopwright.durable import Durable

    store = open_store("memory")
    with pytest.raises(UserError, match="session_id"):
        Durable(Agent(ScriptedModel(["x"])), store).run("hi", session_id=session_id)  # type: ignore[arg-type]
    assert list(store.sessions()) == []  # "" was stored as a session nobody could resume
