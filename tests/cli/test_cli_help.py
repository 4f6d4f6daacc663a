"""Every command's --help teaches: it has examples, and every example names a real
command and real options."""

from __future__ import annotations

import json
import shlex

import click
import pytest
from click.testing import CliRunner

from loopwright.cli.main import main


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            out.extend(_commands(command, (*path, name)))
        else:
            out.append((*path, name))
    return out


_CTX = click.Context(main)
for _name in main.list_commands(_CTX):  # command modules load on first use
    main.get_command(_CTX, _name)
ALL = _commands(main)


def _resolve(tokens: list[str]) -> tuple[click.Command, list[str]]:
    """The command an example line runs, and its remaining tokens."""
    command: click.Command = main
    rest = tokens
    while isinstance(command, click.Group) and rest and rest[0] in command.commands:
        command, rest = command.commands[rest[0]], rest[1:]
    return command, rest


def _options(command: click.Command) -> set[str]:
    names = {"--help", "-h"}
    for param in command.params:
        names.update(param.opts)
        names.update(param.secondary_opts)
    return names


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "loopwright")
def test_help_has_examples_that_use_real_options(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Examples:" in result.output
    examples = [
        line.strip()
        for line in result.output.split("Examples:", 1)[1].splitlines()
        if line.strip().startswith("loopwright ")
    ]
    assert examples, result.output
    for line in examples:
        tokens = shlex.split(line.split("  ", 1)[0].split("|", 1)[0].rstrip("\\ "))[1:]
        command, rest = _resolve(tokens)
        known = _options(command)
        for token in rest:
            if token.startswith("-") and token != "-":
                assert token.split("=", 1)[0] in known, f"{line!r}: {token} is not an option"


@pytest.mark.parametrize("args", [["version"], ["--version"], ["-V"]])
def test_the_version_is_printed_by_the_command_and_the_usual_flags(args: list[str]) -> None:
    from loopwright import __version__

    result = CliRunner().invoke(main, args, prog_name="loopwright")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"loopwright {__version__}\n"


def test_tools_shows_the_named_tools_and_refuses_an_unknown_one() -> None:
    # `loopwright tools calculator` was "Got unexpected extra argument (calculator)"
    runner = CliRunner()
    shown = runner.invoke(main, ["tools", "--json", "send_email", "add"], prog_name="loopwright")
    assert shown.exit_code == 0, shown.output
    assert [item["name"] for item in json.loads(shown.stdout)] == ["send_email", "add"]
    text = runner.invoke(main, ["tools", "calculator"], prog_name="loopwright")
    assert text.exit_code == 0 and text.stdout.startswith("calculator")
    assert "get_weather" not in text.stdout
    wrong = runner.invoke(main, ["tools", "calc"], prog_name="loopwright")
    assert wrong.exit_code == 2
    assert "unknown tool 'calc'; choose from: calculator," in wrong.stderr
