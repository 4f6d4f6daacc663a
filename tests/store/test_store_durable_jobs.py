"""How many store round trips a durable run pays for, and which of them overlap.

A blocking store is reached through worker threads (``AsyncStore``); on a loaded machine
each hop costs more than a fast store call, so calls that must run one after another
share one worker job (lock + load, the final checkpoint + the lock's release, a result
record + the next checkpoint), and the two writes a non-idempotent call waits for (its
checkpoint and its intent record) overlap."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

import pytest
from store_testlib import sid

from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.run import RunState
from loopwright.durable import Durable
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.store import CheckpointRef, IntentRecord, IntentStatus, MemoryStore
from loopwright.store.aio import AsyncStore
from loopwright.tools import tool

_T = TypeVar("_T")


class BlockingMemory(MemoryStore):
    """A MemoryStore reached through worker threads, like a database driver."""

    blocking = True


_JOB = threading.local()


class Recording(BlockingMemory):
    """Records ``(job number, call)`` for every store call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int, str]] = []

    def _note(self, what: str) -> None:
        self.calls.append((getattr(_JOB, "number", 0), what))

    def acquire_lock(self, session_id: str, owner: str, ttl: float = 120.0) -> None:
        self._note("acquire_lock")
        super().acquire_lock(session_id, owner, ttl)

    def release_lock(self, session_id: str, owner: str) -> None:
        self._note("release_lock")
        super().release_lock(session_id, owner)

    def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        self._note("load")
        return super().load(session_id, checkpoint)

    def save(self, state: RunState, *, rewrite_from: int | None = None) -> CheckpointRef:
        self._note("save")
        return super().save(state, rewrite_from=rewrite_from)

    def put_intent(self, intent: IntentRecord) -> None:
        self._note(f"intent {intent.status.value}")
        super().put_intent(intent)


class NumberedJobs(AsyncStore):
    """Numbers worker jobs (one thread hop each) for :class:`Recording`."""

    jobs = 0

    async def _job(self, job: Callable[[], _T]) -> _T:
        type(self).jobs += 1
        number = type(self).jobs

        def numbered() -> _T:
            _JOB.number = number
            return job()

        return await super()._job(numbered)


@tool(idempotent=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool
def notify(text: str) -> str:
    """Send a notification (a side effect)."""
    return f"sent {text}"


def _model() -> FunctionModel:
    def reply(messages: list[Message], request: object) -> object:
        step = sum(1 for m in messages if m.role == "tool")
        if step == 0:
            return [ToolCallPart("l0", "lookup", {"key": "a"})]
        if step == 1:
            return [ToolCallPart("n1", "notify", {"text": "done"})]
        return "all done"

    return FunctionModel(reply)  # type: ignore[arg-type]


async def test_a_durable_run_shares_worker_jobs_between_dependent_store_calls() -> None:
    store = Recording()
    aio = NumberedJobs(store)
    session = sid()
    result = await Durable(Agent(_model(), [lookup, notify]), aio).arun("go", session_id=session)
    aio.close()
    assert result.ok and result.answer == "all done"
    jobs: dict[int, list[str]] = {}
    for number, call in store.calls:
        jobs.setdefault(number, []).append(call)
    by_job = list(jobs.values())
    assert by_job[0] == ["acquire_lock", "load"]  # one hop before the run starts
    final = by_job[-1]  # the final checkpoint releases the lock
    assert final[0] == "save" and final[-1] == "release_lock"
    # the result record rides with a checkpoint (this one, or an earlier one)
    assert any(job[0] == "save" and "intent done" in job for job in by_job)
    assert ["intent started"] in by_job  # written beside the notify call's checkpoint
    assert len(by_job) < len(store.calls)
    assert store.lock_owner(session) is None
    (intent,) = store.intents(session)
    assert intent.status is IntentStatus.DONE and intent.result is not None
    assert store.load(session).stop is not None


async def test_lock_and_load_releases_the_lock_when_loading_fails() -> None:
    class Broken(BlockingMemory):
        def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
            raise OSError("disk on fire")

    store = Broken()
    aio = AsyncStore(store)
    session = sid()
    with pytest.raises(OSError):
        await aio.lock_and_load(session, "me")
    assert store.lock_owner(session) is None
    assert await AsyncStore(BlockingMemory()).lock_and_load(session, "me") is None  # new
    aio.close()


async def test_a_side_effects_checkpoint_and_intent_record_are_written_concurrently() -> None:
    """Each write waits (on its worker thread) until the other one has started: written
    one after the other, the first would time out."""
    started = {"save": threading.Event(), "intent": threading.Event()}

    class Rendezvous(BlockingMemory):
        def save(self, state: RunState, *, rewrite_from: int | None = None) -> CheckpointRef:
            if state.messages and state.messages[-1].tool_calls:  # the notify call
                started["save"].set()
                assert started["intent"].wait(5), "the intent record was not in flight"
            return super().save(state, rewrite_from=rewrite_from)

        def put_intent(self, intent: IntentRecord) -> None:
            if intent.status is IntentStatus.STARTED:
                started["intent"].set()
                assert started["save"].wait(5), "the checkpoint was not in flight"
            super().put_intent(intent)

    def reply(messages: list[Message], request: object) -> object:
        if messages[-1].role == "tool":
            return "ok"
        return [ToolCallPart("n1", "notify", {"text": "x"})]

    store = Rendezvous()
    durable = Durable(Agent(FunctionModel(reply), [notify]), store)  # type: ignore[arg-type]
    result = await asyncio.wait_for(durable.arun("go", session_id=sid()), 20)
    durable.aio.close()
    assert result.ok, result.detail
    assert started["save"].is_set() and started["intent"].is_set()
