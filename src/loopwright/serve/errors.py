"""Errors the HTTP API returns: one JSON shape for every failure.

``{"error": {"code": ..., "message": ..., "field": ..., "fix": ...}}`` with the HTTP
status; ``field`` names the request field at fault (``body.prompt``, ``header.Authorization``
...) when there is one, and ``fix`` says what to send instead.
"""

from __future__ import annotations

from loopwright.core.messages import JSONValue


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
    """The same answer for a session that does not exist and one of another tenant."""
    return ApiError(
        404,
        "session_not_found",
        f"no session {session_id!r} for this API key",
        field="path.session_id",
        fix="list your sessions with GET /v1/sessions",
    )


def conflict(message: str, fix: str) -> ApiError:
    return ApiError(409, "session_busy", message, fix=fix)
