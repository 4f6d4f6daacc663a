"""A stdio MCP server whose one tool reports the trace context it runs in: the SDK
starts the server's span under the ``traceparent`` the client put in the request's
``_meta``, so the tool sees the caller's trace id (``0`` * 32 when none arrived)."""

from __future__ import annotations

from mcp.server import MCPServer
from opentelemetry import trace

server = MCPServer("traced")


@server.tool()
def where() -> str:
    """The current trace id and span id, in hex."""
    context = trace.get_current_span().get_span_context()
    return f"{context.trace_id:032x} {context.span_id:016x}"


if __name__ == "__main__":
    server.run()
