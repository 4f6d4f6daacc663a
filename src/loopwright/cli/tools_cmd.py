"""``loopwright tools``: list the built-in tools and their JSON Schemas."""

from __future__ import annotations

import json

import click

from loopwright.cli.output import Painted, say
from loopwright.core.text import to_json
from loopwright.tools.builtin import BUILTIN_TOOLS, DEFAULT_TOOLS


@click.command("tools")
@click.option("--json", "as_json", is_flag=True, help="Print the definitions as one JSON array.")
def tools_command(as_json: bool) -> None:
    """List the built-in tools (name, description, flags and parameter schema).

    \b
    Examples:
      loopwright tools
      loopwright tools --json | jq '.[].name'
      loopwright run --tools read_file,sql_query --root docs --db shop.db "..."
    """
    tools = [factory(None) for factory in BUILTIN_TOOLS.values()]
    if as_json:
        out = []
        for t in tools:
            item = t.spec.definition()
            item["requires_confirmation"] = t.spec.requires_confirmation
            item["permission"] = t.spec.permission.name.lower()
            item["default"] = t.name in DEFAULT_TOOLS
            out.append(item)
        click.echo(to_json(out, indent=2))
        return
    for t in tools:
        flags = []
        if t.name in DEFAULT_TOOLS:
            flags.append("default")
        if t.spec.requires_confirmation:
            flags.append("asks for confirmation")
        if t.spec.permission.name != "READ":
            flags.append(f"permission {t.spec.permission.name.lower()}")
        suffix = f"  ({', '.join(flags)})" if flags else ""
        say(Painted(t.name, bold=True), suffix)
        say(f"  {t.spec.description}")
        say("  parameters: " + json.dumps(dict(t.spec.parameters), ensure_ascii=False))


COMMANDS: tuple[click.Command, ...] = (tools_command,)
