"""A durable run that loses its session lock (it expired while the process stalled, or
another process broke it with --break-lock) stops: another process may be running the
session now, so this one starts no further tool, writes nothing more and raises
SessionLocked, instead of running the session's side effects a second time."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from loopwright.core.messages import Message, ToolCallPart
from loopwright.durable import Durable, DurableConfig
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.store import MemoryStore, SessionLocked
from loopwright.tools import tool


async def test_a_run_whose_lock_another_process_took_stops() -> None:
    store = MemoryStore()
    sent: list[str] = []
    waiting = asyncio.Event()

    @tool(idempotent=True)
    async def wait_a_while() -> str:
        """A long step (the lock is taken from the run meanwhile)."""
        waiting.set()
        # stopped by the run's cancellation; without it the run would go on to send
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), 5)
        return "waited"

    @tool
    def send(to: str) -> str:
        """A side effect."""
        sent.append(to)
        return "sent"

    def reply(messages: list[Message], request: object) -> Message:
        if messages[-1].role == "user":
            return Message("assistant", (ToolCallPart("c1", "wait_a_while", {}),))
        return Message("assistant", (ToolCallPart("c2", "send", {"to": "ann"}),))

    durable = Durable(
        Agent(FunctionModel(reply), [wait_a_while, send]), store, DurableConfig(lock_ttl=0.3)
    )
    run = asyncio.ensure_future(durable.arun("go", session_id="s-lost"))
    await waiting.wait()
    store.break_lock("s-lost")  # as `loopwright resume s-lost --break-lock` elsewhere does
    store.acquire_lock("s-lost", "another-process", 60)
    with pytest.raises(SessionLocked, match="another-process"):
        await run
    assert sent == []  # the next call of the run never ran
    assert store.lock_owner("s-lost") == "another-process"  # its lock was left alone
