"""Wrong values given to the graph API: each is refused with an error naming the value
and the fix, at the call that took it (not a TypeError or AttributeError from deep
inside a run)."""

from __future__ import annotations

import operator
import warnings
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from loopwright.graph import (
    START,
    Command,
    GraphBuildError,
    GraphError,
    InvalidUpdateError,
    Send,
    StateGraph,
)


class Log(TypedDict):
    log: Annotated[list, operator.add]


def one_node(fn: Any, **kw: Any) -> Any:
    g = StateGraph(Log)
    g.add_node("a", fn, **kw)
    g.add_node("b", lambda state: {"log": ["b"]})
    g.add_edge(START, "a")
    return g.compile()


@pytest.mark.parametrize(
    ("config", "named"),
    [("thread-1", "config"), (["x"], "config"), ({"configurable": "t1"}, 'config["configurable"]')],
)
def test_a_config_that_is_not_a_dict(config: Any, named: str) -> None:
    app = one_node(lambda state: {"log": ["a"]}, destinations=("b",))
    with pytest.raises(GraphError) as caught:
        app.invoke({"log": []}, config)
    assert named in str(caught.value) and "thread_id" in str(caught.value)


@pytest.mark.parametrize("mode", [5, None, {"values"}])
def test_a_stream_mode_that_is_not_a_name_or_a_list(mode: Any) -> None:
    app = one_node(lambda state: {"log": ["a"]}, destinations=("b",))
    with pytest.raises(GraphError) as caught:
        list(app.stream({"log": []}, stream_mode=mode))
    assert "stream_mode" in str(caught.value) and "values" in str(caught.value)


@pytest.mark.parametrize(
    ("command", "named"),
    [
        (Command(goto=5), "Command(goto=...)"),
        (Command(goto=None), "Command(goto=...)"),  # type: ignore[arg-type]
        (Command(goto=["b", 3]), "Command(goto=...)"),
        (Command(update=[1, 2]), "Command(update=...)"),
        (Command(goto=Send("nowhere", {})), "'nowhere'"),
    ],
)
def test_a_command_of_the_wrong_shape_names_the_node(command: Command[Any], named: str) -> None:
    app = one_node(lambda state: command, destinations=("b",))
    with pytest.raises(InvalidUpdateError) as caught:
        app.invoke({"log": []})
    assert named in str(caught.value) and "'a'" in str(caught.value)


def test_a_plain_node_returning_a_coroutine_is_told_to_be_async() -> None:
    async def update(state: Log) -> dict:
        return {"log": ["a"]}

    app = one_node(lambda state: update(state), destinations=("b",))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the coroutine is closed, not left un-awaited
        with pytest.raises(InvalidUpdateError) as caught:
            app.invoke({"log": []})
    assert "'a'" in str(caught.value) and "async def" in str(caught.value)


def test_building_refuses_values_that_would_fail_only_when_the_graph_runs() -> None:
    g = StateGraph(Log)
    g.add_node("a", lambda state: {})
    with pytest.raises(GraphBuildError, match=r"add_conditional_edges\('a', path\).*function"):
        g.add_conditional_edges("a", "b")  # type: ignore[arg-type]
    with pytest.raises(GraphBuildError, match=r"destinations=.*\('bc',\)"):
        g.add_node("c", lambda state: {}, destinations="bc")
    with pytest.raises(GraphBuildError, match=r"retry_policy=.*RetryPolicy"):
        g.add_node("d", lambda state: {}, retry_policy=5)  # type: ignore[arg-type]
    with pytest.raises(GraphBuildError, match=r"retry_policy=.*RetryPolicy"):
        g.add_node("e", lambda state: {}, retry_policy=[5])  # type: ignore[list-item]


@pytest.mark.parametrize("returned", [None, START, {"a": 1}, 2.5])
def test_a_conditional_edge_returning_no_node_names_the_edge(returned: Any) -> None:
    def route(state: Log) -> Any:
        return returned

    g = StateGraph(Log)
    g.add_node("a", lambda state: {"log": ["a"]})
    g.add_edge(START, "a")
    g.add_conditional_edges("a", route)
    with pytest.raises(InvalidUpdateError) as caught:
        g.compile().invoke({"log": []})
    message = str(caught.value)
    assert "'route'" in message and "'a'" in message and "node name" in message


def test_a_node_that_swallows_its_interrupt_is_named() -> None:
    # interrupt() pauses by raising; a node catching every Exception around it used to
    # carry on as if the person had answered, and the run never paused
    from loopwright.graph import interrupt
    from loopwright.store import MemoryStore

    def careless(state: Log) -> dict:
        try:
            answer = interrupt("approve?")
        except Exception:
            answer = "no answer"
        return {"log": [answer]}

    g = StateGraph(Log)
    g.add_node("careless", careless)
    g.add_edge(START, "careless")
    app = g.compile(checkpointer=MemoryStore())
    with pytest.raises(GraphError) as caught:
        app.invoke({"log": []}, {"configurable": {"thread_id": "swallowed"}})
    message = str(caught.value)
    assert "'careless'" in message and "interrupt()" in message and "except" in message


def test_a_retried_node_gets_its_answers_again() -> None:
    # each attempt of a node runs from its start: its interrupt() calls are matched to
    # the answers from the first again (the count ran on across attempts, so the retry
    # asked the person a second time)
    from loopwright.graph import RetryPolicy, interrupt
    from loopwright.store import MemoryStore

    attempts: list[str] = []

    def flaky(state: Log) -> dict:
        answer = interrupt("approve?")
        attempts.append(answer)
        if len(attempts) == 1:
            raise ConnectionError("the service blinked")
        return {"log": [answer]}

    g = StateGraph(Log)
    policy = RetryPolicy(initial_interval=0, jitter=False, retry_on=ConnectionError)
    g.add_node("flaky", flaky, retry_policy=policy)
    g.add_edge(START, "flaky")
    app = g.compile(checkpointer=MemoryStore())
    config = {"configurable": {"thread_id": "retried"}}
    assert "__interrupt__" in app.invoke({"log": []}, config)
    assert app.invoke(Command(resume="yes"), config) == {"log": ["yes"]}
    assert attempts == ["yes", "yes"]


def test_a_cycle_without_exit_names_the_nodes_still_running() -> None:
    from loopwright.graph import GraphRecursionError

    g = StateGraph(Log)
    g.add_node("ping", lambda state: {"log": ["ping"]})
    g.add_node("pong", lambda state: {"log": ["pong"]})
    g.add_edge(START, "ping")
    g.add_edge("ping", "pong")
    g.add_edge("pong", "ping")
    with pytest.raises(GraphRecursionError) as caught:
        g.compile().invoke({"log": []}, {"recursion_limit": 6})
    message = str(caught.value)
    assert "Recursion limit of 6 reached" in message and "'ping'" in message
    assert "recursion_limit" in message


@dataclass
class Named:
    count: int
    name: str


class Counted(BaseModel):
    count: int = 0


def test_a_state_its_class_cannot_be_built_from_names_the_class_and_the_fix() -> None:
    # was: "D.__init__() missing 1 required positional argument" / a bare ValidationError
    g = StateGraph(Named)
    g.add_node("a", lambda state: {"count": 2})
    g.add_edge(START, "a")
    with pytest.raises(InvalidUpdateError) as caught:
        g.compile().invoke({"count": 1})
    message = str(caught.value)
    assert "Named" in message and "'name'" in message and "default" in message

    p = StateGraph(Counted)
    p.add_node("a", lambda state: {"count": "many"})
    p.add_node("b", lambda state: {"count": state.count + 1})
    p.add_edge(START, "a")
    p.add_edge("a", "b")
    with pytest.raises(InvalidUpdateError) as caught:
        p.compile().invoke({"count": 1})
    assert "Counted" in str(caught.value) and "count" in str(caught.value)


@pytest.mark.parametrize("limit", [-1, "3", 2.5, True])
def test_a_history_limit_that_is_no_count_is_named(limit: Any) -> None:
    # was: -1 gave an empty history, "3" a TypeError from the comparison
    from loopwright.store import MemoryStore

    g = StateGraph(Log)
    g.add_node("a", lambda state: {"log": ["a"]})
    g.add_edge(START, "a")
    app = g.compile(checkpointer=MemoryStore())
    config = {"configurable": {"thread_id": "history"}}
    app.invoke({"log": []}, config)
    with pytest.raises(GraphError, match=r"get_state_history\(limit=\.\.\.\)"):
        list(app.get_state_history(config, limit=limit))
    assert len(list(app.get_state_history(config, limit=2))) == 2
