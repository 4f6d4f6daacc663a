"""State-graph benchmarks: loopwright.graph side by side with LangGraph, same graphs, one run.

Sections (each against a plain-Python floor measured in the same run):

a. **agent loop** -- the seed's toy agent shape: an ``llm`` node (an instant stand-in
   model) and a ``tools`` node in a loop, ``messages: Annotated[list, operator.add]``,
   a conditional edge back and forth, 200 supersteps. Reported: us per superstep, the
   overhead over the floor, and the duration of superstep ~10 vs ~200 (flatness).
b. **Send fan-out** -- an orchestrator sends 1,000 workers (``Send``), each appends to a
   shared key, a reducer node joins them. Reported: us per worker task.
   "us per superstep" is the median time from one node call to the next (the superstep
   itself); the wall time of whole invokes divided by their supersteps is reported too.
c. **checkpointed loop** -- (a) with a SQLite checkpointer (loopwright's ``SQLiteStore``;
   LangGraph's ``SqliteSaver`` from ``langgraph-checkpoint-sqlite``).

LangGraph is NOT a loopwright dependency: install it in the benchmark's environment
(``pip install langgraph langgraph-checkpoint-sqlite``); without it the script says so
and reports loopwright alone. Goals: >= 20x less overhead per superstep than LangGraph
on (a) and (b); superstep 200 within 1.2x of superstep 10.

Usage: ``python benchmarks/graph.py [--quick]``. Prints figures, then ONE JSON line whose
``speedup`` is LangGraph's us per superstep over loopwright's on (a).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import itertools
import json
import operator
import os
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from types import ModuleType
from typing import Annotated, Any

from typing_extensions import TypedDict

import loopwright.graph as lw

clock = time.perf_counter


class AgentState(TypedDict):
    messages: Annotated[list, operator.add]
    llm_calls: int


class FanState(TypedDict):
    topics: list
    completed: Annotated[list, operator.add]
    report: str


class WorkerState(TypedDict):
    topic: int
    completed: Annotated[list, operator.add]


def _langgraph() -> ModuleType | None:
    try:
        return importlib.import_module("langgraph.graph")
    except ImportError:
        return None


# ---------------------------------------------------------------------- (a) agent loop


def _agent_nodes(steps: int, stamps: list[float]) -> tuple[Callable, Callable, Callable]:
    """The stand-in model asks for a tool until ``steps`` supersteps have run."""

    def llm(state: AgentState) -> dict:
        stamps.append(clock())
        calls = state["llm_calls"] + 1
        wants_tool = 2 * calls < steps
        reply = {"role": "assistant", "tool_call": ("add", calls) if wants_tool else None}
        return {"messages": [reply], "llm_calls": calls}

    def tools(state: AgentState) -> dict:
        stamps.append(clock())
        _name, arg = state["messages"][-1]["tool_call"]
        return {"messages": [{"role": "tool", "content": str(arg + 1)}]}

    def route(state: AgentState) -> str:
        return "tools" if state["messages"][-1].get("tool_call") else "__end__"

    return llm, tools, route


def build_agent(mod: Any, steps: int, stamps: list[float], checkpointer: Any = None) -> Any:
    llm, tools, route = _agent_nodes(steps, stamps)
    g = mod.StateGraph(AgentState)
    g.add_node("llm", llm)
    g.add_node("tools", tools)
    g.add_edge(mod.START, "llm")
    g.add_conditional_edges("llm", route, ["tools", mod.END])
    g.add_edge("tools", "llm")
    return g.compile(checkpointer=checkpointer)


def floor_agent(steps: int, stamps: list[float]) -> dict:
    llm, tools, route = _agent_nodes(steps, stamps)
    state: dict = {"messages": [{"role": "user", "content": "go"}], "llm_calls": 0}
    node = llm
    while True:
        update = node(state)
        state = {**state, **update, "messages": state["messages"] + update["messages"]}
        if node is tools:
            node = llm
        elif route(state) == "tools":
            node = tools
        else:
            return state


def time_agent(
    build: Callable[[list[float]], Any], run: Callable[[Any], Any], steps: int, repeats: int
) -> dict[str, float]:
    """Time ``repeats`` runs of a graph built (compiled) once.

    ``us_per_step`` is the median time between consecutive node calls over every
    superstep of every run: the cost of one superstep, robust to the multi-millisecond
    preemptions a shared machine adds to a few of them. ``total_us_per_step`` is the
    median wall time of a whole ``invoke`` divided by the supersteps (it includes the
    per-invoke setup). ``early_us`` / ``late_us``: median superstep near step 10 and near
    the last step (flatness)."""
    stamps: list[float] = []
    graph = build(stamps)
    run(graph)  # warm-up (first-call caches, event loop)
    totals, gaps, early, late = [], [], [], []
    for _ in range(repeats):
        stamps.clear()
        gc.collect()
        run(graph)  # settle the allocator after the collection, then measure
        stamps.clear()
        started = clock()
        run(graph)
        total = clock() - started
        assert len(stamps) == steps, (len(stamps), steps)
        totals.append(total / steps * 1e6)
        run_gaps = [b - a for a, b in itertools.pairwise(stamps)]
        gaps.extend(run_gaps)
        early.extend(run_gaps[5:15])
        late.extend(run_gaps[-10:])
    return {
        "us_per_step": statistics.median(gaps) * 1e6,
        "total_us_per_step": statistics.median(totals),
        "early_us": statistics.median(early) * 1e6,
        "late_us": statistics.median(late) * 1e6,
    }


# ---------------------------------------------------------------------- (b) fan-out


def build_fanout(mod: Any, workers: int) -> Any:
    def plan(state: FanState) -> dict:
        return {"topics": list(range(workers))}

    def assign(state: FanState) -> list:
        return [mod_send(mod)("work", {"topic": t}) for t in state["topics"]]

    def work(state: WorkerState) -> dict:
        return {"completed": [state["topic"] * 2]}

    def reduce(state: FanState) -> dict:
        return {"report": str(sum(state["completed"]))}

    g = mod.StateGraph(FanState)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_node("reduce", reduce)
    g.add_edge(mod.START, "plan")
    g.add_conditional_edges("plan", assign, ["work"])
    g.add_edge("work", "reduce")
    return g.compile()


def mod_send(mod: Any) -> Any:
    return mod.Send if hasattr(mod, "Send") else importlib.import_module("langgraph.types").Send


class FloorFanout:
    """The same work as a plain function: the workers' updates concatenated, then summed."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def invoke(self, _: dict) -> dict:
        completed: list = []
        for t in range(self.workers):
            completed = [*completed, {"topic": t}["topic"] * 2]
        return {"report": str(sum(completed))}


def time_fanout(graph: Any, workers: int, repeats: int) -> float:
    """Median us per worker task of ``graph.invoke`` (compiled once, one warm-up run)."""
    expected = str(sum(t * 2 for t in range(workers)))
    graph.invoke({"topics": []})
    times = []
    for _ in range(repeats):
        gc.collect()
        started = clock()
        out = graph.invoke({"topics": []})
        times.append(clock() - started)
        assert out["report"] == expected
    return statistics.median(times) / workers * 1e6


# ---------------------------------------------------------------------- main


def section_a(lg: Any, steps: int, repeats: int) -> dict[str, Any]:
    def thread() -> dict:
        return {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": steps + 10}

    start = {"messages": [{"role": "user", "content": "go"}], "llm_calls": 0}
    out: dict[str, Any] = {
        "floor": time_agent(lambda s: s, lambda s: floor_agent(steps, s), steps, repeats),
        "loopwright": time_agent(
            lambda s: build_agent(lw, steps, s), lambda g: g.invoke(start, thread()), steps, repeats
        ),
    }
    if lg is not None:
        out["langgraph"] = time_agent(
            lambda s: build_agent(lg, steps, s), lambda g: g.invoke(start, thread()), steps, repeats
        )
    return out


def section_c(lg: Any, steps: int, repeats: int, tmp: str) -> dict[str, Any]:
    from loopwright.store import SQLiteStore

    start = {"messages": [{"role": "user", "content": "go"}], "llm_calls": 0}

    def thread() -> dict:
        return {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": steps + 10}

    store = SQLiteStore(os.path.join(tmp, "lw.db"))
    out: dict[str, Any] = {
        "loopwright": time_agent(
            lambda s: build_agent(lw, steps, s, store),
            lambda g: g.invoke(start, thread()),
            steps,
            repeats,
        )
    }
    store.close()
    if lg is not None:
        try:
            sqlite_saver = importlib.import_module("langgraph.checkpoint.sqlite").SqliteSaver
        except ImportError:
            print("  (langgraph-checkpoint-sqlite is not installed: LangGraph skipped in (c))")
            return out
        import sqlite3

        conn = sqlite3.connect(os.path.join(tmp, "lg.db"), check_same_thread=False)
        saver = sqlite_saver(conn)
        out["langgraph"] = time_agent(
            lambda s: build_agent(lg, steps, s, saver),
            lambda g: g.invoke(start, thread()),
            steps,
            repeats,
        )
        conn.close()
    return out


def _report_loop(name: str, figures: dict[str, Any]) -> None:
    floor = figures["floor"]["us_per_step"] if "floor" in figures else None
    print(f"[{name}]")
    for who, f in figures.items():
        overhead = "" if floor is None else f"  overhead {f['us_per_step'] - floor:8.2f}"
        print(
            f"  {who:11s} {f['us_per_step']:8.2f} us/superstep{overhead}  "
            f"whole invoke {f['total_us_per_step']:8.2f} us/superstep  "
            f"step~10 {f['early_us']:7.2f}  step~last {f['late_us']:7.2f} "
            f"(x{f['late_us'] / f['early_us']:.2f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    steps, workers = 201, 1000  # 101 llm + 100 tool supersteps: 200 hand-overs
    repeats = 3 if args.quick else 9
    lg = _langgraph()
    print(f"python {platform.python_version()} on {platform.machine()}, load {os.getloadavg()}")
    if lg is None:
        print("LangGraph is not installed: reporting loopwright alone (pip install langgraph)")
    a = section_a(lg, steps, repeats)
    _report_loop(f"a: 2-node agent loop, {steps} supersteps, median of {repeats}", a)
    b = {
        "floor": time_fanout(FloorFanout(workers), workers, 3 * repeats),
        "loopwright": time_fanout(build_fanout(lw, workers), workers, 3 * repeats),
    }
    if lg is not None:
        b["langgraph"] = time_fanout(build_fanout(lg, workers), workers, max(3, repeats // 3))
    print(f"[b: Send fan-out to {workers} workers + reduce, us per worker task]")
    for who, v in b.items():
        print(f"  {who:11s} {v:9.2f} us/task  (overhead {v - b['floor']:9.2f} us)")
    with tempfile.TemporaryDirectory() as tmp:
        c = section_c(lg, steps, max(3, repeats // 3), tmp)
    _report_loop(f"c: (a) with a SQLite checkpointer, {steps} supersteps", c)
    result: dict[str, Any] = {
        "benchmark": "graph",
        "langgraph": lg is not None,
        "load_avg_1m": os.getloadavg()[0],
        "a_us_per_superstep": round(a["loopwright"]["us_per_step"], 2),
        "a_total_us_per_superstep": round(a["loopwright"]["total_us_per_step"], 2),
        "a_overhead_us": round(a["loopwright"]["us_per_step"] - a["floor"]["us_per_step"], 2),
        "a_flatness": round(a["loopwright"]["late_us"] / a["loopwright"]["early_us"], 3),
        "b_us_per_task": round(b["loopwright"], 2),
        "c_us_per_superstep": round(c["loopwright"]["us_per_step"], 2),
        "c_flatness": round(c["loopwright"]["late_us"] / c["loopwright"]["early_us"], 3),
    }
    if lg is not None:
        fa = a["floor"]["us_per_step"]
        result["speedup"] = round(a["langgraph"]["us_per_step"] / a["loopwright"]["us_per_step"], 2)
        result["total_speedup"] = round(
            a["langgraph"]["total_us_per_step"] / a["loopwright"]["total_us_per_step"], 2
        )
        result["a_overhead_ratio"] = round(
            (a["langgraph"]["us_per_step"] - fa) / (a["loopwright"]["us_per_step"] - fa), 2
        )
        result["b_overhead_ratio"] = round(
            (b["langgraph"] - b["floor"]) / (b["loopwright"] - b["floor"]), 2
        )
        result["langgraph_a_flatness"] = round(
            a["langgraph"]["late_us"] / a["langgraph"]["early_us"], 3
        )
        if "langgraph" in c:
            result["c_speedup"] = round(
                c["langgraph"]["us_per_step"] / c["loopwright"]["us_per_step"], 2
            )
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
