"""``loopwright mcp``: serve tools over MCP, list an MCP server's tools. (``loopwright
run --mcp`` is :mod:`loopwright.cli.mcp_tools`.) See docs/mcp.md."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import click

from loopwright.cli.agents import import_ref
from loopwright.cli.mcp_tools import need_sdk, server_configs
from loopwright.cli.options import NonEmptyPath
from loopwright.cli.output import Painted, say
from loopwright.core.errors import UserError
from loopwright.core.text import to_json
from loopwright.tools import Tool, ToolRegistry
from loopwright.tools.builtin import BUILTIN_TOOLS, OPT_IN_TOOLS, BuiltinConfig, make_tools


def load_registry(spec: str) -> ToolRegistry:
    """``module:attribute`` naming a ToolRegistry, an iterable of tools, or a callable
    returning either."""
    value = import_ref(spec, "--registry")
    if callable(value) and not isinstance(value, (ToolRegistry, Tool)):
        try:
            value = value()
        except Exception as exc:
            raise UserError(f"--registry {spec!r}: the factory raised {exc!r}") from None
    if isinstance(value, ToolRegistry):
        return value
    try:
        return ToolRegistry(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise UserError(
            f"--registry {spec!r} is not a registry or a list of tools ({exc})"
        ) from None


def _selected(registry: ToolRegistry, names: str | None) -> ToolRegistry:
    if names is None:
        return registry
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    missing = [n for n in wanted if n not in registry]
    if missing:
        raise UserError(
            f"unknown tool(s) {', '.join(missing)}; have: {', '.join(registry.names())}"
        )
    return ToolRegistry(t for t in registry if t.name in wanted)


@click.group("mcp")
def mcp_group() -> None:
    """MCP: serve loopwright tools to any MCP client, or inspect an MCP server.

    \b
    Examples:
      loopwright mcp serve --tools calculator,get_weather
      loopwright mcp serve --http 8000 --registry myapp.tools:registry
      loopwright mcp tools mcp-server-time
    """


@mcp_group.command("serve")
@click.option(
    "--tools", "names", default=None, help="Comma-separated tools to expose (default: all)."
)
@click.option(
    "--registry",
    default=None,
    metavar="MODULE:ATTR",
    help="Serve this registry instead of the built-ins (a ToolRegistry or list of tools).",
)
@click.option(
    "--http",
    "port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Serve streamable HTTP on this port.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option(
    "--permission",
    type=click.Choice(["read", "write", "admin"]),
    default="read",
    show_default=True,
    help="Highest tool permission a client may use (higher tools are not exposed).",
)
@click.option(
    "--confirm",
    type=click.Choice(["hide", "elicit"]),
    default="hide",
    show_default=True,
    help="Tools needing confirmation: not exposed (hide), or asked via MCP elicitation.",
)
@click.option(
    "--root",
    type=NonEmptyPath(file_okay=False, path_type=Path),
    default=None,
    help="read_file's root directory (default: the working directory).",
)
def serve_command(names: str | None, registry: str | None, port: int | None, **kw: Any) -> None:
    """Serve tools over MCP: stdio by default, streamable HTTP with --http PORT (at /mcp).

    Calls are validated and permission-checked by loopwright's dispatcher. Tools that
    need confirmation are not exposed (--confirm hide) or asked via MCP elicitation.

    \b
    Examples:
      loopwright mcp serve --tools calculator,get_weather
      loopwright mcp serve --http 8000 --registry myapp.tools:registry --permission write
      loopwright mcp serve --tools send_email --permission write --confirm elicit
    """
    from loopwright.mcp.server import build_server

    need_sdk()
    if registry is not None:
        tools = _selected(load_registry(registry), names)
    else:
        config = BuiltinConfig(root=kw["root"] or Path.cwd())
        chosen = (
            names.split(",")
            if names is not None
            else [n for n in BUILTIN_TOOLS if n not in OPT_IN_TOOLS]
        )
        tools = ToolRegistry(make_tools(chosen, config))
    server = build_server(tools, permission=kw["permission"], confirm=kw["confirm"])
    if port is None:
        server.run()
    else:
        _check_free(kw["host"], port)
        say(f"serving {len(tools)} tools at http://{kw['host']}:{port}/mcp", err=True)
        server.run(transport="streamable-http", host=kw["host"], port=port)


def _check_free(host: str, port: int) -> None:
    """Refuse a port nothing can listen on now (the SDK's server logs a failed bind and
    returns as if it had served)."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        raise UserError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --http port"
        ) from None


@mcp_group.command("tools")
@click.argument("servers", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of definitions.")
def tools_command(servers: tuple[str, ...], as_json: bool) -> None:
    """List the tools of MCP SERVERS (commands, URLs or config files) as loopwright sees
    them: name, flags from annotations, description.

    \b
    Examples:
      loopwright mcp tools mcp-server-time
      loopwright mcp tools --json http://127.0.0.1:8000/mcp
      loopwright mcp tools servers.json#git
    """
    from loopwright.mcp import MCPToolset

    need_sdk()
    with MCPToolset.connect(server_configs(servers)) as toolset:
        tools = toolset.tools
    if as_json:
        out = []
        for t in tools:
            item = t.spec.definition()
            item["permission"] = t.spec.permission.name.lower()
            item["idempotent"] = t.spec.idempotent
            item["requires_confirmation"] = t.spec.requires_confirmation
            out.append(item)
        click.echo(to_json(out, indent=2))
        return
    for t in tools:
        flags = [t.spec.permission.name.lower()]
        if t.spec.idempotent:
            flags.append("idempotent")
        if t.spec.requires_confirmation:
            flags.append("asks for confirmation")
        say(Painted(t.name, bold=True), f"  ({', '.join(flags)})")
        say(f"  {t.spec.summary.split(': ', 1)[-1]}")
    sys.stdout.flush()


COMMANDS = [mcp_group]
