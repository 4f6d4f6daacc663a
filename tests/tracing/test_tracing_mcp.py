"""Trace context across the MCP client's own event-loop thread (docs/tracing.md)."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loopwright import Agent, Hooks, ScriptedModel, tool_call
from loopwright.core.messages import Message
from loopwright.providers.scripted import FunctionModel
from loopwright.tracing.otel import OtelSubscriber

pytest.importorskip("mcp", reason="needs the mcp extra: pip install -e '.[mcp]'")

from loopwright.mcp import MCPServerConfig, MCPToolset
from loopwright.mcp.connection import MCPConnection

HERE = Path(__file__).parent
TRACED = HERE / "servers" / "traced.py"
FAULTY = HERE.parent / "mcp" / "servers" / "faulty.py"


def _seen(answer: str) -> tuple[int, int]:
    """(trace id, span id) the traced server reported, from a tool result."""
    for line in answer.splitlines():
        parts = line.split()
        if len(parts) == 2 and len(parts[0]) == 32:
            return int(parts[0], 16), int(parts[1], 16)
    raise AssertionError(f"no trace context in {answer!r}")


def test_an_mcp_tool_call_joins_the_run_trace_on_the_server(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    subscriber = OtelSubscriber(provider)
    config = MCPServerConfig("traced", command=(sys.executable, str(TRACED)), timeout=30)
    seen: list[tuple[int, int]] = []
    with MCPToolset.connect([config]) as toolset:
        for _ in range(2):  # one session, two runs: each call carries its own run's trace
            model = ScriptedModel([[tool_call("where", {})], "ok"])
            agent = Agent(model, toolset.tools, hooks=Hooks(on_event=subscriber))
            result = agent.run("where are you?")
            tool_message = next(m for m in result.messages if m.role == "tool")
            seen.append(_seen(tool_message.parts[0].content))  # type: ignore[union-attr]
    assert subscriber.flush()
    runs = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent loopwright"]
    tools = [s for s in exporter.get_finished_spans() if s.name == "execute_tool where"]
    assert len(runs) == 2 and len(tools) == 2
    for (trace_id, span_id), run, tool in zip(seen, runs, tools, strict=True):
        assert run.context is not None and tool.context is not None
        # the server's span is a child of the tool call's span, in the run's trace
        assert trace_id == run.context.trace_id == tool.context.trace_id
        assert span_id == tool.context.span_id
        assert tool.parent is not None and tool.parent.span_id == run.context.span_id
    assert seen[0][0] != seen[1][0]


def test_concurrent_mcp_calls_each_parent_to_their_own_tool_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    subscriber = OtelSubscriber(provider)
    config = MCPServerConfig("traced", command=(sys.executable, str(TRACED)), timeout=30)
    calls = [tool_call("where", {}, id=f"call-{i}") for i in range(3)]
    current: list[int] = []  # the span current where the model is called, per call

    def reply(messages, request):  # type: ignore[no-untyped-def]
        current.append(trace.get_current_span().get_span_context().span_id)
        return Message("assistant", tuple(calls)) if len(current) == 1 else "ok"

    with MCPToolset.connect([config]) as toolset:
        agent = Agent(FunctionModel(reply), toolset.tools, hooks=Hooks(on_event=subscriber))
        result = agent.run("where are you?")  # one turn, three calls run concurrently
    assert subscriber.flush()
    [tool_message] = [m for m in result.messages if m.role == "tool"]
    seen = {p.call_id: _seen(p.content) for p in tool_message.tool_results_parts}
    spans = {
        s.attributes["gen_ai.tool.call.id"]: s  # type: ignore[index]
        for s in exporter.get_finished_spans()
        if s.name == "execute_tool where"
    }
    assert set(seen) == set(spans) == {"call-0", "call-1", "call-2"}
    for call_id, (trace_id, span_id) in seen.items():
        context = spans[call_id].context
        assert context is not None
        assert (trace_id, span_id) == (context.trace_id, context.span_id)
    run = next(s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent"))
    # after the tools the run span is current again (the next model call is not inside
    # a tool's span)
    assert run.context is not None and current == [run.context.span_id] * 2


async def test_the_session_does_not_keep_the_first_callers_trace_context(
    provider: TracerProvider,
) -> None:
    """The session's background work (its reader, the tools listing a ``list_changed``
    notification triggers) belongs to no run, even when a run's call opened it."""
    listed = threading.Event()
    contexts: list[trace.SpanContext] = []

    def on_tools(_tools: object) -> None:
        contexts.append(trace.get_current_span().get_span_context())
        listed.set()

    config = MCPServerConfig("faulty", command=(sys.executable, str(FAULTY)), timeout=30)
    connection = MCPConnection(config, on_tools=on_tools)
    tracer = provider.get_tracer("test")
    try:
        with tracer.start_as_current_span("first caller"):
            await connection.call_tool("grow", {})  # opens the session, announces a change
        assert await asyncio.to_thread(listed.wait, 30)
    finally:
        await connection.aclose()
    assert connection.sessions_started == 1
    assert not contexts[0].is_valid, "the refresh ran inside the first caller's span"
