"""``loopwright batch PROMPTS.jsonl``: many prompts through one agent, in this process or
on a Ray cluster (cli/batch.py runs it; docs/batch.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from loopwright.cli.agents import confirm_handler
from loopwright.cli.batch import ENGINES, BatchOptions, batch_main
from loopwright.cli.exit_codes import table
from loopwright.cli.options import (
    POSITIVE_INT,
    POSITIVE_SECONDS,
    NonEmptyPath,
    agent_options,
    agent_ref_option,
    given_fields,
    recipe_from,
)
from loopwright.cli.output import CliError
from loopwright.core.run import RunStop
from loopwright.strategies.catalog import STRATEGY_NAMES

BATCH_HELP = f"""Run every prompt of PROMPTS (JSONL) through one agent; one JSON result line
per prompt, recorded exactly once.

\b
Each line of PROMPTS is a JSON string or an object:
  "What is 2 + 2?"
  {{"prompt": "Capital of France?", "id": "fr", "limits": {{"max_turns": 3}}}}
A task's id (its "id", else "#N", its position from 0) names its result line.

\b
Examples:
  loopwright batch prompts.jsonl --out results.jsonl
  loopwright batch prompts.jsonl --engine ray --out results.jsonl
  loopwright batch prompts.jsonl --engine ray --address auto      (a `ray start` cluster)
  loopwright batch prompts.jsonl --engine ray --address ray://head:10001
  loopwright batch prompts.jsonl --strategy self_consistency --max-turns 4 --cost-budget 0.05
  loopwright batch prompts.jsonl --agent myagents:make_agent --retries 3 --retry-on model_error
  loopwright batch prompts.jsonl --mcp mcp-server-time --mcp servers.json#search

\b
Engines:
  local  every run in this process, --concurrency at a time (as `loopwright run --batch`)
  ray    chunks of --chunk-size prompts as Ray tasks, each running --concurrency at a
         time; without --address Ray starts on this machine (pip install 'loopwright[ray]')

\b
MCP servers (--mcp, as for `loopwright run`): connected once for the batch with
  --engine local; with --engine ray each worker connects its own for each chunk it
  runs (so the server commands and config files must exist on every node).

\b
Results and retries:
  --out FILE is resumable: run the same command again after a crash or Ctrl-C and the
  prompts FILE already records are skipped; the rest run. A prompt whose run raised or
  whose worker died (or that stopped with a --retry-on reason) runs again, up to
  --retries times; it is recorded once, with its last outcome and "attempts".
  stderr shows done/total, rate, errors, retries and cost.

\b
Exit codes (0 when every prompt run got a final answer, else the first failure's code):
{table()}
"""

RETRY_REASONS = tuple(stop.value for stop in RunStop if stop is not RunStop.FINAL_ANSWER)


@click.command("batch", help=BATCH_HELP, no_args_is_help=True)
@click.argument("prompts", type=NonEmptyPath(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    default="local",
    show_default=True,
    help="Where the runs execute.",
)
@click.option(
    "--address",
    default=None,
    metavar="ADDRESS",
    help="With --engine ray: 'auto' (a cluster started here with `ray start`) or "
    "ray://HOST:PORT (Ray Client). Default: a new local Ray.",
)
@click.option(
    "--out",
    "-o",
    type=NonEmptyPath(dir_okay=False, path_type=Path),
    default=None,
    help="Append result lines to this file (resumable); default: stdout.",
)
@click.option(
    "--concurrency",
    type=POSITIVE_INT,
    default=4,
    show_default=True,
    help="Runs at a time: in total (local), per Ray task (ray).",
)
@click.option(
    "--chunk-size",
    type=POSITIVE_INT,
    default=8,
    show_default=True,
    help="With --engine ray: prompts per Ray task.",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Runs of a failed prompt after the first.",
)
@click.option(
    "--retry-on",
    multiple=True,
    type=click.Choice(RETRY_REASONS),
    help="Also retry prompts that stopped for this reason (repeatable), e.g. model_error.",
)
@click.option(
    "--strategy",
    type=click.Choice(STRATEGY_NAMES),
    default=None,
    help="Answer each prompt with this reasoning strategy (docs/strategies.md).",
)
@click.option(
    "--cost-budget",
    type=POSITIVE_SECONDS,
    default=None,
    metavar="AMOUNT",
    help="Stop a prompt's run once its cost exceeds this (per prompt).",
)
@agent_options
@agent_ref_option
@click.option(
    "--mcp",
    multiple=True,
    metavar="SERVER",
    help="Add an MCP server's tools (and read_resource for its resources): a command "
    "(stdio), an http(s) URL, a config file "
    "(.json/.yaml: all its servers) or FILE#NAME (one). Repeatable. See docs/mcp.md.",
)
@click.option("--yes", "-y", is_flag=True, help="Approve every tool call that needs confirmation.")
@click.option(
    "--no", "-n", "deny", is_flag=True, help="Deny every tool call that needs confirmation."
)
@click.option(
    "--trace",
    "trace_dir",
    type=NonEmptyPath(file_okay=False, path_type=Path),
    default=None,
    envvar="LOOPWRIGHT_TRACE_DIR",
    help="With --engine local: a JSONL trace of each run in this directory.",
)
@click.option(
    "--otel", is_flag=True, envvar="LOOPWRIGHT_OTEL", help="With --engine local: OTLP spans."
)
@click.pass_context
def batch_command(
    ctx: click.Context,
    prompts: Path,
    engine: str,
    address: str | None,
    out: Path | None,
    concurrency: int,
    chunk_size: int,
    retries: int,
    retry_on: tuple[str, ...],
    strategy: str | None,
    cost_budget: float | None,
    mcp: tuple[str, ...],
    yes: bool,
    deny: bool,
    trace_dir: Path | None,
    otel: bool,
    **agent_params: object,
) -> None:
    if yes and deny:
        raise CliError("--yes and --no exclude each other; pass one of them")
    if address is not None and engine != "ray":
        raise CliError("--address is for --engine ray; add --engine ray")
    recipe = recipe_from(given_fields(ctx, agent_params))
    if mcp:  # cli/mcp_tools.py; config files made absolute for the Ray workers
        from loopwright.cli.mcp_tools import recipe_values

        recipe = replace(recipe, mcp=recipe_values(mcp))
    options = BatchOptions(
        prompts,
        concurrency,
        trace_dir,
        otel,
        engine=engine,
        address=address,
        out=out,
        retries=retries,
        retry_on=retry_on,
        strategy=strategy,
        chunk_size=chunk_size,
        cost_budget=cost_budget,
    )
    ctx.exit(batch_main(None, recipe, confirm_handler(yes, deny, False), options))


COMMANDS: tuple[click.Command, ...] = (batch_command,)
