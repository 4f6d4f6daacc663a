"""The ASGI application: sessions over HTTP, their events as Server-Sent Events.

Routes (every ``/v1`` route needs an API key, see :mod:`loopwright.serve.auth`):

* ``POST /v1/sessions`` ``{"agent", "prompt"}`` -> 201 ``{"id", ...}``: create and run;
* ``GET /v1/sessions`` -- this key's sessions, newest first (``?limit=N``);
* ``GET /v1/sessions/{id}`` -- state and history;
* ``GET /v1/sessions/{id}/events`` -- SSE, resumable with ``Last-Event-ID``;
* ``POST /v1/sessions/{id}/messages`` ``{"text", "mode"}`` -- steer / follow up;
* ``POST /v1/sessions/{id}/approvals`` ``{"approve", "deny"}`` -- decide pending calls;
* ``POST /v1/sessions/{id}/cancel``;
* ``GET /openapi.json`` and ``GET /healthz`` (no key).

See ``docs/serve.md``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopwright.core.checks import check_count, check_seconds
from loopwright.core.messages import JSONValue, part_to_dict
from loopwright.core.run import RunState
from loopwright.core.text import to_json
from loopwright.store.base import CheckpointStore

from .auth import ApiKeys
from .cluster import ClusterConfig
from .errors import ApiError
from .eventlog import Event
from .schemas import Approvals, CreateSession, SendMessage, openapi, parse
from .sessions import AgentSource, ServeConfig, SessionManager, session_status

API_VERSION = "1"


@dataclass(frozen=True, slots=True)
class AppConfig:
    """``max_body``: bytes of a request body (413 beyond). ``keepalive``: seconds between
    SSE comments on an idle stream (keeps proxies from closing it). ``resume_interrupted``:
    at startup, resume this store's served sessions whose process died mid-run."""

    max_body: int = 1 << 20
    keepalive: float = 15.0
    resume_interrupted: bool = True
    recover_every: float = 0.0
    """Seconds between sweeps that resume sessions whose process died while they ran
    (their lock expired): several processes sharing a store take over each other's
    sessions. 0: only at startup."""
    serve: ServeConfig = field(default_factory=ServeConfig)

    def __post_init__(self) -> None:
        check_count("AppConfig.max_body (bytes)", self.max_body)
        check_seconds("AppConfig.keepalive", self.keepalive)
        check_seconds("AppConfig.recover_every", self.recover_every, zero=True)


def _is_number(text: str) -> bool:
    """Whether ``text`` is a plain decimal number: ``str.isdigit`` also accepts digits
    ``int`` cannot read ("²"), which made a 500 of a bad query or header."""
    return text.isascii() and text.isdigit()


def json_response(data: Mapping[str, JSONValue], status: int = 200) -> Response:
    return Response(to_json(data), status, media_type="application/json")


class BodyLimit:
    """413 for a request body over ``limit`` bytes: by its Content-Length up front, and by
    counting what arrives (a chunked body has no length)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await json_response(self._error().to_dict(), 413)(scope, receive, send)
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise self._error()
            return message

        await self.app(scope, limited, send)

    def _error(self) -> ApiError:
        return ApiError(
            413,
            "body_too_large",
            f"the request body is over {self.limit} bytes",
            field="body",
            fix="send a shorter prompt or message",
        )


class Api:
    """The route handlers over one :class:`SessionManager`."""

    def __init__(self, manager: SessionManager, keys: ApiKeys, config: AppConfig) -> None:
        self.manager = manager
        self.keys = keys
        self.config = config
        self.schema = openapi("loopwright serve", API_VERSION)

    # ------------------------------------------------------------------ helpers
    def tenant(self, request: Request) -> str:
        header = request.headers.get("authorization", "")
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key:
            key = request.headers.get("x-api-key", "")
        if not key:
            raise ApiError(
                401,
                "missing_api_key",
                "no API key in the request",
                field="header.Authorization",
                fix="send `Authorization: Bearer KEY` (or `X-API-Key: KEY`)",
            )
        tenant = self.keys.tenant(key.strip())
        if tenant is None:
            raise ApiError(
                401,
                "unknown_api_key",
                "the API key is not known to this server",
                field="header.Authorization",
                fix="use a key listed in LOOPWRIGHT_SERVE_KEYS or the server's --keys-file",
            )
        return tenant

    async def body(self, request: Request) -> object:
        raw = await request.body()
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ApiError(
                400,
                "invalid_json",
                f"the body is not JSON ({exc})",
                field="body",
                fix="send a JSON object with Content-Type: application/json",
            ) from None
        except RecursionError:  # "[[[[..." within the size limit
            raise ApiError(
                400,
                "invalid_json",
                "the body's JSON nests too deep",
                field="body",
                fix="send a flat JSON object (the fields of the request's schema)",
            ) from None

    async def describe(self, state: RunState, *, history: bool = True) -> dict[str, JSONValue]:
        """The session's state; ``history=False``: its message count, not its messages."""
        sid = state.session_id
        running, last_event = await self.manager.overview(sid)
        status = session_status(running, state.awaiting_confirmation, state.stop)
        return {
            "id": state.session_id,
            "agent": self.manager.agent_name(state),
            "status": status,
            "stop": state.stop.value if state.stop is not None else None,
            "detail": state.detail,
            "answer": state.best_answer() if state.stop is not None else None,
            "turn": state.turn,
            "usage": state.usage.to_dict(),
            "pending_calls": [part_to_dict(c) for c in state.pending_calls],
            "messages": [m.to_dict() for m in state.messages] if history else len(state.messages),
            "events": last_event,
            "created_at": state.created_at,
            "updated_at": state.updated_at,
        }

    # ------------------------------------------------------------------ routes
    async def create(self, request: Request) -> Response:
        tenant = self.tenant(request)
        body = parse(CreateSession, await self.body(request))
        assert isinstance(body, CreateSession)
        sid = await self.manager.create(tenant, body.agent, body.prompt)
        return json_response(
            {
                "id": sid,
                "agent": body.agent,
                "status": "running",
                "events_url": f"/v1/sessions/{sid}/events",
            },
            201,
        )

    async def list(self, request: Request) -> Response:
        tenant = self.tenant(request)
        raw = request.query_params.get("limit", "100")
        if not _is_number(raw) or not 1 <= int(raw) <= 1000:
            raise ApiError(
                422,
                "invalid_field",
                f"limit must be a whole number from 1 to 1000, got {raw!r:.40}",
                field="query.limit",
                fix="send ?limit=N with 1 <= N <= 1000, or leave it out (100)",
            )
        rows = await self.manager.sessions(tenant, int(raw))
        running = await self.manager.running([r.session_id for r in rows])
        items: list[JSONValue] = [
            {
                "id": r.session_id,
                "status": session_status(busy, r.display_status == "awaiting_confirmation", r.stop),
                "stop": r.stop.value if r.stop is not None else None,
                "turn": r.turn,
                "message_count": r.message_count,
                "created_at": r.created_at,
                "updated_at": r.updated_at,
            }
            for r, busy in zip(rows, running, strict=True)
        ]
        return json_response({"sessions": items})

    async def get(self, request: Request) -> Response:
        tenant = self.tenant(request)
        state = await self.manager.state(tenant, request.path_params["session_id"])
        return json_response(await self.describe(state))

    async def events(self, request: Request) -> Response:
        tenant = self.tenant(request)
        sid = request.path_params["session_id"]
        raw = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
        after = 0
        if raw:
            if not _is_number(raw.strip()):
                raise ApiError(
                    422,
                    "invalid_field",
                    f"Last-Event-ID {raw!r} is not an event number",
                    field="header.Last-Event-ID",
                    fix="send the id of the last event received (a number), or omit it",
                )
            after = int(raw)
        state = await self.manager.state(tenant, sid)
        head = to_json(await self.describe(state, history=False))
        events = self.manager.stream(state, after, self.config.keepalive)
        return StreamingResponse(
            self._sse(events, head),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def _sse(
        self, events: AsyncIterator[Sequence[Event] | None], head: str
    ) -> AsyncIterator[str]:
        yield f"retry: 1000\nevent: session\ndata: {head}\n\n"
        async for batch in events:
            if batch is None:
                yield ": keepalive\n\n"
            else:  # one write per batch of events, not one per event
                yield "".join([f"id: {e.id}\nevent: {e.type}\ndata: {e.data}\n\n" for e in batch])

    async def message(self, request: Request) -> Response:
        tenant = self.tenant(request)
        body = parse(SendMessage, await self.body(request))
        assert isinstance(body, SendMessage)
        sid = request.path_params["session_id"]
        what = await self.manager.message(tenant, sid, body.text, body.mode)
        return json_response({"id": sid, "result": what}, 202)

    async def approvals(self, request: Request) -> Response:
        tenant = self.tenant(request)
        body = parse(Approvals, await self.body(request))
        assert isinstance(body, Approvals)
        sid = request.path_params["session_id"]
        await self.manager.approve(tenant, sid, body.approve, body.deny)
        return json_response({"id": sid, "result": "resumed"}, 202)

    async def cancel(self, request: Request) -> Response:
        tenant = self.tenant(request)
        sid = request.path_params["session_id"]
        await self.manager.cancel(tenant, sid)
        return json_response({"id": sid, "result": "cancelling"}, 202)

    async def openapi(self, request: Request) -> Response:
        return json_response(self.schema)

    async def health(self, request: Request) -> Response:
        return json_response({"status": "ok"})


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return json_response(exc.to_dict(), exc.status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    fix = "see GET /openapi.json for the routes" if exc.status_code in (404, 405) else ""
    error = ApiError(exc.status_code, "http_error", exc.detail, fix=fix)
    return json_response(error.to_dict(), exc.status_code)


def create_app(
    agents: Mapping[str, AgentSource],
    store: CheckpointStore,
    keys: ApiKeys,
    config: AppConfig | None = None,
    cluster: ClusterConfig | None = None,
) -> ServedApp:
    """The ASGI app serving ``agents`` (name -> Agent or factory) over ``store``. With
    ``cluster`` (a Redis shared by several server processes) runs go through the
    cluster's work queue and events through its Redis (see ``docs/serve.md``)."""
    cfg = config or AppConfig()
    manager: SessionManager
    if cluster is None:
        manager = SessionManager(agents, store, cfg.serve)
    else:
        from .cluster import Cluster
        from .clustered import ClusterSessions

        manager = ClusterSessions(agents, store, Cluster(cluster), cfg.serve)
    api = Api(manager, keys, cfg)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await manager.start(cfg.resume_interrupted, cfg.recover_every)
        try:
            yield
        finally:
            await manager.close()

    sid = "/v1/sessions/{session_id}"
    app = Starlette(
        routes=[
            Route("/v1/sessions", api.create, methods=["POST"]),
            Route("/v1/sessions", api.list, methods=["GET"]),
            Route(sid, api.get, methods=["GET"]),
            Route(f"{sid}/events", api.events, methods=["GET"]),
            Route(f"{sid}/messages", api.message, methods=["POST"]),
            Route(f"{sid}/approvals", api.approvals, methods=["POST"]),
            Route(f"{sid}/cancel", api.cancel, methods=["POST"]),
            Route("/openapi.json", api.openapi, methods=["GET"]),
            Route("/healthz", api.health, methods=["GET"]),
        ],
        exception_handlers={ApiError: _api_error, HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.state.manager = manager
    return ServedApp(BodyLimit(app, cfg.max_body), manager)


class ServedApp:
    """The ASGI app, with its :class:`SessionManager` (a server tells it when a
    shutdown begins: :meth:`SessionManager.stop_taking_work`)."""

    def __init__(self, app: ASGIApp, manager: SessionManager) -> None:
        self.app = app
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
