"""What an in-flight run holds while it waits for its model (benchmarks/loop.py, "tracked
objects"): with a thousand concurrent runs every object each one holds is walked by the
garbage collector's collections, so the chain of coroutines and the context token a
waiting run keeps are pinned here."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import AsyncIterator
from types import CoroutineType, MethodType

from loopwright import Agent, FunctionModel, Reply, tool
from loopwright.core.events import ModelEvent, ResponseDone
from loopwright.core.messages import Message, StopReason, TextPart, ToolCallPart, ToolResultPart
from loopwright.core.protocols import ModelRequest
from loopwright.loop.steps import CURRENT_RUN


class _WaitingModel:
    """First call: asks for ``probe``; second call: waits on ``release``, then answers."""

    def __init__(self) -> None:
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()
        self.current_at_call: list[object] = []
        self.calls = 0

    @property
    def name(self) -> str:
        return "waiting"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.calls += 1
        self.current_at_call.append(CURRENT_RUN.get())
        if self.calls == 1:
            call = ToolCallPart("p1", "probe", {})
            yield ResponseDone(Message("assistant", (call,)), StopReason.TOOL_USE)
            return
        self.waiting.set()
        await self.release.wait()
        yield ResponseDone(Message("assistant", (TextPart("done"),)), StopReason.FINAL_ANSWER)


def _loopwright_frames(task: asyncio.Task[object]) -> list[str]:
    """The loopwright coroutines on ``task``'s await chain, outermost first."""
    names: list[str] = []
    awaitable: object = task.get_coro()
    while awaitable is not None:
        if type(awaitable) is CoroutineType:
            if awaitable.cr_code.co_filename.find("loopwright") >= 0:
                names.append(awaitable.cr_code.co_qualname)
            awaitable = awaitable.cr_await
        else:
            awaitable = getattr(awaitable, "ag_await", None) or getattr(awaitable, "cr_await", None)
    return names


async def test_a_run_waiting_for_its_model_holds_two_coroutines_and_no_context_token() -> None:
    seen_in_tool: list[object] = []

    @tool
    async def probe() -> str:
        """Records which run is current while it runs."""
        seen_in_tool.append(CURRENT_RUN.get())
        return "ok"

    model = _WaitingModel()
    run = Agent(model, [probe]).start("go", events=False)
    await asyncio.wait_for(model.waiting.wait(), 5)
    # the engine's drive() and its think() phase: no wrapper coroutine, no separate
    # coroutine per model call
    assert _loopwright_frames(run._task) == ["RunEngine.drive", "RunEngine.think"]
    # and no context manager's bound ``__aexit__`` on drive()'s stack (no timeout: none
    # is entered)
    drive = run._task.get_coro()
    assert drive.cr_code.co_qualname == "RunEngine.drive"
    assert not [r for r in gc.get_referents(drive) if type(r) is MethodType]
    model.release.set()
    result = await run.result()
    assert result.ok and result.answer == "done"
    # the run is current (what Agent.as_tool reports to) while its tools run, and only then
    assert seen_in_tool == [run._engine]
    assert model.current_at_call == [None, None]
    assert CURRENT_RUN.get() is None


async def test_awaiting_arun_runs_the_engine_coroutine_itself() -> None:
    # ``arun`` returns the run's own coroutine: a task awaiting it holds no coroutine of
    # ``Agent.arun`` on top of the engine's (one object less per waiting run)
    model = _WaitingModel()
    agent = Agent(model, [])
    pending = agent.arun("go")
    assert type(pending) is CoroutineType and pending.cr_code.co_qualname == "RunEngine.drive"
    task = asyncio.create_task(pending)
    await asyncio.wait_for(model.waiting.wait(), 5)
    assert _loopwright_frames(task) == ["RunEngine.drive", "RunEngine.think"]
    model.release.set()
    result = await task
    assert result.ok and result.answer == "done"


async def test_a_finished_streamed_run_is_freed_without_the_cycle_collector() -> None:
    # the event feed and the engine point at each other while the run streams; the feed
    # lets go when the run ends, so the run (and its history) goes with its last reference
    engines: list[weakref.ref[object]] = []

    @tool
    async def probe() -> str:
        """Remembers the current run."""
        engines.append(weakref.ref(CURRENT_RUN.get()))  # type: ignore[arg-type]
        return "ok"

    model = _WaitingModel()
    model.release.set()
    agent = Agent(model, [probe])
    gc.collect()
    gc.disable()
    try:
        kinds = [event.type async for event in agent.stream("go")]
        await asyncio.sleep(0)
        assert kinds[-1] == "run_finished"
        assert len(engines) == 1 and engines[0]() is None
    finally:
        gc.enable()


async def test_a_run_waiting_on_a_function_model_holds_no_generator_nor_events() -> None:

    started = asyncio.Event()

    def reply(messages: object, request: object) -> Reply:
        started.set()
        return Reply("waited-for answer", delay=0.05)

    model = FunctionModel(reply)
    run = Agent(model).start("go", events=False)
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.sleep(0)  # the double is now sleeping out the reply's delay
    # no async generator (asyncio keeps each in a WeakSet from its first step on), and
    # the reply's events are built after the delay, not held across it
    assert not asyncio.get_running_loop()._asyncgens  # type: ignore[attr-defined]
    built = [o for o in gc.get_objects() if type(o) is ResponseDone]
    assert not [o for o in built if o.message.text == "waited-for answer"]
    result = await run.result()
    assert result.ok and result.answer == "waited-for answer"


async def test_a_run_waiting_out_a_reply_delay_holds_no_coroutine_of_the_double() -> None:
    # the delay is a future resolved by a timer: no coroutine of the double's and no
    # ``asyncio.sleep`` coroutine on the waiting run's await chain (benchmarks/loop.py,
    # "tracked objects")
    started = asyncio.Event()

    def reply(messages: object, request: object) -> Reply:
        started.set()
        return Reply("late", delay=0.05)

    run = Agent(FunctionModel(reply)).start("go", events=False)
    await asyncio.wait_for(started.wait(), 5)
    chain: list[object] = []
    awaitable: object = run._task.get_coro()
    while awaitable is not None:
        chain.append(awaitable)
        awaitable = getattr(awaitable, "cr_await", None)
    assert [type(a) is CoroutineType for a in chain] == [True, True, False]
    assert _loopwright_frames(run._task) == ["RunEngine.drive", "RunEngine.think"]
    result = await run.result()
    assert result.ok and result.answer == "late"


async def test_a_waiting_runs_repetition_detection_is_one_object() -> None:
    # the detector is its own bounded tail, not an object holding a deque: one object
    # less per waiting run for the collector to walk (benchmarks/notes/loop.md, round 8)
    started = asyncio.Event()
    calls = 0

    @tool
    async def probe() -> str:
        return "ok"

    def reply(messages: object, request: object) -> Reply:
        nonlocal calls
        calls += 1
        if calls == 1:
            return Reply([ToolCallPart("c1", "probe", {})])
        started.set()
        return Reply("done", delay=0.05)

    run = Agent(FunctionModel(reply), [probe]).start("go", events=False)
    await asyncio.wait_for(started.wait(), 5)
    engine = run._task.get_coro().cr_frame.f_locals["self"]  # the waiting RunEngine.drive
    detector = engine.detector
    own = [
        r
        for r in gc.get_referents(detector)
        if gc.is_tracked(r) and not isinstance(r, (type, ToolCallPart, ToolResultPart))
    ]
    assert own == []
    assert len(detector) == 2  # the probe call and its result
    result = await run.result()
    assert result.ok and result.answer == "done"
