"""MCP both ways: MCP servers' tools as loopwright tools, and loopwright tools served
over MCP. Needs the ``mcp`` extra (``pip install "loopwright[mcp]"``); the SDK is imported
only when a session starts or a server is built. See ``docs/mcp.md``.
"""

from loopwright.mcp.config import MCPServerConfig, load_config
from loopwright.mcp.connection import MCPConnection
from loopwright.mcp.toolset import MCPToolset, mcp_tool

__all__ = ["MCPConnection", "MCPServerConfig", "MCPToolset", "load_config", "mcp_tool"]
