"""Errors the HTTP API returns: one JSON shape for every failure.

``{"error": {"code": ..., "message": ..., "field": ..., "fix": ...}}`` with the HTTP
status; ``field`` names the request field at fault (``body.prompt``, ``header.Authorization``
...) when there is one, and ``fix`` says what to send instead.
"""

from __future__ import annotations

from loopwright.core.messages import JSONValue
from loopwright.core.run import RunState


class ApiError(Exception):
    """A request that cannot be served, as the client should see it."""

    def __init__(
        self, status: int, code: str, message: str, *, field: str | None = None, fix: str = ""
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.fix = fix

    def to_dict(self) -> dict[str, JSONValue]:
        body: dict[str, JSONValue] = {"code": self.code, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        if self.fix:
            body["fix"] = self.fix
        return {"error": body}


def not_found(session_id: str) -> ApiError:
    """The same answer for a session that does not exist and one of another tenant.
    A long id is shortened: the path is the client's, up to the server's URL limit."""
    shown = session_id if len(session_id) <= 80 else f"{session_id[:80]}..."
    return ApiError(
        404,
        "session_not_found",
        f"no session {shown!r} for this API key",
        field="path.session_id",
        fix="list your sessions with GET /v1/sessions",
    )


def conflict(message: str, fix: str) -> ApiError:
    return ApiError(409, "session_busy", message, fix=fix)


def awaiting_approval(state: RunState) -> ApiError:
    """409 for a new turn of a session paused for approval: its pending calls are
    decided first."""
    sid = state.session_id
    return conflict(
        f"session {sid!r} is waiting for approval of {[c.id for c in state.pending_calls]}",
        f"decide first: POST /v1/sessions/{sid}/approvals",
    )


def nothing_to_cancel(state: RunState) -> ApiError:
    """409 for a cancel of a session that has no run: says what state it is in (its run
    ended and how, or it waits for approval) and the request that fits that state."""
    sid = state.session_id
    if state.awaiting_confirmation:
        calls = ", ".join(c.id for c in state.pending_calls)
        return conflict(
            f"session {sid!r} is not running: it is paused, waiting for approval of {calls}",
            f"end it by denying its calls: POST /v1/sessions/{sid}/approvals "
            '{"deny": {"CALL_ID": "reason"}}',
        )
    if state.stop is not None:
        return conflict(
            f"session {sid!r} is not running: its run already finished "
            f"(stop reason {state.stop.value!r}), so there is nothing to cancel",
            f"nothing to do; POST /v1/sessions/{sid}/messages starts its next turn",
        )
    return conflict(
        f"session {sid!r} is not running: its last run stopped without a result "
        "(its server process ended), so there is nothing to cancel",
        "nothing to do; the server resumes interrupted sessions (at start-up and every "
        "--recover-every seconds)",
    )
