"""``loopwright mcp``: serve tools over MCP; list an MCP server's tools, resources and
prompts, read a resource, render a prompt. (``loopwright run --mcp`` is :mod:`loopwright.cli.mcp_tools`.)
See docs/mcp.md."""

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
    """MCP: serve loopwright tools to any MCP client, or inspect an MCP server (its
    tools, resources and prompts).

    \b
    Examples:
      loopwright mcp serve --tools calculator,get_weather
      loopwright mcp serve --http 8000 --registry myapp.tools:registry
      loopwright mcp tools mcp-server-time
      loopwright mcp resources servers.json#docs
      loopwright mcp read servers.json#docs docs://readme
      loopwright mcp prompts http://127.0.0.1:8000/mcp
      loopwright mcp prompt servers.json#docs summarise topic=loans | loopwright run -
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


@mcp_group.command("resources")
@click.argument("servers", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def resources_command(servers: tuple[str, ...], as_json: bool) -> None:
    """List the resources and resource templates of MCP SERVERS (commands, URLs or
    config files): URI, name, type, description. An agent run with --mcp reads them
    with its read_resource tool; `loopwright mcp read SERVER URI` prints one.

    \b
    Examples:
      loopwright mcp resources "python -m myapp.mcp_server"
      loopwright mcp resources --json http://127.0.0.1:8000/mcp
    """
    from dataclasses import asdict

    from loopwright.mcp import MCPResource, MCPResourceTemplate, MCPToolset

    need_sdk()
    with MCPToolset.connect(server_configs(servers)) as toolset:
        listed, templates = toolset.list_resources(), toolset.list_resource_templates()
    if as_json:
        data = {
            "resources": [asdict(r) for r in listed],
            "templates": [asdict(t) for t in templates],
        }
        click.echo(to_json(data, indent=2))
        return
    if not listed and not templates:
        say("no resources (no server lists any, or none offers resources)", err=True)
    rows: list[tuple[str, str, MCPResource | MCPResourceTemplate]] = [
        (r.uri, "", r) for r in listed
    ]
    rows += [(t.uri_template, "template: ", t) for t in templates]
    for uri, kind, item in rows:
        about = ", ".join(x for x in (item.name, item.mime_type or "") if x)
        where = f"  [{item.server}]" if len(servers) > 1 else ""
        say(Painted(uri, bold=True), f"  ({kind}{about}){where}")
        if item.description:
            say(f"  {item.description}")
    sys.stdout.flush()


@mcp_group.command("read")
@click.argument("server")
@click.argument("uri")
@click.option(
    "--as-data",
    is_flag=True,
    help="Print it delimited as untrusted data (unless the server is trusted), ready to "
    "put in a prompt: a run given it is tainted, as if its read_resource tool had read it.",
)
def read_command(server: str, uri: str, as_data: bool) -> None:
    """Print the resource URI of the MCP SERVER (a command, URL or FILE#NAME) as text.

    \b
    Examples:
      loopwright mcp read servers.json#docs docs://readme
      loopwright mcp read http://127.0.0.1:8000/mcp notes://owls
      loopwright run "Summarise: $(loopwright mcp read --as-data docs.json#d docs://x)"
    """
    from loopwright.mcp import MCPToolset

    need_sdk()
    with MCPToolset.connect(server_configs([server])) as toolset:
        read = toolset.read_resource(uri)
    binary = next((c for c in read.contents if c.data is not None), None)
    if binary is not None:
        raise UserError(
            f"resource {uri!r} is binary ({binary.mime_type or 'no type'}, "
            f"{len(binary.data or b'')} bytes); `loopwright mcp read` prints text only "
            "(in Python its bytes are toolset.read_resource(uri).contents[i].data)"
        )
    click.echo(read.for_context() if as_data else read.text)


@mcp_group.command("prompts")
@click.argument("servers", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array.")
def prompts_command(servers: tuple[str, ...], as_json: bool) -> None:
    """List the prompts of MCP SERVERS (commands, URLs or config files) with their
    arguments (`?` marks an optional one). `loopwright mcp prompt SERVER NAME ARG=VALUE`
    renders one; in Python, toolset.get_prompt(NAME, {...}) renders it into messages
    for Agent.run (docs/mcp.md).

    \b
    Examples:
      loopwright mcp prompts "python -m myapp.mcp_server"
      loopwright mcp prompts --json servers.json#docs
    """
    from dataclasses import asdict

    from loopwright.mcp import MCPToolset

    need_sdk()
    with MCPToolset.connect(server_configs(servers)) as toolset:
        prompts = toolset.list_prompts()
    if as_json:
        click.echo(to_json([asdict(p) for p in prompts], indent=2))
        return
    if not prompts:
        say("no prompts (no server lists any, or none offers prompts)", err=True)
    for prompt in prompts:
        where = f"  [{prompt.server}]" if len(servers) > 1 else ""
        say(Painted(prompt.signature(), bold=True), where)
        if prompt.description:
            say(f"  {prompt.description}")
        for arg in prompt.arguments:
            about = f": {arg.description}" if arg.description else ""
            say(f"    {arg.name}{' (required)' if arg.required else ''}{about}")
    sys.stdout.flush()


@mcp_group.command("prompt")
@click.argument("server")
@click.argument("name")
@click.argument("arguments", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the messages as a JSON array.")
def prompt_command(server: str, name: str, arguments: tuple[str, ...], as_json: bool) -> None:
    """Render the prompt NAME of the MCP SERVER with ARGUMENTS (NAME=VALUE each, checked
    against the prompt's declared arguments) and print its messages. A prompt of one
    user message prints just its text, ready to pipe into `loopwright run -`.

    \b
    Examples:
      loopwright mcp prompt servers.json#docs review code="x = 1" language=python
      loopwright mcp prompt servers.json#docs summarise topic=loans | loopwright run -
      loopwright mcp prompt --json http://127.0.0.1:8000/mcp recap topic=loans
    """
    from loopwright.mcp import MCPToolset

    values: dict[str, str] = {}
    for item in arguments:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"prompt argument {item!r} must be NAME=VALUE, e.g. topic=loans")
        values[key] = value
    need_sdk()
    with MCPToolset.connect(server_configs([server])) as toolset:
        rendered = toolset.get_prompt(name, values)
    if as_json:
        out = [{"role": m.role, "text": m.text} for m in rendered.messages]
        click.echo(to_json(out, indent=2))
    elif len(rendered.messages) == 1:
        click.echo(rendered.messages[0].text)
    else:
        for message in rendered.messages:
            say(Painted(f"[{message.role}]", bold=True))
            click.echo(message.text)


COMMANDS = [mcp_group]
