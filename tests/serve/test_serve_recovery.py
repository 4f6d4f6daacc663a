"""The recovery sweep of a server without a cluster (no ``--redis-url``)."""

from __future__ import annotations

import secrets

from loopwright.core.messages import Message
from loopwright.core.run import RunState, RunStop
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.serve.sessions import SessionManager
from loopwright.store import MemoryStore


def _served(sid: str, stop: RunStop | None) -> RunState:
    meta = {"serve": {"tenant": "alpha", "agent": "echo"}}
    return RunState(session_id=sid, messages=[Message.user("hi")], metadata=meta, stop=stop)


async def test_the_sweep_asks_the_store_for_unfinished_sessions_only() -> None:
    store = MemoryStore()
    tag = secrets.token_hex(4)
    cut = f"s-{tag}-cut"
    finished = [f"s-{tag}-done-{i}" for i in range(20)]
    for sid in finished:
        store.save(_served(sid, RunStop.FINAL_ANSWER))
    store.save(_served(cut, None))
    asked: list[dict[str, object]] = []
    loaded: list[str] = []
    list_sessions, load = store.sessions, store.load

    def sessions(**kwargs: object) -> list:
        asked.append(kwargs)
        return list_sessions(**kwargs)  # type: ignore[arg-type]

    def counting_load(session_id: str, checkpoint: int | None = None) -> RunState:
        loaded.append(session_id)
        return load(session_id, checkpoint)

    store.sessions = sessions  # type: ignore[method-assign]
    store.load = counting_load  # type: ignore[method-assign]
    manager = SessionManager({"echo": Agent(FunctionModel(lambda m, r: "hi"))}, store)
    try:
        assert await manager.resume_interrupted() == [cut]
        # the finished sessions are neither listed nor loaded by the sweep
        assert asked == [{"unfinished": True}]
        assert finished[0] not in loaded and loaded[0] == cut
    finally:
        await manager.close()
