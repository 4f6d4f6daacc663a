"""A new session's run starts while its lock is being taken.

``Durable.arun(prompt)`` without a session id makes the id up, so nothing is stored
under it and nobody holds its lock: the run's first model call overlaps the claim
instead of waiting for it. What needs the lock still waits: no tool (nor tool hook,
confirmation or ledger lookup) runs and nothing of the run is written before the lock
is held; a claim that fails cancels the run and raises its error."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

import pytest

import loopwright.durable.runner as runner
from loopwright.core.errors import UserError
from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.run import RunState
from loopwright.durable import Durable, DurableConfig
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel, Reply
from loopwright.store import MemoryStore, StoreUnavailable, Write
from loopwright.store.aio import AsyncStore
from loopwright.store.state import Claim, ClaimOutcome, WriteOutcome
from loopwright.tools import ToolContext, tool


class GatedClaims(MemoryStore):
    """A blocking store whose claims wait for ``gate`` (and then fail with ``down``);
    records every write batch."""

    blocking = True

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.down = False
        self.claims: list[Claim] = []
        self.writes: list[Write] = []

    def claim(self, claims: Sequence[Claim]) -> list[ClaimOutcome]:
        self.gate.wait(5)
        self.claims += claims
        if self.down:
            raise StoreUnavailable("test", "nowhere", "connection refused")
        return super().claim(claims)

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        self.writes += writes
        return super().write(writes)


def _agent(store: MemoryStore, model_calls: list[int], ran: list[str]) -> Agent:
    def reply(messages: list[Message], request: object) -> object:
        model_calls.append(len(messages))
        if not any(m.role == "tool" for m in messages):
            return Reply([ToolCallPart("c1", "lookup", {"key": "a"})])
        return Reply("done")

    @tool(idempotent=True)
    def lookup(key: str, ctx: ToolContext) -> str:
        """Look a key up."""
        assert ctx.session_id is not None
        assert store.lock_owner(ctx.session_id) is not None  # never before the lock is held
        ran.append(key)
        return "found"

    return Agent(FunctionModel(reply), [lookup])  # type: ignore[arg-type]


async def _until(condition: Callable[[], bool]) -> bool:
    """Whether ``condition`` becomes true within two seconds."""
    for _ in range(200):
        if condition():
            return True
        await asyncio.sleep(0.01)
    return False


async def test_the_first_model_call_overlaps_the_claim_and_no_tool_runs_before_the_lock() -> None:
    store = GatedClaims()
    aio = AsyncStore(store)
    model_calls: list[int] = []
    ran: list[str] = []
    task = asyncio.ensure_future(Durable(_agent(store, model_calls, ran), aio).arun("go"))
    # the claim is held up in the store, yet the model is asked (the answer calls a tool)
    assert await _until(lambda: model_calls == [1])
    await asyncio.sleep(0.05)
    assert ran == [] and store.writes == [] and not store.claims  # nothing before the lock
    store.gate.set()
    result = await task
    aio.close()
    assert result.ok and result.answer == "done" and ran == ["a"] and model_calls == [1, 3]
    assert result.session_id is not None and store.claims[0].session_id == result.session_id
    stored = store.load(result.session_id)
    assert [m.role for m in stored.messages] == ["user", "assistant", "tool", "assistant"]
    assert store.lock_owner(result.session_id) is None  # released with the last checkpoint


async def test_a_failed_claim_cancels_the_run_raises_and_writes_nothing() -> None:
    store = GatedClaims()
    store.down = True
    aio = AsyncStore(store)
    model_calls: list[int] = []
    ran: list[str] = []
    task = asyncio.ensure_future(Durable(_agent(store, model_calls, ran), aio).arun("go"))
    assert await _until(lambda: model_calls == [1])
    await asyncio.sleep(0.05)  # the model's tool call waits for the lock
    store.gate.set()
    with pytest.raises(StoreUnavailable, match="connection refused"):
        await task
    aio.close()
    assert ran == [] and model_calls == [1]
    assert store.writes == [] and not store._sessions  # not even a lock release


async def test_a_new_sessions_claim_that_finds_the_id_stored_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = GatedClaims()
    store.gate.set()
    store.save(RunState("taken", messages=[Message.user("earlier")]))
    monkeypatch.setattr(runner, "new_session_id", lambda: "taken")
    aio = AsyncStore(store)
    ran: list[str] = []
    with pytest.raises(UserError, match="already exists"):
        await Durable(_agent(store, [], ran), aio).arun("go")
    aio.close()
    assert ran == [] and [(w.state, w.intents) for w in store.writes] == [(None, ())]
    assert [m.text for m in store.load("taken").messages] == ["earlier"]
    assert store.lock_owner("taken") is None  # the claim took it: released again


async def test_a_run_that_ends_before_its_claim_lands_leaves_no_lock_behind() -> None:
    store = GatedClaims()
    aio = AsyncStore(store)

    def reply(messages: list[Message], request: object) -> object:
        return Reply("at once")

    task = asyncio.ensure_future(Durable(Agent(FunctionModel(reply)), aio).arun("go"))
    await asyncio.sleep(0.05)  # the answer is in; the final checkpoint waits for the lock
    assert not task.done() and store.writes == []
    store.gate.set()
    result = await task
    aio.close()
    assert result.ok and result.session_id is not None
    assert store.load(result.session_id).messages[-1].text == "at once"
    assert store.lock_owner(result.session_id) is None


def test_the_heartbeat_keeps_a_new_sessions_lock_through_a_long_tool_call() -> None:
    """The heartbeat of a lock taken while the run already started begins when the
    claim lands: a tool call longer than three TTLs still finds the lock held."""
    import time

    store = MemoryStore()
    seen: list[str | None] = []

    @tool(idempotent=True)
    def slow(ctx: ToolContext) -> str:
        """Take longer than the lock TTL."""
        time.sleep(0.5)
        assert ctx.session_id is not None
        seen.append(store.lock_owner(ctx.session_id))
        return "ok"

    def reply(messages: list[Message], request: object) -> object:
        if messages[-1].role == "tool":
            return Reply("done")
        return Reply([ToolCallPart("c1", "slow", {})])

    config = DurableConfig(lock_ttl=0.15)
    durable = Durable(Agent(FunctionModel(reply), [slow]), store, config)  # type: ignore[list-item]
    result = durable.run("go")
    assert result.ok and result.session_id is not None
    assert seen and seen[0] is not None  # still held after 3 TTLs without a checkpoint
    assert store.lock_owner(result.session_id) is None
