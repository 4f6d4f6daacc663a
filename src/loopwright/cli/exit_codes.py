"""The exit codes of the ``loopwright`` command.

Scripts branch on these numbers, so a code is never renumbered or reused. A finished run
exits with the code of its stop reason; a command that could not start or finish a run
exits with one of the codes below 10. The table is printed by ``loopwright run --help``
and documented in ``docs/cli.md`` (a test keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from loopwright.core.run import RunStop

INTERNAL_ERROR: Final = 1
"""A bug in loopwright (an exception nobody anticipated): please report it."""
USAGE_ERROR: Final = 2
"""Bad command-line input: flag, tool, model, prompt, session id, agent setup."""
STORE_ERROR: Final = 3
"""The checkpoint store is unreachable, or holds a session that cannot be read."""

STOP_CODES: Final[Mapping[RunStop, int]] = {
    RunStop.FINAL_ANSWER: 0,
    RunStop.MAX_TURNS: 10,
    RunStop.TOKEN_BUDGET: 11,
    RunStop.COST_BUDGET: 12,
    RunStop.TOO_MANY_ERRORS: 13,
    RunStop.LOOP_DETECTED: 14,
    RunStop.TIMEOUT: 15,
    RunStop.CANCELLED: 16,
    RunStop.AWAITING_CONFIRMATION: 17,
    RunStop.MODEL_ERROR: 18,
    RunStop.MAX_TOKENS: 19,
    RunStop.REFUSAL: 20,
    RunStop.CONTEXT_ERROR: 21,
    RunStop.OUTPUT_INVALID: 22,
}

FAILURE_KINDS: Final[Mapping[int, str]] = {
    INTERNAL_ERROR: "internal_error",
    USAGE_ERROR: "usage_error",
    STORE_ERROR: "store_error",
}
"""The ``stop_reason`` a ``--json`` error object carries for each failure code."""


def exit_code(stop: RunStop) -> int:
    """The exit code of a run that ended with ``stop``."""
    return STOP_CODES[stop]


def table() -> str:
    """The exit-code table for ``--help`` (one ``code  meaning`` line each)."""
    lines = [f"  {STOP_CODES[RunStop.FINAL_ANSWER]:>3}  final_answer"]
    lines += [
        f"  {INTERNAL_ERROR:>3}  internal error (a bug: please report it)",
        f"  {USAGE_ERROR:>3}  usage error (bad flag, unknown tool or model, bad prompt)",
        f"  {STORE_ERROR:>3}  store error (store unreachable, session unreadable)",
    ]
    lines += [f"  {code:>3}  {stop.value}" for stop, code in STOP_CODES.items() if code != 0]
    return "\n".join(lines)
