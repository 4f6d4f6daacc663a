"""``loopwright chat``: a multi-turn conversation kept in the checkpoint store."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import click

from loopwright.cli.agents import build_agent, confirm_handler, tainted_handler
from loopwright.cli.exit_codes import exit_code
from loopwright.cli.options import (
    agent_options,
    agent_ref_option,
    as_json,
    command_line_and_defaults,
    store_options,
)
from loopwright.cli.output import CliError, say
from loopwright.cli.results import print_result
from loopwright.cli.stored import run_durably, session_recipe
from loopwright.core.errors import UserError
from loopwright.core.run import RunStop, check_session_id, new_session_id
from loopwright.store import open_store

MAX_LINE_BYTES = 1_000_000

CHAT_HELP = """A conversation kept in the store: one turn with PROMPT, or one turn per
line of stdin until EOF (or `exit`). The same --session continues in any process.

\b
Examples:
  loopwright chat "What is 2 + 2?"                   a new session (its id on stderr)
  loopwright chat --session s-1a2b3c "and times 8?"  the next turn of that session
  loopwright chat --session s-1a2b3c                 turns from the terminal, one a line
  loopwright chat --model openai:gpt-4o-mini --tools read_file --root docs "hi"
  loopwright chat --agent myagents:build --session s-1a2b3c "go on"
  loopwright chat --json --session s-1a2b3c "next"   one JSON object per turn

A new session records its agent setup (sealed with this user's key); later turns and
`loopwright resume` rebuild the agent from it unless --agent or --model is given.
"""


def _stdin_turns() -> Iterator[str]:
    interactive = sys.stdin.isatty()
    number = 0
    while True:
        if interactive:
            say("> ", nl=False, err=True)
        raw = sys.stdin.buffer.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise CliError(f"stdin line {number} is longer than {MAX_LINE_BYTES} bytes")
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise CliError(
                f"stdin line {number} is not UTF-8 text (bad byte at offset {exc.start}); "
                "convert it, e.g. iconv -t UTF-8"
            ) from None
        if "\x00" in text:  # refused as run refuses such a prompt
            raise CliError(f"stdin line {number} contains NUL bytes; pass plain text")
        if text in ("exit", "quit"):
            return
        if text:
            yield text


def _unsent(turns: Iterator[str], session_id: str) -> None:
    """Say which stdin turns a pause left unsent (they were dropped without a word): a
    session waiting for approval takes no new turn until it is decided."""
    if sys.stdin.isatty():
        count = "the next lines are"
    else:
        try:
            left = sum(1 for _ in turns)
        except CliError:  # a later line that is not UTF-8: still not sent
            left = -1
        if left == 0:
            return
        count = "the remaining stdin lines are" if left < 0 else f"{left} more stdin line(s) are"
    say(
        f"note: {count} not sent: session {session_id} waits for approval; decide with "
        f"`loopwright resume {session_id} --approve` (or --deny REASON), then send them with "
        f"`loopwright chat --session {session_id}`",
        err=True,
    )


@click.command("chat", help=CHAT_HELP)
@click.argument("prompt", required=False)
@click.option(
    "--session", "session_id", default=None, help="Session id to continue (created if new)."
)
@click.option("--yes", "-y", is_flag=True, help="Approve tool calls that need confirmation.")
@click.option("--no", "-n", "deny", is_flag=True, help="Deny tool calls that need confirmation.")
@agent_ref_option
@agent_options
@store_options
@as_json
@click.pass_context
def chat(
    ctx: click.Context,
    prompt: str | None,
    session_id: str | None,
    yes: bool,
    deny: bool,
    store_kind: str | None,
    store_url: str | None,
    as_json: bool,
    **agent_params: object,
) -> None:
    if yes and deny:
        raise CliError("--yes and --no exclude each other; pass one of them")
    if prompt is not None and not prompt.strip():
        raise CliError('the prompt is empty; pass a question, e.g. loopwright chat "hi"')
    if session_id is not None:
        # "" (an unset $SESSION) quietly started a new session whose id was never shown
        try:
            check_session_id(session_id)
        except UserError as exc:
            raise CliError(f"--session: {exc}") from None
    given, defaults = command_line_and_defaults(ctx, agent_params)
    interactive = sys.stdin.isatty() and sys.stderr.isatty() and prompt is not None
    code = 0
    store = open_store(store_kind, store_url)
    try:
        recipe = session_recipe(store, session_id, given, defaults)
        agent = build_agent(
            recipe,
            confirm_handler(yes, deny, interactive),
            confirm_tainted=tainted_handler(interactive),
        )
        sid = new_session_id() if session_id is None else session_id
        if not as_json and session_id is None:
            say(f"session_id: {sid}", err=True)
        turns = iter([prompt]) if prompt else _stdin_turns()
        for text in turns:
            result = run_durably(agent, text, store, recipe, session_id=sid)
            print_result(result, as_json=as_json)
            code = exit_code(result.stop)
            if result.stop is RunStop.AWAITING_CONFIRMATION:
                if not prompt:
                    _unsent(turns, sid)
                break
    finally:
        store.close()
    ctx.exit(code)


COMMANDS: tuple[click.Command, ...] = (chat,)
