"""Graphs shared by the persistence tests and the subprocess that resumes them (module
level, so checkpointed values and schemas can be rebuilt in another process)."""

from __future__ import annotations

import operator
import sys
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel
from typing_extensions import TypedDict

from loopwright.graph import END, START, Command, StateGraph, interrupt


class Log(TypedDict):
    log: Annotated[list, operator.add]
    n: int


@dataclass(frozen=True)
class Point:
    x: int
    y: int


CALLS: list[str] = []


def approval_graph(store: Any) -> Any:
    """draft -> ask (interrupts for a human answer) -> publish."""

    def draft(state: Log) -> dict:
        CALLS.append("draft")
        return {"log": ["draft"], "n": state.get("n", 0) + 1}

    def ask(state: Log) -> dict:
        CALLS.append("ask")
        answer = interrupt({"question": "publish?", "draft": state["log"][-1]})
        CALLS.append(f"answered:{answer}")
        return {"log": [f"answer:{answer}"]}

    def publish(state: Log) -> dict:
        return {"log": ["published"], "n": state["n"] + 100}

    g = StateGraph(Log)
    g.add_sequence([draft, ask, publish])
    g.add_edge(START, "draft")
    g.add_edge("publish", END)
    return g.compile(checkpointer=store)


def counter_graph(store: Any, stop: int) -> Any:
    def inc(state: Log) -> dict:
        return {"n": state["n"] + 1, "log": [Point(state["n"], -state["n"])]}

    g = StateGraph(Log)
    g.add_node("inc", inc)
    g.add_edge(START, "inc")
    g.add_conditional_edges("inc", lambda s: "inc" if s["n"] < stop else END)
    return g.compile(checkpointer=store)


class Steps(TypedDict, total=False):
    done: list


def crash_in_subgraph_graph(store: Any, marks: str) -> Any:
    """``outer`` runs subgraph ``inner``: ``prep`` (appends a line to the file ``marks``
    each time it runs) then ``work``, which kills the process while the environment
    variable ``CRASH_IN_SUBGRAPH`` is set."""
    import os

    def prep(state: Steps) -> dict:
        with open(marks, "a", encoding="utf-8") as f:
            f.write("prep\n")
        return {"done": ["prep"]}

    def work(state: Steps) -> dict:
        if os.environ.get("CRASH_IN_SUBGRAPH"):
            os._exit(3)  # a crash: no exception, no cleanup, nothing recorded
        return {"done": [*state["done"], "work"]}

    inner = StateGraph(Steps)
    inner.add_sequence([prep, work])
    inner.add_edge(START, "prep")
    outer = StateGraph(Steps)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "inner")
    return outer.compile(checkpointer=store)


def main() -> None:
    """``python graph_programs.py KIND URL THREAD ANSWER``: resume the approval graph;
    ``python graph_programs.py crash SQLITE_PATH THREAD MARKS``: run
    :func:`crash_in_subgraph_graph` until it crashes."""
    if sys.argv[1] == "crash":
        from loopwright.store import SQLiteStore

        path, thread, marks = sys.argv[2:5]
        config = {"configurable": {"thread_id": thread}}
        crash_in_subgraph_graph(SQLiteStore(path), marks).invoke({}, config, durability="sync")
        return
    from loopwright.store import open_store

    kind, url, thread, answer = sys.argv[1:5]
    store = open_store(kind, url)
    app = approval_graph(store)
    out = app.invoke(Command(resume=answer), {"configurable": {"thread_id": thread}})
    print(out["log"][-1], out["n"], ",".join(CALLS))


if __name__ == "__main__":
    main()


# ---------------------------------------------------------------------- a program table
# Small LangGraph-style programs with their input and expected result, run with and
# without a checkpointer on every store (test_graph_persistence.py).


class Items(TypedDict):
    items: Annotated[list, operator.add]
    topics: list
    last: str


def _say(name: str) -> Any:
    def node(state: Any) -> dict:
        return {"items": [name], "last": name}

    return node


def linear() -> StateGraph:
    g = StateGraph(Items)
    g.add_sequence([("a", _say("a")), ("b", _say("b"))])
    g.add_edge(START, "a")
    return g


def fan_out() -> StateGraph:
    g = StateGraph(Items)
    g.add_node("root", lambda s: {"items": ["root"]})
    for name in ("z", "m", "b"):
        g.add_node(name, lambda s, name=name: {"items": [name]})
        g.add_edge("root", name)
    g.add_edge(START, "root")
    g.add_edge(["z", "m", "b"], END)
    return g


def map_reduce() -> StateGraph:
    from loopwright.graph import Send

    g = StateGraph(Items)
    g.add_node("plan", lambda s: {"topics": ["x", "y", "z"]})
    g.add_node("work", lambda w: {"items": [w["t"] * 2]})
    g.add_node("done", lambda s: {"last": "".join(s["items"])})
    g.add_edge(START, "plan")
    g.add_conditional_edges(
        "plan", lambda s: [Send("work", {"t": t}) for t in s["topics"]], ["work"]
    )
    g.add_edge("work", "done")
    return g


def loop() -> StateGraph:
    g = StateGraph(Items)
    g.add_node("step", lambda s: {"items": [len(s["items"])]})
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if len(s["items"]) < 4 else END)
    return g


def command() -> StateGraph:
    g = StateGraph(Items)
    g.add_node("go", lambda s: Command(goto="b", update={"items": ["go"]}), destinations=("a", "b"))
    g.add_node("a", _say("a"))
    g.add_node("b", _say("b"))
    g.add_edge(START, "go")
    return g


def subgraph() -> StateGraph:
    inner = StateGraph(Items)
    inner.add_node("in", lambda s: {"last": "inner", "items": ["in"]})
    inner.add_edge(START, "in")
    g = StateGraph(Items)
    g.add_node("sub", inner.compile())
    g.add_edge(START, "sub")
    return g


def async_nodes() -> StateGraph:
    async def a(state: Any) -> dict:
        return {"items": ["async-a"]}

    async def b(state: Any) -> dict:
        return {"items": ["async-b"]}

    g = StateGraph(Items)
    g.add_node("b", b)
    g.add_node("a", a)
    g.add_edge(START, "b")
    g.add_edge(START, "a")
    return g


PROGRAMS: dict[str, tuple[Any, dict, dict]] = {
    "linear": (linear, {"items": []}, {"items": ["a", "b"], "last": "b"}),
    "fan_out_merge_order": (fan_out, {"items": []}, {"items": ["root", "b", "m", "z"]}),
    "send_map_reduce": (
        map_reduce,
        {"items": []},
        {"items": ["xx", "yy", "zz"], "topics": ["x", "y", "z"], "last": "xxyyzz"},
    ),
    "conditional_loop": (loop, {"items": []}, {"items": [0, 1, 2, 3]}),
    "command": (command, {"items": []}, {"items": ["go", "b"], "last": "b"}),
    "subgraph_handback": (subgraph, {"items": ["x"]}, {"items": ["x", "x", "in"], "last": "inner"}),
    "async_nodes": (async_nodes, {"items": []}, {"items": ["async-a", "async-b"]}),
}


class Doc(BaseModel):
    """A pydantic state (checkpointed field by field)."""

    title: str = ""
    notes: Annotated[list, operator.add] = []
    point: Point | None = None


class Mixed(TypedDict):
    """Keys of every checkpoint delta kind: replayable writes, a non-replayable reducer,
    a plain key."""

    items: Annotated[list, operator.add]
    merged: Annotated[dict, lambda a, b: {**a, **b}]
    plain: Any
    step: int


def scripted_graph(store: Any, script: list[dict]) -> Any:
    """Superstep k writes ``script[k]`` (plus the step count); loops until the script ends."""

    def play(state: Mixed) -> dict:
        k = state["step"]
        return {**script[k], "step": k + 1}

    g = StateGraph(Mixed)
    g.add_node("play", play)
    g.add_edge(START, "play")
    g.add_conditional_edges("play", lambda s: "play" if s["step"] < len(script) else END)
    return g.compile(checkpointer=store)
