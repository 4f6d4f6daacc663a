"""``loopwright run PROMPT``: one agent run from the shell.

Contracts: bad input (flag, tool, model, prompt) prints ONE line naming the fix and exits
2, never a traceback; with ``--json`` stdout always holds exactly one JSON object (an
``error`` object for bad input). A finished run exits with the code of its stop reason
(:mod:`loopwright.cli.exit_codes`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from loopwright.cli.exit_codes import exit_code, table
from loopwright.cli.render import StreamRenderer
from loopwright.cli.trace_cmd import instrument
from loopwright.core.errors import LoopwrightError, UserError
from loopwright.core.events import RunFinished
from loopwright.core.protocols import Model, PayloadHook
from loopwright.core.run import RunResult, RunStop
from loopwright.loop import Agent, Limits
from loopwright.tools import Confirmation, DispatchConfig
from loopwright.tools.builtin import DEFAULT_TOOLS, BuiltinConfig, make_tools

DEFAULT_MODEL = "local:gemma-3-270m"
MAX_PROMPT_BYTES = 4_000_000
USAGE_EXIT = 2

RUN_HELP = f"""Run an agent on PROMPT and print its answer ("-" reads the prompt from stdin).

\b
Examples:
  loopwright run "What is (3 + 5) * 8?"
  loopwright run --tools add,multiply,divide "What is (3 + 5) * 8?"
  loopwright run --stream "What's the weather in Beijing?"
  loopwright run --json --tools read_file --root docs "Summarise quickstart.md"
  echo "What is 2 ** 10?" | loopwright run -
  loopwright run --model local:/models/other.gguf "Hello"

Tools that require confirmation (send_email) ask on a terminal; --yes approves and
--no denies every such call. Without a terminal and without either flag the call is
not executed and the run stops with awaiting_confirmation (exit 17).

\b
Exit codes:
{table()}
"""


class InputError(UserError):
    """Bad command-line input (exit 2, one line)."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    model: str
    tools: str
    system: str | None
    limits: Limits
    stream: bool
    as_json: bool
    yes: bool
    no: bool
    builtin: BuiltinConfig
    base_url: str | None = None
    show_payload: bool = False
    trace_dir: Path | None = None
    otel: bool = False


# ------------------------------------------------------------------ inputs


def read_prompt(prompt: str) -> str:
    """The prompt text; ``-`` reads stdin (must be UTF-8). Raises :class:`InputError`."""
    if prompt == "-":
        data = sys.stdin.buffer.read(MAX_PROMPT_BYTES + 1)
        if len(data) > MAX_PROMPT_BYTES:
            raise InputError(f"stdin prompt is larger than {MAX_PROMPT_BYTES} bytes; shorten it")
        try:
            prompt = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"stdin is not UTF-8 text (bad byte at offset {exc.start}); "
                "convert it, e.g. iconv -t UTF-8"
            ) from None
    if "\x00" in prompt:
        raise InputError("the prompt contains NUL bytes; pass plain text")
    if not prompt.strip():
        raise InputError(
            'the prompt is empty; pass a question, e.g. loopwright run "What is 2 + 2?"'
        )
    return prompt


def resolve(spec: str, base_url: str | None, on_payload: PayloadHook | None) -> Model:
    """Build and (for embedded models) load the model; errors are one-line UserErrors."""
    from loopwright.providers.registry import resolve_model

    model = resolve_model(spec, base_url=base_url, on_payload=on_payload)
    load = getattr(model, "load", None)
    if callable(load):
        load()  # a missing/corrupt GGUF fails here, as a ConfigError, before the run
    return model


def confirm_handler(yes: bool, no: bool, interactive: bool) -> Any:
    """--yes approves, --no denies, a terminal asks, otherwise the call waits."""

    def handler(call: Any, spec: Any) -> Confirmation:
        if yes:
            return Confirmation.approve("approved with --yes")
        if no:
            return Confirmation.deny("denied with --no")
        if interactive:
            args = json.dumps(dict(call.arguments), ensure_ascii=False)
            ok = click.confirm(f"Run {call.name}({args})?", err=True, default=False)
            return Confirmation.approve() if ok else Confirmation.deny("denied at the prompt")
        return Confirmation.later("no terminal to ask; re-run with --yes or --no")

    return handler


def _payload_printer(direction: str, payload: Mapping[str, Any]) -> None:
    click.echo(f"[{direction}] " + json.dumps(payload, ensure_ascii=False, default=str), err=True)


# ------------------------------------------------------------------ running


def build_agent(opts: RunOptions, interactive: bool) -> Agent:
    if opts.yes and opts.no:
        raise InputError("--yes and --no exclude each other; pass one of them")
    names = [n for n in opts.tools.split(",") if n.strip()]
    tools = make_tools(names, opts.builtin)
    model = resolve(opts.model, opts.base_url, _payload_printer if opts.show_payload else None)
    return Agent(
        model,
        tools,
        system=opts.system,
        limits=opts.limits,
        dispatch=DispatchConfig(confirm=confirm_handler(opts.yes, opts.no, interactive)),
    )


async def _drive(agent: Agent, prompt: str, stream: bool, as_json: bool) -> RunResult:
    if not stream:
        return await agent.arun(prompt)
    render = StreamRenderer(sys.stderr if as_json else sys.stdout)
    result: RunResult | None = None
    async for event in agent.stream(prompt):
        render(event)
        if isinstance(event, RunFinished):
            result = event.result
    assert result is not None, "agent.stream ends with RunFinished"
    return result


def result_json(result: RunResult) -> dict[str, Any]:
    data = result.to_dict()
    data["exit_code"] = exit_code(result.stop)
    data["pending_calls"] = [
        {"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in result.pending_calls
    ]
    if result.stop is RunStop.AWAITING_CONFIRMATION:
        data["hint"] = approve_hint(result)
    return data


APPROVE_HINT = (
    "a tool needs confirmation and there is no terminal to ask: re-run with --yes to "
    "approve or --no to deny"
)


def approve_hint(result: RunResult) -> str:
    """How to continue a paused run: resume the stored session, or re-run with a flag."""
    if result.session_id:
        return (
            f"a tool needs confirmation and there is no terminal to ask: approve with "
            f"`loopwright resume {result.session_id} --approve` or deny with "
            f"`loopwright resume {result.session_id} --deny REASON` "
            "(or re-run with --yes / --no)"
        )
    return APPROVE_HINT


def print_result(result: RunResult, opts: RunOptions) -> None:
    if opts.as_json:
        click.echo(json.dumps(result_json(result), ensure_ascii=False, default=str))
        return
    if result.answer and not opts.stream:
        click.echo(result.answer)
    if result.stop is RunStop.AWAITING_CONFIRMATION:
        for call in result.pending_calls:
            args = json.dumps(dict(call.arguments), ensure_ascii=False)
            click.echo(f"pending: {call.name}({args})", err=True)
        if not result.session_id:  # a stored session already printed how to resume it
            click.echo(approve_hint(result), err=True)
    elif result.stop is not RunStop.FINAL_ANSWER:
        click.echo(f"stopped: {result.stop.value} {result.detail}".rstrip(), err=True)


def fail(message: str, as_json: bool, code: int = USAGE_EXIT) -> None:
    """One line on stderr (and one JSON object on stdout with --json), then exit."""
    line = " ".join(str(message).split()) or "error"
    if as_json:
        kind = "usage_error" if code == USAGE_EXIT else "internal_error"
        click.echo(
            json.dumps(
                {
                    "answer": "",
                    "stop_reason": kind,
                    "error": line,
                    "exit_code": code,
                    "turns": 0,
                    "usage": {},
                    "messages": [],
                    "session_id": None,
                }
            )
        )
    click.echo(f"error: {line}", err=True)
    sys.exit(code)


def execute(prompt: str, opts: RunOptions) -> None:
    """Run and exit with the stop reason's code (see the module docstring)."""
    try:
        text = read_prompt(prompt)
        interactive = prompt != "-" and sys.stdin.isatty() and sys.stderr.isatty()
        agent = build_agent(opts, interactive)
        agent = instrument(agent, opts.trace_dir, opts.otel)
        # [store seam, added by helper S] a run that may pause on a confirmation nobody
        # can answer is checkpointed, so `loopwright resume SESSION` can continue it.
        from loopwright.cli.sessions import pauses_to_store, run_for_cli

        if pauses_to_store(agent, opts, interactive):
            result = run_for_cli(agent, text, opts)
        else:
            result = asyncio.run(_drive(agent, text, opts.stream, opts.as_json))
    except (LoopwrightError, ValueError) as exc:
        fail(str(exc), opts.as_json)
        return
    except KeyboardInterrupt:
        fail("interrupted", opts.as_json, exit_code(RunStop.CANCELLED))
        return
    print_result(result, opts)
    sys.exit(exit_code(result.stop))


# ------------------------------------------------------------------ the command


def _positive(_ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None and value <= 0:
        raise click.BadParameter(f"must be > 0, got {value}", param=param)
    return value


@click.command("run", help=RUN_HELP, no_args_is_help=True)
@click.argument("prompt", required=False)
@click.option(
    "--model",
    "-m",
    default=DEFAULT_MODEL,
    show_default=True,
    envvar="LOOPWRIGHT_MODEL",
    help="Model: local:gemma-3-270m (embedded), local:PATH.gguf, openai:gpt-4o-mini, ...",
)
@click.option(
    "--tools",
    "-t",
    default=",".join(DEFAULT_TOOLS),
    show_default=True,
    help="Comma-separated built-in tools (see `loopwright tools`); '' for none.",
)
@click.option("--system", "-s", default=None, help="System prompt.")
@click.option(
    "--max-turns",
    type=int,
    default=10,
    show_default=True,
    callback=_positive,
    help="Stop after this many model calls.",
)
@click.option(
    "--token-budget",
    type=int,
    default=None,
    callback=_positive,
    help="Stop once input+output tokens exceed this.",
)
@click.option(
    "--timeout", type=float, default=None, callback=_positive, help="Stop after this many seconds."
)
@click.option("--stream", is_flag=True, help="Show each step live (text, tool calls, results).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object: answer, stop_reason, turns, usage, messages, ...",
)
@click.option("--yes", "-y", is_flag=True, help="Approve every tool call that needs confirmation.")
@click.option(
    "--no", "-n", "deny", is_flag=True, help="Deny every tool call that needs confirmation."
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="read_file's root directory (default: the working directory).",
)
@click.option(
    "--db",
    "database",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("loopwright.db"),
    show_default=True,
    help="sql_query's SQLite file.",
)
@click.option(
    "--outbox",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("outbox.jsonl"),
    show_default=True,
    help="send_email's outbox file.",
)
# Provider plumbing (owned with helper P1): endpoint override and raw payload capture.
@click.option("--base-url", default=None, help="Override the provider endpoint (remote models).")
@click.option(
    "--show-payload", is_flag=True, help="Print raw provider requests/responses to stderr."
)
# Tracing and batches (docs/tracing.md): options that hand off to cli/trace_cmd and cli/batch.
@click.option(
    "--trace",
    "trace_dir",
    type=click.Path(file_okay=False, path_type=Path),
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
    "--batch",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Run every prompt of a JSONL file; one JSON result line each (instead of PROMPT).",
)
@click.option(
    "--concurrency",
    type=int,
    default=4,
    show_default=True,
    callback=_positive,
    help="With --batch: how many runs at a time.",
)
def run_command(prompt: str | None, **kw: Any) -> None:
    limits = Limits(
        max_turns=kw["max_turns"], token_budget=kw["token_budget"], timeout=kw["timeout"]
    )
    builtin = BuiltinConfig(
        root=(kw["root"] or Path.cwd()), database=kw["database"], outbox=kw["outbox"]
    )
    opts = RunOptions(
        model=kw["model"],
        tools=kw["tools"],
        system=kw["system"],
        limits=limits,
        stream=kw["stream"],
        as_json=kw["as_json"],
        yes=kw["yes"],
        no=kw["deny"],
        builtin=builtin,
        base_url=kw["base_url"],
        show_payload=kw["show_payload"],
        trace_dir=kw["trace_dir"],
        otel=kw["otel"],
    )
    if kw["batch"] is not None:
        from loopwright.cli.batch import batch_main

        batch_main(prompt, kw["batch"], kw["concurrency"], opts)
        return
    if prompt is None:
        raise click.UsageError('give a PROMPT (e.g. "What is 2 + 2?") or --batch FILE')
    execute(prompt, opts)
