"""Two runs of one thread at once: the second is refused with an error naming the thread,
on every store (the checkpoints of two runs interleaved before: each continued from its
own idea of the thread's latest checkpoint)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from loopwright.graph import START, GraphError, StateGraph, ThreadBusy


class Log(TypedDict):
    log: Annotated[list, operator.add]


def gated_graph(store: Any, gate: asyncio.Event, entered: asyncio.Event) -> Any:
    async def wait(state: Log) -> dict:
        if not entered.is_set():  # only the first run waits: a second one would not hang
            entered.set()
            await gate.wait()
        return {"log": ["wait"]}

    g = StateGraph(Log)
    g.add_node("wait", wait)
    g.add_node("after", lambda state: {"log": ["after"]})
    g.add_edge(START, "wait")
    g.add_edge("wait", "after")
    return g.compile(checkpointer=store)


def test_a_second_invoke_on_a_running_thread_is_refused(store: Any, thread: dict) -> None:
    async def main() -> None:
        gate, entered = asyncio.Event(), asyncio.Event()
        app = gated_graph(store, gate, entered)
        first = asyncio.ensure_future(app.ainvoke({"log": []}, thread))
        await entered.wait()
        with pytest.raises(ThreadBusy) as caught:
            await app.ainvoke({"log": ["second"]}, thread)
        message = str(caught.value)
        assert thread["configurable"]["thread_id"] in message and "thread_id" in message
        assert isinstance(caught.value, GraphError)
        gate.set()
        assert await first == {"log": ["wait", "after"]}
        # the thread holds only the first run's checkpoints, and is free again
        history = [s.metadata["step"] for s in app.get_state_history(thread)]
        assert history == sorted(history, reverse=True) == [2, 1, 0, -1]
        assert await app.ainvoke(None, thread) == {"log": ["wait", "after"]}

    asyncio.run(main())


def test_other_threads_and_update_state_while_a_thread_runs(store: Any, thread: dict) -> None:
    async def main() -> None:
        gate, entered = asyncio.Event(), asyncio.Event()
        app = gated_graph(store, gate, entered)
        first = asyncio.ensure_future(app.ainvoke({"log": []}, thread))
        await entered.wait()
        other = {"configurable": {"thread_id": thread["configurable"]["thread_id"] + "-b"}}
        gate_b = asyncio.ensure_future(app.ainvoke({"log": []}, other))
        with pytest.raises(ThreadBusy):
            app.update_state(thread, {"log": ["edit"]})
        gate.set()
        assert await first == {"log": ["wait", "after"]}
        assert await gate_b == {"log": ["wait", "after"]}
        app.update_state(thread, {"log": ["edit"]})  # free again

    asyncio.run(main())


def test_a_stream_left_early_frees_its_thread(store: Any, thread: dict) -> None:
    g = StateGraph(Log)
    g.add_sequence([("a", lambda s: {"log": ["a"]}), ("b", lambda s: {"log": ["b"]})])
    g.add_edge(START, "a")
    app = g.compile(checkpointer=store)
    for _chunk in app.stream({"log": []}, thread):
        break
    assert app.invoke(None, thread)["log"][-1] == "b"


def test_a_run_right_after_an_abandoned_async_stream_waits_for_its_close(
    store: Any, thread: dict
) -> None:
    # `async for ...: break` leaves the generator to be closed by the loop a moment later;
    # the next run of the thread waits for that instead of finding the thread busy
    g = StateGraph(Log)
    g.add_sequence([("a", lambda s: {"log": ["a"]}), ("b", lambda s: {"log": ["b"]})])
    g.add_edge(START, "a")
    app = g.compile(checkpointer=store)

    async def main() -> None:
        async for _chunk in app.astream({"log": []}, thread):
            break
        assert (await app.ainvoke(None, thread))["log"][-1] == "b"

    asyncio.run(main())


def test_a_stream_kept_open_still_holds_its_thread(store: Any, thread: dict) -> None:
    g = StateGraph(Log)
    g.add_sequence([("a", lambda s: {"log": ["a"]}), ("b", lambda s: {"log": ["b"]})])
    g.add_edge(START, "a")
    app = g.compile(checkpointer=store)

    async def main() -> None:
        stream = app.astream({"log": []}, thread)
        await stream.__anext__()
        with pytest.raises(ThreadBusy):
            await app.ainvoke(None, thread)
        await stream.aclose()  # type: ignore[attr-defined]
        assert (await app.ainvoke(None, thread))["log"][-1] == "b"

    asyncio.run(main())
