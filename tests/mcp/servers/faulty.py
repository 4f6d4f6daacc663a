"""A small MCP server (stdio, or streamable HTTP with ``--http PORT``) whose tools
misbehave on purpose: one exits the process mid-call, one never answers, one returns
megabytes. Used by the MCP client tests."""

from __future__ import annotations

import os
import sys
import time

from mcp.server import MCPServer

server = MCPServer("faulty")


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
def slow(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return f"slept {seconds}"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
