"""The ``loopwright`` command (entry point ``loopwright.cli.main:main``).

This module is the only one that knows every command, and the one place where a failure
becomes output: whatever a command raises ends as ONE ``error: ...`` line naming the fix
(plus one JSON error object on stdout with ``--json``) and the documented exit code
(:mod:`loopwright.cli.exit_codes`), never a traceback (``LOOPWRIGHT_DEBUG=1`` adds the
traceback of an internal error).

Command modules (those with ``COMMANDS``) never import each other: what they share lives
in helper modules (``agents``, ``batch``, ``mcp_tools``, ``observe``, ``options``,
``output``, ``recipe``, ``render``, ``results``, ``stored``), which never import a
command. The import-linter contracts in pyproject.toml enforce it.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from loopwright import __version__
from loopwright.cli.exit_codes import INTERNAL_ERROR, STORE_ERROR, USAGE_ERROR, exit_code
from loopwright.cli.output import CliError, report_failure, say, tolerant_streams
from loopwright.core.errors import LoopwrightError, UserError
from loopwright.core.run import RunStop
from loopwright.core.text import for_terminal, scrub
from loopwright.store.errors import CorruptCheckpoint, StoreError


def _wants_json(argv: Sequence[str]) -> bool:
    """``--json`` among the options (before a ``--`` separator). Used when a failure
    happens before or outside the command's own parsing."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _check_utf8(argv: Sequence[str]) -> None:
    """A command-line argument that is not UTF-8 is a usage error naming it (Python hands
    such bytes over as lone surrogates, which no model, terminal or store accepts)."""
    for index, arg in enumerate(argv):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:
            before = argv[index - 1] if index else ""
            which = f"the value of {before}" if before.startswith("-") else f"argument {index + 1}"
            try:
                byte = f"byte 0x{os.fsencode(arg[exc.start])[0]:02x}"
            except UnicodeError:
                byte = "an unpaired surrogate"
            raise click.UsageError(
                f"{which} ({scrub(arg)[:40]!r}) is not UTF-8 text ({byte} at offset "
                f"{exc.start}); pass UTF-8, e.g. convert it with iconv -t UTF-8"
            ) from None


def _command_path(argv: Sequence[str]) -> str:
    """The command ``argv`` names (``loopwright sessions fork``), for a usage error Click
    raised without a context (an option missing its value): its help is the one to read."""
    words = ["loopwright"]
    command: click.Command = main
    ctx = click.Context(main, info_name="loopwright")
    for arg in argv:
        if arg.startswith("-") or not isinstance(command, click.Group):
            break
        sub = command.get_command(ctx, arg)
        if sub is None:
            break
        words.append(arg)
        command = sub
    return " ".join(words)


def _code_for(exc: BaseException) -> int:
    if isinstance(exc, UserError):
        return USAGE_ERROR
    if isinstance(exc, StoreError):
        return STORE_ERROR
    return INTERNAL_ERROR


def _finish(exc: BaseException, argv: Sequence[str]) -> NoReturn:
    as_json = _wants_json(argv)
    if isinstance(exc, CliError):
        exc.as_json = exc.as_json or as_json
        exc.show()
        sys.exit(exc.exit_code)
    if type(exc).__name__ == "NoArgsIsHelpError":  # Click >= 8.2
        exc.show()  # type: ignore[attr-defined]  # a bare command prints its help
        sys.exit(USAGE_ERROR)
    if isinstance(exc, click.UsageError):
        where = exc.ctx.command_path if exc.ctx is not None else _command_path(argv)
        report_failure(
            f"{exc.format_message()} (see: {where} --help)", USAGE_ERROR, as_json=as_json
        )
        sys.exit(USAGE_ERROR)
    if isinstance(exc, click.ClickException):
        report_failure(exc.format_message(), exc.exit_code, as_json=as_json)
        sys.exit(exc.exit_code)
    if isinstance(exc, KeyboardInterrupt | click.Abort):
        code = exit_code(RunStop.CANCELLED)
        report_failure("interrupted", code, as_json=as_json)
        sys.exit(code)
    if isinstance(exc, LoopwrightError):
        code, session_id = _code_for(exc), getattr(exc, "session_id", None)
        message = str(exc)
        if isinstance(exc, CorruptCheckpoint):
            message += (
                f" (from the command line: `loopwright sessions fork {session_id} "
                f"--checkpoint N` or `loopwright sessions delete {session_id}`)"
            )
        report_failure(message, code, as_json=as_json, session_id=session_id)
        sys.exit(code)
    message = (
        f"internal error: {type(exc).__name__}: {exc} (a bug in loopwright: please report "
        "it; LOOPWRIGHT_DEBUG=1 shows the traceback)"
    )
    if os.environ.get("LOOPWRIGHT_DEBUG"):
        say(for_terminal("".join(traceback.format_exception(exc))), err=True)
    report_failure(message, INTERNAL_ERROR, as_json=as_json)
    sys.exit(INTERNAL_ERROR)


COMMANDS: dict[str, tuple[str, str]] = {
    "batch": (
        "loopwright.cli.batch_cmd",
        "Run every prompt of PROMPTS (JSONL) through one agent; one JSON result line per "
        "prompt, recorded exactly once.",
    ),
    "chat": (
        "loopwright.cli.chat",
        "A conversation kept in the store: one turn with PROMPT, or one turn per line of "
        "stdin until EOF (or `exit`).",
    ),
    "graph": ("loopwright.cli.graph_cmd", "Work with state graphs built with loopwright.graph."),
    "mcp": (
        "loopwright.cli.mcp_cmd",
        "MCP: serve loopwright tools to any MCP client, or inspect an MCP server (its tools, resources and prompts).",
    ),
    "prompt": ("loopwright.cli.prompt", "Prompt templates: list, show, regression-test."),
    "resume": (
        "loopwright.cli.resume",
        "Continue stored session SESSION: approve or deny its pending calls, or recover a "
        "run whose process died.",
    ),
    "run": (
        "loopwright.cli.run",
        'Run an agent on PROMPT and print its answer ("-" reads the prompt from stdin).',
    ),
    "serve": (
        "loopwright.cli.serve_cmd",
        "Serve agents over HTTP: sessions, Server-Sent Events, approvals.",
    ),
    "sessions": (
        "loopwright.cli.sessions",
        "List stored sessions with their status (newest first).",
    ),
    "tools": (
        "loopwright.cli.tools_cmd",
        "List the built-in tools (name, description, flags and parameter schema); with "
        "NAMES, only those.",
    ),
    "trace": (
        "loopwright.cli.trace_cmd",
        "Recorded runs: list them, show one as a tree, or write an HTML viewer.",
    ),
}
"""Each command: the module defining it (in its ``COMMANDS``), imported only when the
command runs, and its one-line help for ``loopwright --help``, which so imports no
command module (they load the agent, tools and stores: most of the CLI's start-up
time). ``tests/cli/test_cli_lazy.py`` checks each line against the command's own help."""


class LoopwrightGroup(click.Group):
    """Runs a command and turns whatever it raises into one line and an exit code.
    Command modules are imported on first use (:data:`COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            for command in importlib.import_module(COMMANDS[cmd_name][0]).COMMANDS:
                self.add_command(command)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Click suggests a close name among the commands loaded so far (before one runs,
        only ``version``: ``sesions`` got "Did you mean 'version'?"); suggest among all."""
        name = args[0]
        if name.startswith("-") or ctx.resilient_parsing or self.get_command(ctx, name):
            return super().resolve_command(ctx, args)
        close = difflib.get_close_matches(name, self.list_commands(ctx), n=3)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise click.UsageError(f"No such command {name!r}.{hint}", ctx)

    def invoke(self, ctx: click.Context) -> Any:
        """A reader that went away (``loopwright run ... | head -1``) is no bug: the
        command ends quietly as cancelled (16), not as an internal error (1, Click's
        code for it). Later writes, and the flush at exit, go nowhere."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            sys.exit(exit_code(RunStop.CANCELLED))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from :data:`COMMANDS` for commands not loaded yet (what
        ``click.Group`` prints, without importing every command module)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            # a stand-in carrying the help line shortens it exactly as the command would
            command = self.commands.get(name) or click.Command(name, help=COMMANDS[name][1])
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args: Sequence[str] | None = None, *rest: Any, **kwargs: Any) -> NoReturn:  # type: ignore[override]
        kwargs["standalone_mode"] = False
        argv = list(args) if args is not None else sys.argv[1:]
        tolerant_streams()
        try:
            _check_utf8(argv)
            code = super().main(argv, *rest, **kwargs)
        except SystemExit:
            raise
        except BaseException as exc:  # the one place where failures become output
            _finish(exc, argv)
        sys.exit(code if isinstance(code, int) else 0)


MAIN_HELP = """loopwright: run LLM agents with tools, offline by default (embedded model).

\b
Examples:
  loopwright run "What is (3 + 5) * 8?"
  loopwright run --stream --tools get_weather "What's the weather in Beijing?"
  loopwright run --json --tools send_email "Email ann@example.org hello"
  loopwright resume s-1a2b3c --approve
  loopwright chat --session s-1a2b3c "and now?"
  loopwright sessions
  loopwright tools
  loopwright prompt list
  loopwright trace list
  loopwright batch prompts.jsonl --engine ray --out results.jsonl

Run `loopwright COMMAND --help` for a command's options, examples and exit codes.
"""


@click.group(
    cls=LoopwrightGroup, help=MAIN_HELP, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(__version__, "-V", "--version", message="loopwright %(version)s")
def main() -> None:
    pass


@main.command("version")
def version_command() -> None:
    """Print the loopwright version.

    \b
    Examples:
      loopwright version
    """
    click.echo(f"loopwright {__version__}")
