"""MCP servers' tools as ordinary loopwright tools.

>>> toolset = MCPToolset.connect(["mcp-server-time"])        # doctest: +SKIP
>>> agent = Agent(model, toolset.attach(ToolRegistry()))     # doctest: +SKIP

Each MCP tool becomes a :class:`~loopwright.tools.Tool` with the server's name,
description and input schema as given; the dispatcher validates arguments against that
schema before anything is sent (servers built on the 2.x low-level SDK do not validate
their arguments themselves), enforces permissions, confirmation and the per-server
timeout, and truncates results. Results are untrusted data unless the server is marked
``trusted``. See ``docs/mcp.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from loopwright.core.errors import ConfigError, ToolError, ToolErrorKind
from loopwright.core.tools import ToolOutput
from loopwright.core.untrusted import wrap_tool_result
from loopwright.mcp import convert
from loopwright.mcp.config import MCPServerConfig
from loopwright.mcp.connection import MCPConnection, run_async, run_sync
from loopwright.mcp.context import MCPContext
from loopwright.mcp.prompts import MCPPrompt, RenderedPrompt
from loopwright.mcp.resources import MCPResource, MCPResourceTemplate, ResourceRead
from loopwright.tools import Tool, ToolRegistry

if TYPE_CHECKING:
    import mcp_types

log = logging.getLogger("loopwright.mcp")
_MAX_ERROR_CHARS = 4_000
"""Longest error text from a server passed on to the model."""


class MCPToolset:
    """The tools of one or more MCP servers, kept in step with the servers.

    Build it with :meth:`connect` (sync) or :meth:`open` (async); both connect and list
    every server's tools. :attr:`tools` is the current list. :meth:`attach` registers the
    tools in a registry and keeps that registry current when a server announces
    ``list_changed``. :meth:`close` ends every session (also a context manager).
    """

    def __init__(self, servers: Iterable[MCPServerConfig | str]) -> None:
        configs = [
            s if isinstance(s, MCPServerConfig) else MCPServerConfig.parse(s) for s in servers
        ]
        names = [c.name for c in configs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"two MCP servers are named {dupes[0]!r}; give each a unique name")
        self._lock = threading.Lock()
        self._tools: dict[str, dict[str, Tool]] = {c.name: {} for c in configs}
        self.skipped: dict[str, str] = {}
        """Tools that could not be imported (name -> why), e.g. an invalid schema."""
        self._registries: list[tuple[ToolRegistry, asyncio.AbstractEventLoop | None]] = []
        self._definitions: dict[tuple[str, str], str] = {}
        """(server, tool name) -> the listing that built the current Tool."""
        self._resource_tools: list[tuple[ToolRegistry, Tool]] = []
        """The read_resource tool in each registry ``attach(resources=True)`` gave one."""
        self.connections = {
            c.name: MCPConnection(
                c, on_tools=self._listener(c), on_resources=self._resources_changed
            )
            for c in configs
        }
        self._context = MCPContext(self.connections)

    # ---------------------------------------------------------------- building
    @classmethod
    def connect(cls, servers: Iterable[MCPServerConfig | str]) -> MCPToolset:
        """Connect to every server and list its tools (blocking)."""
        toolset = cls(servers)
        try:
            for connection in toolset.connections.values():
                toolset._apply(connection.config, _listing(connection), strict=True)
        except BaseException:
            toolset.close()
            raise
        return toolset

    @classmethod
    async def open(cls, servers: Iterable[MCPServerConfig | str]) -> MCPToolset:
        """Connect to every server and list its tools (without blocking the loop)."""
        toolset = cls(servers)
        try:
            for connection in toolset.connections.values():
                tools = await _alisting(connection)
                toolset._apply(connection.config, tools, strict=True)
        except BaseException:
            await toolset.aclose()
            raise
        return toolset

    @property
    def tools(self) -> list[Tool]:
        with self._lock:
            return [t for per_server in self._tools.values() for t in per_server.values()]

    def attach(self, registry: ToolRegistry, *, resources: bool = False) -> ToolRegistry:
        """Register the tools in ``registry`` and keep it current; returns ``registry``.

        A name already in the registry is a ``ConfigError`` naming the fix (a ``prefix``).
        Changes announced by a server are applied on the event loop that was running
        when ``attach`` was called (if any), between the agent's steps. ``resources=True``
        adds the ``read_resource`` tool when a server lists resources (see
        :meth:`resource_tool`; it lists them, blocking, so async code registers
        ``await toolset.aresource_tool()`` itself)."""
        tools = self.tools
        extra = self.resource_tool() if resources else None
        for t in [*tools, *([extra] if extra is not None else [])]:
            if t.name in registry:
                fix = (
                    "pass another name: registry.register(toolset.resource_tool(name=...))"
                    if t is extra
                    else "give the server a prefix (config 'prefix', e.g. \"time_\")"
                )
                raise ConfigError(
                    f"MCP tool {t.name!r} clashes with a tool already registered; {fix}"
                )
        for t in tools:
            registry.register(t)
        if extra is not None:
            registry.register(extra)
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            self._registries.append((registry, loop))
            if extra is not None:
                self._resource_tools.append((registry, extra))
        return registry

    # ---------------------------------------------------------------- resources, prompts
    # The work is MCPContext's (loopwright.mcp.context); each method has a blocking form
    # and an ``a``-prefixed one for async code. Failures raise MCPRequestError.
    def list_resources(self) -> list[MCPResource]:
        """The resources every server offering resources lists."""
        return run_sync(self._context.list_resources())

    async def alist_resources(self) -> list[MCPResource]:
        return await run_async(self._context.list_resources())

    def list_resource_templates(self) -> list[MCPResourceTemplate]:
        return run_sync(self._context.list_resource_templates())

    async def alist_resource_templates(self) -> list[MCPResourceTemplate]:
        return await run_async(self._context.list_resource_templates())

    def read_resource(self, uri: str, *, server: str | None = None) -> ResourceRead:
        """Read ``uri`` (from ``server``, or the server that lists it or a template of
        it); ``.text`` is its text, ``.for_context()`` that text marked for a prompt."""
        return run_sync(self._context.read(uri, server))

    async def aread_resource(self, uri: str, *, server: str | None = None) -> ResourceRead:
        return await run_async(self._context.read(uri, server))

    def list_prompts(self) -> list[MCPPrompt]:
        """The prompts every server offering prompts lists, with their arguments."""
        return run_sync(self._context.list_prompts())

    async def alist_prompts(self) -> list[MCPPrompt]:
        return await run_async(self._context.list_prompts())

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, object] | None = None,
        *,
        server: str | None = None,
    ) -> RenderedPrompt:
        """Prompt ``name`` rendered with ``arguments`` (checked against its declared
        arguments first): ``agent.run(rendered.prompt, history=rendered.history)``."""
        return run_sync(self._context.get_prompt(name, arguments, server))

    async def aget_prompt(
        self,
        name: str,
        arguments: Mapping[str, object] | None = None,
        *,
        server: str | None = None,
    ) -> RenderedPrompt:
        return await run_async(self._context.get_prompt(name, arguments, server))

    def resource_tool(self, name: str = "read_resource") -> Tool | None:
        """A read-only tool reading the servers' resources by URI (its description lists
        them), or ``None`` when no server lists any. Its results are untrusted data
        unless every server it reads from is ``trusted``."""
        return run_sync(self._context.resource_tool(name))

    async def aresource_tool(self, name: str = "read_resource") -> Tool | None:
        return await run_async(self._context.resource_tool(name))

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()

    async def aclose(self) -> None:
        for connection in self.connections.values():
            await connection.aclose()

    def __enter__(self) -> MCPToolset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MCPToolset:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def running_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """Note the loop an agent runs on (each tool call tells it): registries attached
        outside a running loop (or whose loop has ended, as ``agent.run`` loops do) get
        their later updates on it rather than from the MCP thread."""
        with self._lock:
            self._registries = [
                (r, known if known is not None and known.is_running() else loop)
                for r, known in self._registries
            ]

    # ---------------------------------------------------------------- keeping current
    async def _resources_changed(self) -> None:
        """A server's resources changed: each attached read_resource tool is rebuilt
        (its description lists them) and swapped in, on its registry's loop."""
        with self._lock:
            attached = list(enumerate(self._resource_tools))
        for index, (registry, old) in attached:
            fresh = await self._context.resource_tool(old.name)
            if fresh is None:  # nothing listed any more: reads fail with "not found"
                continue
            with self._lock:
                self._resource_tools[index] = (registry, fresh)
                loop = next((lp for r, lp in self._registries if r is registry), None)
            _schedule(loop, lambda r=registry, o=old, f=fresh: _swap(r, o, f))

    def _listener(self, config: MCPServerConfig) -> Any:
        def on_tools(listing: list[mcp_types.Tool]) -> None:
            self._apply(config, listing)

        return on_tools

    def _apply(
        self, config: MCPServerConfig, listing: list[mcp_types.Tool], *, strict: bool = False
    ) -> None:
        """Install ``config``'s listed tools. A name another server of this toolset
        already has is a ``ConfigError`` when connecting (``strict``: a prefix fixes it);
        in a later listing (``list_changed``) that tool is skipped, as is a second tool of
        one server whose name sanitizes to the same name: each name calls one tool."""
        connection = self.connections[config.name]
        with self._lock:
            known = dict(self._tools[config.name])
            others = {
                name: server
                for server, tools in self._tools.items()
                if server != config.name
                for name in tools
            }
        fresh: dict[str, Tool] = {}
        for item in listing:
            if config.tools is not None and item.name not in config.tools:
                continue
            name = convert.tool_name(config.prefix, item.name)
            clash = _clash(config, item.name, name, others, fresh)
            if clash is not None:
                if strict and name in others:
                    raise ConfigError(clash)
                self.skipped[name] = clash
                log.warning("MCP %s: tool %s skipped: %s", config.name, item.name, clash)
                continue
            same = known.get(name)
            definition = _definition(item)
            if same is not None and self._definitions.get((config.name, name)) == definition:
                fresh[name] = same  # unchanged: keep the Tool (and the dispatcher's plan)
                continue
            try:
                fresh[name] = mcp_tool(item, connection, self)
                self._definitions[(config.name, name)] = definition
            except ValueError as exc:
                self.skipped[name] = str(exc)
                log.warning("MCP %s: tool %s skipped: %s", config.name, item.name, exc)
        with self._lock:
            old = self._tools[config.name]
            self._tools[config.name] = fresh
            registries = list(self._registries)
        for registry, loop in registries:
            _schedule(loop, lambda r=registry: _sync_registry(r, old, fresh))


def _clash(
    config: MCPServerConfig,
    remote: str,
    name: str,
    others: Mapping[str, str],
    fresh: Mapping[str, Tool],
) -> str | None:
    """Why ``remote`` (called ``name`` here) cannot be installed, or ``None``."""
    if name in others:
        return (
            f"MCP servers {others[name]!r} and {config.name!r} both have a tool named "
            f"{name!r}; give one of them a prefix (config 'prefix', e.g. "
            f'"{config.name}_")'
        )
    if name in fresh:
        return (
            f"MCP server {config.name!r} lists two tools named {name!r} once names are "
            f"made safe (characters outside [A-Za-z0-9_-] become '_'); {remote!r} is skipped"
        )
    return None


def mcp_tool(
    item: mcp_types.Tool, connection: MCPConnection, toolset: MCPToolset | None = None
) -> Tool:
    """One MCP tool as a loopwright tool that calls it through ``connection``."""
    config = connection.config
    name = convert.tool_name(config.prefix, item.name)
    remote_name = item.name
    flags = convert.flags(item.annotations, config.confirm_destructive)

    async def call_mcp_tool(**arguments: Any) -> str | ToolOutput:
        if toolset is not None:
            toolset.running_on(asyncio.get_running_loop())
        result = await connection.call_tool(remote_name, arguments)
        output = convert.result_output(result)
        text = output.text
        if result.is_error:
            # the server's error text is outside content too (the dispatcher delimits
            # successful results of untrusted_output tools, not error messages)
            message = text[:_MAX_ERROR_CHARS] or f"{remote_name} failed"
            if not config.trusted:
                message = wrap_tool_result(message, name)
            raise ToolError(message, kind=ToolErrorKind.PERMANENT)
        return output if output.media else text  # images ride along (docs/mcp.md)

    call_mcp_tool.__name__ = name
    return Tool.from_schema(
        name,
        convert.describe(item),
        dict(item.input_schema),
        call_mcp_tool,
        timeout=config.timeout,
        untrusted_output=not config.trusted,
        **flags,
    )


def _definition(item: mcp_types.Tool) -> str:
    """What makes two listings of a tool the same tool."""
    return item.model_dump_json(exclude={"meta", "icons"})


def _sync_registry(
    registry: ToolRegistry, old: Mapping[str, Tool], fresh: Mapping[str, Tool]
) -> None:
    """Swap a server's old tools for its fresh ones (a tool another source registered
    under the same name is left alone)."""
    for name, t in old.items():
        if registry.get(name) is t and fresh.get(name) is not t:
            registry.unregister(name)
    for name, t in fresh.items():
        if name not in registry:
            registry.register(t)


def _swap(registry: ToolRegistry, old: Tool, fresh: Tool) -> None:
    """Replace ``old`` by ``fresh`` unless something else holds the name by now (the
    registry's own tool, or a newer rebuild already swapped in)."""
    if registry.get(old.name) is old:
        registry.unregister(old.name)
        registry.register(fresh)


def _schedule(loop: asyncio.AbstractEventLoop | None, fn: Any) -> None:
    """Run ``fn`` on the registry's loop (registries are not thread-safe); directly when
    that loop is gone or was never known."""
    if loop is not None and loop.is_running():
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(fn)
            return
    fn()


# The connection bounds connecting and each listing page by the server's timeout and
# names both in its error (see MCPConnection.connect_timeout).
def _listing(connection: MCPConnection) -> list[mcp_types.Tool]:
    try:
        return connection.list_tools_sync()
    except ToolError as exc:
        raise ConfigError(str(exc)) from None


async def _alisting(connection: MCPConnection) -> list[mcp_types.Tool]:
    try:
        return await connection.list_tools()
    except ToolError as exc:
        raise ConfigError(str(exc)) from None
