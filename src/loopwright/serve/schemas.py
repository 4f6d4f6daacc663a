"""Request bodies (validated with pydantic at the boundary) and the OpenAPI document."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from loopwright.core.messages import JSONValue

from .errors import ApiError

MAX_TEXT = 200_000
"""Characters of a prompt or message (the byte limit of a whole request is separate)."""
_SOME_TEXT = r"\S"
"""A prompt or message holds a non-space character (the agent refuses a blank one)."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CreateSession(_Body):
    """Start a session: ``agent`` names one of the server's agents."""

    agent: str = Field(min_length=1, max_length=200, description="an agent name of the server")
    prompt: str = Field(
        min_length=1, max_length=MAX_TEXT, pattern=_SOME_TEXT, description="the first user message"
    )


class SendMessage(_Body):
    """A user message for a session. While it runs: ``steer`` is seen at the next turn
    (tool calls of the current batch that have not started are skipped), ``follow_up``
    after its next final answer. An idle session starts its next turn with it."""

    text: str = Field(min_length=1, max_length=MAX_TEXT, pattern=_SOME_TEXT)
    mode: Literal["steer", "follow_up"] = "follow_up"


class Approvals(_Body):
    """Decisions for the calls a paused session waits on. ``approve``: ``true`` (all)
    or a list of call ids; ``deny``: a reason for every other call, or ``{call_id:
    reason}``. Calls given no decision stay pending and the run pauses again."""

    # strict: "1" or "yes" is not read as true (approving every call) when a client
    # meant a call id
    approve: StrictBool | list[StrictStr] = False
    deny: StrictStr | dict[str, StrictStr] | None = None


_FIXES = {
    "missing": "add the field",
    "extra_forbidden": "remove the field",
    "string_too_short": "send a non-empty string",
    "string_too_long": "send a shorter string",
    "string_type": "send a JSON string",
    "literal_error": "use one of the allowed values",
}


_UNION_FIXES = {
    "approve": 'send true (every call) or a list of call ids, e.g. ["call-1"]',
    "deny": 'send a reason for every other call, or {"call-2": "reason"}',
}
"""Fields that take one of several shapes: pydantic reports each shape's failure under
a path naming the shape (``approve.bool``); the field and its shapes are named instead."""


def parse(model: type[_Body], data: object) -> _Body:
    """``data`` as ``model``, or a 422 naming the first field at fault and the fix."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        allowed = ", ".join(model.model_fields)
        fix = _FIXES.get(first["type"], f"send a valid value for {where or 'the body'}")
        msg = first["msg"]
        shapes = _UNION_FIXES.get(str(first["loc"][0])) if first["loc"] else None
        if shapes is not None:
            where, fix = str(first["loc"][0]), shapes
            got = data.get(where) if isinstance(data, dict) else None
            msg = f"got {got!r:.80}"
        raise ApiError(
            422,
            "invalid_field",
            f"{where or 'body'}: {msg}",
            field=f"body.{where}" if where else "body",
            fix=f"{fix} (fields of this request: {allowed})",
        ) from None


def _ref(name: str) -> dict[str, JSONValue]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, JSONValue], description: str) -> dict[str, JSONValue]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _op(summary: str, responses: dict[str, JSONValue], body: str | None = None) -> JSONValue:
    errors = {
        "401": _json(_ref("Error"), "missing or unknown API key"),
        "404": _json(_ref("Error"), "no such session for this key"),
        "413": _json(_ref("Error"), "request body too large"),
        "422": _json(_ref("Error"), "invalid field"),
    }
    op: dict[str, JSONValue] = {"summary": summary, "responses": {**responses, **errors}}
    if body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(body)}},
        }
    return op


def openapi(title: str, version: str) -> dict[str, JSONValue]:
    """The OpenAPI 3.1 document of the API (``GET /openapi.json``)."""
    schemas: dict[str, JSONValue] = {}
    for model in (CreateSession, SendMessage, Approvals):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas[model.__name__] = schema
    schemas["Error"] = {
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {k: {"type": "string"} for k in ("code", "message", "field", "fix")},
            }
        },
    }
    obj: dict[str, JSONValue] = {"type": "object"}
    sid: JSONValue = {
        "name": "session_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
    }
    accepted = {"202": _json(obj, "accepted")}
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/sessions": {
                "post": _op(
                    "create a session and start its run",
                    {"201": _json(obj, "created")},
                    "CreateSession",
                ),
                "get": _op("list this key's sessions", {"200": _json(obj, "sessions")}),
            },
            "/v1/sessions/{session_id}": {
                "parameters": [sid],
                "get": _op("a session's state and history", {"200": _json(obj, "state")}),
            },
            "/v1/sessions/{session_id}/events": {
                "parameters": [sid],
                "get": _op(
                    "the session's events as Server-Sent Events (resume with Last-Event-ID)",
                    {"200": {"description": "event stream", "content": {"text/event-stream": {}}}},
                ),
            },
            "/v1/sessions/{session_id}/messages": {
                "parameters": [sid],
                "post": _op("steer, follow up, or start the next turn", accepted, "SendMessage"),
            },
            "/v1/sessions/{session_id}/approvals": {
                "parameters": [sid],
                "post": _op("approve or deny pending tool calls", accepted, "Approvals"),
            },
            "/v1/sessions/{session_id}/cancel": {
                "parameters": [sid],
                "post": _op("cancel the running run", accepted),
            },
        },
    }
