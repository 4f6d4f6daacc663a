"""``loopwright graph``: tools for state graphs (:mod:`loopwright.graph`)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import click

from loopwright.cli.output import CliError


@click.group("graph")
def graph_group() -> None:
    """Work with state graphs built with loopwright.graph.

    \b
    Examples:
      loopwright graph draw examples/graph/calculator.py:graph
      loopwright graph draw myapp.agents:graph > graph.mmd
    """


@graph_group.command("draw")
@click.argument("target")
def draw_command(target: str) -> None:
    """Print the Mermaid diagram of a graph.

    TARGET is MODULE:NAME (an importable module) or FILE.py:NAME, where NAME is a
    compiled graph or a StateGraph builder (compiled for drawing).

    \b
    Examples:
      loopwright graph draw examples/graph/calculator.py:graph
      loopwright graph draw examples/graph/orchestrator.py:graph
      loopwright graph draw myapp.agents:graph
    """
    click.echo(load_graph(target).get_graph().draw_mermaid(), nl=False)


def load_graph(target: str) -> Any:
    # imported here: the graph package is not needed by the CLI's other commands
    from loopwright.graph import CompiledStateGraph, StateGraph

    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise CliError(f"graph target {target!r} must be MODULE:NAME or FILE.py:NAME")
    module = _module(where)
    try:
        graph = getattr(module, name)
    except AttributeError:
        raise CliError(f"{where} has no attribute {name!r}") from None
    if isinstance(graph, StateGraph):
        graph = graph.compile()
    if not isinstance(graph, CompiledStateGraph):
        raise CliError(
            f"{target} is a {type(graph).__name__}, not a graph: point at a compiled graph "
            "(builder.compile()) or a StateGraph"
        )
    return graph


def _module(where: str) -> ModuleType:
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise CliError(f"no such file: {where}")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise CliError(f"cannot load {where} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault(path.stem, module)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's file failed, not loopwright
            raise CliError(_failed(where, exc)) from None
        return module
    sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as exc:
        raise CliError(f"cannot import {where!r}: {exc}") from None
    except Exception as exc:  # whatever the module raises on import
        raise CliError(_failed(where, exc)) from None


def _failed(where: str, exc: Exception) -> str:
    return f"loading {where} failed ({type(exc).__name__}: {exc}); fix the module or the target"


COMMANDS: tuple[click.Command, ...] = (graph_group,)
