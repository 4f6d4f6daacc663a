"""MCP servers' tools (and resources) for commands that run agents (``loopwright run --mcp``) and for
``loopwright mcp tools``. See docs/mcp.md."""

from __future__ import annotations

import atexit
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from loopwright.core.errors import ConfigError, UserError
from loopwright.loop import Agent

_CONFIG_SUFFIXES = (".json", ".yaml", ".yml")


def server_configs(values: Iterable[str]) -> list[Any]:
    """``--mcp`` values as server configs: a config file (every server in it),
    ``FILE#NAME`` (one), an http(s) URL, or a command line."""
    from loopwright.mcp import MCPServerConfig, load_config

    out: list[MCPServerConfig] = []
    for value in values:
        path, _, name = value.partition("#")
        if path.endswith(_CONFIG_SUFFIXES) and Path(path).is_file():
            servers = load_config(path)
            if name and name not in servers:
                known = ", ".join(servers)
                raise ConfigError(f"{path} has no MCP server named {name!r}; it has: {known}")
            out.extend([servers[name]] if name else servers.values())
        else:
            out.append(MCPServerConfig.parse(value))
    return out


def recipe_values(values: Iterable[str]) -> tuple[str, ...]:
    """``--mcp`` values as a session's recipe keeps them: a config file's path made
    absolute (so ``resume`` from another folder reads the same file), the rest as given.
    Each value is parsed now, so a bad one (an unknown server name) fails before the run."""
    out: list[str] = []
    for value in values:
        path, sep, name = value.partition("#")
        if path.endswith(_CONFIG_SUFFIXES) and Path(path).is_file():
            value = f"{Path(path).resolve()}{sep}{name}"
        out.append(value)
    server_configs(out)
    return tuple(out)


def attach_mcp(agent: Agent, values: Sequence[str]) -> Agent:
    """Add every tool of the ``--mcp`` servers to ``agent``'s registry (and
    ``read_resource`` when a server lists resources) and keep it current while the
    process runs; the sessions end when it exits."""
    from loopwright.mcp import MCPToolset

    need_sdk()
    toolset = MCPToolset.connect(server_configs(values))
    atexit.register(toolset.close)
    toolset.attach(agent.tools, resources=True)
    return agent


def need_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise UserError("MCP needs the mcp extra: pip install 'loopwright[mcp]'") from None
