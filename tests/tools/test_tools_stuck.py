"""Sync tools that never return: they must not starve other tools (pool bounds), and a
keyed call still running after its timeout must never be started a second time."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopwright.core.errors import ToolErrorKind
from loopwright.core.messages import Message, ToolCallPart
from loopwright.durable import Durable
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.store import SQLiteStore
from loopwright.tools import Dispatcher, MemoryLedger, ToolRegistry, inflight, tool
from loopwright.tools.builtin import make_calculator
from loopwright.tools.execution import MAX_STUCK_PER_OWNER, MAX_WORKERS, POOL


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Stuck tools wait on this; set at teardown so their threads end."""
    event = threading.Event()
    yield event
    event.set()


def _stuck_tool(gate: threading.Event, name: str, started: list[str]) -> object:
    @tool(name=name, timeout=0.05, inline=False)
    def hang(x: int) -> int:
        """Wait for the gate."""
        started.append(name)
        gate.wait(30)
        return x

    return hang


@tool(inline=False)
def double(x: int) -> int:
    """Double a number (on a worker thread)."""
    return 2 * x


async def test_a_stuck_tool_is_bounded_and_the_calculator_still_answers(
    gate: threading.Event,
) -> None:
    started: list[str] = []
    hang = _stuck_tool(gate, "hang", started)
    d = Dispatcher(ToolRegistry([hang, double, make_calculator()]))
    kinds = []
    for i in range(100):
        out = await d.run_one(ToolCallPart(f"h{i}", "hang", {"x": i}))
        kinds.append(out.result.error_kind)
    assert set(kinds) == {ToolErrorKind.TIMEOUT.value}
    assert len(started) == MAX_STUCK_PER_OWNER  # the rest were refused, never started
    assert "still running after their timeout" in out.result.content
    calc = await d.run_one(ToolCallPart("c", "calculator", {"expression": "6*7"}))
    assert calc.result.content == "42"
    assert (await d.run_one(ToolCallPart("d", "double", {"x": 21}))).result.content == "42"


async def test_stuck_calls_of_many_tools_do_not_exhaust_the_pool(gate: threading.Event) -> None:
    started: list[str] = []
    tools = [_stuck_tool(gate, f"hang{i}", started) for i in range(MAX_WORKERS + 6)]
    d = Dispatcher(ToolRegistry([*tools, double]))
    calls = [ToolCallPart(f"h{i}", f"hang{i}", {"x": i}) for i in range(len(tools))]
    outs = await d.run_batch(calls)
    assert {o.result.error_kind for o in outs} == {ToolErrorKind.TIMEOUT.value}
    assert POOL.workers <= MAX_WORKERS
    out = await asyncio.wait_for(d.run_one(ToolCallPart("d", "double", {"x": 4})), 5)
    assert out.result.content == "8"


async def test_queued_calls_whose_caller_gave_up_never_start(gate: threading.Event) -> None:
    started: list[str] = []
    hang = _stuck_tool(gate, "hang_q", started)
    d = Dispatcher(ToolRegistry([hang]))
    task = asyncio.ensure_future(d.run_one(ToolCallPart("q", "hang_q", {"x": 1})))
    task.cancel()  # cancelled before a worker picked it up
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.05)
    assert started == []


def _resolved(tool_name: str, key: str) -> bool:
    slot, mine = inflight.claim(tool_name, key)
    assert not mine
    return slot.done()


# -- idempotency keys: one execution per key while it runs --------------------------------
def _keyed(gate: threading.Event, sent: list[str]) -> object:
    @tool(timeout=0.05, idempotency_key=lambda a: f"mail-{a['to']}", inline=False)
    def send(to: str) -> str:
        """Send a message (a side effect)."""
        sent.append(to)
        gate.wait(30)
        return f"sent to {to}"

    return send


async def test_a_timed_out_keyed_call_is_not_started_again(gate: threading.Event) -> None:
    sent: list[str] = []
    ledger = MemoryLedger()
    d = Dispatcher(ToolRegistry([_keyed(gate, sent)]), ledger=ledger)
    first = await d.run_one(ToolCallPart("c1", "send", {"to": "ana"}))
    assert first.result.error_kind == ToolErrorKind.TIMEOUT.value
    assert "will not run twice" in first.result.content
    retry = await d.run_one(ToolCallPart("c2", "send", {"to": "ana"}))  # the model retries
    assert retry.result.error_kind == ToolErrorKind.TIMEOUT.value
    assert "was not started again" in retry.result.content and retry.attempts == 0
    assert sent == ["ana"]
    gate.set()  # the first execution ends: its result is recorded under the key
    for _ in range(200):
        if not inflight.held("send", "mail-ana"):
            break
        await asyncio.sleep(0.01)
    assert ledger.get("mail-ana") is not None
    third = await d.run_one(ToolCallPart("c3", "send", {"to": "ana"}))
    assert third.result.content == "sent to ana" and third.from_ledger
    assert third.result.call_id == "c3"
    assert sent == ["ana"]


async def test_a_retry_waiting_on_the_key_gets_the_first_result(gate: threading.Event) -> None:
    sent: list[str] = []

    @tool(timeout=1.0, idempotency_key=lambda a: f"slow-{a['to']}", inline=False)
    def slow_send(to: str) -> str:
        """Send slowly."""
        sent.append(to)
        gate.wait(30)
        return f"sent to {to}"

    d = Dispatcher(ToolRegistry([slow_send]))
    both = asyncio.gather(
        d.run_one(ToolCallPart("a", "slow_send", {"to": "bo"})),
        d.run_one(ToolCallPart("b", "slow_send", {"to": "bo"})),
    )
    await asyncio.sleep(0.1)
    gate.set()
    one, two = await both
    assert one.result.content == two.result.content == "sent to bo"
    assert two.result.call_id == "b" and two.from_ledger
    assert sent == ["bo"]
    assert not inflight.held("slow_send", "slow-bo")


def test_under_the_durable_runner_a_timed_out_send_runs_once(
    gate: threading.Event, tmp_path: Path
) -> None:
    sent: list[str] = []
    nonce = uuid.uuid4().hex  # keys are process-wide: keep this test's keys its own

    @tool(timeout=0.05, idempotency_key=lambda a: f"d-{nonce}-{a['to']}", inline=False)
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        gate.wait(30)
        return f"sent to {to}"

    def reply(messages: list[Message], request: object) -> Message | str:
        tries = sum(1 for m in messages if m.role == "tool")
        if tries < 2:  # the first send times out; the model sends again
            return Message("assistant", (ToolCallPart(f"try{tries}", "send_email", {"to": "ana"}),))
        return " | ".join(
            r.content for m in messages if m.role == "tool" for r in m.tool_results_parts
        )

    store = SQLiteStore(tmp_path / "runs.db")
    durable = Durable(Agent(FunctionModel(reply), [send_email]), store)
    first = durable.run("email ana")
    assert "was not started again" in first.answer
    assert sent == ["ana"]
    gate.set()  # the thread returns after its loop closed: the claim keeps its result
    key = f"d-{nonce}-ana"
    for _ in range(200):
        if inflight.held("send_email", key) and _resolved("send_email", key):
            break
        time.sleep(0.01)
    second = durable.run("email ana again")
    assert "sent to ana" in second.answer
    assert sent == ["ana"]
    assert store.ledger_get(f"d-{nonce}-ana") is not None
    store.close()
