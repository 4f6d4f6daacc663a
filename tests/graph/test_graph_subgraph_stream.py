"""``stream(..., subgraphs=True)``: the chunks of subgraph runs, each with the namespace
of the run that produced it (``()`` for the top-level graph)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

from loopwright.graph import START, StateGraph, get_stream_writer


class Log(TypedDict):
    log: Annotated[list, operator.add]


def say(name: str) -> Any:
    def node(state: Log) -> dict:
        return {"log": [name]}

    node.__name__ = name
    return node


def _nested() -> Any:
    """top: pre -> mid(subgraph: m1 -> inner(subgraph: i1))"""
    inner = StateGraph(Log)
    inner.add_node("i1", say("i1"))
    inner.add_edge(START, "i1")
    mid = StateGraph(Log)
    mid.add_node("m1", say("m1"))
    mid.add_node("inner", inner.compile())
    mid.add_edge(START, "m1")
    mid.add_edge("m1", "inner")
    top = StateGraph(Log)
    top.add_node("pre", say("pre"))
    top.add_node("mid", mid.compile())
    top.add_edge(START, "pre")
    top.add_edge("pre", "mid")
    return top.compile()


def test_updates_of_every_level_come_with_their_namespace() -> None:
    chunks = list(_nested().stream({"log": []}, subgraphs=True))
    paths = [path for path, _ in chunks]
    updates = [update for _, update in chunks]
    assert updates == [
        {"pre": {"log": ["pre"]}},
        {"m1": {"log": ["m1"]}},
        {"i1": {"log": ["i1"]}},
        {"inner": {"log": ["pre", "m1", "i1"]}},
        {"mid": {"log": ["pre", "m1", "pre", "m1", "i1"]}},
    ]
    assert paths[0] == () and paths[-1] == ()
    assert len(paths[1]) == 1 and paths[1][0].startswith("mid:")
    assert len(paths[2]) == 2
    assert paths[2][0] == paths[1][0] and paths[2][1].startswith("inner:")
    assert paths[3] == paths[1]  # the inner run's result is an update of the middle graph


def test_without_subgraphs_only_the_top_level_streams() -> None:
    assert list(_nested().stream({"log": []})) == [
        {"pre": {"log": ["pre"]}},
        {"mid": {"log": ["pre", "m1", "pre", "m1", "i1"]}},
    ]


def test_several_modes_give_namespace_mode_and_chunk() -> None:
    chunks = list(_nested().stream({"log": []}, stream_mode=["values", "updates"], subgraphs=True))
    assert all(len(c) == 3 for c in chunks)
    inner_values = [chunk for path, mode, chunk in chunks if len(path) == 2 and mode == "values"]
    assert inner_values[-1] == {"log": ["pre", "m1", "i1"]}
    top_values = [chunk for path, mode, chunk in chunks if path == () and mode == "values"]
    assert top_values[-1]["log"][-1] == "i1"


def test_custom_chunks_written_inside_a_subgraph_reach_the_stream() -> None:
    def shout(state: Log) -> dict:
        get_stream_writer()({"progress": 0.5})
        return {"log": ["shout"]}

    child = StateGraph(Log)
    child.add_node("shout", shout)
    child.add_edge(START, "shout")
    top = StateGraph(Log)
    top.add_node("child", child.compile())
    top.add_edge(START, "child")
    app = top.compile()
    chunks = list(app.stream({"log": []}, stream_mode="custom", subgraphs=True))
    assert len(chunks) == 1
    path, chunk = chunks[0]
    assert chunk == {"progress": 0.5} and path[0].startswith("child:")
    assert list(app.stream({"log": []}, stream_mode="custom")) == []


def test_async_stream_with_subgraphs_matches_the_sync_one() -> None:
    async def collect() -> list:
        return [c async for c in _nested().astream({"log": []}, subgraphs=True)]

    got = asyncio.run(collect())
    assert [u for _, u in got] == [u for _, u in _nested().stream({"log": []}, subgraphs=True)]
