"""``loopwright sessions`` / ``resume`` / ``chat``: durable sessions from the shell.

Every command takes ``--store sqlite|redis|postgres|memory`` and ``--store-url URL``
(env: ``LOOPWRIGHT_STORE`` / ``LOOPWRIGHT_STORE_URL``; default: SQLite in the user's data
directory).

Resuming needs the session's agent (model + tools). It is rebuilt from, in order:
``--agent MODULE:ATTR`` (an ``Agent`` or a zero-argument callable returning one),
``--model SPEC`` with ``--tools MODULE:ATTR`` (a Tool, a list of tools or a registry), or
the same options recorded in the session's metadata when it was created
(``metadata["agent"]``, written by :func:`run_durably`).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from loopwright.cli.exit_codes import exit_code
from loopwright.core.errors import LoopwrightError, UserError
from loopwright.core.run import RunResult, RunStop
from loopwright.durable import Durable
from loopwright.loop import Agent
from loopwright.store import CheckpointStore, SessionInfo, fork, open_store
from loopwright.store.factory import KINDS
from loopwright.tools import Confirmation, DispatchConfig

# ------------------------------------------------------------------ shared options
_store_kind = click.option(
    "--store",
    "store_kind",
    type=click.Choice(KINDS),
    envvar="LOOPWRIGHT_STORE",
    default=None,
    help="Checkpoint store (default: sqlite, or the scheme of --store-url).",
)
_store_url = click.option(
    "--store-url",
    envvar="LOOPWRIGHT_STORE_URL",
    default=None,
    help="Store URL: sqlite:///path.db, redis://host:port/0, postgresql://user@host/db.",
)
_json = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
_agent_opts = [
    click.option(
        "--agent", "agent_ref", default=None, help="MODULE:ATTR of an Agent or a factory."
    ),
    click.option("--model", default=None, help="Model spec, e.g. openai:gpt-4o-mini."),
    click.option("--tools", "tool_refs", multiple=True, help="MODULE:ATTR of tools (repeatable)."),
    click.option("--system", default=None, help="System prompt (with --model)."),
    click.option("--base-url", default=None, help="Model endpoint override (with --model)."),
]


def _with(options: Sequence[Any]) -> Any:
    def decorate(fn: Any) -> Any:
        for opt in reversed(options):
            fn = opt(fn)
        return fn

    return decorate


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _open(kind: str | None, url: str | None) -> CheckpointStore:
    try:
        return open_store(kind, url)
    except LoopwrightError as exc:
        _fail(str(exc), 2 if isinstance(exc, UserError) else 1)
        raise  # unreachable: _fail exits


# ------------------------------------------------------------------ agent reconstruction
def _import_ref(ref: str, what: str) -> Any:
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise UserError(f"{what} {ref!r} must look like package.module:attribute")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: modules next to the user
    try:
        obj = importlib.import_module(module)
    except ImportError as exc:
        raise UserError(f"{what} {ref!r}: cannot import {module} ({exc})") from None
    for name in attr.split("."):
        try:
            obj = getattr(obj, name)
        except AttributeError:
            raise UserError(f"{what} {ref!r}: {module} has no attribute {attr!r}") from None
    return obj


def agent_spec(
    agent_ref: str | None,
    model: str | None,
    tool_refs: Sequence[str],
    system: str | None,
    base_url: str | None,
) -> dict[str, Any]:
    """The JSON-able recipe for an agent (stored in a session's metadata)."""
    if agent_ref:
        return {"agent": agent_ref}
    spec: dict[str, Any] = {"model": model, "tools": list(tool_refs)}
    if system:
        spec["system"] = system
    if base_url:
        spec["base_url"] = base_url
    return spec


def build_agent(spec: Mapping[str, Any], confirm: Any = None) -> Agent:
    """An Agent from a recipe made by :func:`agent_spec` or :func:`run_recipe`.
    ``confirm`` is the handler for tools that require confirmation."""
    if isinstance(spec.get("run"), Mapping):
        return _agent_from_run_recipe(spec["run"], confirm)
    if spec.get("agent"):
        obj = _import_ref(str(spec["agent"]), "--agent")
        agent = obj if isinstance(obj, Agent) else obj()
        if not isinstance(agent, Agent):
            raise UserError(f"--agent {spec['agent']!r} did not give an Agent")
        if confirm is not None:
            config = agent.config
            from dataclasses import replace

            agent = Agent.from_config(
                replace(config, dispatch=replace(config.dispatch, confirm=confirm))
            )
        return agent
    if not spec.get("model"):
        raise UserError(
            "cannot rebuild this session's agent: pass --agent MODULE:ATTR or --model SPEC "
            "(the session has no agent recorded)"
        )
    from loopwright.providers.registry import resolve_model

    tools: list[Any] = []
    for ref in spec.get("tools") or ():
        obj = _import_ref(str(ref), "--tools")
        tools.extend(obj if isinstance(obj, list | tuple) else [obj])
    return Agent(
        resolve_model(str(spec["model"]), base_url=spec.get("base_url")),
        tools,
        system=spec.get("system"),
        dispatch=DispatchConfig(confirm=confirm),
    )


def confirm_handler(yes: bool, no: bool) -> Any:
    """--yes approves, --no denies, a terminal asks, otherwise the call waits (pause)."""

    def handler(call: Any, spec: Any) -> Confirmation:
        if yes:
            return Confirmation.approve()
        if no:
            return Confirmation.deny("denied with --no")
        if sys.stdin.isatty() and sys.stderr.isatty():
            args = json.dumps(dict(call.arguments), ensure_ascii=False)
            ok = click.confirm(f"run {call.name}({args})?", err=True, default=False)
            return Confirmation.approve() if ok else Confirmation.deny("denied at the prompt")
        return Confirmation.later()

    return handler


def _durable_for(
    store: CheckpointStore, session_id: str | None, opts: Mapping[str, Any], confirm: Any
) -> tuple[Durable, dict[str, Any]]:
    spec = agent_spec(
        opts.get("agent_ref"),
        opts.get("model"),
        opts.get("tool_refs") or (),
        opts.get("system"),
        opts.get("base_url"),
    )
    if not spec.get("agent") and not spec.get("model") and session_id is not None:
        try:
            recorded = store.load(session_id).metadata.get("agent")
        except LoopwrightError:
            recorded = None
        if isinstance(recorded, Mapping):
            spec = dict(recorded)
    return Durable(build_agent(spec, confirm), store), spec


# ------------------------------------------------------------------ `loopwright run` seam
def run_recipe(opts: Any) -> dict[str, Any]:
    """What ``loopwright resume`` needs to rebuild the agent of a ``loopwright run``."""
    b = opts.builtin
    return {
        "run": {
            "model": opts.model,
            "tools": opts.tools,
            "system": opts.system,
            "base_url": opts.base_url,
            "root": str(Path(b.root).resolve()),
            "database": str(Path(b.database).resolve()),
            "outbox": str(Path(b.outbox).resolve()),
            "max_turns": opts.limits.max_turns,
            "token_budget": opts.limits.token_budget,
            "timeout": opts.limits.timeout,
        }
    }


def _agent_from_run_recipe(recipe: Mapping[str, Any], confirm: Any) -> Agent:
    from dataclasses import replace

    from loopwright.cli.run import RunOptions
    from loopwright.cli.run import build_agent as build_run_agent
    from loopwright.loop import Limits
    from loopwright.tools.builtin import BuiltinConfig

    opts = RunOptions(
        model=str(recipe["model"]),
        tools=str(recipe.get("tools") or ""),
        system=recipe.get("system"),
        limits=Limits(
            max_turns=recipe.get("max_turns", 20),
            token_budget=recipe.get("token_budget"),
            timeout=recipe.get("timeout"),
        ),
        stream=False,
        as_json=False,
        yes=False,
        no=False,
        builtin=BuiltinConfig(
            root=Path(recipe["root"]),
            database=Path(recipe["database"]),
            outbox=Path(recipe["outbox"]),
        ),
        base_url=recipe.get("base_url"),
    )
    agent = build_run_agent(opts, interactive=False)
    if confirm is None:
        return agent
    config = agent.config
    return Agent.from_config(replace(config, dispatch=replace(config.dispatch, confirm=confirm)))


def pauses_to_store(agent: Agent, opts: Any, interactive: bool) -> bool:
    """``loopwright run`` checkpoints to the store when a confirmation could pause it:
    a tool needs confirmation and nobody can answer (no terminal, no --yes/--no)."""
    if opts.yes or opts.no or interactive:
        return False
    return any(t.spec.requires_confirmation for t in agent.tools)


def run_for_cli(agent: Agent, prompt: str, opts: Any) -> RunResult:
    """``loopwright run`` through a durable session (default store from LOOPWRIGHT_STORE /
    LOOPWRIGHT_STORE_URL, else SQLite in the user's data dir). On a pause, prints the
    session id and how to resume; ``--json`` carries ``session_id``."""
    if opts.stream:
        from dataclasses import replace

        from loopwright.cli.render import StreamRenderer

        render = StreamRenderer(sys.stderr if opts.as_json else sys.stdout)
        config = agent.config
        agent = Agent.from_config(replace(config, hooks=replace(config.hooks, on_event=render)))
    store = open_store()
    try:
        result = run_durably(agent, prompt, store, spec=run_recipe(opts))
    finally:
        store.close()
    if result.stop is RunStop.AWAITING_CONFIRMATION:
        click.echo(
            f"state saved to the {store.kind} store as session {result.session_id}; continue "
            f"with: loopwright resume {result.session_id} --approve | --deny REASON",
            err=True,
        )
        if not opts.as_json:
            click.echo(f"session_id: {result.session_id}")
    return result


def run_durably(
    agent: Agent,
    prompt: str,
    store: CheckpointStore,
    *,
    session_id: str | None = None,
    spec: Mapping[str, Any] | None = None,
) -> RunResult:
    """For ``loopwright run``: run ``prompt`` checkpointed to ``store``. A run paused on
    confirmations stays in the store; its ``session_id`` is in the result."""
    durable = Durable(agent, store)
    return durable.run(prompt, session_id=session_id, metadata={"agent": dict(spec or {})})


# ------------------------------------------------------------------ output
def _result_out(result: RunResult, as_json: bool) -> None:
    if as_json:
        data = result.to_dict()
        data["session_id"] = result.session_id
        data["pending_calls"] = [
            {"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
            for c in result.pending_calls
        ]
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    if result.stop is RunStop.AWAITING_CONFIRMATION:
        for call in result.pending_calls:
            args = json.dumps(dict(call.arguments), ensure_ascii=False)
            click.echo(f"pending {call.id}: {call.name}({args})", err=True)
        click.echo(
            f"session {result.session_id} awaits confirmation; continue with: "
            f"loopwright resume {result.session_id} --approve | --deny REASON",
            err=True,
        )
        click.echo(f"session_id: {result.session_id}")
        return
    if result.answer:
        click.echo(result.answer)
    if result.stop is not RunStop.FINAL_ANSWER:
        click.echo(f"stopped: {result.stop.value} {result.detail}".rstrip(), err=True)


def _info_row(i: SessionInfo) -> dict[str, Any]:
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


# ------------------------------------------------------------------ commands
@click.group("sessions", invoke_without_command=True)
@_store_kind
@_store_url
@_json
@click.option("--limit", type=int, default=None, help="Show at most N sessions.")
@click.pass_context
def sessions(
    ctx: click.Context,
    store_kind: str | None,
    store_url: str | None,
    as_json: bool,
    limit: int | None,
) -> None:
    """List stored sessions with their status (newest first)."""
    ctx.obj = {"store_kind": store_kind, "store_url": store_url, "as_json": as_json}
    if ctx.invoked_subcommand is not None:
        return
    store = _open(store_kind, store_url)
    try:
        rows = [_info_row(i) for i in store.sessions(limit=limit)]
    except LoopwrightError as exc:
        _fail(str(exc), 1)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps({"sessions": rows}))
        return
    if not rows:
        click.echo("no sessions")
        return
    click.echo(f"{'SESSION':<24} {'STATUS':<24} {'TURN':>4} {'MSGS':>5}  UPDATED")
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["updated_at"]))
        parent = f"  (fork of {r['parent']})" if r["parent"] else ""
        if r["problem"]:
            parent = f"  {r['problem']}"
        click.echo(
            f"{r['session_id']:<24} {r['status']:<24} {r['turn']:>4} {r['messages']:>5}  {when}{parent}"
        )


def _ctx_store(ctx: click.Context) -> tuple[CheckpointStore, bool]:
    obj = ctx.obj or {}
    return _open(obj.get("store_kind"), obj.get("store_url")), bool(obj.get("as_json"))


@sessions.command("show")
@click.argument("session_id")
@click.pass_context
def show(ctx: click.Context, session_id: str) -> None:
    """Show a session's checkpoints and pending calls."""
    store, as_json = _ctx_store(ctx)
    try:
        refs = store.history(session_id)
        state = store.load(session_id)
    except LoopwrightError as exc:
        _fail(str(exc), 2 if isinstance(exc, UserError) else 1)
    finally:
        store.close()
    data: dict[str, Any] = {
        "session_id": session_id,
        "checkpoints": [
            {
                "checkpoint": r.checkpoint,
                "turn": r.turn,
                "status": r.status.value,
                "stop": r.stop.value if r.stop else None,
                "messages": r.message_count,
            }
            for r in refs
        ],
        "pending_calls": [
            {"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
            for c in state.pending_calls
        ],
    }
    if as_json:
        click.echo(json.dumps(data))
        return
    for c in data["checkpoints"]:
        click.echo(
            f"#{c['checkpoint']:<4} turn {c['turn']:<3} {c['status']:<8} {c['stop'] or '':<22} {c['messages']} messages"
        )
    for p in data["pending_calls"]:
        click.echo(f"pending {p['id']}: {p['name']}({json.dumps(p['arguments'])})")


@sessions.command("delete")
@click.argument("session_id")
@click.pass_context
def delete(ctx: click.Context, session_id: str) -> None:
    """Delete a session and everything stored with it."""
    store, _ = _ctx_store(ctx)
    try:
        found = store.delete(session_id)
    finally:
        store.close()
    if not found:
        _fail(f"session {session_id!r} not found; list sessions with `loopwright sessions`")
    click.echo(f"deleted {session_id}")


@sessions.command("fork")
@click.argument("session_id")
@click.option("--checkpoint", type=int, default=None, help="Checkpoint number (default: latest).")
@click.pass_context
def fork_cmd(ctx: click.Context, session_id: str, checkpoint: int | None) -> None:
    """Time travel: copy a checkpoint into a new session (then `loopwright resume` it)."""
    store, as_json = _ctx_store(ctx)
    try:
        state = fork(store, session_id, checkpoint)
    except LoopwrightError as exc:
        _fail(str(exc), 2 if isinstance(exc, UserError) else 1)
    finally:
        store.close()
    click.echo(json.dumps({"session_id": state.session_id}) if as_json else state.session_id)


@click.command("resume")
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
@_with(_agent_opts)
@_store_kind
@_store_url
@_json
def resume(
    session_id: str,
    approve: bool,
    approve_calls: tuple[str, ...],
    deny: str | None,
    deny_calls: tuple[str, ...],
    break_lock: bool,
    store_kind: str | None,
    store_url: str | None,
    as_json: bool,
    **agent_opts: Any,
) -> None:
    """Continue a stored session: approve/deny its pending calls, or recover a crashed run."""
    per_call: dict[str, str] = {}
    for item in deny_calls:
        call_id, sep, reason = item.partition("=")
        if not sep or not call_id:
            _fail(f"--deny-call {item!r} must look like CALL_ID=REASON")
        per_call[call_id] = reason
    if approve and approve_calls:
        _fail("use --approve (all calls) or --approve-call ID, not both")
    store = _open(store_kind, store_url)
    try:
        store.history(session_id)  # an unknown session fails first, naming the session
        durable, _ = _durable_for(store, session_id, agent_opts, confirm_handler(False, False))
        approval: bool | list[str] = list(approve_calls) if approve_calls else approve
        denial: str | dict[str, str] | None = per_call or deny
        if per_call and deny:
            _fail("use --deny REASON (all other calls) or --deny-call ID=REASON, not both")
        result = durable.resume(session_id, approve=approval, deny=denial, break_lock=break_lock)
    except LoopwrightError as exc:
        _fail(str(exc), 2 if isinstance(exc, UserError) else 1)
    finally:
        store.close()
    _result_out(result, as_json)
    sys.exit(exit_code(result.stop))


@click.command("chat")
@click.option(
    "--session", "session_id", default=None, help="Session id to continue (created if new)."
)
@click.argument("prompt", required=False)
@click.option("--yes", is_flag=True, help="Approve tool calls that need confirmation.")
@click.option("--no", is_flag=True, help="Deny tool calls that need confirmation.")
@_with(_agent_opts)
@_store_kind
@_store_url
@_json
def chat(
    session_id: str | None,
    prompt: str | None,
    yes: bool,
    no: bool,
    store_kind: str | None,
    store_url: str | None,
    as_json: bool,
    **agent_opts: Any,
) -> None:
    """A multi-turn conversation kept in the store: one turn with PROMPT, or read turns
    from stdin (one per line) until EOF. The same --session continues in any process."""
    if yes and no:
        _fail("--yes and --no exclude each other")
    store = _open(store_kind, store_url)
    code = 0
    try:
        durable, spec = _durable_for(store, session_id, agent_opts, confirm_handler(yes, no))
        from loopwright.store import new_session_id

        sid = session_id or new_session_id()
        if not as_json and session_id is None:
            click.echo(f"session_id: {sid}", err=True)
        turns = [prompt] if prompt else _stdin_turns()
        for text in turns:
            result = durable.run(text, session_id=sid, metadata={"agent": spec})
            _result_out(result, as_json)
            code = exit_code(result.stop)
            if result.stop is RunStop.AWAITING_CONFIRMATION:
                break
    except LoopwrightError as exc:
        _fail(str(exc), 2 if isinstance(exc, UserError) else 1)
    finally:
        store.close()
    sys.exit(code)


def _stdin_turns() -> Any:
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            click.echo("> ", nl=False, err=True)
        line = sys.stdin.readline()
        if not line:
            return
        text = line.strip()
        if text in ("exit", "quit"):
            return
        if text:
            yield text


COMMANDS: list[click.Command] = [sessions, resume, chat]
