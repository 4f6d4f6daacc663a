"""The error results the dispatcher gives calls that end without a usable run."""

from __future__ import annotations

from loopwright.core.errors import ToolErrorKind
from loopwright.core.messages import ToolCallPart, ToolResultPart
from loopwright.core.tools import Permission, ToolSpec
from loopwright.tools.truncate import cut_text

ERROR_CHARS = 4_000
"""Error messages are cut to this many characters (or the tool's smaller budget)."""


def error_result(call: ToolCallPart, kind: ToolErrorKind | str, message: str) -> ToolResultPart:
    """An error result for ``call``: content ``"<kind>: <message>"`` (cut to 4,000 chars)."""
    kind_s = kind.value if isinstance(kind, ToolErrorKind) else str(kind)
    name = call.name if isinstance(call.name, str) else str(call.name)
    return ToolResultPart(
        str(call.id), name, cut_text(f"{kind_s}: {message}", ERROR_CHARS), True, kind_s
    )


def skipped_result(call: ToolCallPart, reason: str = "") -> ToolResultPart:
    """Result for a call that was never started because the run was interrupted."""
    why = reason or "a new user message arrived before this call started"
    return error_result(call, ToolErrorKind.SKIPPED, f"not run: {why}")


def over_cap_result(call: ToolCallPart, cap: int, asked: int) -> ToolResultPart:
    """Result for a call past the per-turn cap on tool calls: it was not run."""
    return error_result(
        call,
        ToolErrorKind.SKIPPED,
        f"not run: the reply asked for {asked} tool calls and at most {cap} run per turn; "
        "call the tools that are still needed again, fewer at a time",
    )


def refuse_permission(call: ToolCallPart, spec: ToolSpec, level: Permission) -> ToolResultPart:
    msg = (
        f"tool {spec.name!r} needs {spec.permission.name.lower()} permission; this caller "
        f"has {level.name.lower()}. Use another tool or ask the user."
    )
    return error_result(call, ToolErrorKind.PERMISSION_DENIED, msg)
