"""Checkpoints on every loopwright store: continuation, interrupts, history, replay,
forks and failed supersteps (each compared with LangGraph 1.2's behaviour)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import operator
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
from graph_programs import CALLS, PROGRAMS, Point, approval_graph, counter_graph
from tests.graph.conftest import KINDS, open_store
from typing_extensions import TypedDict

from loopwright.core import Message
from loopwright.graph import (
    END,
    START,
    Command,
    GraphRecursionError,
    Interrupt,
    StateGraph,
    add_messages,
    interrupt,
)
from loopwright.graph.codec import CheckpointEncodeError
from loopwright.store import MemoryStore

HERE = Path(__file__).parent


def test_second_invoke_on_a_thread_continues_from_its_state(store: Any, thread: dict) -> None:
    app = counter_graph(store, stop=2)
    first = app.invoke({"n": 0, "log": []}, thread)
    assert first["n"] == 2 and first["log"] == [Point(0, 0), Point(1, -1)]
    second = app.invoke({"n": 0}, thread)  # n is overwritten, log keeps growing
    assert second["n"] == 2 and len(second["log"]) == 4
    state = app.get_state(thread)
    assert state.values == second and state.next == ()
    assert state.metadata["source"] == "loop"


def test_history_is_newest_first_with_langgraph_step_numbers(store: Any, thread: dict) -> None:
    app = counter_graph(store, stop=2)
    app.invoke({"n": 0, "log": []}, thread)
    history = list(app.get_state_history(thread))
    assert [(h.metadata["step"], h.metadata["source"], h.next) for h in history] == [
        (2, "loop", ()),
        (1, "loop", ("inc",)),
        (0, "loop", ("inc",)),
        (-1, "input", ("__start__",)),
    ]
    assert [h.values.get("n") for h in history] == [2, 1, 0, None]
    assert history[0].parent_config == history[1].config
    assert list(app.get_state_history(thread, limit=1)) == history[:1]


def test_recursion_limit_on_a_resumed_thread_counts_from_its_step(store: Any, thread: dict) -> None:
    # LangGraph: the fresh run gets `limit` node supersteps (START takes superstep 0);
    # a resumed run starts at the saved step and may go limit + 2 further.
    app = counter_graph(store, stop=100)
    config = {**thread, "recursion_limit": 3}
    with pytest.raises(GraphRecursionError):
        app.invoke({"n": 0, "log": []}, config)
    assert app.get_state(config).values["n"] == 3
    with pytest.raises(GraphRecursionError):
        app.invoke(None, config)
    assert app.get_state(config).values["n"] == 8


def test_interrupt_pauses_and_resume_reruns_the_node_from_its_start(
    store: Any, thread: dict
) -> None:
    CALLS.clear()
    app = approval_graph(store)
    out = app.invoke({"log": [], "n": 0}, thread)
    assert out["log"] == ["draft"]
    (pending,) = out["__interrupt__"]
    assert isinstance(pending, Interrupt)
    assert pending.value == {"question": "publish?", "draft": "draft"}
    state = app.get_state(thread)
    assert state.next == ("ask",)
    assert state.interrupts == (pending,)
    assert state.tasks[0].interrupts == (pending,)
    done = app.invoke(Command(resume="yes"), thread)
    assert done == {"log": ["draft", "answer:yes", "published"], "n": 101}
    assert CALLS == ["draft", "ask", "ask", "answered:yes"]  # "ask" ran again from its start
    assert app.get_state(thread).next == ()


def test_interrupt_is_streamed_as_an_update(store: Any, thread: dict) -> None:
    app = approval_graph(store)
    chunks = list(app.stream({"log": [], "n": 0}, thread, stream_mode="updates"))
    assert chunks[0] == {"draft": {"log": ["draft"], "n": 1}}
    assert list(chunks[1]) == ["__interrupt__"]
    assert isinstance(chunks[1]["__interrupt__"], tuple)


def test_resume_in_another_process(store: Any, thread: dict, tmp_path: Path) -> None:
    url = None if store.kind == "memory" else _url_of(store)
    app = approval_graph(store)
    app.invoke({"log": [], "n": 0}, thread)
    if url is None:  # memory: a second compiled graph (no shared cache) resumes
        again = approval_graph(store).invoke(Command(resume="ok"), thread)
        assert again["log"][-1] == "published"
        return
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "graph_programs.py"),
            store.kind,
            url,
            thread["configurable"]["thread_id"],
            "ok",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
        cwd=HERE,
    )
    assert proc.returncode == 0, proc.stderr
    # the other process re-ran only the interrupted node, then the rest of the graph
    assert proc.stdout.split() == ["published", "101", "ask,answered:ok"]
    assert app.get_state(thread).values["log"] == ["draft", "answer:ok", "published"]


def _url_of(store: Any) -> str:
    if store.kind == "sqlite":
        return str(store.path)
    if store.kind == "redis":
        return os.environ["LOOPWRIGHT_TEST_REDIS_URL"]
    return os.environ["LOOPWRIGHT_TEST_POSTGRES_URL"]


class Pair(TypedDict):
    log: Annotated[list, operator.add]


def _two_questions(store: Any) -> Any:
    def left(state: Pair) -> dict:
        return {"log": [f"left:{interrupt('left?')}"]}

    def right(state: Pair) -> dict:
        return {"log": [f"right:{interrupt('right?')}"]}

    g = StateGraph(Pair)
    g.add_node("left", left)
    g.add_node("right", right)
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    return g.compile(checkpointer=store)


def test_several_pending_interrupts_are_answered_by_id(store: Any, thread: dict) -> None:
    app = _two_questions(store)
    out = app.invoke({"log": []}, thread)
    by_value = {i.value: i.id for i in out["__interrupt__"]}
    assert set(by_value) == {"left?", "right?"}
    with pytest.raises(Exception, match="several interrupts are pending"):
        app.invoke(Command(resume="x"), thread)
    # a mistyped id is named (was: the same "several interrupts are pending" message)
    with pytest.raises(Exception, match="unknown interrupt id\\(s\\) 'nope': resume with"):
        app.invoke(Command(resume={by_value["left?"]: "L", "nope": "R"}), thread)
    partial = app.invoke(Command(resume={by_value["left?"]: "L"}), thread)
    assert [i.value for i in partial["__interrupt__"]] == ["right?"]
    done = app.invoke(Command(resume={partial["__interrupt__"][0].id: "R"}), thread)
    assert done["log"] == ["left:L", "right:R"]


class Fail(TypedDict):
    log: Annotated[list, operator.add]


def test_failed_parallel_superstep_keeps_finished_work_for_the_resume(
    store: Any, thread: dict
) -> None:
    ran: list[str] = []
    fail = {"on": True}

    def good(state: Fail) -> dict:
        ran.append("good")
        return {"log": ["good"]}

    def bad(state: Fail) -> dict:
        ran.append("bad")
        if fail["on"]:
            raise ValueError("boom")
        return {"log": ["bad"]}

    g = StateGraph(Fail)
    g.add_node("first", lambda s: {"log": ["first"]})
    g.add_node("good", good)
    g.add_node("bad", bad)
    g.add_edge(START, "first")
    g.add_edge("first", "good")
    g.add_edge("first", "bad")
    app = g.compile(checkpointer=store)
    with pytest.raises(ValueError, match="boom"):
        app.invoke({"log": []}, thread)
    # as in LangGraph: get_state shows the finished task's writes, only "bad" is next
    state = app.get_state(thread)
    assert state.values == {"log": ["first", "good"]}
    assert state.next == ("bad",)
    tasks = {t.name: t for t in state.tasks}
    assert tasks["bad"].error == "ValueError('boom')"
    assert tasks["good"].result == {"log": ["good"]}
    # the checkpoint itself is still the last completed superstep
    exact = app.get_state(
        {"configurable": {**thread["configurable"], **state.config["configurable"]}}
    )
    assert exact.values == {"log": ["first"]}
    fail["on"] = False
    assert app.invoke(None, thread) == {"log": ["first", "bad", "good"]}
    assert sorted(ran[:2]) == ["bad", "good"] and ran[2:] == ["bad"]  # "good" ran once


_KILLED_MID_SUPERSTEP = """
import operator, os, sys, time
from pathlib import Path
from typing import Annotated
from typing_extensions import TypedDict
from loopwright.graph import START, StateGraph
from loopwright.store import open_store

kind, url, thread_id, done_file = sys.argv[1:5]

class Pair(TypedDict):
    log: Annotated[list, operator.add]

def quick(state):
    Path(done_file).write_text("quick ran")  # its side effect
    return {"log": ["quick"]}

def slow(state):
    while not Path(done_file).exists():
        time.sleep(0.01)
    time.sleep(1.0)  # "quick" finished a second ago: then the process is killed
    os._exit(9)

g = StateGraph(Pair)
g.add_node("quick", quick)
g.add_node("slow", slow)
g.add_edge(START, "quick")
g.add_edge(START, "slow")
app = g.compile(checkpointer=open_store(kind, url))
app.invoke({"log": []}, {"configurable": {"thread_id": thread_id}})
"""


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "memory"])
def test_a_task_finished_before_the_process_died_is_not_run_again(
    kind: str, thread: dict, tmp_path: Path
) -> None:
    # was: the finished task's writes were stored only when the whole superstep ended
    # (or failed with an exception), so after a kill it ran again: a side effect twice
    store = open_store(kind, tmp_path)
    done = tmp_path / "quick.done"
    proc = subprocess.run(
        [
            *(sys.executable, "-c", _KILLED_MID_SUPERSTEP, store.kind, _url_of(store)),
            *(thread["configurable"]["thread_id"], str(done)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 9, proc.stderr
    ran: list[str] = []

    def quick(state: Pair) -> dict:
        ran.append("quick")
        return {"log": ["quick"]}

    def slow(state: Pair) -> dict:
        ran.append("slow")
        return {"log": ["slow"]}

    g = StateGraph(Pair)
    g.add_node("quick", quick)
    g.add_node("slow", slow)
    g.add_edge(START, "quick")
    g.add_edge(START, "slow")
    app = g.compile(checkpointer=store)
    try:
        assert app.get_state(thread).next == ("slow",)
        assert app.invoke(None, thread) == {"log": ["quick", "slow"]}
        assert ran == ["slow"]
    finally:
        store.close()


def test_finished_tasks_are_recorded_once_and_before_the_next_checkpoint(
    tmp_path: Path,
) -> None:
    # the record of finished tasks is written while the superstep runs: one record for
    # "quick" (none once nothing runs), and a slow write still in flight when the
    # superstep ends lands before the next checkpoint
    from loopwright.store import SQLiteStore

    class SlowRecords(SQLiteStore):
        def save(self, state: Any, **kw: Any) -> Any:
            if state.metadata.get("graph", {}).get("kind") == "writes":
                time.sleep(0.2)
            return super().save(state, **kw)

    async def quick(state: Pair) -> dict:
        return {"log": ["quick"]}

    async def slow(state: Pair) -> dict:
        await asyncio.sleep(0.05)
        return {"log": ["slow"]}

    g = StateGraph(Pair)
    g.add_node("quick", quick)
    g.add_node("slow", slow)
    g.add_edge(START, "quick")
    g.add_edge(START, "slow")
    store = SlowRecords(tmp_path / "slow.db")
    app = g.compile(checkpointer=store)
    thread = {"configurable": {"thread_id": "slow-records"}}
    assert app.invoke({"log": []}, thread) == {"log": ["quick", "slow"]}
    state = app.get_state(thread)
    assert state.next == () and state.values == {"log": ["quick", "slow"]}
    kinds = [
        store.load("slow-records", ref.checkpoint).metadata["graph"]["kind"]
        for ref in store.history("slow-records")
    ]
    assert kinds[-1] == "checkpoint" and kinds.count("writes") == 1
    store.close()


def test_replay_from_the_input_checkpoint_applies_the_input_again(store: Any, thread: dict) -> None:
    # was: an AssertionError (the input checkpoint's START task had no node and no input)
    g = StateGraph(Pair)
    g.add_node("a", lambda state: {"log": ["a"]})
    g.add_edge(START, "a")
    app = g.compile(checkpointer=store)
    app.invoke({"log": ["in"]}, thread)
    first = list(app.get_state_history(thread))[-1]
    assert first.metadata["source"] == "input" and first.next == ("__start__",)
    assert app.invoke(None, first.config) == {"log": ["in", "a"]}


def test_a_stream_left_early_keeps_the_checkpoints_already_taken(tmp_path: Path) -> None:
    # was: the consumer's early exit cancelled the checkpoint write in flight, so the
    # thread was left at its input checkpoint (and resuming it failed). The consumer leaves
    # at a fixed point: "a"'s checkpoint is held in the store until the run is cancelled,
    # and the consumer leaves once it has "b"'s chunk -- by then the run (which writes a
    # checkpoint while the next superstep runs) waits for that write before "b"'s.
    from loopwright.store import SQLiteStore

    ran: list[str] = []
    cancelled = threading.Event()

    def node(name: str) -> Any:
        def run(state: Pair) -> dict:
            ran.append(name)
            return {"log": [name]}

        return run

    class HeldWrites(SQLiteStore):  # "a"'s checkpoint is written only once the run is
        def write(self, writes: Any) -> Any:  # cancelled (runs save through write)
            if any(
                w.state is not None and w.state.metadata["graph"].get("step") == 1 for w in writes
            ):
                assert cancelled.wait(10), "the run was never cancelled"
            return super().write(writes)

    class OnCancel:  # a tracer: its failure callback sees the run's cancellation
        @contextlib.contextmanager
        def invocation(self, graph: str, thread: str) -> Any:
            yield lambda exc: cancelled.set()

        def node(self, name: str, step: int, task_id: str) -> Any:
            return contextlib.nullcontext(lambda exc: None)

    g = StateGraph(Pair)
    g.add_sequence([("a", node("a")), ("b", node("b")), ("c", node("c"))])
    g.add_edge(START, "a")
    store = HeldWrites(tmp_path / "stream.db")
    app = g.compile(checkpointer=store)
    thread = {"configurable": {"thread_id": "left-early"}}
    chunks = []
    for chunk in app.stream({"log": []}, {**thread, "tracer": OnCancel()}):
        chunks.append(chunk)
        if len(chunks) == 2:
            break
    assert chunks == [{"a": {"log": ["a"]}}, {"b": {"log": ["b"]}}] and cancelled.is_set()
    state = app.get_state(thread)
    # "a"'s superstep is stored; "b"'s never committed, so "b" runs again on resume
    assert (state.metadata["step"], state.next, state.values) == (1, ("b",), {"log": ["a"]})
    assert app.invoke(None, thread) == {"log": ["a", "b", "c"]}
    assert ran == ["a", "b", "b", "c"]
    store.close()


def test_update_state_forks_and_replay_reruns_from_a_checkpoint(store: Any, thread: dict) -> None:
    app = counter_graph(store, stop=3)
    app.invoke({"n": 0, "log": []}, thread)
    history = list(app.get_state_history(thread))
    after_one = next(h for h in history if h.values.get("n") == 1)
    # replay: run again from the checkpoint where n == 1
    replayed = app.invoke(None, after_one.config)
    assert replayed["n"] == 3 and len(replayed["log"]) == 3
    # fork: edit n at that checkpoint; the pending node stays pending
    forked = app.update_state(after_one.config, {"n": 2})
    fork_state = app.get_state(forked)
    assert fork_state.values["n"] == 2 and fork_state.next == ("inc",)
    assert fork_state.metadata["source"] == "update"
    assert fork_state.parent_config == after_one.config
    assert app.invoke(None, forked)["n"] == 3
    # as_node: the update counts as that node's output, its edges pick what is next
    ended = app.update_state(thread, {"n": 50}, as_node="inc")
    assert app.get_state(ended).next == ()
    assert app.get_state(thread).values["n"] == 50


def test_long_runs_store_deltas_and_load_back_identically(store: Any, thread: dict) -> None:
    app = counter_graph(store, stop=300)
    out = app.invoke({"n": 0, "log": []}, {**thread, "recursion_limit": 400})
    fresh = counter_graph(store, stop=300)  # no cache: rebuilt from the store
    assert fresh.get_state(thread).values == out
    middle = [h for h in fresh.get_state_history(thread) if h.values.get("n") == 150]
    assert middle and middle[0].values["log"] == [Point(i, -i) for i in range(150)]


class Chat(TypedDict):
    messages: Annotated[list, add_messages]


def test_messages_keep_their_ids_across_checkpoints(store: Any, thread: dict) -> None:
    def reply(state: Chat) -> dict:
        return {"messages": [Message.assistant(f"echo {state['messages'][-1].text}")]}

    g = StateGraph(Chat)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    app = g.compile(checkpointer=store)
    out = app.invoke({"messages": ["hi"]}, thread)
    assert [m.text for m in out["messages"]] == ["hi", "echo hi"]
    reloaded = g.compile(checkpointer=store).get_state(thread).values["messages"]
    assert reloaded == out["messages"]
    app.invoke({"messages": [("user", "again")]}, thread)
    assert [m.text for m in app.get_state(thread).values["messages"]] == [
        "hi",
        "echo hi",
        "again",
        "echo again",
    ]


class Opaque(TypedDict):
    thing: object


def test_a_value_that_cannot_be_checkpointed_fails_clearly(store: Any, thread: dict) -> None:
    g = StateGraph(Opaque)
    g.add_node("a", lambda s: {"thing": object()})
    g.add_edge(START, "a")
    g.add_edge("a", END)
    with pytest.raises(CheckpointEncodeError, match="state key 'thing'"):
        g.compile(checkpointer=store).invoke({"thing": 1}, thread)


def test_resume_without_checkpointer_and_without_thread_is_refused(store: Any) -> None:
    app = counter_graph(None, stop=1)
    with pytest.raises(Exception, match="without a checkpointer"):
        app.invoke(Command(resume=1))
    with pytest.raises(Exception, match="thread id"):
        counter_graph(store, stop=1).invoke({"n": 0})


def test_a_new_input_on_a_thread_links_to_its_last_checkpoint(store: Any, thread: dict) -> None:
    app = counter_graph(store, stop=1)
    app.invoke({"n": 0, "log": []}, thread)
    app.invoke({"n": 0}, thread)
    history = list(app.get_state_history(thread))
    assert [h.metadata["source"] for h in history] == [
        "loop",
        "loop",
        "input",
        "loop",
        "loop",
        "input",
    ]
    for newer, older in itertools.pairwise(history):
        assert newer.parent_config == older.config


class Outer(TypedDict):
    log: Annotated[list, operator.add]


def test_an_interrupt_inside_a_subgraph_pauses_the_parent_and_resumes(
    store: Any, thread: dict
) -> None:
    def ask(state: Outer) -> dict:
        return {"log": [f"sub:{interrupt('inner?')}"]}

    child = StateGraph(Outer)
    child.add_node("ask", ask)
    child.add_edge(START, "ask")
    parent = StateGraph(Outer)
    parent.add_node("before", lambda s: {"log": ["before"]})
    parent.add_node("child", child.compile())
    parent.add_edge(START, "before")
    parent.add_edge("before", "child")
    app = parent.compile(checkpointer=store)
    out = app.invoke({"log": []}, thread)
    assert [i.value for i in out["__interrupt__"]] == ["inner?"]
    assert app.get_state(thread).next == ("child",)
    done = app.invoke(Command(resume="A"), thread)
    # the subgraph hands back its whole state: "before" comes back once more
    assert done["log"] == ["before", "before", "sub:A"]


def test_a_resume_command_update_and_the_superstep_both_reach_the_checkpoint(
    store: Any, thread: dict
) -> None:
    def ask(state: Pair) -> dict:
        return {"log": [f"answer:{interrupt('?')}"]}

    g = StateGraph(Pair)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    app = g.compile(checkpointer=store)
    app.invoke({"log": ["start"]}, thread)
    out = app.invoke(Command(resume="yes", update={"log": ["edited"]}), thread)
    assert out["log"] == ["start", "edited", "answer:yes"]
    # rebuilt from the stored deltas, without the in-process cache
    assert g.compile(checkpointer=store).get_state(thread).values == out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_give_the_same_result_with_and_without_a_store(
    name: str, store: Any, thread: dict
) -> None:
    build, given, expected = PROGRAMS[name]
    assert build().compile().invoke(dict(given)) == expected
    app = build().compile(checkpointer=store)
    assert app.invoke(dict(given), thread) == expected
    fresh = build().compile(checkpointer=store)  # rebuilt from the store alone
    assert fresh.get_state(thread).values == expected
    assert fresh.get_state(thread).next == ()


def test_a_fan_in_waiting_across_an_interrupt_joins_after_the_resume(
    store: Any, thread: dict
) -> None:
    def slow2(state: Pair) -> dict:
        return {"log": [f"slow2:{interrupt('go on?')}"]}

    g = StateGraph(Pair)
    g.add_node("fast", lambda s: {"log": ["fast"]})
    g.add_node("slow1", lambda s: {"log": ["slow1"]})
    g.add_node("slow2", slow2)
    g.add_node("join", lambda s: {"log": [f"join:{len(s['log'])}"]})
    g.add_edge(START, "fast")
    g.add_edge(START, "slow1")
    g.add_edge("slow1", "slow2")
    g.add_edge(["fast", "slow2"], "join")
    app = g.compile(checkpointer=store)
    app.invoke({"log": []}, thread)
    assert app.get_state(thread).next == ("slow2",)
    fresh = g.compile(checkpointer=store)  # "fast" already reached the join: stored
    out = fresh.invoke(Command(resume="yes"), thread)
    assert out["log"] == ["fast", "slow1", "slow2:yes", "join:3"]


def test_pydantic_state_with_objects_round_trips_through_the_store(
    store: Any, thread: dict
) -> None:
    from graph_programs import Doc

    def edit(state: Doc) -> dict:
        return {"title": state.title.upper(), "notes": ["edited"], "point": Point(1, 2)}

    g = StateGraph(Doc)
    g.add_node("edit", edit)
    g.add_edge(START, "edit")
    g.add_edge("edit", END)
    g.compile(checkpointer=store).invoke({"title": "draft"}, thread)
    values = (
        StateGraph(Doc)
        .add_node("edit", edit)
        .add_edge(START, "edit")
        .compile(checkpointer=store)
        .get_state(thread)
        .values
    )
    assert values == {"title": "DRAFT", "notes": ["edited"], "point": Point(1, 2)}


def test_update_state_on_an_empty_thread_and_command_goto_end(store: Any, thread: dict) -> None:
    g = StateGraph(Pair)
    g.add_node("stop", lambda s: Command(goto=END, update={"log": ["stop"]}), destinations=(END,))
    g.add_edge(START, "stop")
    app = g.compile(checkpointer=store)
    config = app.update_state(thread, {"log": ["seeded"]})
    assert app.get_state(config).values == {"log": ["seeded"]}
    assert app.get_state(config).next == ("stop",)  # LangGraph: as if START had run
    assert app.invoke({"log": ["in"]}, thread) == {"log": ["seeded", "in", "stop"]}


def _pre_then_ask(store: Any) -> Any:
    def ask(state: Pair) -> dict:
        return {"log": [interrupt("q?")]}

    g = StateGraph(Pair)
    g.add_node("pre", lambda s: {"log": ["pre"]})
    g.add_node("ask", ask)
    g.add_edge(START, "pre")
    g.add_edge("pre", "ask")
    return g.compile(checkpointer=store)


def test_resume_streams_like_langgraph(store: Any, thread: dict) -> None:
    # each expectation below is what LangGraph 1.2 prints for the same program
    no_store = _pre_then_ask(None).invoke({"log": []})
    assert no_store["log"] == ["pre"] and [i.value for i in no_store["__interrupt__"]] == ["q?"]
    app = _pre_then_ask(store)
    app.invoke({"log": []}, thread)
    assert list(app.stream(Command(resume="A"), thread, stream_mode="values")) == [
        {"log": ["pre"]},
        {"log": ["pre", "A"]},
    ]
    app.invoke({"log": ["x"]}, thread)
    assert list(app.stream(Command(resume="B"), thread)) == [{"ask": {"log": ["B"]}}]
    assert app.invoke(None, thread) == {"log": ["pre", "A", "x", "pre", "B"]}


def test_static_interrupts_before_and_after_a_node(store: Any, thread: dict) -> None:
    # LangGraph 1.2 prints exactly these for the same program
    g = StateGraph(Pair)
    for name in ("a", "b", "c"):
        g.add_node(name, lambda s, name=name: {"log": [name]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    app = g.compile(checkpointer=store, interrupt_before=["b"], interrupt_after=["b"])
    assert app.invoke({"log": []}, thread) == {"log": ["a"]}
    state = app.get_state(thread)
    assert state.next == ("b",) and state.interrupts == ()
    assert list(app.stream(None, thread)) == [{"b": {"log": ["b"]}}, {"__interrupt__": ()}]
    assert app.get_state(thread).next == ("c",)
    assert app.invoke(None, thread) == {"log": ["a", "b", "c"]}
    assert app.invoke(None, thread) == {"log": ["a", "b", "c"]}
    history = [(h.metadata["step"], h.next) for h in app.get_state_history(thread)]
    assert history == [(3, ()), (2, ("c",)), (1, ("b",)), (0, ("a",)), (-1, ("__start__",))]


class SlowStore(MemoryStore):
    """A store whose writes wait on "I/O" for 50 ms, like a remote database: one round
    trip per ``save``, and one per group-commit batch (``write``), however many it holds."""

    blocking = True

    def __init__(self) -> None:
        super().__init__()
        self._batch = threading.local()

    def write(self, writes: Any) -> Any:
        time.sleep(0.05)
        self._batch.open = True
        try:
            return super().write(writes)
        finally:
            self._batch.open = False

    def save(self, state: Any, **kwargs: Any) -> Any:
        if not getattr(self._batch, "open", False):
            time.sleep(0.05)
        return super().save(state, **kwargs)


def test_concurrent_runs_do_not_wait_on_each_others_checkpoint_writes() -> None:
    g = StateGraph(Pair)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_edge(START, "a")
    app = g.compile(checkpointer=SlowStore())  # 3 writes per run: input, START, "a"

    async def main() -> float:
        started = time.perf_counter()
        await asyncio.gather(
            *(
                app.ainvoke({"log": []}, {"configurable": {"thread_id": f"slow-{i}"}})
                for i in range(4)
            )
        )
        return time.perf_counter() - started

    elapsed = asyncio.run(main())
    # writes on the event loop would take 4 runs x 3 writes x 50 ms = 0.6 s
    assert elapsed < 0.4, elapsed
    assert app.get_state({"configurable": {"thread_id": "slow-3"}}).values == {"log": ["a"]}


def test_sync_durability_stores_each_checkpoint_before_the_next_superstep() -> None:
    store = SlowStore()
    seen: list[int] = []

    def count(state: Pair) -> dict:
        seen.append(len(store.history(thread_id)))  # checkpoints stored when this node runs
        return {"log": ["x"]}

    thread_id = "durable-sync"
    g = StateGraph(Pair)
    g.add_node("a", count)
    g.add_node("b", count)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    app = g.compile(checkpointer=store)
    app.invoke({"log": []}, {"configurable": {"thread_id": thread_id}}, durability="sync")
    assert seen == [2, 3]  # input + START before "a"; + "a" before "b"


def test_async_thread_api(store: Any, thread: dict) -> None:
    app = counter_graph(store, stop=2)

    async def main() -> tuple[Any, list, Any]:
        await app.ainvoke({"n": 0, "log": []}, thread)
        state = await app.aget_state(thread)
        history = [h async for h in app.aget_state_history(thread, limit=2)]
        forked = await app.aupdate_state(thread, {"n": 7})
        return state, history, await app.aget_state(forked)

    state, history, forked = asyncio.run(main())
    assert state.values["n"] == 2 and [h.values["n"] for h in history] == [2, 1]
    assert forked.values["n"] == 7 and forked.metadata["source"] == "update"
