"""Building the agent a command runs, from an :class:`~loopwright.cli.recipe.AgentRecipe`.

One function for every command (``run``, ``chat``, ``resume``): built-in tools by name,
your own tools and agents by ``MODULE:ATTR``, the model from its string. Every failure
-- an unknown tool, a module that does not import, a factory that raises -- is a
:class:`~loopwright.core.errors.UserError` naming the field and the fix.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import click

from loopwright.cli.output import render
from loopwright.cli.recipe import AgentRecipe
from loopwright.core.errors import UserError
from loopwright.core.messages import ToolCallPart
from loopwright.core.protocols import Model, PayloadHook
from loopwright.core.run import TaintSource
from loopwright.core.tools import ToolSpec
from loopwright.loop import Agent, Limits
from loopwright.tools import Confirmation, DispatchConfig, TaintConfirmHandler, ToolRegistry
from loopwright.tools.builtin import BuiltinConfig, make_tools
from loopwright.tools.taint import describe as describe_taint

DEFAULT_MODEL = "local:gemma-3-270m"

ConfirmHandler = Callable[[ToolCallPart, ToolSpec], Confirmation]


def confirm_handler(yes: bool, no: bool, interactive: bool) -> ConfirmHandler:
    """``--yes`` approves, ``--no`` denies, a terminal asks, otherwise the call waits
    (the run pauses with ``awaiting_confirmation``)."""

    def handler(call: ToolCallPart, spec: ToolSpec) -> Confirmation:
        if yes:
            return Confirmation.approve("approved with --yes")
        if no:
            return Confirmation.deny("denied with --no")
        if interactive:
            args = json.dumps(dict(call.arguments), ensure_ascii=False, default=str)
            question = render(f"Run {call.name}({args})?")
            ok = click.confirm(question, err=True, default=False)
            return Confirmation.approve() if ok else Confirmation.deny("denied at the prompt")
        return Confirmation.later("no terminal to ask; re-run with --yes or --no")

    return handler


def tainted_handler(interactive: bool) -> TaintConfirmHandler | None:
    """Who approves a side-effect call after the run read untrusted content: a person at
    the terminal, shown what was read; never ``--yes`` (an instruction inside that content
    may be what asks for the call). Without a terminal the call waits: the run pauses and
    ``loopwright resume ID --approve`` is the approval."""
    if not interactive:
        return None

    def handler(call: ToolCallPart, spec: ToolSpec, taint: Sequence[TaintSource]) -> Confirmation:
        args = json.dumps(dict(call.arguments), ensure_ascii=False, default=str)
        click.echo(render(describe_taint(taint)), err=True)
        question = render(f"The run read untrusted content. Run {call.name}({args}) anyway?")
        ok = click.confirm(question, err=True, default=False)
        return Confirmation.approve() if ok else Confirmation.deny("denied at the prompt")

    return handler


def import_ref(ref: str, what: str) -> object:
    """The object named ``package.module:attribute`` (modules next to the user import,
    as with ``python -m``). Any failure is a one-line UserError."""
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise UserError(f"{what} {ref!r} must look like package.module:attribute")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: object = importlib.import_module(module)
    except Exception as exc:  # an ImportError, or whatever the module raises on import
        raise UserError(
            f"{what} {ref!r}: importing {module} failed ({type(exc).__name__}: {exc}); "
            "fix the module or the reference"
        ) from None
    for name in attr.split("."):
        try:
            obj = getattr(obj, name)
        except AttributeError:
            raise UserError(f"{what} {ref!r}: {module} has no attribute {attr!r}") from None
    return obj


def _user_agent(ref: str) -> Agent:
    obj = import_ref(ref, "--agent")
    if not isinstance(obj, Agent):
        if not callable(obj):
            raise UserError(f"--agent {ref!r} is neither an Agent nor a factory returning one")
        try:
            obj = obj()
        except Exception as exc:
            raise UserError(
                f"--agent {ref!r}: the factory raised {type(exc).__name__}: {exc}; fix it "
                "(it must take no arguments and return an Agent)"
            ) from None
    if not isinstance(obj, Agent):
        raise UserError(f"--agent {ref!r} gave a {type(obj).__name__}, not an Agent")
    return obj


def _tools(recipe: AgentRecipe) -> list[object]:
    config = BuiltinConfig(
        root=Path(recipe.root) if recipe.root else Path.cwd(),
        database=Path(recipe.database or "loopwright.db"),
        outbox=Path(recipe.outbox or "outbox.jsonl"),
    )
    out: list[object] = []
    for entry in dict.fromkeys(recipe.tools):  # a built-in named twice is built once
        if ":" not in entry:
            _check_paths(entry.strip(), config)
            out.extend(make_tools([entry], config))
            continue
        obj = import_ref(entry, "--tools")
        if isinstance(obj, Mapping):
            raise UserError(f"--tools {entry!r} is a mapping; pass a Tool, a list or a registry")
        found = list(obj) if isinstance(obj, list | tuple | ToolRegistry) else [obj]
        for item in found:
            if not callable(item):
                raise UserError(
                    f"--tools {entry!r}: {type(item).__name__} is not a tool; point it "
                    "at a Tool (a function wrapped with @tool), a list of them or a ToolRegistry"
                )
        out.extend(found)
    return out


def _check_paths(name: str, config: BuiltinConfig) -> None:
    """A built-in named on the command line whose file or directory is missing is a
    usage error now, not a run whose every call of it fails (``--db shop.bd``)."""
    if name == "read_file" and not config.root.is_dir():
        raise UserError(
            f"--root {config.root}: no such directory (read_file reads files under it); "
            "pass --root DIR of an existing directory"
        )
    if name == "sql_query" and not config.database.is_file():
        raise UserError(
            f"--db {config.database}: no such file (sql_query reads this SQLite database); "
            "pass --db PATH of an existing SQLite file"
        )
    if name == "sql_query":
        _check_sqlite(config.database)


_SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def _check_sqlite(path: Path) -> None:
    """A file that is no SQLite database (``--db notes.txt``) is a usage error now: the
    tool would be described without tables and every query would fail with "file is not
    a database". An empty file is an empty database (SQLite writes the header later)."""
    try:
        with path.open("rb") as file:
            head = file.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise UserError(
            f"--db {path}: cannot be read ({exc.strerror or exc}); pass --db PATH of a SQLite "
            "file you can read"
        ) from None
    if head and head != _SQLITE_HEADER:
        raise UserError(
            f"--db {path}: not a SQLite database (sql_query reads SQLite files); pass --db "
            "PATH of a SQLite database file"
        )


def resolve(spec: str, base_url: str | None, on_payload: PayloadHook | None) -> Model:
    """Build and (for embedded models) load the model; errors are one-line UserErrors."""
    from loopwright.agent import with_strategy
    from loopwright.providers.registry import resolve_model

    model = resolve_model(spec, base_url=base_url, on_payload=on_payload)
    load = getattr(model, "load", None)
    if callable(load):
        # a missing/corrupt GGUF fails here, as a ConfigError, before the run
        load_keeping_ctrl_c(load)
    return with_strategy(model)


def load_keeping_ctrl_c(load: Callable[[], object]) -> None:
    """Call ``load`` so that Ctrl-C pressed meanwhile ends the command once it returns.

    llama.cpp calls back into Python while a model loads (its log callback); the
    KeyboardInterrupt Python raises inside such a ctypes callback is printed and dropped,
    so a Ctrl-C in the first seconds of ``loopwright run`` was lost and the run went on.
    The press is recorded instead and raised when ``load`` returns."""
    in_main = threading.current_thread() is threading.main_thread()
    if not in_main or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        load()  # signal handlers can only be set from the main thread; keep another's
        return
    pressed: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        load()
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if pressed:
        raise KeyboardInterrupt


def with_confirm(
    agent: Agent, confirm: ConfirmHandler | None, confirm_tainted: TaintConfirmHandler | None
) -> Agent:
    if confirm is None and confirm_tainted is None:
        return agent
    config = agent.config
    dispatch = config.dispatch
    if confirm is not None:
        dispatch = replace(dispatch, confirm=confirm)
    if confirm_tainted is not None:
        dispatch = replace(dispatch, confirm_tainted=confirm_tainted)
    return Agent.from_config(replace(config, dispatch=dispatch))


def build_agent(
    recipe: AgentRecipe,
    confirm: ConfirmHandler | None = None,
    on_payload: PayloadHook | None = None,
    confirm_tainted: TaintConfirmHandler | None = None,
) -> Agent:
    """The agent ``recipe`` describes; ``confirm`` answers tools that need confirmation,
    ``confirm_tainted`` side-effect calls after untrusted content was read."""
    if recipe.agent:
        agent = with_confirm(_user_agent(recipe.agent), confirm, confirm_tainted)
        return _with_mcp(agent, recipe)
    tools = _tools(recipe)
    model = resolve(recipe.model or DEFAULT_MODEL, recipe.base_url, on_payload)
    limits = Limits(
        max_turns=recipe.max_turns if recipe.max_turns is not None else Limits().max_turns,
        token_budget=recipe.token_budget,
        timeout=recipe.timeout,
    )
    agent = Agent(
        model,
        tools,  # type: ignore[arg-type]
        system=recipe.system,
        limits=limits,
        dispatch=DispatchConfig(confirm=confirm, confirm_tainted=confirm_tainted),
    )
    return _with_mcp(agent, recipe)


def _with_mcp(agent: Agent, recipe: AgentRecipe) -> Agent:
    """``agent`` with the tools of the recipe's MCP servers (connected now), so a
    resumed or continued session reaches the servers its calls were made to."""
    if not recipe.mcp:
        return agent
    from loopwright.cli.mcp_tools import attach_mcp

    return attach_mcp(agent, recipe.mcp)
