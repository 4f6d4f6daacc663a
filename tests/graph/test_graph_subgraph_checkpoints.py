"""A subgraph checkpoints under its own namespace in the parent's store: an interrupt or
a failure inside it resumes inside it, and the subgraph nodes that had finished do not
run again (LangGraph's ``checkpoint_ns``; docs/graph.md, "Subgraphs")."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import pytest
from graph_programs import crash_in_subgraph_graph
from typing_extensions import TypedDict

from loopwright.graph import END, START, Command, GraphError, Send, StateGraph, interrupt


class S(TypedDict, total=False):
    answer: str
    first: str
    second: str
    done: bool


def _merge(left: list, right: list) -> list:
    return sorted(left + right)


class Fan(TypedDict, total=False):
    who: str
    answers: list


class FanParent(TypedDict, total=False):
    answers: Annotated[list, _merge]


def _child(runs: Counter[str], *, fail_once: set[str] | None = None) -> Any:
    """``prep`` -> ``ask`` (waits for an answer) -> ``check`` (may fail once)."""

    def prep(state: S) -> dict:
        runs["prep"] += 1
        return {}

    def ask(state: S) -> dict:
        runs["ask"] += 1
        return {"answer": interrupt("name?")}

    def check(state: S) -> dict:
        runs["check"] += 1
        if fail_once is not None and "check" not in fail_once:
            fail_once.add("check")
            raise RuntimeError("flaky")
        return {"done": True}

    g = StateGraph(S)
    g.add_node("prep", prep)
    g.add_node("ask", ask)
    g.add_node("check", check)
    g.add_edge(START, "prep")
    g.add_edge("prep", "ask")
    g.add_edge("ask", "check")
    return g.compile()


def _parent(child: Any, runs: Counter[str]) -> StateGraph:
    def before(state: S) -> dict:
        runs["before"] += 1
        return {}

    g = StateGraph(S)
    g.add_node("before", before)
    g.add_node("child", child)
    g.add_edge(START, "before")
    g.add_edge("before", "child")
    return g


def test_an_interrupt_in_a_subgraph_resumes_there_without_rerunning_its_finished_nodes(
    store: Any, thread: dict
) -> None:
    runs: Counter[str] = Counter()
    app = _parent(_child(runs), runs).compile(checkpointer=store)
    out = app.invoke({}, thread)
    assert [i.value for i in out["__interrupt__"]] == ["name?"]
    done = app.invoke(Command(resume="Ada"), thread)
    assert done == {"answer": "Ada", "done": True}
    assert runs == {"before": 1, "prep": 1, "ask": 2, "check": 1}


def test_a_failure_in_a_subgraph_resumes_there(store: Any, thread: dict) -> None:
    runs: Counter[str] = Counter()
    app = _parent(_child(runs, fail_once=set()), runs).compile(checkpointer=store)
    app.invoke({}, thread)
    with pytest.raises(RuntimeError, match="flaky"):
        app.invoke(Command(resume="Ada"), thread)
    done = app.invoke(None, thread)
    assert done == {"answer": "Ada", "done": True}
    # prep and ask finished before check failed: only check runs again
    assert runs == {"before": 1, "prep": 1, "ask": 2, "check": 2}


def test_answers_reach_the_subgraph_task_that_asked(store: Any, thread: dict) -> None:
    # two questions in two subgraph nodes: the second answer must not be handed to the
    # first question (which no longer runs) by position
    runs: Counter[str] = Counter()

    def one(state: S) -> dict:
        runs["one"] += 1
        return {"first": interrupt("first?")}

    def two(state: S) -> dict:
        runs["two"] += 1
        return {"second": interrupt("second?")}

    child = StateGraph(S)
    child.add_node("one", one)
    child.add_node("two", two)
    child.add_edge(START, "one")
    child.add_edge("one", "two")
    app = _parent(child.compile(), runs).compile(checkpointer=store)
    assert [i.value for i in app.invoke({}, thread)["__interrupt__"]] == ["first?"]
    assert [i.value for i in app.invoke(Command(resume="1"), thread)["__interrupt__"]] == [
        "second?"
    ]
    assert app.invoke(Command(resume="2"), thread) == {"first": "1", "second": "2"}
    assert runs == {"before": 1, "one": 2, "two": 2}


def test_a_subgraph_inside_a_subgraph_resumes_at_the_innermost_level(
    store: Any, thread: dict
) -> None:
    runs: Counter[str] = Counter()
    middle = StateGraph(S)

    def mid(state: S) -> dict:
        runs["mid"] += 1
        return {}

    middle.add_node("mid", mid)
    middle.add_node("inner", _child(runs))
    middle.add_edge(START, "mid")
    middle.add_edge("mid", "inner")
    app = _parent(middle.compile(), runs).compile(checkpointer=store)
    app.invoke({}, thread)
    assert app.invoke(Command(resume="Ada"), thread) == {"answer": "Ada", "done": True}
    assert runs == {"before": 1, "mid": 1, "prep": 1, "ask": 2, "check": 1}


def test_parallel_subgraph_tasks_each_resume_with_their_own_answer(
    store: Any, thread: dict
) -> None:
    runs: Counter[str] = Counter()

    def greet(state: Fan) -> dict:
        runs[state["who"]] += 1
        return {"answers": [f"{state['who']}={interrupt(state['who'])}"]}

    child = StateGraph(Fan)
    child.add_node("greet", greet)
    child.add_edge(START, "greet")
    parent = StateGraph(FanParent)
    parent.add_node("child", child.compile())
    parent.add_conditional_edges(
        START, lambda s: [Send("child", {"who": w, "answers": []}) for w in ("x", "y")]
    )
    parent.add_edge("child", END)
    app = parent.compile(checkpointer=store)
    pending = app.invoke({"answers": []}, thread)["__interrupt__"]
    by_value = {i.value: i.id for i in pending}
    assert sorted(by_value) == ["x", "y"]
    out = app.invoke(Command(resume={by_value["x"]: "1", by_value["y"]: "2"}), thread)
    assert out["answers"] == ["x=1", "y=2"]


def test_a_new_input_runs_the_subgraph_afresh(store: Any, thread: dict) -> None:
    runs: Counter[str] = Counter()
    app = _parent(_child(runs), runs).compile(checkpointer=store)
    app.invoke({}, thread)
    app.invoke(Command(resume="Ada"), thread)
    app.invoke({"done": False}, thread)  # a new input on the thread
    assert runs["prep"] == 2  # the subgraph started over for it
    assert app.invoke(Command(resume="Bob"), thread)["answer"] == "Bob"


def test_a_process_killed_inside_a_subgraph_resumes_there(tmp_path: Path) -> None:
    from loopwright.store import SQLiteStore

    db, marks, thread = tmp_path / "g.db", tmp_path / "marks", "crash-1"
    here = Path(__file__).resolve().parent
    proc = subprocess.run(
        [sys.executable, str(here / "graph_programs.py"), "crash", str(db), thread, str(marks)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CRASH_IN_SUBGRAPH": "1"},
        cwd=here,
    )
    assert proc.returncode == 3, proc.stderr
    assert marks.read_text().split() == ["prep"]
    store = SQLiteStore(db)
    try:
        app = crash_in_subgraph_graph(store, str(marks))
        out = app.invoke(None, {"configurable": {"thread_id": thread}})
    finally:
        store.close()
    assert out == {"done": ["prep", "work"]}
    assert marks.read_text().split() == ["prep"]  # the finished subgraph node did not rerun


def test_get_state_with_subgraphs_shows_where_a_paused_subgraph_stands(
    store: Any, thread: dict
) -> None:
    runs: Counter[str] = Counter()
    middle = StateGraph(S)
    middle.add_node("inner", _child(runs))
    middle.add_edge(START, "inner")
    app = _parent(middle.compile(), runs).compile(checkpointer=store)
    app.invoke({"answer": "none yet"}, thread)
    assert app.get_state(thread).tasks[0].state is None  # only when asked for
    (task,) = app.get_state(thread, subgraphs=True).tasks
    assert task.name == "child" and task.state.next == ("inner",)
    (inner,) = task.state.tasks
    assert inner.state.next == ("ask",)  # prep done, ask waiting
    assert inner.state.values == {"answer": "none yet"}
    assert [i.value for i in inner.state.interrupts] == ["name?"]


def test_a_subgraph_snapshot_config_reads_history_and_takes_updates(
    store: Any, thread: dict
) -> None:
    runs: Counter[str] = Counter()
    app = _parent(_child(runs), runs).compile(checkpointer=store)
    app.invoke({"answer": "none yet"}, thread)
    (task,) = app.get_state(thread, subgraphs=True).tasks
    sub = task.state.config
    assert sub["configurable"]["checkpoint_ns"].startswith("child:")
    assert app.get_state(sub).next == ("ask",)
    history = list(app.get_state_history(sub))
    assert len(history) >= 2 and history[0].config == sub  # newest first
    assert all(
        h.config["configurable"]["checkpoint_ns"] == sub["configurable"]["checkpoint_ns"]
        for h in history
    )
    # answer the question by hand instead of resuming: the update counts as `ask`'s output
    new = app.update_state(sub, {"answer": "Grace"}, as_node="ask")
    assert new["configurable"]["checkpoint_ns"] == sub["configurable"]["checkpoint_ns"]
    assert app.get_state(new).next == ("check",)
    assert app.get_state(thread).values == {"answer": "none yet"}  # the parent is unchanged
    # the parent's next run continues the subgraph from the update: `ask` does not rerun
    assert app.invoke(None, thread) == {"answer": "Grace", "done": True}
    assert runs == {"before": 1, "prep": 1, "ask": 1, "check": 1}


def test_a_checkpoint_ns_that_is_not_a_subgraph_is_refused(store: Any, thread: dict) -> None:
    runs: Counter[str] = Counter()
    app = _parent(_child(runs), runs).compile(checkpointer=store)
    app.invoke({}, thread)
    bad = {"configurable": {**thread["configurable"], "checkpoint_ns": "before:1:0#1"}}
    with pytest.raises(GraphError, match="checkpoint_ns"):
        app.get_state(bad)
    bad["configurable"]["thread_id"] += "|before:1:0#1"
    with pytest.raises(GraphError, match="not a subgraph node"):
        app.get_state(bad)
