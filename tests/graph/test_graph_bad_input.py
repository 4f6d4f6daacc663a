"""Wrong values given to the graph API: each is refused with an error naming the value
and the fix, at the call that took it (not a TypeError or AttributeError from deep
inside a run)."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from loopwright.graph import (
    START,
    GraphError,
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
