"""Requests that race each other on one idle session: the second must see the run the
first started (this process's own run), not report it as another process's."""

from __future__ import annotations

import asyncio

from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel, Reply
from loopwright.serve.errors import ApiError
from loopwright.serve.sessions import SessionManager
from loopwright.store import MemoryStore


def _heard(messages, request):
    return Reply("heard: " + " | ".join(m.text for m in messages if m.role == "user"), delay=0.01)


async def _idle_session() -> tuple[SessionManager, MemoryStore, str]:
    store = MemoryStore()
    manager = SessionManager({"echo": Agent(FunctionModel(_heard))}, store)
    sid = await manager.create("alpha", "echo", "first")
    task = manager.live[sid].task
    assert task is not None
    await task
    return manager, store, sid


async def _until_idle(manager: SessionManager, sid: str) -> None:
    while manager.live[sid].running:
        task = manager.live[sid].task
        assert task is not None
        await task


async def test_two_messages_at_once_to_an_idle_session_are_both_delivered() -> None:
    manager, store, sid = await _idle_session()
    try:
        got = await asyncio.gather(
            manager.message("alpha", sid, "A", "follow_up"),
            manager.message("alpha", sid, "B", "follow_up"),
            return_exceptions=True,
        )
        assert sorted(map(str, got)) == ["queued", "started"], got
        await _until_idle(manager, sid)
        users = [m.text for m in store.load(sid).messages if m.role == "user"]
        assert users == ["first", "A", "B"]
    finally:
        await manager.close()


async def test_an_approval_racing_a_message_is_a_409_saying_the_session_runs() -> None:
    manager, _, sid = await _idle_session()
    try:
        got = await asyncio.gather(
            manager.message("alpha", sid, "A", "follow_up"),
            manager.approve("alpha", sid, True, None),
            return_exceptions=True,
        )
        assert got[0] == "started"
        error = got[1]
        assert isinstance(error, ApiError) and error.status == 409
        assert "another server process" not in error.message, error.message
        await _until_idle(manager, sid)
    finally:
        await manager.close()
