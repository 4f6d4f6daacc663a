"""``resume`` of a strategy session releases the session's lock when it fails before the
plan runs (loading its progress, rebuilding the strategy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.cli.recipe import AgentRecipe
from loopwright.cli.strategy_run import resume_strategy
from loopwright.core.run import RunState
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.store import SessionNotFound, SQLiteStore
from loopwright.strategies.memory import PlanCheckpoints


def test_a_resume_that_fails_while_loading_releases_the_lock(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lw.db")
    # a strategy session whose stored progress is not a plan's: loading it fails
    state = RunState(session_id="plan-broken", metadata={PlanCheckpoints.KEY: "garbage"})
    store.save(state)
    agent = Agent(FunctionModel(lambda messages, request: "hi"))
    try:
        with pytest.raises(SessionNotFound):
            resume_strategy(agent, AgentRecipe(strategy="plan_execute"), store, state, None)
        assert store.lock_owner(state.session_id) is None
    finally:
        store.close()
