"""One live session with one MCP server, reconnected on demand.

Every session runs on a single background thread with its own event loop (the *MCP
loop*). The SDK's sessions are anyio task groups that must be entered and left in one
task of one loop; an agent, though, may be driven by ``asyncio.run`` once per run, from
any thread, or synchronously. Keeping the sessions on their own loop makes an MCP tool
callable from any loop: a call hops to the MCP loop and its result hops back, and
cancelling the caller (a dispatcher timeout, ``run.cancel()``) cancels the call there.

A session that ends (the server process exited, the HTTP server went away) is noticed
by the call waiting on it, which fails with a ``transient`` tool error; the next call
starts a new session. Server-side ``tools/list_changed`` notifications (and, on
2026-07-28 sessions, ``subscriptions/listen`` events) trigger ``on_tools`` with the new
listing; ``resources/list_changed`` ones trigger ``on_resources``.

Besides tool calls and listings, a connection reads resources and renders prompts
(``read_resource``, ``get_prompt``, the ``list_*`` methods): each is bounded by the
server's timeout, fails at once when the session ends, and a server that does not
declare the resources (prompts) capability is refused with an error saying so before
anything is sent. Which server a URI or prompt goes to is
:class:`loopwright.mcp.context.MCPContext`'s concern.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.mcp.config import MCPServerConfig

if TYPE_CHECKING:
    import mcp_types

    from mcp import Client

log = logging.getLogger("loopwright.mcp")
_T = TypeVar("_T")
MAX_SSE_EVENT_BYTES = 64 * 1024 * 1024
"""Largest single streamed HTTP message accepted (the SDK's default, 1 MiB, would turn a
large tool result into a transport error; the dispatcher truncates what the model sees)."""
_LIST_PAGES = 100
UNBOUNDED_CONNECT_SECONDS = 30.0
"""How long connecting (and each tools listing) may take for a server whose ``timeout``
is ``None`` (its calls are unbounded; a server that never answers must still fail)."""

ToolsListener = Callable[[list["mcp_types.Tool"]], None]
ResourcesListener = Callable[[], Awaitable[None]]
Listing = Literal["tools", "resources", "resource templates", "prompts"]
_LISTINGS: dict[str, tuple[str, str]] = {
    "tools": ("list_tools", "tools"),
    "resources": ("list_resources", "resources"),
    "resource templates": ("list_resource_templates", "resource_templates"),
    "prompts": ("list_prompts", "prompts"),
}
"""A listing's SDK method and the field of its result page that holds the items."""


class _MCPLoop:
    """The daemon thread that runs every MCP session's event loop."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="loopwright-mcp", daemon=True
                )
                thread.start()
                cls._loop = loop
            return cls._loop


def run_sync(coro: Coroutine[Any, Any, _T], timeout: float | None = None) -> _T:
    """Run ``coro`` on the MCP loop and wait for it from synchronous code."""
    future = asyncio.run_coroutine_threadsafe(coro, _MCPLoop.get())
    try:
        return future.result(timeout)
    except BaseException:
        future.cancel()
        raise


async def run_async(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` on the MCP loop and await it from any other loop (cancellation
    of the caller cancels it there)."""
    mcp_loop = _MCPLoop.get()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is mcp_loop:
        return await coro
    # the coroutine runs in a copy of the caller's context (``call_soon_threadsafe``
    # copies it here, in the caller's thread): the SDK puts the caller's current trace
    # context in the request's ``_meta``, so the server's spans join the run's trace
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, mcp_loop))


class MCPConnection:
    """A session with the server ``config`` names. Use :meth:`call_tool`,
    :meth:`list_tools`, the resource and prompt requests and :meth:`close` from any
    thread or loop."""

    drain_seconds = 5.0
    """How long a new session waits for a dropped one to close (its process to exit)."""

    def __init__(
        self,
        config: MCPServerConfig,
        on_tools: ToolsListener | None = None,
        on_resources: ResourcesListener | None = None,
    ) -> None:
        self.config = config
        self.on_tools = on_tools
        self.on_resources = on_resources
        """Awaited on the MCP loop when the server announces that its resources changed."""
        self.sessions_started = 0
        """How many sessions were opened (1 + the reconnects)."""
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._connecting: asyncio.Future[Client] | None = None
        self._stop: asyncio.Event | None = None
        self.closed = False
        """Set by :meth:`close`: no new session is started (a call would otherwise start
        a server process nobody closes)."""
        self.root_uris = [Path(r).resolve().as_uri() for r in config.roots]
        self._unread: set[asyncio.Future[str]] = set()
        """One per call in flight: resolved (with what the SDK said) when the server
        sends a message that cannot be read and may be that call's reply."""

    # ---------------------------------------------------------------- public, any loop
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        return await run_async(self._call(name, arguments))

    @property
    def connect_timeout(self) -> float:
        """Seconds that starting a session may take (transport, process start, MCP
        handshake) and that each tools listing may take: the server's ``timeout``."""
        timeout = self.config.timeout
        return UNBOUNDED_CONNECT_SECONDS if timeout is None else timeout

    async def list_tools(self) -> list[mcp_types.Tool]:
        return await run_async(self._list())

    def list_tools_sync(self, timeout: float | None = None) -> list[mcp_types.Tool]:
        return run_sync(self._list(), timeout)

    async def list_resources(self) -> list[mcp_types.Resource]:
        return await run_async(self._pages("resources"))

    async def list_resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        return await run_async(self._pages("resource templates"))

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        return await run_async(self._pages("prompts"))

    async def offers(self, feature: str) -> bool:
        """Whether the server declares ``feature`` (``resources``, ``prompts``)."""
        return await run_async(self._offers(feature))

    async def require(self, feature: str) -> None:
        """A ``not_found`` tool error naming the fix when the server does not declare
        ``feature`` (what a resource or prompt request to it fails with)."""
        await run_async(self._offers(feature, required=True))

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        return await run_async(self._read(uri))

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> mcp_types.GetPromptResult:
        return await run_async(self._prompt(name, arguments))

    def close(self) -> None:
        """End the session (and a stdio server's process). Idempotent."""
        with contextlib.suppress(RuntimeError):
            run_sync(self._close(), timeout=10)

    async def aclose(self) -> None:
        await run_async(self._close())

    # ---------------------------------------------------------------- on the MCP loop
    async def _call(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        return await self._request(
            lambda client: client.call_tool(
                name, arguments, read_timeout_seconds=self.config.timeout
            )
        )

    async def _request(self, send: Callable[[Client], Awaitable[_T]], what: str = "call") -> _T:
        """``send``'s request on the live session, failed at once (rather than after its
        timeout) when the session ends or an unreadable reply arrives meanwhile."""
        client = await self._ensure()
        session = self._task
        assert session is not None
        call = asyncio.ensure_future(send(client))
        unread: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._unread.add(unread)
        try:
            waits: set[asyncio.Future[Any]] = {call, session, unread}
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._unread.discard(unread)
            if not call.done():
                call.cancel()
        if unread in done and call not in done:
            raise ToolError(
                f"MCP server {self.config.name!r} sent a reply that is not valid JSON-RPC "
                f"({unread.result()}); the {what} was abandoned",
                kind=ToolErrorKind.PERMANENT,
            )
        if call not in done:
            raise ToolError(
                f"MCP server {self.config.name!r} went away during the {what} "
                f"({_ended(session)}); the next call reconnects",
                kind=ToolErrorKind.TRANSIENT,
            )
        try:
            return call.result()
        except Exception as exc:
            raise self._failed(exc) from exc

    def _failed(self, exc: BaseException) -> ToolError:
        """The tool error for ``exc``; a dead transport also ends the session, so the
        next call starts a new one (the SDK keeps a session whose server exited, failing
        every request with ``Connection closed``)."""
        error = tool_error(self.config.name, exc)
        if error.kind is ToolErrorKind.TRANSIENT and self._stop is not None:
            self._stop.set()
            self._client = None
        return error

    async def _list(self) -> list[mcp_types.Tool]:
        return await self._pages("tools")  # type: ignore[return-value]

    async def _pages(self, kind: Listing) -> list[Any]:
        """Every item of one listing, page by page, each page bounded by the server's
        timeout. A listing of resources, templates or prompts needs the capability."""
        method, attribute = _LISTINGS[kind]
        client = await self._ensure()
        if kind != "tools":
            self._require(client, "prompts" if kind == "prompts" else "resources")
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(_LIST_PAGES):
            try:
                async with asyncio.timeout(self.connect_timeout):
                    page = await getattr(client, method)(cursor=cursor)
            except TimeoutError:
                raise ToolError(
                    f"MCP server {self.config.name!r} did not list its {kind} within "
                    f"{self.connect_timeout:g} s (its timeout)",
                    kind=ToolErrorKind.TIMEOUT,
                ) from None
            except Exception as exc:
                raise self._failed(exc) from exc
            items.extend(getattr(page, attribute))
            cursor = page.next_cursor
            if cursor is None:
                break
        return items

    async def _offers(self, feature: str, *, required: bool = False) -> bool:
        client = await self._ensure()
        if required:
            self._require(client, feature)
        return getattr(client.server_capabilities, feature, None) is not None

    def _require(self, client: Client, feature: str) -> None:
        """A clear error for a server that does not declare ``feature`` (the SDK would
        send the request anyway, and servers answer it with an opaque error)."""
        if getattr(client.server_capabilities, feature, None) is None:
            raise ToolError(
                f"MCP server {self.config.name!r} offers no {feature} (it does not declare "
                f"the {feature} capability); use a server that does "
                f"(`loopwright mcp {feature} SERVER` lists them)",
                kind=ToolErrorKind.NOT_FOUND,
            )

    async def _bounded(self, what: str, send: Awaitable[_T]) -> _T:
        """``send`` within the server's timeout (the SDK bounds only tool calls itself)."""
        try:
            async with asyncio.timeout(self.config.timeout):
                return await send
        except TimeoutError:
            raise ToolError(
                f"MCP server {self.config.name!r} did not answer {what} within "
                f"{self.config.timeout:g} s (its timeout); raise the server's 'timeout' "
                "if it is just slow",
                kind=ToolErrorKind.TIMEOUT,
            ) from None

    async def _read(self, uri: str) -> mcp_types.ReadResourceResult:
        def send(client: Client) -> Awaitable[mcp_types.ReadResourceResult]:
            self._require(client, "resources")
            return self._bounded(f"resources/read {uri!r}", client.read_resource(uri))

        return await self._request(send, "read")

    async def _prompt(self, name: str, arguments: dict[str, str]) -> mcp_types.GetPromptResult:
        def send(client: Client) -> Awaitable[mcp_types.GetPromptResult]:
            self._require(client, "prompts")
            return self._bounded(f"prompts/get {name!r}", client.get_prompt(name, arguments))

        return await self._request(send, "request")

    async def _ensure(self) -> Client:
        if self.closed:
            raise ToolError(
                f"MCP server {self.config.name!r}: its connection was closed (the toolset "
                "was closed); open a new MCPToolset to use its tools again",
                kind=ToolErrorKind.PERMANENT,
            )
        if self._client is not None and self._task is not None and not self._task.done():
            return self._client
        if self._task is not None and not self._task.done():
            # a session being dropped: let it close (and its process exit) first
            await asyncio.wait({self._task}, timeout=self.drain_seconds)
        if self._connecting is not None and not self._connecting.done():
            return await asyncio.shield(self._connecting)
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._connecting = ready
        self._stop = asyncio.Event()
        # A session outlives the call that opened it: it starts from an empty context,
        # or its reader, its listen stream and the listings a ``list_changed`` triggers
        # would all carry that caller's trace context (and other context variables).
        self._task = asyncio.create_task(
            self._session(ready, self._stop), context=contextvars.Context()
        )
        try:
            return await asyncio.shield(ready)
        except _ConnectTimeout:
            raise ToolError(
                f"MCP server {self.config.name!r} did not start and complete the MCP "
                f"handshake within {self.connect_timeout:g} s (its timeout)",
                kind=ToolErrorKind.TIMEOUT,
            ) from None
        except Exception as exc:
            raise ToolError(
                f"cannot connect to MCP server {self.config.name!r}: {_describe(exc)}",
                kind=ToolErrorKind.TRANSIENT,
            ) from exc

    async def _session(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """Owns one SDK session from start to end (the task that entered it leaves it)."""
        from mcp import Client

        self.sessions_started += 1
        mine: list[Client] = []  # this session's client, once it exists
        try:
            async with AsyncExitStack() as stack:
                # the server's timeout bounds the whole start (the SDK's handshake has no
                # deadline of its own): a server that never answers is given up on here,
                # by the task that owns the session, so its process is stopped too
                try:
                    async with asyncio.timeout(self.connect_timeout):
                        transport = await _transport(self.config, stack)
                        client = await stack.enter_async_context(
                            Client(
                                transport,
                                message_handler=self._on_message,
                                list_roots_callback=self._roots if self.config.roots else None,  # type: ignore[arg-type]
                                cache=None,  # tool listings must be fresh after list_changed
                            )
                        )
                except TimeoutError as exc:
                    raise _ConnectTimeout() from exc
                self._client = client
                mine.append(client)
                if not ready.done():
                    ready.set_result(client)
                listener = asyncio.create_task(self._listen(client))
                try:
                    await stop.wait()
                finally:
                    listener.cancel()
                    with contextlib.suppress(BaseException):
                        await listener
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
            log.info("MCP session with %s ended: %s", self.config.name, _describe(exc))
        finally:
            if mine and self._client is mine[0]:  # a newer session may have replaced it
                self._client = None

    async def _listen(self, client: Client) -> None:
        """2026-07-28 sessions announce tool changes only to a ``subscriptions/listen``
        stream; older sessions send ``list_changed`` notifications (see _on_message)."""
        from mcp.client.subscriptions import ListenNotSupportedError, ResourcesListChanged

        # resources are asked for only of a server that offers them (a filter it cannot
        # honour must not cost the tools stream)
        resources = self.on_resources is not None and client.server_capabilities.resources
        try:
            async with client.listen(
                tools_list_changed=True, resources_list_changed=bool(resources)
            ) as subscription:
                async for event in subscription:
                    if isinstance(event, ResourcesListChanged):
                        await self._resources_changed()
                    else:
                        await self._refresh()
        except ListenNotSupportedError:
            return
        except Exception as exc:  # the server may not offer listen; notifications still work
            log.debug("MCP %s: no tools listen stream (%s)", self.config.name, _describe(exc))

    async def _roots(self, _context: object) -> mcp_types.ListRootsResult:
        import mcp_types

        return mcp_types.ListRootsResult(
            roots=[mcp_types.Root.model_validate({"uri": uri}) for uri in self.root_uris]
        )

    async def _on_message(self, message: object) -> None:
        import mcp_types

        if isinstance(message, Exception):
            self._on_unreadable(message)
        elif isinstance(message, mcp_types.ToolListChangedNotification):
            # not awaited here: the handler runs on the session's receive path, and the
            # listing it triggers needs that path to deliver its response
            asyncio.get_running_loop().create_task(self._refresh())
        elif isinstance(message, mcp_types.ResourceListChangedNotification):
            asyncio.get_running_loop().create_task(self._resources_changed())

    def _on_unreadable(self, exc: Exception) -> None:
        """A message from the server the SDK could not parse reaches here (over stdio;
        over HTTP the SDK answers the request with a parse error itself). Its request id
        is lost with it, so the calls in flight are failed now: one of them was waiting
        for it and would otherwise wait out its whole timeout. A message that names a
        ``method`` is a notification or a request, no reply, and is only logged."""
        text, is_reply = _unparsed(exc)
        log.warning("MCP %s: unreadable message or transport fault: %s", self.config.name, text)
        if not is_reply:
            return
        for waiting in self._unread:
            if not waiting.done():
                waiting.set_result(text)

    async def _resources_changed(self) -> None:
        if self.on_resources is None:
            return
        try:
            await self.on_resources()
        except Exception as exc:  # a listener's failure must not end the session
            log.warning("MCP %s: cannot refresh resources: %s", self.config.name, _describe(exc))

    async def _refresh(self) -> None:
        if self.on_tools is None:
            return
        try:
            tools = await self._list()
        except ToolError as exc:
            log.warning("MCP %s: cannot refresh tools: %s", self.config.name, exc)
            return
        self.on_tools(tools)

    async def _close(self) -> None:
        self.closed = True
        task, stop = self._task, self._stop
        if task is None or stop is None:
            return
        stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), 5)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
        except Exception:
            pass
        self._task = None


class _ConnectTimeout(TimeoutError):
    """A session did not start within its server's timeout."""


async def _transport(config: MCPServerConfig, stack: AsyncExitStack) -> Any:
    if config.url is not None:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0)
            )
        )
        return streamable_http_client(
            config.url, http_client=http, max_sse_event_size=MAX_SSE_EVENT_BYTES
        )
    from mcp.client.stdio import stdio_client

    from mcp import StdioServerParameters

    params = StdioServerParameters(
        command=config.command[0],
        args=list(config.command[1:]),
        env=dict(config.env) if config.env is not None else None,
        cwd=config.cwd,
    )
    return stdio_client(params, errlog=_errlog())


def _errlog() -> Any:
    """Where a stdio server's stderr goes: ours when it is a real file (the server's log
    is the first thing to read when it misbehaves), else nowhere (the SDK hands the
    stream to the child process, which needs a file descriptor)."""
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):
        return _devnull()


@functools.cache
def _devnull() -> Any:
    return open(os.devnull, "w")


RESOURCE_NOT_FOUND = -32002
"""The MCP specification's error code for a resource URI the server does not know."""


def tool_error(server: str, exc: BaseException) -> ToolError:
    """The typed tool error for a failure talking to ``server``."""
    from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_TIMEOUT

    from mcp import MCPError

    if isinstance(exc, ToolError):
        return exc
    if isinstance(exc, MCPError):
        kind = {
            REQUEST_TIMEOUT: ToolErrorKind.TIMEOUT,
            CONNECTION_CLOSED: ToolErrorKind.TRANSIENT,
            INVALID_PARAMS: ToolErrorKind.INVALID_ARGUMENTS,
            METHOD_NOT_FOUND: ToolErrorKind.NOT_FOUND,
            RESOURCE_NOT_FOUND: ToolErrorKind.NOT_FOUND,
        }.get(exc.code, ToolErrorKind.PERMANENT)
        message = exc.message
        if exc.code == CONNECTION_CLOSED:
            message += " (the server exited or dropped the connection; the next call reconnects)"
        return ToolError(f"MCP server {server!r}: {message}", kind=kind)
    if isinstance(exc, TimeoutError):
        return ToolError(
            f"MCP server {server!r} did not answer in time", kind=ToolErrorKind.TIMEOUT
        )
    if isinstance(exc, (ConnectionError, OSError, EOFError)):
        return ToolError(f"MCP server {server!r}: {_describe(exc)}", kind=ToolErrorKind.TRANSIENT)
    return ToolError(f"MCP server {server!r}: {_describe(exc)}", kind=ToolErrorKind.PERMANENT)


def _unparsed(exc: Exception) -> tuple[str, bool]:
    """What was wrong with a message the SDK could not parse, and whether it may have
    been a reply: not when it was a JSON object with a ``method`` (a notification or a
    request). pydantic's error keeps the input it could not validate; any other
    exception the transport reports (a failed read) is no unparsable reply: the session
    ending is what fails the calls then."""
    errors = getattr(exc, "errors", None)
    found: list[Any] = []
    if callable(errors):
        with contextlib.suppress(Exception):
            found = list(errors())
    if not found:
        return _describe(exc)[:300], False
    first = found[0]
    value = first.get("input")
    text = f"{first.get('msg', 'unreadable')} in {value!r:.120}"
    return text, not any(isinstance(e.get("input"), dict) and "method" in e["input"] for e in found)


def _ended(task: asyncio.Task[None]) -> str:
    if task.cancelled():
        return "session cancelled"
    exc = task.exception()
    return "session ended" if exc is None else _describe(exc)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
