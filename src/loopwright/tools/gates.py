"""The dispatcher's steps that may end a call before (or replace the result after) its
tool runs: unknown tool, invalid arguments, the ``before_tool_call`` hook, the
confirmation step and the ``after_tool_call`` hook (see the pipeline in
:mod:`loopwright.tools.dispatcher`). Each returns the error result that ends the call,
or ``None`` when the call goes on; none of them raises for a fault of a hook or handler.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from loopwright.core.errors import ToolErrorKind
from loopwright.core.messages import ToolCallPart, ToolResultPart
from loopwright.core.run import TaintSource
from loopwright.core.tools import Permission, ToolSpec
from loopwright.tools.confirm import Confirmation
from loopwright.tools.execution import ERROR_KINDS, describe
from loopwright.tools.registry import ToolRegistry
from loopwright.tools.results import error_result
from loopwright.tools.taint import describe as describe_taint

if TYPE_CHECKING:
    from loopwright.tools.dispatcher import DispatchConfig

_T = TypeVar("_T")

BeforeToolCall = Callable[[ToolCallPart, ToolSpec], "str | Awaitable[str | None] | None"]
"""Return a string to block the call (the model sees it, kind ``permission_denied``)."""
AfterToolCall = Callable[
    [ToolCallPart, ToolResultPart], "ToolResultPart | Awaitable[ToolResultPart | None] | None"
]
"""Return a ``ToolResultPart`` to replace the result, ``None`` to keep it."""


def not_found(call: ToolCallPart, registry: ToolRegistry, level: Permission) -> ToolResultPart:
    """The result of a call naming no tool: the tools the caller may use, and the
    closest name when there is one."""
    usable = [t.name for t in registry if t.spec.permission <= level]
    hint = ""
    if isinstance(call.name, str):
        close = difflib.get_close_matches(call.name, usable, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
    names = ", ".join(usable) if usable else "(none)"
    msg = f"unknown tool {call.name!r}.{hint} Available tools: {names}"
    return error_result(call, ToolErrorKind.NOT_FOUND, msg)


def invalid(call: ToolCallPart, violations: Sequence[Any], limit: int) -> ToolResultPart:
    """The result of a call whose arguments break the schema: at most ``limit``
    violations, one a line."""
    lines = [str(v) for v in violations[:limit]]
    if len(violations) > limit:
        lines.append(f"... and {len(violations) - limit} more")
    msg = "arguments do not match the schema; fix these and call again:\n" + "\n".join(lines)
    return error_result(call, ToolErrorKind.INVALID_ARGUMENTS, msg)


async def before(hook: BeforeToolCall, call: ToolCallPart, spec: ToolSpec) -> ToolResultPart | None:
    """The ``before_tool_call`` step: ``None`` when the call may run."""
    try:
        reason = await maybe_await(hook(call, spec))
    except Exception as exc:
        msg = f"before_tool_call hook raised {describe(exc)}; the call was not run"
        return error_result(call, ToolErrorKind.PERMANENT, msg)
    if reason is None or reason is False:
        return None
    text = reason if isinstance(reason, str) and reason else "blocked by before_tool_call"
    return error_result(call, ToolErrorKind.PERMISSION_DENIED, f"blocked: {text}")


async def confirm(
    config: DispatchConfig,
    call: ToolCallPart,
    spec: ToolSpec,
    decision: Confirmation | None,
    taint: Sequence[TaintSource],
) -> ToolResultPart | None:
    """The confirmation step: ``None`` when the call may run, else its result. A
    tainted call is answered by ``confirm_tainted`` (never by ``confirm``, which may
    approve everything) and waits when there is none."""
    if decision is None:
        try:
            if taint:
                tainted = config.confirm_tainted
                if tainted is None:
                    msg = f"waiting for a person to approve this call: {describe_taint(taint)}"
                    return error_result(call, ToolErrorKind.AWAITING_CONFIRMATION, msg)
                decision = await maybe_await(tainted(call, spec, tuple(taint)))
            else:
                handler = config.confirm
                if handler is None:
                    return None
                decision = await maybe_await(handler(call, spec))
        except Exception as exc:
            msg = f"confirmation handler raised {describe(exc)}; the call was not run"
            return error_result(call, ToolErrorKind.PERMANENT, msg)
    if not isinstance(decision, Confirmation):
        msg = (
            f"confirmation handler returned {type(decision).__name__}, not a "
            "Confirmation (return Confirmation.approve(), Confirmation.deny(reason) or "
            "Confirmation.later()); the call was not run"
        )
        return error_result(call, ToolErrorKind.PERMANENT, msg)
    suffix = f": {decision.reason}" if decision.reason else ""
    if decision.defer:
        msg = f"waiting for a person to approve this call; it was not run{suffix}"
        return error_result(call, ToolErrorKind.AWAITING_CONFIRMATION, msg)
    if not decision.approved:
        return error_result(
            call, ToolErrorKind.DENIED_BY_USER, f"the user denied this call{suffix}"
        )
    return None


async def after(hook: AfterToolCall, call: ToolCallPart, result: ToolResultPart) -> ToolResultPart:
    """The ``after_tool_call`` step: the result the model sees."""
    try:
        new = await maybe_await(hook(call, result))
    except Exception as exc:
        msg = f"after_tool_call hook raised {describe(exc)}; the result was withheld"
        return error_result(call, ToolErrorKind.PERMANENT, msg)
    if new is None:
        return result
    if not isinstance(new, ToolResultPart):
        msg = (
            f"after_tool_call hook returned {type(new).__name__}, not a ToolResultPart; "
            "the result was withheld"
        )
        return error_result(call, ToolErrorKind.PERMANENT, msg)
    if new.call_id != call.id:
        new = replace(new, call_id=call.id)
    if new.is_error and new.error_kind not in ERROR_KINDS:
        new = replace(new, error_kind=ToolErrorKind.PERMANENT.value)
    return new


async def maybe_await(value: _T | Awaitable[_T]) -> _T:
    if inspect.isawaitable(value):
        return await value
    return value
