"""The ``loopwright`` command (entry point ``loopwright.cli.main:main``).

Usage errors (bad flag, missing argument) print ONE line naming the fix and exit 2;
with ``--json`` stdout also gets one JSON ``error`` object. Other helpers' command
modules (``loopwright.cli.prompt``, ``loopwright.cli.sessions``) expose
``COMMANDS: list[click.Command]`` and are registered here when installed.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import click

from loopwright import __version__
from loopwright.cli.run import run_command
from loopwright.cli.tools_cmd import tools_command

_PLUGIN_MODULES = ("loopwright.cli.prompt", "loopwright.cli.sessions", "loopwright.cli.trace_cmd")


class OneLineGroup(click.Group):
    """A group whose usage errors are one line, never a usage dump or a traceback."""

    def main(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        kwargs["standalone_mode"] = False
        argv = list(args[0]) if args and args[0] is not None else sys.argv[1:]
        try:
            code = super().main(*args, **kwargs)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "loopwright"
            message = f"{exc.format_message()} (see: {where} --help)"
            if "--json" in argv:
                click.echo(
                    json.dumps(
                        {
                            "answer": "",
                            "stop_reason": "usage_error",
                            "error": message,
                            "exit_code": 2,
                            "turns": 0,
                            "usage": {},
                            "messages": [],
                            "session_id": None,
                        }
                    )
                )
            click.echo(f"error: {message}", err=True)
            sys.exit(2)
        except click.Abort:
            click.echo("error: aborted", err=True)
            sys.exit(130)
        except click.ClickException as exc:
            click.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """loopwright: run LLM agents with tools, offline by default (embedded model).

    \b
    Examples:
      loopwright run "What is (3 + 5) * 8?"
      loopwright run --stream --tools get_weather "What's the weather in Beijing?"
      loopwright tools
      loopwright version
    """


@main.command("version")
def version_command() -> None:
    """Print the loopwright version."""
    click.echo(f"loopwright {__version__}")


main.add_command(run_command)
main.add_command(tools_command)


def _register_plugins() -> None:
    for name in _PLUGIN_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue  # that command group is not part of this installation
        for command in getattr(module, "COMMANDS", ()):
            if command.name not in main.commands:
                main.add_command(command)


_register_plugins()
