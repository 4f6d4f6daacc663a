"""Group commit: how a durable run's store calls reach a blocking store.

Writes (checkpoints, intent records, lock releases) of every run go into one queue and
reach the store as batches (``CheckpointStore.write``); the lock and the first load are
one worker job. These tests pin which calls share a job, that concurrent runs share
writes, that each caller gets its own write's outcome, and that a crash while a write
waits in the queue loses nothing the checkpoint policy promises to keep."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from store_testlib import sid

from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.run import RunState
from loopwright.core.tools import ToolSpec
from loopwright.durable import Checkpointer, Durable, IntentRecorder
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel, Reply
from loopwright.store import (
    CheckpointRef,
    IntentStatus,
    MemoryStore,
    SQLiteStore,
    StoreUnavailable,
    Write,
)
from loopwright.store.aio import AsyncStore
from loopwright.store.state import Claim, ClaimOutcome, WriteOutcome
from loopwright.tools import ToolContext, ToolRegistry, tool


class BlockingMemory(MemoryStore):
    """A MemoryStore reached through worker threads, like a database driver."""

    blocking = True


class Recording(BlockingMemory):
    """Records each batch (``("claim", claims)``, ``("write", writes)``) and any other
    call the adapter makes (``("call", [name])``)."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, list[object]]] = []
        self._local = threading.local()

    def _note(self, what: str) -> None:
        """A call outside ``claim``/``write`` made by the adapter (on its threads)."""
        inside = getattr(self._local, "writing", False)
        if not inside and threading.current_thread().name.startswith("lw-"):
            self.log.append(("call", [what]))

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        self.log.append(("write", list(writes)))
        self._local.writing = True
        try:
            return super().write(writes)
        finally:
            self._local.writing = False

    def claim(self, claims: Sequence[Claim]) -> list[ClaimOutcome]:
        self.log.append(("claim", list(claims)))
        self._local.writing = True
        try:
            return super().claim(claims)
        finally:
            self._local.writing = False

    def acquire_lock(self, session_id: str, owner: str, ttl: float = 120.0) -> None:
        self._note("acquire_lock")
        super().acquire_lock(session_id, owner, ttl)

    def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        self._note("load")
        return super().load(session_id, checkpoint)

    def batches(self) -> list[list[Write]]:
        return [[w for w in x if isinstance(w, Write)] for kind, x in self.log if kind == "write"]


def _model(delay: float = 0.0) -> FunctionModel:
    """lookup, then notify, then the answer; each reply after ``delay`` seconds."""

    def reply(messages: list[Message], request: object) -> object:
        step = sum(1 for m in messages if m.role == "tool")
        if step == 0:
            return Reply([ToolCallPart("l0", "lookup", {"key": "a"})], delay=delay)
        if step == 1:
            return Reply([ToolCallPart("n1", "notify", {"text": "done"})], delay=delay)
        return Reply("all done", delay=delay)

    return FunctionModel(reply)  # type: ignore[arg-type]


@tool(idempotent=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _notify_checking(store: MemoryStore, seen: list[str]) -> object:
    @tool
    def notify(text: str) -> str:
        """Send a notification (a side effect): its call and intent must be stored first."""
        session = next(iter(store._sessions))
        (intent,) = store.intents(session)
        assert intent.status is IntentStatus.STARTED and intent.call_id == "n1"
        assert store.load(session).messages[-1].tool_calls[0].id == "n1"
        seen.append(text)
        return f"sent {text}"

    return notify


async def test_a_durable_run_takes_lock_and_load_in_one_job_and_batches_its_writes() -> None:
    store = Recording()
    seen: list[str] = []
    aio = AsyncStore(store)
    agent = Agent(_model(), [lookup, _notify_checking(store, seen)])  # type: ignore[list-item]
    session = sid()
    result = await Durable(agent, aio).arun("go", session_id=session)
    aio.close()
    assert result.ok and result.answer == "all done" and seen == ["done"]
    kind, claims = store.log[0]
    assert kind == "claim" and claims == [Claim(session, claims[0].owner, 120.0)]  # type: ignore[attr-defined]
    assert [kind for kind, _ in store.log[1:]] == ["write"] * (len(store.log) - 1)
    final = store.batches()[-1]
    assert any(w.state is not None and w.release is not None for w in final)
    assert store.lock_owner(session) is None
    (intent,) = store.intents(session)
    assert intent.status is IntentStatus.DONE and intent.result is not None
    assert store.load(session).stop is not None


async def test_the_intent_record_and_its_calls_checkpoint_go_in_one_batch() -> None:
    """Another run's write started a batch on the next loop iteration before this run's
    checkpoint was handed over: the record before the side effect must not take that
    batch alone (the tool would wait for two batches, the second behind a full slot)."""
    store = Recording()
    aio = AsyncStore(store)
    session = sid()
    call = ToolCallPart("n1", "notify", {"text": "x"})
    state = RunState(session, messages=[Message.user("go"), Message("assistant", (call,))])
    checkpointer = Checkpointer(aio, state)
    registry = ToolRegistry()
    registry.register(lookup)
    recorder = IntentRecorder(aio, session, registry, checkpointer=checkpointer)
    other = aio.submit(Write(RunState(sid(), messages=[Message.user("other")])))
    checkpointer.request()  # the call's message was appended (MessageAppended)
    assert await recorder.before(call, ToolSpec("notify", "Send.")) is None
    await other
    aio.close()
    (first, *_) = store.batches()
    assert any(w.intents and w.intents[0].call_id == "n1" for w in first)
    assert any(w.state is not None and w.state.session_id == session for w in first)
    assert store.load(session).messages[-1].tool_calls[0].id == "n1"


async def test_checkpoints_of_concurrent_runs_share_one_write() -> None:
    store = Recording()
    aio = AsyncStore(store)
    seen: list[str] = []

    @tool
    def notify(text: str) -> str:
        """Send."""
        seen.append(text)
        return "sent"

    durable = Durable(Agent(_model(), [lookup, notify]), aio)  # type: ignore[list-item]
    sessions = [sid() for _ in range(10)]
    results = await asyncio.gather(*(durable.arun("go", session_id=s) for s in sessions))
    aio.close()
    assert all(r.ok for r in results) and len(seen) == 10
    batches = store.batches()
    saves = [w for batch in batches for w in batch if w.state is not None]
    assert len(batches) < len(saves)  # fewer store calls than checkpoints
    widest = max(len({w.state.session_id for w in b if w.state is not None}) for b in batches)
    assert widest >= 2  # checkpoints of different runs in one transaction
    (claims,) = [x for kind, x in store.log if kind == "claim"]
    assert len(claims) == 10  # the ten runs took their locks and loaded together
    for s in sessions:
        assert store.load(s).messages[-1].text == "all done" and store.lock_owner(s) is None


class _FailsFor(BlockingMemory):
    """``write`` refuses the checkpoints of one session (others are stored) or, with
    ``down``, fails as a whole."""

    def __init__(self, bad: str) -> None:
        super().__init__()
        self.bad = bad
        self.down = False
        self.batches: list[int] = []
        self.gate = threading.Event()

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        self.batches.append(len(writes))
        self.gate.wait(5)
        if self.down:
            raise StoreUnavailable("test", "nowhere", "connection reset")
        out = super().write(
            [w for w in writes if w.state is None or w.state.session_id != self.bad]
        )
        it = iter(out)
        return [
            StoreUnavailable("test", w.state.session_id, "refused")
            if w.state is not None and w.state.session_id == self.bad
            else next(it)
            for w in writes
        ]


async def test_a_write_error_reaches_only_the_run_whose_write_failed() -> None:
    store = _FailsFor("bad")
    aio = AsyncStore(store)
    store.gate.set()
    good = aio.submit(Write(RunState("good", messages=[Message.user("g")])))
    bad = aio.submit(Write(RunState("bad", messages=[Message.user("b")])))
    ref = await good
    with pytest.raises(StoreUnavailable, match="refused"):
        await bad
    assert isinstance(ref, CheckpointRef) and ref.session_id == "good"
    assert store.batches == [2]  # one batch held both
    store.down = True
    one = aio.submit(Write(RunState("x", messages=[Message.user("x")])))
    two = aio.submit(Write(intents=()))
    for future in (one, two):  # the batch failed as a whole: every caller hears it
        with pytest.raises(StoreUnavailable, match="connection reset"):
            await future
    aio.close()


async def test_writes_queued_while_a_batch_is_written_go_together_in_the_next() -> None:
    store = _FailsFor("nobody")
    aio = AsyncStore(store)
    first = []
    for i in range(2):  # two batches in flight (the most there are), blocked on the gate
        first.append(aio.submit(Write(RunState(f"a{i}", messages=[]))))
        await asyncio.sleep(0.02)
    later = [aio.submit(Write(RunState(f"b{i}", messages=[]))) for i in range(5)]
    store.gate.set()
    await asyncio.gather(*first, *later)
    aio.close()
    assert store.batches == [1, 1, 5]


async def test_a_cancelled_caller_still_has_its_queued_write_stored() -> None:
    store = _FailsFor("nobody")
    aio = AsyncStore(store)
    session = sid()
    store.acquire_lock(session, "me")
    task = asyncio.ensure_future(aio.release_lock(session, "me"))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    store.gate.set()
    await asyncio.sleep(0.1)
    aio.close()
    assert store.lock_owner(session) is None


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


class _Crashing(SQLiteStore):
    """SQLite whose batch holding the ``notify`` call's checkpoint never arrives: the
    process "dies" while that write waits (``crashed`` is set; the batch stays stuck
    until ``gone`` is set, then fails: nothing of it is stored)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.crashed = threading.Event()
        self.gone = threading.Event()

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        for w in writes:
            last = w.state.messages[-1] if w.state is not None and w.state.messages else None
            if last is not None and any(c.name == "notify" for c in last.tool_calls):
                self.crashed.set()
        if self.crashed.is_set():  # nothing reaches the store any more
            self.gone.wait(10)
            raise StoreUnavailable("sqlite", str(self.path), "the process died")
        return super().write(writes)


async def test_a_crash_before_a_queued_checkpoint_is_written_keeps_the_side_effect_safe(
    tmp_path: Path,
) -> None:
    """The run waits for its checkpoint before a side effect, so a crash while that
    checkpoint is queued loses only progress the policy may lose: the side effect has
    not happened, and the resumed run performs it exactly once."""
    sent: list[str] = []

    @tool
    def notify(text: str) -> str:
        """Send a notification (a side effect)."""
        sent.append(text)
        return f"sent {text}"

    db = tmp_path / "crash.db"
    crashing = _Crashing(db)
    session = sid()
    # model replies slow enough that the lookup step's checkpoint is written on its own
    first = Durable(Agent(_model(0.05), [lookup, notify]), crashing)
    run = asyncio.ensure_future(first.arun("go", session_id=session))
    assert await asyncio.to_thread(crashing.crashed.wait, 20)
    await asyncio.sleep(0.05)  # had the run not waited for the write, notify ran by now
    assert sent == []
    run.cancel()  # the process dies
    crashing.gone.set()
    with pytest.raises(asyncio.CancelledError):
        await run
    stored = SQLiteStore(db)
    assert stored.load(session).messages[-1].role == "tool"  # the lookup step survived
    durable = Durable(Agent(_model(), [lookup, notify]), stored)
    result = await durable.aresume(session, break_lock=True)
    first.aio.close()
    durable.aio.close()
    assert result.ok and result.answer == "all done"
    assert sent == ["done"]
    intent = next(i for i in stored.intents(session) if i.call_id == "n1")
    assert intent.status is IntentStatus.DONE


async def test_a_checkpoint_waiting_in_the_queue_takes_the_latest_state() -> None:
    """Requests made while a checkpoint waits for its batch join it: the snapshot is
    taken when the batch starts, so the superseded state is never written."""
    store = _FailsFor("nobody")
    aio = AsyncStore(store)
    blocker = aio.submit(Write(RunState("other", messages=[])))  # batch 1, held
    await asyncio.sleep(0.02)
    second = aio.submit(Write(RunState("other2", messages=[])))  # batch 2, held
    await asyncio.sleep(0.02)
    state = RunState(sid(), messages=[Message.user("a")])
    cp = Checkpointer(aio, state)
    cp.request()
    await asyncio.sleep(0.02)  # the checkpoint is queued behind two batches in flight
    for text in ("b", "c"):
        state.messages.append(Message.user(text))
        cp.request()
    store.gate.set()
    await asyncio.gather(blocker, second)
    await cp.flush()
    aio.close()
    assert cp.saves == 1
    assert [m.text for m in store.load(state.session_id).messages] == ["a", "b", "c"]


def test_an_adapter_outlives_an_event_loop_that_closed_with_writes_in_flight() -> None:
    """``Durable.run`` runs each call in its own event loop over the same adapter: a loop
    that ends while batches are in flight must not leave the queue stuck for the next."""
    store = _FailsFor("nobody")
    aio = AsyncStore(store)

    async def abandon() -> None:
        for i in range(3):  # two batches in flight (blocked on the gate), one queued
            aio.submit(Write(RunState(f"old{i}", messages=[])))
            await asyncio.sleep(0.02)

    asyncio.run(abandon())
    store.gate.set()

    async def again() -> CheckpointRef | None:
        return await asyncio.wait_for(aio.write(Write(RunState("new", messages=[]))), 5)

    ref = asyncio.run(again())
    aio.close()
    assert ref is not None and ref.session_id == "new"


def test_threads_running_their_own_loops_share_one_adapter() -> None:
    store = BlockingMemory()
    aio = AsyncStore(store)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        async def main() -> None:
            refs = await asyncio.gather(
                *(aio.write(Write(RunState(f"t{n}-{i}", messages=[]))) for i in range(20))
            )
            assert all(r is not None for r in refs)

        try:
            asyncio.run(asyncio.wait_for(main(), 10))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    aio.close()
    assert errors == []
    assert len(store.sessions()) == 80


async def test_concurrent_runs_share_one_agent_and_each_records_its_own_calls() -> None:
    """The agent a durable run is driven by is built once per Durable; each run's events
    and tool calls still reach that run's own checkpointer and intent records."""
    seen: dict[str, str] = {}

    @tool
    async def send(to: str, ctx: ToolContext) -> str:
        """Send (a side effect: intent records guard it)."""
        assert ctx.session_id is not None
        seen[to] = ctx.session_id
        return f"sent to {to}"

    def reply(messages: Sequence[Message], request: object) -> object:
        if any(m.role == "tool" for m in messages):
            return Reply("done", delay=0.001)
        who = messages[0].text
        return Reply([ToolCallPart(f"call-{who}", "send", {"to": who})], delay=0.001)

    store = MemoryStore()
    durable = Durable(Agent(FunctionModel(reply), [send]), store)  # type: ignore[arg-type]
    names = [sid() for _ in range(12)]
    results = await asyncio.gather(*(durable.arun(n, session_id=n) for n in names))
    assert all(r.ok for r in results)
    assert seen == {n: n for n in names}  # each call ran in its own session's context
    for n in names:
        (intent,) = store.intents(n)
        assert (intent.call_id, intent.status, dict(intent.arguments)) == (
            f"call-{n}",
            IntentStatus.DONE,
            {"to": n},
        )
        assert [m.role for m in store.load(n).messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
        ]
    built = durable._run_agent()
    assert durable._run_agent() is built  # not rebuilt per run
    durable.agent = Agent(FunctionModel(reply), [send])  # type: ignore[arg-type]
    assert durable._run_agent() is not built  # a new agent gets its own
