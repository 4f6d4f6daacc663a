"""``loopwright resume SESSION``: approve or deny a paused session's calls, or continue a
run whose process died."""

from __future__ import annotations

import sys

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
from loopwright.cli.stored import resumable, session_recipe
from loopwright.cli.strategy_run import (
    is_strategy_session,
    report,
    resume_strategy,
    strategy_decision,
)
from loopwright.core.run import RunResult, RunState
from loopwright.durable import Durable
from loopwright.store import SessionNotFound, StoreMissing, open_store
from loopwright.strategies.runtime import StrategyResult

RESUME_HELP = """Continue stored session SESSION: approve or deny its pending calls, or
recover a run whose process died.

\b
Examples:
  loopwright resume s-1a2b3c --approve                approve every pending call
  loopwright resume s-1a2b3c --deny "not today"       deny them (the model is told why)
  loopwright resume s-1a2b3c --approve-call call-1 --deny "only the first"
  loopwright resume s-1a2b3c --deny-call call-2="wrong recipient"
  loopwright resume s-1a2b3c --break-lock             take over from a dead process
  loopwright resume s-1a2b3c --approve --json
  loopwright resume s-4d5e6f --guidance "use the 2025 figures"   a paused plan

A `run --strategy plan_execute` session (paused by its reflector or by a step waiting
for approval, or whose process died) continues from its last checkpoint without running
finished steps again; --approve / --deny REASON answer the waiting steps, --guidance has
the planner revise the plan first (docs/strategies.md).

The agent is rebuilt from the session's sealed setup (what was given on the command
line when it started, sealed with this user's key). A setup changed in the store, or
written on another machine, is refused: pass --agent MODULE:ATTR or --model/--tools
(any agent flag given here also overrides the stored one).
"""


def _denials(deny_calls: tuple[str, ...]) -> dict[str, str]:
    per_call: dict[str, str] = {}
    for item in deny_calls:
        call_id, sep, reason = item.partition("=")
        if not sep or not call_id:
            raise CliError(f"--deny-call {item!r} must look like CALL_ID=REASON")
        per_call[call_id] = reason
    return per_call


@click.command("resume", help=RESUME_HELP, no_args_is_help=True)
@click.argument("session_id")
@click.option("--approve", is_flag=True, help="Approve every pending call.")
@click.option(
    "--approve-call",
    "approve_calls",
    multiple=True,
    metavar="CALL_ID",
    help="Approve one call (repeatable).",
)
@click.option(
    "--deny",
    default=None,
    metavar="REASON",
    help="Deny the pending calls not approved, with this reason.",
)
@click.option(
    "--deny-call",
    "deny_calls",
    multiple=True,
    metavar="CALL_ID=REASON",
    help="Deny one call (repeatable).",
)
@click.option(
    "--break-lock", is_flag=True, help="Take over a session whose runner died (stale lock)."
)
@click.option(
    "--guidance",
    default=None,
    metavar="TEXT",
    help="For a paused strategy run: instructions the planner revises the plan with.",
)
@agent_ref_option
@agent_options
@store_options
@as_json
@click.pass_context
def resume(
    ctx: click.Context,
    session_id: str,
    approve: bool,
    approve_calls: tuple[str, ...],
    deny: str | None,
    deny_calls: tuple[str, ...],
    break_lock: bool,
    guidance: str | None,
    store_kind: str | None,
    store_url: str | None,
    as_json: bool,
    **agent_params: object,
) -> None:
    per_call = _denials(deny_calls)
    if approve and approve_calls:
        raise CliError("use --approve (all calls) or --approve-call ID, not both")
    if per_call and deny:
        raise CliError("use --deny REASON (all other calls) or --deny-call ID=REASON, not both")
    approval: bool | list[str] = list(approve_calls) if approve_calls else approve
    given, defaults = command_line_and_defaults(ctx, agent_params)
    try:
        store = open_store(store_kind, store_url, create=False)  # the session must exist
    except StoreMissing as exc:
        raise SessionNotFound(session_id, str(exc)) from None
    try:
        store.history(session_id)  # an unknown session fails first, naming the session
        recipe = session_recipe(store, session_id, given, defaults)
        interactive = sys.stdin.isatty() and sys.stderr.isatty()
        agent = build_agent(
            recipe,
            confirm_handler(False, False, interactive),
            confirm_tainted=tainted_handler(interactive),
        )
        stored = store.load(session_id)
        result: RunResult | StrategyResult
        if is_strategy_session(stored):  # cli/strategy_run.py
            if per_call or approve_calls:
                raise CliError(
                    f"session {session_id!r} is a strategy run: --approve or --deny REASON "
                    "answers its waiting steps (not one call at a time)"
                )
            decision = strategy_decision(approve, deny)
            result = resume_strategy(
                agent, recipe, store, stored, guidance, decision, break_lock=break_lock
            )
        elif guidance is not None:
            raise CliError(
                f"--guidance applies to a paused strategy run; session {session_id!r} is an "
                "agent run (approve or deny its calls instead)"
            )
        else:
            if (approval or deny or per_call) and not stored.pending_calls:
                say(f"note: {_nothing_to_decide(stored)}", err=True)
            with resumable(session_id):
                result = Durable(agent, store).resume(
                    session_id, approve=approval, deny=per_call or deny, break_lock=break_lock
                )
    finally:
        store.close()
    if isinstance(result, StrategyResult):
        ctx.exit(exit_code(report(result, as_json=as_json)))
    print_result(result, as_json=as_json)
    ctx.exit(exit_code(result.stop))


def _nothing_to_decide(state: RunState) -> str:
    """Why --approve/--deny decided nothing: the run printed its stored result with exit 0
    and no word that the decision applied to no call."""
    sid = state.session_id
    if state.stop is not None:
        return (
            f"session {sid} has no pending calls: its run already ended ({state.stop.value}), "
            "so --approve/--deny decided nothing; its result is shown again"
        )
    return (
        f"session {sid} has no pending calls: its run stopped without a result, so "
        "--approve/--deny decide nothing; the run is recovered from its last checkpoint"
    )


COMMANDS: tuple[click.Command, ...] = (resume,)
