"""The CLI's layout stays as import-linter enforces it: every command module is in the
independence contract, every other module is a helper that may not import commands."""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from pathlib import Path

import loopwright.cli

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
NOT_LISTED = {"loopwright.cli.main", "loopwright.cli.__main__"}


def _contract(name_start: str) -> dict:
    contracts = tomllib.loads(PYPROJECT.read_text("utf-8"))["tool"]["importlinter"]["contracts"]
    (found,) = [c for c in contracts if c["name"].startswith(name_start)]
    return found


def test_every_cli_module_is_a_listed_command_or_helper() -> None:
    names = {
        f"loopwright.cli.{m.name}" for m in pkgutil.iter_modules(loopwright.cli.__path__)
    } - NOT_LISTED
    commands = {n for n in names if hasattr(importlib.import_module(n), "COMMANDS")}
    independent = set(_contract("CLI command modules never import each other")["modules"])
    helpers = _contract("CLI helpers never import a command module")
    assert commands == independent, "add new command modules to the independence contract"
    assert set(helpers["source_modules"]) == names - commands, "list new helper modules"
    assert set(helpers["forbidden_modules"]) == commands | {"loopwright.cli.main"}
