"""MCP both ways: MCP servers' tools, resources and prompts in loopwright, and loopwright
tools served over MCP. Needs the ``mcp`` extra (``pip install "loopwright[mcp]"``); the
SDK is imported only when a session starts or a server is built. See ``docs/mcp.md``.
"""

from loopwright.mcp.config import MCPServerConfig, load_config
from loopwright.mcp.connection import MCPConnection
from loopwright.mcp.prompts import MCPPrompt, PromptArgument, RenderedPrompt
from loopwright.mcp.resources import (
    MCPRequestError,
    MCPResource,
    MCPResourceTemplate,
    ResourceContent,
    ResourceRead,
)
from loopwright.mcp.toolset import MCPToolset, mcp_tool

__all__ = [
    "MCPConnection",
    "MCPPrompt",
    "MCPRequestError",
    "MCPResource",
    "MCPResourceTemplate",
    "MCPServerConfig",
    "MCPToolset",
    "PromptArgument",
    "RenderedPrompt",
    "ResourceContent",
    "ResourceRead",
    "load_config",
    "mcp_tool",
]
