"""Graph runs as OpenTelemetry spans: the invocation, a span per node, and the agent runs
inside nodes nested under their node (docs/tracing.md)."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from loopwright import Agent, Hooks, ScriptedModel
from loopwright.graph import END, START, StateGraph
from loopwright.tracing.graph_spans import GraphSpans
from loopwright.tracing.otel import OtelSubscriber


class State(TypedDict):
    answers: Annotated[list[str], operator.add]


def _by_name(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans}


def _parent(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def _span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


@pytest.mark.parametrize("mode", ["invoke", "stream"])
def test_nodes_nest_under_the_invocation_and_agent_runs_under_their_node(
    provider: TracerProvider, exporter: InMemorySpanExporter, mode: str
) -> None:
    subscriber = OtelSubscriber(provider)

    def make_node(name: str):  # type: ignore[no-untyped-def]
        agent = Agent(ScriptedModel([f"answer from {name}"]), hooks=Hooks(on_event=subscriber))

        def node(state: State) -> dict[str, list[str]]:  # a plain node: runs in a thread
            return {"answers": [agent.run("go").answer]}

        return node

    builder = StateGraph(State)
    # two plain nodes in one superstep run on the worker pool's threads
    builder.add_node("left", make_node("left"))
    builder.add_node("right", make_node("right"))

    async def join(state: State) -> dict[str, list[str]]:
        return {"answers": [f"{len(state['answers'])} answers"]}

    builder.add_node("join", join)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge("left", "join")
    builder.add_edge("right", "join")
    builder.add_edge("join", END)
    graph = builder.compile(name="fanout")
    config = {"tracer": GraphSpans(provider)}
    if mode == "invoke":
        out = graph.invoke({"answers": []}, config)
    else:
        *_, out = graph.stream({"answers": []}, config, stream_mode="values")
    assert out["answers"][-1] == "2 answers"
    assert subscriber.flush()

    spans = exporter.get_finished_spans()
    names = _by_name(spans)
    run = names["invoke_agent fanout"]
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "fanout"
    assert run.parent is None
    nodes = {n: names[f"node {n}"] for n in ("left", "right", "join")}
    for name, node in nodes.items():
        assert _parent(node) == _span_id(run), name
        assert node.attributes is not None and node.attributes["loopwright.graph.node"] == name
    assert nodes["left"].attributes["loopwright.graph.step"] == 1  # type: ignore[index]
    assert nodes["join"].attributes["loopwright.graph.step"] == 2  # type: ignore[index]
    agent_runs = [s for s in spans if s.name == "invoke_agent loopwright"]
    assert sorted(_parent(s) for s in agent_runs) == sorted(  # type: ignore[type-var]
        [_span_id(nodes["left"]), _span_id(nodes["right"])]
    )
    assert {s.context.trace_id for s in spans if s.context} == {run.context.trace_id}  # type: ignore[union-attr]


def test_a_failed_node_span_has_the_error_and_an_interrupt_is_not_one(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    from loopwright.graph import interrupt

    def ask(state: State) -> dict[str, list[str]]:
        return {"answers": [interrupt("which one?")]}

    def boom(state: State) -> dict[str, list[str]]:
        raise ValueError("no such thing")

    asking = StateGraph(State)
    asking.add_node("ask", ask)
    asking.add_edge(START, "ask")
    out = asking.compile(name="asking").invoke({"answers": []}, {"tracer": GraphSpans(provider)})
    assert out["__interrupt__"]
    failing = StateGraph(State)
    failing.add_node("boom", boom)
    failing.add_edge(START, "boom")
    with pytest.raises(ValueError, match="no such thing"):
        failing.compile(name="failing").invoke({"answers": []}, {"tracer": GraphSpans(provider)})

    names = _by_name(exporter.get_finished_spans())
    assert names["node ask"].status.status_code is StatusCode.UNSET
    boom_span = names["node boom"]
    assert boom_span.status.status_code is StatusCode.ERROR
    assert boom_span.attributes is not None
    assert boom_span.attributes["error.type"] == "ValueError"
    assert names["invoke_agent failing"].status.status_code is StatusCode.ERROR


def _asking_subgraph(checkpointer: object = None):  # type: ignore[no-untyped-def]
    """``outer`` whose node ``inner`` is a subgraph whose node ``ask`` interrupts."""
    from loopwright.graph import interrupt

    def ask(state: State) -> dict[str, list[str]]:
        return {"answers": [interrupt("which one?")]}

    inner = StateGraph(State)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    outer = StateGraph(State)
    outer.add_node("inner", inner.compile(name="inner"))
    outer.add_edge(START, "inner")
    return outer.compile(name="outer", checkpointer=checkpointer)


def test_a_subgraph_run_nests_under_its_node_and_its_interrupt_is_not_an_error(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    out = _asking_subgraph().invoke({"answers": []}, {"tracer": GraphSpans(provider)})
    assert out["__interrupt__"]

    names = _by_name(exporter.get_finished_spans())
    assert _parent(names["invoke_agent inner"]) == _span_id(names["node inner"])
    assert _parent(names["node ask"]) == _span_id(names["invoke_agent inner"])
    for name in ("invoke_agent outer", "node inner", "invoke_agent inner", "node ask"):
        assert names[name].status.status_code is StatusCode.UNSET, name


def test_a_checkpointed_subgraph_names_the_parents_thread_as_its_conversation(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    # the subgraph checkpoints under a namespace of its own; the trace's conversation
    # is still the thread the caller named
    from loopwright.store import MemoryStore

    graph = _asking_subgraph(MemoryStore())
    config = {"configurable": {"thread_id": "t-42"}, "tracer": GraphSpans(provider)}
    graph.invoke({"answers": []}, config)
    names = _by_name(exporter.get_finished_spans())
    for name in ("invoke_agent outer", "invoke_agent inner"):
        attributes = names[name].attributes
        assert attributes is not None and attributes["gen_ai.conversation.id"] == "t-42", name
