"""Graphs shared by the persistence tests and the subprocess that resumes them (module
level, so checkpointed values and schemas can be rebuilt in another process)."""

from __future__ import annotations

import operator
import sys
from dataclasses import dataclass
from typing import Annotated, Any

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


def main() -> None:
    """``python graph_programs.py KIND URL THREAD ANSWER``: resume the approval graph."""
    from loopwright.store import open_store

    kind, url, thread, answer = sys.argv[1:5]
    store = open_store(kind, url)
    app = approval_graph(store)
    out = app.invoke(Command(resume=answer), {"configurable": {"thread_id": thread}})
    print(out["log"][-1], out["n"], ",".join(CALLS))


if __name__ == "__main__":
    main()
