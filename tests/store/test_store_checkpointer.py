"""The checkpoint subscriber and the intent hooks, in isolation."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from store_testlib import sid

from loopwright.core.events import MessageAppended
from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.tools import ToolSpec
from loopwright.durable import CheckpointConfig, Checkpointer, CheckpointPolicy, IntentRecorder
from loopwright.loop import RunState
from loopwright.store import AsyncStore, IntentStatus, MemoryStore, SQLiteStore
from loopwright.tools import ToolRegistry, tool


async def test_append_only_saves_and_a_rewrite_is_detected(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "db.sqlite")
    state = RunState(session_id=sid(), messages=[Message.user("a")])
    cp = Checkpointer(AsyncStore(store), state)
    await cp.save()
    state.messages.append(Message.assistant("b"))
    cp.on_event(MessageAppended(1, state.messages[-1], "model"))
    await cp.flush()
    assert [r.message_count for r in store.history(state.session_id)] == [1, 2]
    state.messages[1] = Message.assistant("B")  # someone rewrote the history in place
    state.messages.append(Message.user("c"))
    await cp.save()
    loaded = store.load(state.session_id)
    assert [m.text for m in loaded.messages] == ["a", "B", "c"]
    # the checkpoint that referenced the replaced row is gone; the first one remains
    assert [r.message_count for r in store.history(state.session_id)] == [1, 3]


async def test_interval_policy_limits_writes() -> None:
    store = MemoryStore()
    state = RunState(session_id=sid(), messages=[])
    cp = Checkpointer(
        AsyncStore(store), state, config=CheckpointConfig(CheckpointPolicy.INTERVAL, 3600)
    )
    for i in range(5):
        state.messages.append(Message.user(str(i)))
        cp.on_event(MessageAppended(0, state.messages[-1], "input"))
        await asyncio.sleep(0.01)
    await cp.flush()
    assert cp.saves == 1


async def test_requests_never_wait_and_coalesce_while_a_write_is_slow() -> None:
    inner = MemoryStore()
    release = threading.Event()  # the first write is held until every request is made
    waited_out: list[bool] = []

    class Slow(MemoryStore):
        blocking = True  # run on the adapter's threads, like a real database

        def save(self, state: RunState, *, rewrite_from: int | None = None, encoded=None):  # type: ignore[no-untyped-def]
            # a request that waited for this write would hold it here until the timeout
            waited_out.append(not release.wait(10))
            return inner.save(state, rewrite_from=rewrite_from, encoded=encoded)

    state = RunState(session_id=sid(), messages=[])
    cp = Checkpointer(AsyncStore(Slow()), state)
    for i in range(20):
        state.messages.append(Message.user(str(i)))
        cp.on_event(MessageAppended(0, state.messages[-1], "input"))
    release.set()
    await cp.flush()
    assert waited_out and not any(waited_out)  # no request waited for a held write
    assert 1 <= cp.saves <= 3  # 20 requests, merged while writes were in flight
    assert len(inner.load(state.session_id).messages) == 20


async def test_intent_hooks_compose_with_user_hooks() -> None:
    store = MemoryStore()

    @tool(idempotency_key=lambda a: f"k-{a['to']}")
    def send(to: str) -> str:
        """Send."""
        return to

    registry = ToolRegistry()
    registry.register(send)
    spec = send.spec
    s = sid()

    def user_before(call: ToolCallPart, spec: ToolSpec) -> str | None:
        return "blocked" if call.arguments.get("to") == "eve" else None

    def user_after(call: ToolCallPart, result: ToolResultPart) -> ToolResultPart:
        return ToolResultPart(call.id, call.name, result.content.upper())

    rec = IntentRecorder(AsyncStore(store), s, registry, user_before, user_after)
    eve = ToolCallPart("c1", "send", {"to": "eve"})
    assert await rec.before(eve, spec) == "blocked"
    assert store.intents(s) == []  # a blocked call never gets an intent
    ann = ToolCallPart("c2", "send", {"to": "ann"})
    assert await rec.before(ann, spec) is None
    (started,) = store.intents(s)
    assert started.status is IntentStatus.STARTED and started.idempotency_key == "k-ann"
    replaced = await rec.after(ann, ToolResultPart("c2", "send", "ann"))
    assert replaced is not None and replaced.content == "ANN"
    await rec.flush()  # the result record is written in the background
    (done,) = store.intents(s)
    assert done.status is IntentStatus.DONE and done.result == replaced
    idem = ToolSpec("read", "Read.", idempotent=True)
    assert await rec.before(ToolCallPart("c3", "read", {}), idem) is None
    assert len(store.intents(s)) == 1  # idempotent tools need no intent record
