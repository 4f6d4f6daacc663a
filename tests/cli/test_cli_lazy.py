"""``loopwright --help`` imports no command module: ``cli.main.COMMANDS`` names each
command's module and carries its one-line help, which must stay the command's own."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import click
import pytest

import loopwright.cli
from loopwright.cli.main import COMMANDS, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_listed_command_lives_in_its_module_with_the_listed_help(name: str) -> None:
    module, help_line = COMMANDS[name]
    by_name = {c.name: c for c in importlib.import_module(module).COMMANDS}
    assert by_name[name].get_short_help_str(limit=10**6) == help_line


def test_every_command_module_is_listed() -> None:
    modules = {
        f"loopwright.cli.{m.name}" for m in pkgutil.iter_modules(loopwright.cli.__path__)
    } - {"loopwright.cli.main", "loopwright.cli.__main__"}
    commands = {m for m in modules if hasattr(importlib.import_module(m), "COMMANDS")}
    assert {module for module, _ in COMMANDS.values()} == commands


def test_help_lists_every_command_without_importing_command_modules() -> None:
    code = (
        "import json, sys\n"
        "from loopwright.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('loopwright.'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    help_text, loaded_line = out.stdout.rsplit("\n", 2)[0], out.stdout.splitlines()[-1]
    loaded = set(json.loads(loaded_line))
    assert not loaded & {module for module, _ in COMMANDS.values()}
    assert not {"loopwright.loop", "loopwright.tools", "loopwright.agent"} & loaded
    for name in [*COMMANDS, "version"]:
        assert f"\n  {name} " in help_text


def test_a_command_loads_when_it_runs() -> None:
    ctx = click.Context(main)
    command = main.get_command(ctx, "tools")
    assert command is not None and command.name == "tools"
    assert main.get_command(ctx, "no-such-command") is None


def test_python_dash_m_loopwright_is_the_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "loopwright", "tools", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "calculator" in {t["name"] for t in json.loads(out.stdout)}
