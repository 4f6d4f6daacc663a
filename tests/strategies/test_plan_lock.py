"""A plan-and-execute run keeps its session's lock while a step runs longer than the
lock's TTL: :meth:`PlanCheckpoints.hold` refreshes it on a timer (the same heartbeat
durable agent runs use), and releases it when the run ends or fails."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from loopwright import RunStop, ScriptedModel, tool
from loopwright.store import SessionLocked, SQLiteStore
from loopwright.strategies import PlanAndExecute, PlanCheckpoints, PlanConfig

TTL = 0.15


def one_step_plan(tool_name: str) -> str:
    step = {"step_id": 1, "description": "wait", "tool_name": tool_name, "tool_input": {},
            "depends_on": []}  # fmt: skip
    return json.dumps({"analysis": "one slow step", "action": "plan", "plan": [step]})


async def test_a_step_longer_than_the_ttl_keeps_the_lock(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "plans.db")
    checkpoints = PlanCheckpoints(store, lock=True, ttl=TTL)
    other = SQLiteStore(tmp_path / "plans.db")  # another process's view of the store
    stolen: list[bool] = []
    seen: list[str | None] = []

    @tool
    async def slow() -> str:
        """Take four lock TTLs without a checkpoint."""
        await asyncio.sleep(4 * TTL)
        try:
            other.acquire_lock(checkpoints.session_id, "another-host:1", TTL)
            stolen.append(True)
        except SessionLocked:
            stolen.append(False)
        seen.append(store.lock_owner(checkpoints.session_id))
        return "done"

    config = PlanConfig(on_progress=checkpoints)
    strategy = PlanAndExecute(ScriptedModel([one_step_plan("slow")]), [slow], config=config)
    result = await checkpoints.hold(strategy.arun("wait", session_id=checkpoints.session_id))
    assert result.stop is RunStop.FINAL_ANSWER, result.detail
    assert stolen == [False]  # nobody else could take the session mid-step
    assert seen == [checkpoints.owner]
    assert store.lock_owner(checkpoints.session_id) is None  # released with the end
    assert store.load(checkpoints.session_id).stop is RunStop.FINAL_ANSWER


async def test_a_failing_run_releases_the_lock(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "plans.db")
    checkpoints = PlanCheckpoints(store, lock=True, ttl=60)

    async def broken() -> object:
        await asyncio.sleep(0)
        assert store.lock_owner(checkpoints.session_id) == checkpoints.owner
        raise RuntimeError("the process is going down")

    with pytest.raises(RuntimeError):
        await checkpoints.hold(broken())  # type: ignore[arg-type]
    assert store.lock_owner(checkpoints.session_id) is None


async def test_a_held_session_is_not_run_twice(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "plans.db")
    checkpoints = PlanCheckpoints(store, lock=True, ttl=60)
    store.acquire_lock(checkpoints.session_id, "another-host:1", 60)
    strategy = PlanAndExecute(ScriptedModel([one_step_plan("slow")]), [])
    with pytest.raises(SessionLocked):
        await checkpoints.hold(strategy.arun("wait"))
