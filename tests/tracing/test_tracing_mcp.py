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
        # the server's span is a child of the run span, in the run's trace
        assert trace_id == run.context.trace_id == tool.context.trace_id
        assert span_id == run.context.span_id
    assert seen[0][0] != seen[1][0]


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
