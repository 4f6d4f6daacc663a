"""``loopwright sessions``: list, show, delete and fork stored sessions.

Every subcommand takes ``--store sqlite|redis|postgres|memory`` and ``--store-url URL``
(env: ``LOOPWRIGHT_STORE`` / ``LOOPWRIGHT_STORE_URL``; default: SQLite in the user's data
folder), on the group or on the subcommand.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import click

from loopwright.cli.options import POSITIVE_INT, as_json, store_options
from loopwright.cli.output import CliError, Painted, emit_json, say
from loopwright.cli.results import call_line, pending_call
from loopwright.store import (
    CheckpointStore,
    SessionInfo,
    SessionNotFound,
    StoreMissing,
    fork,
    open_store,
)

SESSIONS_HELP = """List stored sessions with their status (newest first).

\b
Examples:
  loopwright sessions                          list sessions (newest first)
  loopwright sessions --json --limit 5         the five newest, as JSON
  loopwright sessions show s-1a2b3c            checkpoints and pending calls
  loopwright sessions fork s-1a2b3c --checkpoint 2   copy checkpoint 2 to a new session
  loopwright sessions delete s-1a2b3c
  loopwright sessions --store-url redis://localhost:6379/0

A row that cannot be read is listed as `unreadable` with its problem; the other
sessions are still shown.
"""


def _info_row(i: SessionInfo) -> dict[str, object]:
    return {
        "session_id": i.session_id,
        "status": i.display_status,
        "turn": i.turn,
        "messages": i.message_count,
        "checkpoints": i.checkpoints,
        "updated_at": i.updated_at,
        "parent": i.parent,
        "problem": i.problem or None,
    }


@contextmanager
def _store(
    ctx: click.Context, kind: str | None, url: str | None, session_id: str | None = None
) -> Iterator[CheckpointStore]:
    """The store named here, else on the group (``loopwright sessions --store-url X show``).
    Every sessions command reads or changes sessions that must exist, so it creates no
    store: a missing SQLite file is an error naming it, for a command on ``session_id``
    that session not being found."""
    obj = ctx.find_object(dict) or {}
    try:
        store = open_store(kind or obj.get("store_kind"), url or obj.get("store_url"), create=False)
    except StoreMissing as exc:
        if session_id is None:
            raise
        raise SessionNotFound(session_id, str(exc)) from None
    try:
        yield store
    finally:
        store.close()


def _json(ctx: click.Context, flag: bool) -> bool:
    obj = ctx.find_object(dict) or {}
    return flag or bool(obj.get("as_json"))


@click.group("sessions", invoke_without_command=True, help=SESSIONS_HELP)
@store_options
@as_json
@click.option("--limit", type=POSITIVE_INT, default=None, help="Show at most N sessions.")
@click.pass_context
def sessions(
    ctx: click.Context,
    store_kind: str | None,
    store_url: str | None,
    as_json: bool,
    limit: int | None,
) -> None:
    ctx.obj = {"store_kind": store_kind, "store_url": store_url, "as_json": as_json}
    if ctx.invoked_subcommand is not None:
        return
    with _store(ctx, None, None) as store:
        rows = [_info_row(i) for i in store.sessions(limit=limit)]
    if as_json:
        emit_json({"sessions": rows})
        return
    if not rows:
        say("no sessions")
        return
    say(Painted(f"{'SESSION':<24} {'STATUS':<24} {'TURN':>4} {'MSGS':>5}  UPDATED", bold=True))
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(r["updated_at"])))  # type: ignore[arg-type]
        note = f"  (fork of {r['parent']})" if r["parent"] else ""
        if r["problem"]:
            note = f"  {r['problem']}"
        status = Painted(f"{r['status']:<24}", fg="red" if r["problem"] else None)
        say(
            f"{r['session_id']:<24} ",
            status,
            f" {r['turn']:>4} {r['messages']:>5}  {when}{note}",
        )


@sessions.command("show")
@click.argument("session_id")
@store_options
@as_json
@click.pass_context
def show(
    ctx: click.Context,
    session_id: str,
    store_kind: str | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Show a session's checkpoints and pending calls.

    \b
    Examples:
      loopwright sessions show s-1a2b3c
      loopwright sessions show s-1a2b3c --json
    """
    with _store(ctx, store_kind, store_url, session_id) as store:
        refs = store.history(session_id)
        state = store.load(session_id)
    checkpoints = [
        {
            "checkpoint": r.checkpoint,
            "turn": r.turn,
            "status": r.status.value,
            "stop": r.stop.value if r.stop else None,
            "messages": r.message_count,
        }
        for r in refs
    ]
    pending = [pending_call(c) for c in state.pending_calls]
    if _json(ctx, as_json):
        emit_json({"session_id": session_id, "checkpoints": checkpoints, "pending_calls": pending})
        return
    for c in checkpoints:
        say(
            f"#{c['checkpoint']:<4} turn {c['turn']:<3} {c['status']:<8} "
            f"{c['stop'] or '':<22} {c['messages']} messages"
        )
    for p in pending:
        say(Painted("pending ", fg="yellow"), call_line(p))


@sessions.command("delete")
@click.argument("session_id")
@store_options
@as_json
@click.pass_context
def delete(
    ctx: click.Context,
    session_id: str,
    store_kind: str | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Delete a session and everything stored with it.

    \b
    Examples:
      loopwright sessions delete s-1a2b3c
    """
    with _store(ctx, store_kind, store_url, session_id) as store:
        found = store.delete(session_id)
    if not found:
        raise CliError(
            f"session {session_id!r} not found; list sessions with `loopwright sessions`",
            session_id=session_id,
        )
    if _json(ctx, as_json):
        emit_json({"deleted": session_id})
    else:
        say(f"deleted {session_id}")


@sessions.command("fork")
@click.argument("session_id")
@click.option(
    "--checkpoint", type=POSITIVE_INT, default=None, help="Checkpoint number (default: latest)."
)
@store_options
@as_json
@click.pass_context
def fork_cmd(
    ctx: click.Context,
    session_id: str,
    checkpoint: int | None,
    store_kind: str | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Time travel: copy a checkpoint into a new session (then `loopwright resume` it).

    \b
    Examples:
      loopwright sessions fork s-1a2b3c                 the latest checkpoint
      loopwright sessions fork s-1a2b3c --checkpoint 2
    """
    with _store(ctx, store_kind, store_url, session_id) as store:
        state = fork(store, session_id, checkpoint)
    if _json(ctx, as_json):
        emit_json({"session_id": state.session_id})
    else:
        say(state.session_id)


COMMANDS: tuple[click.Command, ...] = (sessions,)
