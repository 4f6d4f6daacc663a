"""Building and running graphs: LangGraph programs with only the imports changed.

Each behaviour pinned here was compared with LangGraph 1.2 (its source and a run of the
same program): merge order, reducer defaults, recursion-limit counting, subgraph
handback, the updates stream order.
"""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from dataclasses import dataclass, field
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from loopwright.core import Message
from loopwright.core.errors import ConfigError
from loopwright.graph import (
    END,
    START,
    Command,
    GraphBuildError,
    GraphError,
    GraphRecursionError,
    InvalidUpdateError,
    Overwrite,
    RetryPolicy,
    Send,
    StateGraph,
    add_messages,
    get_stream_writer,
)


class Log(TypedDict):
    log: Annotated[list, operator.add]
    n: int


def say(name: str):
    def node(state: Log) -> dict:
        return {"log": [name]}

    node.__name__ = name
    return node


def test_linear_graph_overwrites_plain_keys_and_appends_reducer_keys() -> None:
    g = StateGraph(Log)
    g.add_node("a", lambda s: {"log": ["a"], "n": s["n"] + 1})
    g.add_node("b", lambda s: {"log": ["b"], "n": s["n"] * 10})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    assert g.compile().invoke({"log": ["in"], "n": 1}) == {"log": ["in", "a", "b"], "n": 20}


def test_add_sequence_chains_nodes_in_order() -> None:
    g = StateGraph(Log)
    g.add_sequence([say("one"), ("two", say("two")), say("three")])
    g.add_edge(START, "one")
    assert g.compile().invoke({"log": []})["log"] == ["one", "two", "three"]


def test_conditional_loop_until_condition() -> None:
    g = StateGraph(Log)
    g.add_node("inc", lambda s: {"n": s["n"] + 1, "log": [s["n"]]})
    g.add_edge(START, "inc")
    g.add_conditional_edges("inc", lambda s: "inc" if s["n"] < 4 else END)
    assert g.compile().invoke({"n": 0, "log": []}) == {"n": 4, "log": [0, 1, 2, 3]}


def test_path_map_renames_routes() -> None:
    g = StateGraph(Log)
    g.add_node("yes", say("yes"))
    g.add_node("no", say("no"))
    g.add_conditional_edges(START, lambda s: s["n"] > 0, {True: "yes", False: "no"})
    app = g.compile()
    assert app.invoke({"n": 1, "log": []})["log"] == ["yes"]
    assert app.invoke({"n": 0, "log": []})["log"] == ["no"]


def test_static_fan_out_merges_in_node_name_order_not_definition_order() -> None:
    # LangGraph sorts a superstep's tasks by path: edge-triggered nodes by name.
    g = StateGraph(Log)
    for name in ("a", "zeta", "beta", "m"):
        g.add_node(name, say(name))
    g.add_edge(START, "a")
    for name in ("zeta", "beta", "m"):
        g.add_edge("a", name)
    assert g.compile().invoke({"log": []})["log"] == ["a", "beta", "m", "zeta"]


def test_send_tasks_merge_after_edge_tasks_in_send_order() -> None:
    g = StateGraph(Log)
    g.add_node("a", say("a"))
    g.add_node("w", lambda arg: {"log": [arg["x"]]})
    g.add_node("b", say("b"))
    g.add_node("zz", say("zz"))
    g.add_edge(START, "a")
    g.add_conditional_edges(
        "a", lambda s: [Send("w", {"x": "s2"}), Send("w", {"x": "s1"}), "zz", "b"]
    )
    assert g.compile().invoke({"log": []})["log"] == ["a", "b", "zz", "s2", "s1"]


def test_send_map_reduce_gives_each_worker_its_own_input() -> None:
    class State(TypedDict):
        topics: list[str]
        results: Annotated[list, operator.add]
        report: str

    g = StateGraph(State)
    g.add_node("plan", lambda s: {"topics": ["x", "y", "z"]})
    g.add_node("work", lambda w: {"results": [w["topic"].upper()]})
    g.add_node("reduce", lambda s: {"report": "+".join(s["results"])})
    g.add_edge(START, "plan")
    g.add_conditional_edges(
        "plan", lambda s: [Send("work", {"topic": t}) for t in s["topics"]], ["work"]
    )
    g.add_edge("work", "reduce")
    out = g.compile().invoke({"topics": []})
    assert out["report"] == "X+Y+Z"


def test_fan_in_waits_for_every_source() -> None:
    g = StateGraph(Log)
    g.add_node("fast", say("fast"))
    g.add_node("slow1", say("slow1"))
    g.add_node("slow2", say("slow2"))
    g.add_node("join", lambda s: {"log": [f"join:{len(s['log'])}"]})
    g.add_edge(START, "fast")
    g.add_edge(START, "slow1")
    g.add_edge("slow1", "slow2")
    g.add_edge(["fast", "slow2"], "join")
    assert g.compile().invoke({"log": []})["log"] == ["fast", "slow1", "slow2", "join:3"]


def test_two_writes_to_a_plain_key_in_one_superstep_is_an_error() -> None:
    class State(TypedDict):
        v: int

    g = StateGraph(State)
    g.add_node("a", lambda s: {"v": 1})
    g.add_node("b", lambda s: {"v": 2})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    with pytest.raises(InvalidUpdateError, match="At key 'v': Can receive only one value per step"):
        g.compile().invoke({"v": 0})


def test_unset_reducer_keys_read_as_the_empty_value_of_their_type() -> None:
    class State(TypedDict):
        items: Annotated[list, operator.add]
        total: Annotated[int, operator.add]
        merged: Annotated[dict, lambda a, b: {**a, **b}]
        name: str

    seen: dict = {}
    g = StateGraph(State)
    g.add_node("n", lambda s: seen.update(s) or {"name": "x"})
    g.add_edge(START, "n")
    out = g.compile().invoke({})
    assert seen == {"items": [], "total": 0, "merged": {}}  # plain "name" is absent
    assert out == {"items": [], "total": 0, "merged": {}, "name": "x"}


def test_unknown_keys_in_an_update_are_ignored_and_non_dicts_rejected() -> None:
    class State(TypedDict):
        v: int

    g = StateGraph(State)
    g.add_node("a", lambda s: {"v": 1, "nope": 3})
    g.add_edge(START, "a")
    assert g.compile().invoke({"v": 0}) == {"v": 1}
    bad = StateGraph(State)
    bad.add_node("a", lambda s: 5)
    bad.add_edge(START, "a")
    with pytest.raises(InvalidUpdateError, match="Expected dict, got 5"):
        bad.compile().invoke({"v": 0})


def test_overwrite_bypasses_the_reducer() -> None:
    g = StateGraph(Log)
    g.add_node("reset", lambda s: {"log": Overwrite(["fresh"])})
    g.add_edge(START, "reset")
    assert g.compile().invoke({"log": ["old"]})["log"] == ["fresh"]


def test_command_goto_and_update_with_literal_annotation() -> None:
    def router(state: Log) -> Command[Literal["b", "c"]]:
        return Command(goto="c", update={"log": ["router"]})

    g = StateGraph(Log)
    g.add_node("router", router)
    g.add_node("b", say("b"))
    g.add_node("c", say("c"))
    g.add_edge(START, "router")
    app = g.compile()  # b and c are reachable only through the annotation
    assert app.invoke({"log": []})["log"] == ["router", "c"]
    assert "router -.-> b;" in app.get_graph().draw_mermaid()


def test_command_goto_send_and_list_of_nodes() -> None:
    def fan(state: Log) -> Command[Literal["w", "x"]]:
        return Command(goto=[Send("w", {"v": 1}), "x"])

    g = StateGraph(Log)
    g.add_node("fan", fan)
    g.add_node("w", lambda a: {"log": [f"w{a['v']}"]})
    g.add_node("x", say("x"))
    g.add_edge(START, "fan")
    assert g.compile().invoke({"log": []})["log"] == ["x", "w1"]


def test_subgraph_node_hands_back_its_whole_state_for_shared_keys() -> None:
    # LangGraph returns every shared key the subgraph holds, so an operator.add key gets
    # the parent's items again (add_messages de-duplicates by id instead).
    class Parent(TypedDict):
        log: Annotated[list, operator.add]
        shared: str

    class Child(TypedDict):
        log: Annotated[list, operator.add]
        shared: str
        private: int

    child = StateGraph(Child)
    child.add_node("s1", lambda s: {"log": ["s1"], "shared": s["shared"] + "+sub", "private": 7})
    child.add_edge(START, "s1")
    parent = StateGraph(Parent)
    parent.add_node("pre", lambda s: {"log": ["pre"], "shared": "p"})
    parent.add_node("sub", child.compile())
    parent.add_edge(START, "pre")
    parent.add_edge("pre", "sub")
    app = parent.compile()
    updates = list(app.stream({"log": ["in"]}, stream_mode="updates"))
    assert updates == [
        {"pre": {"log": ["pre"], "shared": "p"}},
        {"sub": {"log": ["in", "pre", "s1"], "shared": "p+sub"}},
    ]
    assert app.invoke({"log": ["in"]}) == {
        "log": ["in", "pre", "in", "pre", "s1"],
        "shared": "p+sub",
    }


def test_command_parent_from_a_subgraph_routes_the_parent() -> None:
    child = StateGraph(Log)
    child.add_node(
        "leave", lambda s: Command(graph=Command.PARENT, goto="done", update={"log": ["up"]})
    )
    child.add_edge(START, "leave")
    parent = StateGraph(Log)
    parent.add_node("sub", child.compile(), destinations=("done",))
    parent.add_node("done", say("done"))
    parent.add_edge(START, "sub")
    assert parent.compile().invoke({"log": []})["log"] == ["up", "done"]


def test_async_nodes_run_concurrently_and_stream_updates_in_finish_order() -> None:
    async def slow(state: Log) -> dict:
        await asyncio.sleep(0.05)
        return {"log": ["aslow"]}

    async def fast(state: Log) -> dict:
        return {"log": ["zfast"]}

    g = StateGraph(Log)
    g.add_node("aslow", slow)
    g.add_node("zfast", fast)
    g.add_edge(START, "aslow")
    g.add_edge(START, "zfast")
    app = g.compile()

    async def main() -> list:
        return [c async for c in app.astream({"log": []}, stream_mode=["updates", "values"])]

    chunks = asyncio.run(main())
    assert chunks == [
        ("values", {"log": []}),
        ("updates", {"zfast": {"log": ["zfast"]}}),
        ("updates", {"aslow": {"log": ["aslow"]}}),
        ("values", {"log": ["aslow", "zfast"]}),  # merged in name order all the same
    ]
    assert asyncio.run(app.ainvoke({"log": []}))["log"] == ["aslow", "zfast"]


def test_plain_nodes_of_one_superstep_run_on_threads_at_once() -> None:
    barrier = threading.Barrier(3, timeout=5)

    def meet(name: str):
        def node(state: Log) -> dict:
            barrier.wait()  # deadlocks (times out) unless all three run at the same time
            return {"log": [name]}

        return node

    g = StateGraph(Log)
    for name in ("x", "y", "z"):
        g.add_node(name, meet(name))
        g.add_edge(START, name)
    started = time.perf_counter()
    assert g.compile().invoke({"log": []})["log"] == ["x", "y", "z"]
    assert time.perf_counter() - started < 5


def test_recursion_limit_counts_supersteps_like_langgraph() -> None:
    def counter(steps: int):
        g = StateGraph(Log)
        g.add_node("inc", lambda s: {"n": s["n"] + 1})
        g.add_edge(START, "inc")
        g.add_conditional_edges("inc", lambda s: "inc" if s["n"] < steps else END)
        return g.compile()

    # a run needing k node supersteps needs recursion_limit >= k + 1
    for steps in (1, 3, 5):
        assert counter(steps).invoke({"n": 0}, {"recursion_limit": steps + 1})["n"] == steps
        with pytest.raises(GraphRecursionError, match=f"Recursion limit of {steps} reached"):
            counter(steps).invoke({"n": 0}, {"recursion_limit": steps})


def test_a_failing_node_leaves_no_partial_update() -> None:
    def boom(state: Log) -> dict:
        raise ValueError("boom")

    seen: list = []
    g = StateGraph(Log)
    g.add_node("ok", say("ok"))
    g.add_node("boom", boom)
    g.add_edge(START, "ok")
    g.add_edge(START, "boom")
    g.add_node("after", lambda s: seen.append(s) or {})
    g.add_edge("ok", "after")
    with pytest.raises(ValueError, match="boom"):
        g.compile().invoke({"log": []})
    assert seen == []


def test_a_failing_branch_function_raises_before_the_superstep_commits() -> None:
    def route(state: Log) -> str:
        raise KeyError("route")

    g = StateGraph(Log)
    g.add_node("a", say("a"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", route, ["a"])
    values = []
    with pytest.raises(KeyError):
        for chunk in g.compile().stream({"log": []}, stream_mode="values"):
            values.append(chunk)
    assert values == [{"log": []}]  # the superstep of "a" was never published


def test_dataclass_and_pydantic_states_reach_nodes_as_objects() -> None:
    @dataclass
    class D:
        x: int = 0
        items: Annotated[list, operator.add] = field(default_factory=list)

    class P(BaseModel):
        x: int = 0
        items: Annotated[list, operator.add] = []

    for schema in (D, P):
        got: list = []

        def node(s, got=got):
            got.append(s)
            return {"x": s.x + 1, "items": ["a"]}

        g = StateGraph(schema)
        g.add_node("a", node)
        g.add_edge(START, "a")
        assert g.compile().invoke({"x": 1}) == {"x": 2, "items": ["a"]}
        assert isinstance(got[0], schema) and got[0].items == []


def test_a_returned_pydantic_state_writes_its_fields() -> None:
    class P(BaseModel):
        x: int = 0
        items: Annotated[list, operator.add] = []

    g = StateGraph(P)
    g.add_node("a", lambda s: P(x=9))
    g.add_edge(START, "a")
    assert g.compile().invoke({"x": 1, "items": [1]}) == {"x": 9, "items": [1]}


class Topic(TypedDict):
    topic: str
    out: Annotated[list, operator.add]


class Private(TypedDict):
    topic: str
    note: str


def test_node_with_its_own_input_schema_and_config_parameter() -> None:
    # annotations resolve only for module-level classes (as in LangGraph)
    def first(state: Topic) -> dict:
        return {"note": state["topic"] + "!"}

    def second(state: Private, config: dict) -> dict:
        return {"out": [state["note"], config["configurable"]["who"]]}

    g = StateGraph(Topic)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    out = g.compile().invoke({"topic": "t"}, {"configurable": {"who": "me"}})
    assert out == {"topic": "t", "out": ["t!", "me"]}  # "note" is not an output key


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda g: g.add_edge(START, "ghost"), "unknown node 'ghost'"),
        (lambda g: g.add_edge("a", "b"), "no entry point"),
        (
            lambda g: (g.add_edge(START, "a"), g.add_node("lost", say("lost"))),
            "'lost' cannot be reached",
        ),
        (
            lambda g: (
                g.add_edge(START, "a"),
                g.add_conditional_edges("a", lambda s: "x", ["nowhere"]),
            ),
            "unknown node 'nowhere'",
        ),
    ],
)
def test_compile_rejects_invalid_graphs_with_clear_errors(build, message: str) -> None:
    g = StateGraph(Log)
    g.add_node("a", say("a"))
    g.add_node("b", say("b"))
    g.add_edge("a", "b") if message != "no entry point" else None
    build(g)
    with pytest.raises(GraphBuildError, match=message):
        g.compile()


def test_builder_rejects_reserved_and_duplicate_names() -> None:
    g = StateGraph(Log)
    g.add_node("a", say("a"))
    with pytest.raises(GraphBuildError, match="already exists"):
        g.add_node("a", say("a"))
    with pytest.raises(GraphBuildError, match="reserved"):
        g.add_node(END, say("x"))
    with pytest.raises(GraphBuildError, match="START cannot be the end"):
        g.add_edge("a", START)


def test_branch_returning_an_unknown_node_fails_clearly() -> None:
    g = StateGraph(Log)
    g.add_node("a", say("a"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "ghost")
    with pytest.raises(InvalidUpdateError, match="unknown node 'ghost'"):
        g.compile().invoke({"log": []})


def test_mermaid_diagram() -> None:
    g = StateGraph(Log)
    g.add_node("llm", say("llm"))
    g.add_node("tools", say("tools"))
    g.add_edge(START, "llm")
    g.add_conditional_edges("llm", lambda s: END, {"continue": "tools", "stop": END})
    g.add_edge("tools", "llm")
    text = g.compile().get_graph().draw_mermaid()
    assert "graph TD;" in text
    assert "\t__start__ --> llm;" in text
    assert "\tllm -. &nbsp;continue&nbsp; .-> tools;" in text
    assert "\tllm -. &nbsp;stop&nbsp; .-> __end__;" in text
    assert "\ttools --> llm;" in text


def test_stream_events_mode_reports_tasks() -> None:
    g = StateGraph(Log)
    g.add_node("a", say("a"))
    g.add_edge(START, "a")
    events = list(g.compile().stream({"log": []}, stream_mode="events"))
    assert [e.type for e in events] == [
        "step_finished",  # superstep 0 applied the input; "a" is next
        "task_started",
        "task_finished",
        "step_finished",
    ]
    assert (events[0].step, events[0].next) == (0, ("a",))
    assert (events[1].node, events[2].update) == ("a", {"log": ["a"]})
    assert (events[3].step, events[3].next) == (1, ())


def test_invoke_inside_a_running_event_loop_from_a_sync_node() -> None:
    inner = StateGraph(Log)
    inner.add_node("i", say("inner"))
    inner.add_edge(START, "i")
    inner_app = inner.compile()
    outer = StateGraph(Log)
    outer.add_node("o", lambda s: {"log": inner_app.invoke({"log": []})["log"]})
    outer.add_edge(START, "o")
    assert outer.compile().invoke({"log": []})["log"] == ["inner"]


class Question(TypedDict):
    question: str


class Answer(TypedDict):
    answer: str


class Whole(TypedDict):
    question: str
    scratch: str
    answer: str


def test_input_and_output_schemas_filter_what_goes_in_and_out() -> None:
    g = StateGraph(Whole, input_schema=Question, output_schema=Answer)
    g.add_node("think", lambda s: {"scratch": s["question"] + "?", "answer": "42"})
    g.add_edge(START, "think")
    out = g.compile().invoke({"question": "life", "answer": "ignored", "scratch": "x"})
    assert out == {"answer": "42"}


def test_unsupported_langgraph_options_fail_instead_of_being_ignored() -> None:
    g = StateGraph(Log)
    g.add_node("a", say("a"))
    g.add_edge(START, "a")
    with pytest.raises(GraphError, match="cache"):
        g.compile(cache=object())
    with pytest.raises(GraphError, match="cache_policy"):
        g.add_node("b", say("b"), cache_policy=object())
    app = g.compile(debug=False)
    with pytest.raises(GraphError, match="durability='exit' is not supported"):
        app.invoke({"log": []}, durability="exit")
    assert app.invoke({"log": []}, durability="sync") == {"log": ["a"]}


def _abc() -> StateGraph:
    g = StateGraph(Log)
    for name in ("a", "b", "c"):
        g.add_node(name, say(name))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    return g


def test_interrupt_before_works_without_a_checkpointer() -> None:
    assert _abc().compile(interrupt_before=["b"]).invoke({"log": []}) == {"log": ["a"]}
    with pytest.raises(GraphBuildError, match="interrupt node 'zz' not found"):
        _abc().compile(interrupt_before=["zz"])


def test_retry_policy_retries_transient_failures_only() -> None:
    calls = {"flaky": 0, "typo": 0, "async": 0}

    def flaky(state: Log) -> dict:
        calls["flaky"] += 1
        if calls["flaky"] < 3:
            raise ConnectionError("reset")
        return {"log": ["flaky ok"]}

    def typo(state: Log) -> dict:
        calls["typo"] += 1
        raise ValueError("a bug, not a transient failure")

    async def picky(state: Log) -> dict:
        calls["async"] += 1
        raise KeyError("always")

    fast = RetryPolicy(initial_interval=0, jitter=False)
    g = StateGraph(Log)
    g.add_node("flaky", flaky, retry_policy=fast)
    g.add_edge(START, "flaky")
    assert g.compile().invoke({"log": []})["log"] == ["flaky ok"] and calls["flaky"] == 3
    g = StateGraph(Log)
    g.add_node("typo", typo, retry_policy=fast)
    g.add_edge(START, "typo")
    with pytest.raises(ValueError):
        g.compile().invoke({"log": []})
    assert calls["typo"] == 1  # LangGraph's default retry_on skips programming errors
    g = StateGraph(Log)
    g.add_node(
        "picky",
        picky,
        retry_policy=[RetryPolicy(max_attempts=2, initial_interval=0, retry_on=KeyError)],
    )
    g.add_edge(START, "picky")
    with pytest.raises(KeyError):
        g.compile().invoke({"log": []})
    assert calls["async"] == 2
    assert (
        RetryPolicy(initial_interval=1, backoff_factor=3, max_interval=5, jitter=False).delay(3)
        == 5
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_attempts", 0),
        ("max_attempts", "3"),
        ("initial_interval", -1),
        ("max_interval", float("nan")),
        ("backoff_factor", 0),
        ("jitter", "no"),
        ("retry_on", 5),
        ("retry_on", (ValueError, "KeyError")),
    ],
)
def test_a_retry_policy_refuses_bad_settings_when_written(field: str, value: object) -> None:
    # was: accepted, then a TypeError from the retry loop when a node first failed
    # (max_attempts "3", retry_on 5) or a policy that never retried (max_attempts 0)
    with pytest.raises(ConfigError, match=f"RetryPolicy.{field} must be"):
        RetryPolicy(**{field: value})  # type: ignore[arg-type]


def test_stopping_a_stream_early_stops_the_run() -> None:
    ran: list[int] = []
    g = StateGraph(Log)
    g.add_node("inc", lambda s: ran.append(s["n"]) or {"n": s["n"] + 1})
    g.add_edge(START, "inc")
    g.add_conditional_edges("inc", lambda s: "inc")
    app = g.compile()
    for chunk in app.stream({"n": 0, "log": []}, {"recursion_limit": 1000}):
        if chunk["inc"]["n"] == 3:
            break
    assert ran == [0, 1, 2]


class ChatState(TypedDict):
    messages: Annotated[list, add_messages]


def test_a_subgraph_handing_back_messages_does_not_duplicate_them() -> None:
    child = StateGraph(ChatState)
    child.add_node("reply", lambda s: {"messages": [Message.assistant("from child")]})
    child.add_edge(START, "reply")
    parent = StateGraph(ChatState)
    parent.add_node("greet", lambda s: {"messages": [Message.assistant("hello")]})
    parent.add_node("child", child.compile())
    parent.add_edge(START, "greet")
    parent.add_edge("greet", "child")
    out = parent.compile().invoke({"messages": ["hi"]})
    assert [m.text for m in out["messages"]] == ["hi", "hello", "from child"]


def test_custom_stream_mode_carries_what_nodes_write() -> None:
    def work(state: Log) -> dict:
        write = get_stream_writer()
        for pct in (50, 100):
            write({"progress": pct})
        return {"log": ["done"]}

    g = StateGraph(Log)
    g.add_node("work", work)
    g.add_edge(START, "work")
    app = g.compile()
    assert list(app.stream({"log": []}, stream_mode="custom")) == [
        {"progress": 50},
        {"progress": 100},
    ]
    assert list(app.stream({"log": []}, stream_mode=["custom", "updates"])) == [
        ("custom", {"progress": 50}),
        ("custom", {"progress": 100}),
        ("updates", {"work": {"log": ["done"]}}),
    ]
    assert app.invoke({"log": []}) == {"log": ["done"]}  # nobody streams: the writer is a no-op


def test_a_bare_command_annotation_may_reach_any_node() -> None:
    def jump(state: Log) -> Command:
        return Command(goto="x")

    g = StateGraph(Log)
    g.add_node("jump", jump)
    g.add_node("x", say("x"))
    g.add_edge(START, "jump")
    assert g.compile().invoke({"log": []})["log"] == ["x"]  # "x" counts as reachable

    def unannotated(state: Log):  # type: ignore[no-untyped-def]
        return Command(goto="x")

    g = StateGraph(Log)
    g.add_node("jump", unannotated)
    g.add_node("x", say("x"))
    g.add_edge(START, "jump")
    with pytest.raises(GraphBuildError, match="'x' cannot be reached"):
        g.compile()
    g.nodes.clear()
    g.add_node("jump", unannotated, destinations=("x",))
    g.add_node("x", say("x"))
    assert g.compile().invoke({"log": []})["log"] == ["x"]
