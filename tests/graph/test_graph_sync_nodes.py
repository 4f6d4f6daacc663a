"""Where plain ``def`` nodes run: like sync tools (``tools/execution.py``), on worker threads
until their own runs prove them short and non-blocking, so a node may call a synchronous
API that starts its own event loop (``Agent.run``) or block without stalling the graph."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated

import pytest
from typing_extensions import TypedDict

import loopwright.graph as lw
from loopwright import Agent, ScriptedModel


class State(TypedDict):
    question: str
    answers: Annotated[list, operator.add]
    n: int


def _agent_graph(rounds: int, *, inline: bool | None = None) -> lw.CompiledStateGraph:
    agent = Agent(ScriptedModel(["forty-two"] * rounds))

    def ask(state: State) -> dict:
        result = agent.run(state["question"])  # a synchronous agent run inside the node
        return {"answers": [result.answer], "n": state["n"] + 1}

    graph = lw.StateGraph(State)
    graph.add_node("ask", ask, inline=inline)
    graph.add_edge(lw.START, "ask")
    graph.add_conditional_edges("ask", lambda s: "ask" if s["n"] < rounds else lw.END)
    return graph.compile()


def test_a_lone_plain_node_can_run_a_synchronous_agent() -> None:
    out = _agent_graph(1).invoke({"question": "q", "answers": [], "n": 0})
    assert out["answers"] == ["forty-two"]


def test_a_lone_plain_node_can_run_a_synchronous_agent_under_ainvoke() -> None:
    app = _agent_graph(1)
    out = asyncio.run(app.ainvoke({"question": "q", "answers": [], "n": 0}))
    assert out["answers"] == ["forty-two"]


def test_a_node_declared_off_the_loop_keeps_running_agents_however_fast_they_are() -> None:
    # a scripted agent run is quick and CPU-bound: the learned placement would move it
    # onto the event loop, where asyncio.run fails; inline=False keeps it on workers
    out = _agent_graph(20, inline=False).invoke(
        {"question": "q", "answers": [], "n": 0}, {"recursion_limit": 50}
    )
    assert out["answers"] == ["forty-two"] * 20


def _counting_graph(rounds: int, seen: list[int]) -> lw.CompiledStateGraph:
    def step(state: State) -> dict:
        seen.append(threading.get_ident())
        return {"n": state["n"] + 1}

    graph = lw.StateGraph(State)
    graph.add_node("step", step)
    graph.add_edge(lw.START, "step")
    graph.add_conditional_edges("step", lambda s: "step" if s["n"] < rounds else lw.END)
    return graph.compile()


def test_a_plain_node_starts_on_a_worker_and_moves_inline_once_proven_quick() -> None:
    seen: list[int] = []
    app = _counting_graph(40, seen)

    async def main() -> int:
        await app.ainvoke({"question": "", "answers": [], "n": 0}, {"recursion_limit": 100})
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert seen[0] != loop_thread  # unknown: a worker thread
    assert app.nodes["step"].profile.inline  # 40 instant runs: proven
    assert seen[-1] == loop_thread  # and then run without a thread hop


def test_a_blocking_plain_node_does_not_stall_async_nodes_of_its_superstep() -> None:
    release = threading.Event()
    order: list[str] = []

    def blocks(state: State) -> dict:
        assert release.wait(5), "the async node never ran: the loop was blocked"
        order.append("blocks")
        return {"answers": ["blocks"]}

    async def frees(state: State) -> dict:
        order.append("frees")
        release.set()
        return {"answers": ["frees"]}

    graph = lw.StateGraph(State)
    graph.add_node("blocks", blocks)
    graph.add_node("frees", frees)
    graph.add_edge(lw.START, "blocks")
    graph.add_edge(lw.START, "frees")
    out = graph.compile().invoke({"question": "", "answers": [], "n": 0})
    assert order == ["frees", "blocks"]
    assert sorted(out["answers"]) == ["blocks", "frees"]


def test_max_concurrency_bounds_the_tasks_of_a_superstep_running_at_once() -> None:
    lock = threading.Lock()
    running = [0, 0]  # now, most at once

    def work(state: dict) -> dict:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        release = threading.Event()
        release.wait(0.02)
        with lock:
            running[0] -= 1
        return {"answers": [state["i"]]}

    graph = lw.StateGraph(State)
    graph.add_node("work", work, inline=False)
    graph.add_conditional_edges(lw.START, lambda s: [lw.Send("work", {"i": i}) for i in range(6)])
    out = graph.compile().invoke({"question": "", "answers": [], "n": 0}, {"max_concurrency": 2})
    assert sorted(out["answers"]) == list(range(6))
    assert running[1] == 2


def test_without_max_concurrency_every_task_of_a_superstep_runs_at_once() -> None:
    # async nodes waiting on I/O (model calls) are not held to a thread-pool size
    count = 40
    started: list[int] = []
    everyone: asyncio.Event | None = None

    async def wait_for_all(state: dict) -> dict:
        nonlocal everyone
        everyone = everyone or asyncio.Event()
        started.append(state["i"])
        if len(started) == count:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 5)
        return {"answers": [state["i"]]}

    graph = lw.StateGraph(State)
    graph.add_node("work", wait_for_all)
    graph.add_conditional_edges(
        lw.START, lambda s: [lw.Send("work", {"i": i}) for i in range(count)]
    )
    out = graph.compile().invoke({"question": "", "answers": [], "n": 0})
    assert sorted(out["answers"]) == list(range(count))


@pytest.mark.parametrize("key", ["max_concurrency", "recursion_limit"])
@pytest.mark.parametrize("value", [0, -1, "2", 2.5, True])
def test_a_config_count_that_is_not_a_whole_number_above_zero_is_refused(
    key: str, value: object
) -> None:
    class Fan(TypedDict):
        items: Annotated[list[str], operator.add]

    graph = lw.StateGraph(Fan)
    for name in "abc":
        graph.add_node(name, lambda s, name=name: {"items": [name]})
        graph.add_edge(lw.START, name)
    with pytest.raises(lw.GraphError, match=key):  # -1 lanes ran no task: writes were lost
        graph.compile().invoke({"items": []}, {key: value})
    assert graph.compile().invoke({"items": []}, {key: 1 if key == "max_concurrency" else 5})[
        "items"
    ] == ["a", "b", "c"]


def test_a_write_its_reducer_refuses_names_the_key() -> None:
    graph = lw.StateGraph(State)
    graph.add_node("bad", lambda s: {"answers": 5})
    graph.add_edge(lw.START, "bad")
    with pytest.raises(lw.InvalidUpdateError, match=r"'answers'.*add.*5") as info:
        graph.compile().invoke({"question": "q", "answers": [], "n": 0})
    assert isinstance(info.value.__cause__, TypeError)


def test_a_checkpoint_id_that_is_no_number_is_named() -> None:
    from loopwright.store import open_store

    graph = lw.StateGraph(State)
    graph.add_node("one", lambda s: {"n": s["n"] + 1})
    graph.add_edge(lw.START, "one")
    app = graph.compile(checkpointer=open_store("memory"))
    thread = {"configurable": {"thread_id": "cp-ids"}}
    app.invoke({"question": "q", "answers": [], "n": 0}, thread)
    latest = app.get_state(thread).config["configurable"]["checkpoint_id"]
    assert app.get_state({"configurable": {"thread_id": "cp-ids", "checkpoint_id": latest}})
    bad = {"configurable": {"thread_id": "cp-ids", "checkpoint_id": "latest"}}
    with pytest.raises(lw.GraphError, match="checkpoint_id 'latest'"):  # was int()'s ValueError
        app.get_state(bad)
    with pytest.raises(lw.GraphError, match="checkpoint_id 'latest'"):
        app.invoke(None, bad)
