"""A thread checkpointed by one version of a graph, read or resumed by another: what
changed is named, with what to do, instead of a KeyError or an error naming nothing."""

from __future__ import annotations

import operator
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from loopwright.graph import START, GraphError, StateGraph


class Added(TypedDict):
    log: Annotated[list, operator.add]


class Plain(TypedDict):
    log: list


def first_version(store: Any) -> Any:
    g = StateGraph(Added)
    g.add_node("a", lambda state: {"log": ["a"]})
    g.add_node("b", lambda state: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile(checkpointer=store, interrupt_before=["b"])


def test_a_key_that_lost_its_reducer_is_named(store: Any, thread: dict) -> None:
    first_version(store).invoke({"log": ["in"]}, thread)
    g = StateGraph(Plain)
    g.add_node("a", lambda state: {"log": ["a"]})
    g.add_node("b", lambda state: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    changed = g.compile(checkpointer=store)
    for call in (
        lambda: changed.get_state(thread),
        lambda: list(changed.get_state_history(thread)),
        lambda: changed.invoke(None, thread),
    ):
        with pytest.raises(GraphError) as caught:
            call()
        message = str(caught.value)
        assert "'log'" in message and "reducer" in message
        assert thread["configurable"]["thread_id"] in message


def test_a_pending_node_the_graph_no_longer_has_is_named(store: Any, thread: dict) -> None:
    first_version(store).invoke({"log": []}, thread)
    g = StateGraph(Added)
    g.add_node("a", lambda state: {"log": ["a"]})
    g.add_node("c", lambda state: {"log": ["c"]})
    g.add_edge(START, "a")
    g.add_edge("a", "c")
    changed = g.compile(checkpointer=store)
    with pytest.raises(GraphError) as caught:
        changed.invoke(None, thread)
    message = str(caught.value)
    assert "'b'" in message and thread["configurable"]["thread_id"] in message
    assert "as_node" in message  # the way out: choose what runs next
    changed.update_state(thread, {"log": ["skip"]}, as_node="a")
    assert changed.invoke(None, thread) == {"log": ["a", "skip", "c"]}


@dataclass(frozen=True)
class Spot:
    x: int
    y: int


class Spots(TypedDict):
    spot: Spot


@dataclass(frozen=True)
class RenamedSpot:
    x: int
    z: int


def test_a_state_class_whose_fields_changed_is_named(
    store: Any, thread: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = StateGraph(Spots)
    g.add_node("a", lambda state: {"spot": Spot(1, 2)})
    g.add_edge(START, "a")
    g.compile(checkpointer=store).invoke({"spot": Spot(0, 0)}, thread)
    # the class the checkpoint names is now another one (its field y became z)
    monkeypatch.setattr(sys.modules[__name__], "Spot", RenamedSpot)
    g2 = StateGraph(Spots)
    g2.add_node("a", lambda state: {"spot": RenamedSpot(1, 2)})
    g2.add_edge(START, "a")
    with pytest.raises(GraphError) as caught:
        g2.compile(checkpointer=store).get_state(thread)
    message = str(caught.value)
    assert f"{__name__}:Spot" in message and "'y'" in message and "field" in message
