"""A small MCP server (stdio, or streamable HTTP with ``--http PORT``) whose tools
misbehave on purpose: one exits the process mid-call, one never answers, one returns
megabytes, one answers with a reply that is not JSON-RPC. Used by the MCP client tests."""

from __future__ import annotations

import os
import sys

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

server = MCPServer("faulty")
WIRE = os.dup(1)
"""stdout as the client reads it (the SDK's stdio server moves fd 1 to stderr when it
starts, so a stray print cannot corrupt the stream; the garbling tools need it)."""


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return f"echo: {text} (pid {os.getpid()})"


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    import anyio

    await anyio.sleep(3600)
    return "unreachable"


@server.tool()
def huge(megabytes: int = 5) -> str:
    """Return a very large text."""
    return "0123456789abcdef" * (megabytes * 65536)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep (without blocking the server), then answer."""
    import anyio

    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named 'grown' and announce that the tool list changed."""

    def grown() -> str:
        """A tool that did not exist at connect time."""
        return "grown"

    server.add_tool(grown)
    await ctx.notify_tools_changed()
    return "added"


@server.tool()
async def garble(ctx: Context) -> str:
    """Answer with a reply that is not valid JSON-RPC (a list as result), then hang."""
    import json

    import anyio

    line = json.dumps({"jsonrpc": "2.0", "id": ctx.request_id, "result": [1, 2]})
    os.write(WIRE, line.encode() + b"\n")
    await anyio.sleep(3600)
    return "unreachable"


@server.tool()
def garbled_notice() -> str:
    """Send a notification that is not valid JSON-RPC, then answer normally."""
    os.write(WIRE, b'{"jsonrpc": "2.0", "method": 5}\n')
    return "answered"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
