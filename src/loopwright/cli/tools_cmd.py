"""``loopwright tools``: list the built-in tools and their JSON Schemas."""

from __future__ import annotations

import json

import click

from loopwright.cli.output import Painted, say
from loopwright.core.errors import UserError
from loopwright.core.text import to_json
from loopwright.tools.builtin import BUILTIN_TOOLS, DEFAULT_TOOLS, OPT_IN_TOOLS, builtin_specs


@click.command("tools")
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the definitions as one JSON array.")
def tools_command(names: tuple[str, ...], as_json: bool) -> None:
    """List the built-in tools (name, description, flags and parameter schema); with
    NAMES, only those.

    \b
    Examples:
      loopwright tools
      loopwright tools calculator send_email
      loopwright tools --json | jq '.[].name'
      loopwright run --tools read_file,sql_query --root docs --db shop.db "..."
      loopwright run --tools python_exec "What is the 30th Fibonacci number?"
    """
    unknown = [name for name in names if name not in BUILTIN_TOOLS]
    if unknown:
        known = ", ".join(BUILTIN_TOOLS)
        raise UserError(f"unknown tool {unknown[0]!r}; choose from: {known}")
    specs = [spec for spec in builtin_specs() if not names or spec.name in names]
    if as_json:
        out = []
        for spec in specs:
            item = spec.definition()
            item["requires_confirmation"] = spec.requires_confirmation
            item["permission"] = spec.permission.name.lower()
            item["default"] = spec.name in DEFAULT_TOOLS
            item["opt_in"] = spec.name in OPT_IN_TOOLS
            out.append(item)
        click.echo(to_json(out, indent=2))
        return
    for spec in specs:
        flags = []
        if spec.name in DEFAULT_TOOLS:
            flags.append("default")
        if spec.name in OPT_IN_TOOLS:
            flags.append("opt-in, runs in the OS sandbox")
        if spec.requires_confirmation:
            flags.append("asks for confirmation")
        if spec.permission.name != "READ":
            flags.append(f"permission {spec.permission.name.lower()}")
        suffix = f"  ({', '.join(flags)})" if flags else ""
        say(Painted(spec.name, bold=True), suffix)
        say(f"  {spec.description}")
        say("  parameters: " + json.dumps(dict(spec.parameters), ensure_ascii=False))


COMMANDS: tuple[click.Command, ...] = (tools_command,)
