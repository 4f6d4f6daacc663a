"""How every command shows a run's result (``run``, ``chat``, ``resume``).

Plain: the answer on stdout; a stop other than ``final_answer`` as one ``stopped:`` line
on stderr; a run paused on confirmations lists the pending calls and how to continue.
``--json``: one object with ``answer``, ``stop_reason``, ``turns``, ``usage``,
``messages``, ``session_id``, ``detail``, ``exit_code``, ``pending_calls`` (and ``hint``
when paused).
"""

from __future__ import annotations

import json

from loopwright.cli.exit_codes import exit_code
from loopwright.cli.output import Painted, emit_json, say
from loopwright.core.messages import ToolCallPart
from loopwright.core.run import RunResult, RunStop
from loopwright.tools.repair import call_arguments

RERUN_HINT = (
    "a tool needs confirmation and there is no terminal to ask: re-run with --yes to "
    "approve or --no to deny"
)


def approve_hint(result: RunResult) -> str:
    """How to continue a paused run: resume the stored session, or re-run with a flag."""
    if result.session_id:
        return (
            f"session {result.session_id} awaits confirmation: approve with "
            f"`loopwright resume {result.session_id} --approve` or deny with "
            f"`loopwright resume {result.session_id} --deny REASON` "
            "(or re-run with --yes / --no; a call made after the run read untrusted content "
            "needs an explicit --approve)"
        )
    return RERUN_HINT


def pending_call(call: ToolCallPart) -> dict[str, object]:
    """A paused call as a person approving it is shown it: the arguments it will run
    with (read from the model's raw text when the provider could not parse it, as the
    dispatcher does), and that raw text when it cannot be read at all."""
    arguments, _, problem = call_arguments(call)
    shown: dict[str, object] = {"id": call.id, "name": call.name, "arguments": arguments}
    if problem is not None:
        shown["raw_arguments"] = call.raw_arguments
    return shown


def call_line(shown: dict[str, object]) -> str:
    """One line of :func:`pending_call`'s view: ``id: name({...})``."""
    args = json.dumps(shown["arguments"], ensure_ascii=False, default=str)
    raw = shown.get("raw_arguments")
    unread = f" (unreadable arguments: {raw!r})" if raw is not None else ""
    return f"{shown['id']}: {shown['name']}({args}){unread}"


def pending_calls(result: RunResult) -> list[dict[str, object]]:
    return [pending_call(c) for c in result.pending_calls]


def result_json(result: RunResult) -> dict[str, object]:
    data: dict[str, object] = result.to_dict()
    data["exit_code"] = exit_code(result.stop)
    data["pending_calls"] = pending_calls(result)
    if result.stop is RunStop.AWAITING_CONFIRMATION:
        data["hint"] = approve_hint(result)
    return data


def print_result(result: RunResult, *, as_json: bool, streamed: bool = False) -> None:
    """Show ``result`` (``streamed``: the answer was already rendered live)."""
    if as_json:
        emit_json(result_json(result))
        return
    if result.answer and not streamed:
        say(result.answer)
    if result.stop is RunStop.AWAITING_CONFIRMATION:
        for shown in pending_calls(result):
            say(Painted("pending ", fg="yellow"), call_line(shown), err=True)
        say(approve_hint(result), err=True)
        if result.session_id:
            say(f"session_id: {result.session_id}")
    elif result.stop is not RunStop.FINAL_ANSWER:
        say(
            Painted("stopped: ", fg="red"),
            stop_line(result.stop, result.detail),
            err=True,
        )


def stop_line(stop: RunStop, detail: str) -> str:
    """``max_turns: reached max_turns=1``: the stop reason, then what ended the run (the
    two ran together as one phrase, ``timeout the run exceeded its 0.5s timeout``)."""
    return f"{stop.value}: {detail}" if detail else stop.value
