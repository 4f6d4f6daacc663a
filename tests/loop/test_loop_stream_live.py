"""A streamed run hands each event to its consumer while the run is still waiting: the
event feed wakes a waiting consumer on the next event, whichever emit site builds it
(docs/loop.md, "Streaming")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from loopwright import Agent, tool
from loopwright.core.events import (
    ModelEvent,
    ModelStreamed,
    ResponseDone,
    RunFinished,
    TextDelta,
    ToolCallStarted,
)
from loopwright.core.messages import Message, StopReason, TextPart, ToolCallPart
from loopwright.core.protocols import ModelRequest


class _GatedModel:
    """Streams ``parts`` deltas; before each next one it waits until the consumer has
    seen the previous one (a deadlock, caught by the timeout, if an event is held back)."""

    def __init__(self, seen: dict[str, asyncio.Event], parts: int) -> None:
        self.seen = seen
        self.parts = parts
        self.calls = 0

    @property
    def name(self) -> str:
        return "gated"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.calls += 1
        if self.calls == 1:  # first turn: call the tool
            call = ToolCallPart("g1", "wait_seen", {})
            yield ResponseDone(Message("assistant", (call,)), StopReason.TOOL_USE)
            return
        for n in range(self.parts):
            yield TextDelta(f"d{n}")
            await asyncio.wait_for(self.seen[f"d{n}"].wait(), 5)
        yield ResponseDone(Message("assistant", (TextPart("done"),)), StopReason.FINAL_ANSWER)


async def test_events_reach_a_waiting_consumer_before_the_run_goes_on() -> None:
    seen: dict[str, asyncio.Event] = {f"d{n}": asyncio.Event() for n in range(3)}
    seen["started"] = asyncio.Event()

    @tool
    async def wait_seen() -> str:
        """Returns once the consumer has seen this call start."""
        await asyncio.wait_for(seen["started"].wait(), 5)
        return "ok"

    agent = Agent(_GatedModel(seen, 3), [wait_seen])
    kinds: list[str] = []
    async for event in agent.stream("go"):
        kinds.append(event.type)
        if type(event) is ModelStreamed:
            assert isinstance(event.event, TextDelta)
            seen[event.event.text].set()
        elif type(event) is ToolCallStarted:
            seen["started"].set()
        elif type(event) is RunFinished:
            assert event.result.ok and event.result.answer == "done"
    assert kinds.count("model_streamed") == 3 and kinds[-1] == "run_finished"


async def test_a_run_iterated_through_its_handle_is_live_too() -> None:
    seen: dict[str, asyncio.Event] = {f"d{n}": asyncio.Event() for n in range(2)}
    seen["started"] = asyncio.Event()

    @tool
    async def wait_seen() -> str:
        """Returns once the consumer has seen this call start."""
        await asyncio.wait_for(seen["started"].wait(), 5)
        return "ok"

    run = Agent(_GatedModel(seen, 2), [wait_seen]).start("go")
    async for event in run:
        if type(event) is ModelStreamed:
            assert isinstance(event.event, TextDelta)
            seen[event.event.text].set()
        elif type(event) is ToolCallStarted:
            seen["started"].set()
    assert (await run.result()).answer == "done"
