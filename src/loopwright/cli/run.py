"""``loopwright run PROMPT``: one agent run from the shell.

Contracts: bad input (flag, tool, model, prompt) prints ONE line naming the fix and exits
2, never a traceback; with ``--json`` stdout always holds exactly one JSON object (an
error object for bad input). A finished run exits with the code of its stop reason
(:mod:`loopwright.cli.exit_codes`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import click

from loopwright.cli.agents import build_agent, confirm_handler, tainted_handler
from loopwright.cli.batch import BatchOptions, batch_main
from loopwright.cli.exit_codes import exit_code, table
from loopwright.cli.observe import instrument
from loopwright.cli.options import (
    POSITIVE_INT,
    NonEmptyPath,
    agent_options,
    as_json,
    check_path_flags,
    given_fields,
    recipe_from,
)
from loopwright.cli.output import CliError, say
from loopwright.cli.render import StreamRenderer
from loopwright.cli.results import print_result
from loopwright.cli.stored import may_pause, observed, run_durably
from loopwright.cli.strategy_run import parse_settings, run_strategy
from loopwright.core.text import to_json
from loopwright.store import open_store
from loopwright.strategies.catalog import STRATEGY_NAMES

MAX_PROMPT_BYTES = 4_000_000

RUN_HELP = f"""Run an agent on PROMPT and print its answer ("-" reads the prompt from stdin).

\b
Examples:
  loopwright run "What is (3 + 5) * 8?"
  loopwright run --tools add,multiply,divide "What is (3 + 5) * 8?"
  loopwright run --stream "What's the weather in Beijing?"
  loopwright run --json --tools read_file --root docs "Summarise quickstart.md"
  loopwright run --tools sql_query --db shop.db "How many orders are there?"
  echo "What is 2 ** 10?" | loopwright run -
  loopwright run --model openai:gpt-4o-mini --timeout 60 "Hello"
  loopwright run --trace traces "What is 2 + 3?"           then: loopwright trace list
  loopwright run --batch prompts.jsonl --concurrency 8 --json
  loopwright run --mcp mcp-server-time --mcp http://127.0.0.1:8000/mcp "Time in Tokyo?"
  loopwright run --model openai:gpt-4o-mini --strategy self_consistency "What is 17 * 23?"
  loopwright run --strategy self_consistency --strategy-setting k=3 "What is 17 * 23?"

Tools that require confirmation (send_email) ask on a terminal; --yes approves and
--no denies every such call. Without a terminal and without either flag the call is
not executed: the run is kept as a stored session and stops with
awaiting_confirmation (exit 17); `loopwright resume SESSION --approve` continues it.

\b
Exit codes:
{table()}
"""


def read_prompt(prompt: str) -> str:
    """The prompt text; ``-`` reads stdin (must be UTF-8). Raises :class:`CliError`."""
    if prompt == "-":
        data = sys.stdin.buffer.read(MAX_PROMPT_BYTES + 1)
        if len(data) > MAX_PROMPT_BYTES:
            raise CliError(f"stdin prompt is larger than {MAX_PROMPT_BYTES} bytes; shorten it")
        try:
            prompt = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CliError(
                f"stdin is not UTF-8 text (bad byte at offset {exc.start}); "
                "convert it, e.g. iconv -t UTF-8"
            ) from None
    if "\x00" in prompt:
        raise CliError("the prompt contains NUL bytes; pass plain text")
    if not prompt.strip():
        raise CliError('the prompt is empty; pass a question, e.g. loopwright run "What is 2 + 2?"')
    return prompt


def _payload_printer(direction: str, payload: Mapping[str, object]) -> None:
    say(f"[{direction}] ", to_json(payload, default=str), err=True)


@click.command("run", help=RUN_HELP, no_args_is_help=True)
@click.argument("prompt", required=False)
@agent_options
@click.option("--stream", is_flag=True, help="Show each step live (text, tool calls, results).")
@as_json
@click.option("--yes", "-y", is_flag=True, help="Approve every tool call that needs confirmation.")
@click.option(
    "--no", "-n", "deny", is_flag=True, help="Deny every tool call that needs confirmation."
)
@click.option(
    "--show-payload", is_flag=True, help="Print raw provider requests/responses to stderr."
)
# Tracing and batches (docs/tracing.md): cli/observe.py and cli/batch.py.
@click.option(
    "--trace",
    "trace_dir",
    type=NonEmptyPath(file_okay=False, path_type=Path),
    default=None,
    envvar="LOOPWRIGHT_TRACE_DIR",
    help="Write a JSONL trace of each run into this directory (see `loopwright trace`).",
)
@click.option(
    "--otel",
    is_flag=True,
    envvar="LOOPWRIGHT_OTEL",
    help="Export OpenTelemetry spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_* settings).",
)
@click.option(
    "--mcp",
    multiple=True,
    metavar="SERVER",
    help="Add an MCP server's tools (and read_resource for its resources): a command "
    "(stdio), an http(s) URL, a config file "
    "(.json/.yaml: all its servers) or FILE#NAME (one). Repeatable. See docs/mcp.md.",
)
@click.option(
    "--batch",
    type=NonEmptyPath(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Run every prompt of a JSONL file; one JSON result line each (instead of PROMPT).",
)
@click.option(
    "--concurrency",
    type=POSITIVE_INT,
    default=4,
    show_default=True,
    help="With --batch: how many runs at a time.",
)
@click.option(
    "--strategy",
    type=click.Choice(STRATEGY_NAMES),
    default=None,
    help="Answer with a reasoning strategy over the agent's model, tools and limits "
    "(docs/strategies.md). plan_execute, tree_of_thoughts and react_text need a model "
    "that follows text formats: the embedded one does not.",
)
@click.option(
    "--strategy-setting",
    "strategy_setting",
    multiple=True,
    metavar="NAME=VALUE",
    help="A setting of the --strategy (repeatable): e.g. k=3 for self_consistency, "
    "max_rounds=1 for self_refine (docs/strategies.md).",
)
@click.pass_context
def run_command(
    ctx: click.Context,
    prompt: str | None,
    stream: bool,
    as_json: bool,
    yes: bool,
    deny: bool,
    show_payload: bool,
    trace_dir: Path | None,
    otel: bool,
    mcp: tuple[str, ...],
    batch: Path | None,
    concurrency: int,
    strategy: str | None,
    strategy_setting: tuple[str, ...],
    **agent_params: object,
) -> None:
    recipe = recipe_from(given_fields(ctx, agent_params))
    if strategy_setting:  # cli/strategy_run.py
        given = parse_settings(strategy, strategy_setting, batch is not None)
        recipe = replace(recipe, strategy_settings=given)
    check_path_flags(ctx, agent_params, recipe)
    if yes and deny:
        raise CliError("--yes and --no exclude each other; pass one of them")
    if mcp:  # the servers' tools join the agent's registry (cli/mcp_tools.py)
        from loopwright.cli.mcp_tools import recipe_values

        recipe = replace(recipe, mcp=recipe_values(mcp))
    if batch is not None:
        options = BatchOptions(batch, concurrency, trace_dir, otel)
        ctx.exit(batch_main(prompt, recipe, confirm_handler(yes, deny, False), options))
    if prompt is None:
        raise CliError('give a PROMPT (e.g. "What is 2 + 2?") or --batch FILE')
    text = read_prompt(prompt)
    interactive = prompt != "-" and sys.stdin.isatty() and sys.stderr.isatty()
    confirm = confirm_handler(yes, deny, interactive)
    agent = build_agent(
        recipe,
        confirm,
        _payload_printer if show_payload else None,
        confirm_tainted=tainted_handler(interactive),
    )
    agent = instrument(agent, trace_dir, otel)
    if stream:
        agent = observed(agent, StreamRenderer(sys.stderr if as_json else sys.stdout))
    if strategy is not None:  # cli/strategy_run.py
        stop = run_strategy(strategy, agent, text, recipe, as_json=as_json, streamed=stream)
        ctx.exit(exit_code(stop))
    if may_pause(agent, yes, deny, interactive):
        store = open_store()
        try:
            result = run_durably(agent, text, store, recipe)
        finally:
            store.close()
    else:
        result = agent.run(text)
    print_result(result, as_json=as_json, streamed=stream)
    ctx.exit(exit_code(result.stop))


COMMANDS: tuple[click.Command, ...] = (run_command,)
