"""Options shared by several commands, and the parameter types that check them.

Every value is checked where click parses it, so a bad one is a usage error naming the
option (``--timeout nan`` says it needs a finite number) instead of a traceback later.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, TypeVar

import click

from loopwright.cli.recipe import AgentRecipe
from loopwright.store.factory import KINDS

F = TypeVar("F", bound=Callable[..., object])


class PositiveNumber(click.ParamType):
    """A finite number > 0 (``int`` or ``float``): ``nan``, ``inf`` and ``0`` are refused."""

    def __init__(self, kind: type[int] | type[float]) -> None:
        self.kind = kind
        self.name = "integer" if kind is int else "seconds"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | float:
        if isinstance(value, self.kind) and not isinstance(value, bool):
            number: int | float = value
        else:
            try:
                number = self.kind(str(value).strip())
            except ValueError:
                number = math.nan
        if not math.isfinite(number) or number <= 0:
            # one wording per kind: "--max-turns 0" said "a finite number" while
            # "--max-turns 1.5" said "a whole number"
            what = "a whole number" if self.kind is int else "a finite number"
            self.fail(f"must be {what} > 0, got {value!r}", param, ctx)
        return number


class NonEmptyPath(click.Path):
    """``click.Path`` refusing an empty or blank value. ``Path("")`` is the working
    directory, so ``--trace ""`` (an unset shell variable: ``--trace "$DIR"``) would
    quietly write into whatever folder the command ran in; it is a usage error instead."""

    def convert(
        self,
        value: str | os.PathLike[str],
        param: click.Parameter | None,
        ctx: click.Context | None,
    ) -> str | bytes | os.PathLike[str]:
        if isinstance(value, (str, bytes)) and not value.strip():
            self.fail("needs a path, got an empty value", param, ctx)
        return super().convert(value, param, ctx)


class NonEmptyText(click.ParamType):
    """Text refusing an empty or blank value given on the command line: ``--model ""``
    (an unset shell variable: ``--model "$MODEL"``) quietly ran the default model."""

    name = "text"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        if not str(value).strip():
            self.fail("is empty; pass a value or leave the option out", param, ctx)
        return str(value)


NON_EMPTY_TEXT = NonEmptyText()
POSITIVE_INT = PositiveNumber(int)
POSITIVE_SECONDS = PositiveNumber(float)


def apply(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Apply option decorators in the order they are listed (top to bottom in --help)."""

    def decorate(fn: F) -> F:
        for decorator in reversed(decorators):
            fn = decorator(fn)
        return fn

    return decorate


as_json = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object (errors too: stop_reason, error, exit_code).",
)

store_options = apply(
    click.option(
        "--store",
        "store_kind",
        type=click.Choice(KINDS),
        envvar="LOOPWRIGHT_STORE",
        default=None,
        help="Checkpoint store (default: sqlite, or the scheme of --store-url).",
    ),
    click.option(
        "--store-url",
        envvar="LOOPWRIGHT_STORE_URL",
        default=None,
        help="sqlite:///path.db, redis://host:port/0, postgresql://user@host/db.",
    ),
)

# The agent a command builds. Defaults are None so that `chat`/`resume` can tell a flag
# given now from one to take from the session's sealed recipe (see cli/recipe.py).
agent_options = apply(
    click.option(
        "--model",
        "-m",
        type=NON_EMPTY_TEXT,
        default=None,
        envvar="LOOPWRIGHT_MODEL",
        help="Model: local:gemma-3-270m (embedded, the default), local:PATH.gguf, "
        "openai:gpt-4o-mini, ...",
    ),
    click.option(
        "--tools",
        "-t",
        "tools",
        multiple=True,
        help="Built-in tool names, comma-separated (see `loopwright tools`), or MODULE:ATTR "
        "of your own tools; repeatable. '' for none. Default: calculator,get_weather.",
    ),
    click.option("--system", "-s", default=None, help="System prompt."),
    click.option(
        "--base-url",
        type=NON_EMPTY_TEXT,
        default=None,
        help="Provider endpoint override (remote models only).",
    ),
    click.option(
        "--root",
        type=NonEmptyPath(file_okay=False, path_type=Path),
        default=None,
        help="read_file's root directory (default: the working directory).",
    ),
    click.option(
        "--db",
        "database",
        type=NonEmptyPath(dir_okay=False, path_type=Path),
        default=None,
        help="sql_query's SQLite file (default: loopwright.db).",
    ),
    click.option(
        "--outbox",
        type=NonEmptyPath(dir_okay=False, path_type=Path),
        default=None,
        help="send_email's outbox file (default: outbox.jsonl).",
    ),
    click.option(
        "--max-turns",
        type=POSITIVE_INT,
        default=None,
        help="Stop after this many model calls (default 10).",
    ),
    click.option(
        "--token-budget",
        type=POSITIVE_INT,
        default=None,
        help="Stop once input+output tokens exceed this.",
    ),
    click.option(
        "--timeout", type=POSITIVE_SECONDS, default=None, help="Stop after this many seconds."
    ),
)

agent_ref_option = click.option(
    "--agent",
    "agent",
    default=None,
    help="MODULE:ATTR of an Agent, or of a zero-argument factory returning one "
    "(instead of --model/--tools).",
)

DEFAULT_TOOLS = ("calculator", "get_weather")

RECIPE_FIELDS = (
    "model",
    "base_url",
    "system",
    "tools",
    "agent",
    "root",
    "database",
    "outbox",
    "max_turns",
    "token_budget",
    "timeout",
)


def _abs(path: Path | None) -> str | None:
    return str(path.resolve()) if path is not None else None


_FROM_COMMAND_LINE: Final = (click.core.ParameterSource.COMMANDLINE,)
_FROM_ENVIRONMENT: Final = (click.core.ParameterSource.ENVIRONMENT,)


def given_fields(
    ctx: click.Context,
    params: Mapping[str, object],
    sources: tuple[click.core.ParameterSource, ...] = _FROM_COMMAND_LINE + _FROM_ENVIRONMENT,
) -> dict[str, object]:
    """The recipe fields set by ``sources`` (by default: the command line or the
    environment, e.g. ``LOOPWRIGHT_MODEL``), with paths made absolute."""
    out: dict[str, object] = {}
    for name in RECIPE_FIELDS:
        if name not in params or params[name] in (None, ()):
            continue
        if ctx.get_parameter_source(name) not in sources:
            continue
        value = params[name]
        if name == "tools":
            value = tuple(t.strip() for item in value for t in str(item).split(",") if t.strip())  # type: ignore[attr-defined]
        elif name in ("root", "database", "outbox"):
            value = _abs(value)  # type: ignore[arg-type]
        out[name] = value
    return out


def command_line_and_defaults(
    ctx: click.Context, params: Mapping[str, object]
) -> tuple[dict[str, object], AgentRecipe]:
    """For commands that continue a stored session (``chat``, ``resume``): the fields typed
    on this command line, and the recipe of a new session (defaults with environment
    settings such as ``LOOPWRIGHT_MODEL``). The environment never overrides a stored
    session's own setup; the command line does."""
    typed = given_fields(ctx, params, _FROM_COMMAND_LINE)
    return typed, recipe_from(given_fields(ctx, params, _FROM_ENVIRONMENT))


# the path flags of the built-in tools: (recipe field, flag, the tool it configures)
_PATH_FLAGS: Final = (
    ("root", "--root", "read_file"),
    ("database", "--db", "sql_query"),
    ("outbox", "--outbox", "send_email"),
)


def check_path_flags(ctx: click.Context, params: Mapping[str, object], recipe: AgentRecipe) -> None:
    """A path flag typed for a built-in tool the agent does not have is a usage error:
    ``loopwright run --db shop.db "How many orders?"`` (no ``--tools sql_query``) ran with
    the default tools and never read the database. An ``--agent`` builds its own tools;
    a value from the environment is a default, not a request."""
    if recipe.agent is not None:
        return
    typed = given_fields(ctx, params, _FROM_COMMAND_LINE)
    for field_name, flag, tool_name in _PATH_FLAGS:
        if field_name in typed and tool_name not in recipe.tools:
            tools = ",".join(recipe.tools) or "none"
            raise click.UsageError(
                f"{flag} configures the {tool_name} tool, which is not among the tools "
                f"({tools}); add it: --tools {','.join((*recipe.tools, tool_name))}"
            )


def recipe_from(fields: Mapping[str, object]) -> AgentRecipe:
    """The defaults with ``fields`` given now on top. Relative paths and the default tool
    set are fixed here, so a stored recipe means the same from any folder."""
    defaults = AgentRecipe(
        tools=DEFAULT_TOOLS,
        root=str(Path.cwd().resolve()),
        database=str(Path("loopwright.db").resolve()),
        outbox=str(Path("outbox.jsonl").resolve()),
    )
    return defaults.updated(fields)
