"""The resources and prompts of a set of MCP servers: listings, and which server a URI
or a prompt name goes to.

:class:`MCPContext` belongs to an :class:`~loopwright.mcp.MCPToolset` (its
``list_resources``, ``read_resource``, ``list_prompts``, ``get_prompt`` and
``resource_tool`` methods call it). Its coroutines run on the MCP loop
(:mod:`loopwright.mcp.connection`). Servers that do not declare the resources (or
prompts) capability are left out of listings; asking one of them by name is an error
saying so. Failures are :class:`~loopwright.mcp.resources.MCPRequestError` s that name
the server and the fix. See docs/mcp.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import TypeVar

from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.mcp import resources
from loopwright.mcp.connection import MCPConnection
from loopwright.mcp.prompts import MCPPrompt, RenderedPrompt, check_arguments, rendered
from loopwright.mcp.resources import (
    MCPRequestError,
    MCPResource,
    MCPResourceTemplate,
    ResourceRead,
)
from loopwright.tools import Tool

_T = TypeVar("_T")
_NAMED_IN_ERRORS = 10
"""Known URIs or prompts an error lists (the CLI's listing shows them all)."""


class MCPContext:
    """Resources and prompts of ``connections`` (server name -> connection)."""

    def __init__(self, connections: Mapping[str, MCPConnection]) -> None:
        self._connections = connections
        self._resources: list[MCPResource] | None = None
        self._templates: list[MCPResourceTemplate] = []
        self._prompts: list[MCPPrompt] | None = None

    # ---------------------------------------------------------------- listings
    async def list_resources(self) -> list[MCPResource]:
        await self._load_resources()
        return list(self._resources or ())

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:
        await self._load_resources()
        return list(self._templates)

    async def list_prompts(self) -> list[MCPPrompt]:
        found: list[MCPPrompt] = []
        for connection in await self._offering("prompts"):
            listed = await _asked(connection.list_prompts())
            found += [MCPPrompt.of(connection.config.name, p) for p in listed]
        self._prompts = found
        return list(found)

    async def _load_resources(self) -> None:
        listed: list[MCPResource] = []
        templates: list[MCPResourceTemplate] = []
        for connection in await self._offering("resources"):
            name = connection.config.name
            items = await _asked(connection.list_resources())
            listed += [MCPResource.of(name, r) for r in items]
            forms = await _asked(connection.list_resource_templates())
            templates += [MCPResourceTemplate.of(name, t) for t in forms]
        self._resources, self._templates = listed, templates

    async def _offering(self, feature: str, server: str | None = None) -> list[MCPConnection]:
        """The connections that declare ``feature`` (only ``server``'s, when given; it
        must declare it)."""
        if server is not None:
            connection = self._connection(server)
            await _asked(connection.require(feature))
            return [connection]
        return [c for c in self._connections.values() if await _asked(c.offers(feature))]

    def _connection(self, server: str) -> MCPConnection:
        if server not in self._connections:
            known = ", ".join(repr(n) for n in self._connections)
            raise MCPRequestError(
                f"no MCP server named {server!r}; the servers are {known}",
                ToolErrorKind.NOT_FOUND,
            )
        return self._connections[server]

    # ---------------------------------------------------------------- resources
    async def read(self, uri: str, server: str | None = None) -> ResourceRead:
        """Read ``uri`` from ``server``, or from the server that lists it (or has a
        template it matches, or is the only one offering resources)."""
        if not isinstance(uri, str) or not uri.strip():
            raise MCPRequestError(
                f"a resource URI is a non-empty string, got {uri!r}",
                ToolErrorKind.INVALID_ARGUMENTS,
            )
        connection = await self._route(uri, server)
        name = connection.config.name
        try:
            result = await connection.read_resource(uri)
        except ToolError as exc:
            if exc.kind in (ToolErrorKind.NOT_FOUND, ToolErrorKind.INVALID_ARGUMENTS):
                said = str(exc).removeprefix(f"MCP server {name!r}: ")
                raise self._unknown(
                    uri, f"MCP server {name!r} has no resource {uri!r} ({said})"
                ) from None
            raise MCPRequestError(str(exc), exc.kind) from None
        return resources.read_of(name, uri, result, connection.config.trusted)

    async def _route(self, uri: str, server: str | None) -> MCPConnection:
        if server is not None:
            return (await self._offering("resources", server))[0]
        fresh = self._resources is None
        if fresh:
            await self._load_resources()
        owner = self._owner(uri)
        if owner is None and not fresh:  # listed since the last listing?
            await self._load_resources()
            owner = self._owner(uri)
        if owner is not None:
            return self._connections[owner]
        offering = await self._offering("resources")
        if len(offering) == 1:  # a server may read URIs it does not list
            return offering[0]
        if not offering:
            raise MCPRequestError(
                "none of the MCP servers offers resources (none declares the resources capability)",
                ToolErrorKind.NOT_FOUND,
            )
        raise self._unknown(uri, f"no MCP server lists the resource {uri!r}")

    def _owner(self, uri: str) -> str | None:
        for item in self._resources or ():
            if item.uri == uri:
                return item.server
        for template in self._templates:
            if template.matches(uri):
                return template.server
        return None

    def _unknown(self, uri: str, what: str) -> MCPRequestError:
        known = [r.uri for r in self._resources or ()] + [t.uri_template for t in self._templates]
        shown = ", ".join(known[:_NAMED_IN_ERRORS]) or "none"
        more = f" and {len(known) - _NAMED_IN_ERRORS} more" if len(known) > _NAMED_IN_ERRORS else ""
        return MCPRequestError(
            f"{what}; known resources and templates: {shown}{more} "
            "(`loopwright mcp resources SERVER` lists them)",
            ToolErrorKind.NOT_FOUND,
        )

    async def resource_tool(self, name: str = "read_resource") -> Tool | None:
        """The ``read_resource`` tool over every server offering resources, or ``None``
        when no server lists a resource or a template."""
        await self._load_resources()
        if not self._resources and not self._templates:
            return None
        owners = {r.server for r in self._resources or ()} | {t.server for t in self._templates}
        trusted = all(self._connections[s].config.trusted for s in owners)
        return resources.resource_tool(
            self.read,
            list(self._resources or ()),
            self._templates,
            name=name,
            untrusted=not trusted,
        )

    # ---------------------------------------------------------------- prompts
    async def get_prompt(
        self, name: str, arguments: Mapping[str, object] | None, server: str | None = None
    ) -> RenderedPrompt:
        """``name`` rendered by its server, ``arguments`` checked against it first."""
        prompt = await self._find_prompt(name, server)
        values = check_arguments(prompt, arguments)
        connection = self._connections[prompt.server]
        result = await _asked(connection.get_prompt(prompt.name, values))
        return rendered(prompt, result, connection.config.trusted)

    async def _find_prompt(self, name: str, server: str | None) -> MCPPrompt:
        if server is not None:
            await self._offering("prompts", server)
        fresh = self._prompts is None
        found = self._named(name, server, await self.list_prompts() if fresh else self._prompts)
        if not found and not fresh:  # listed since the last listing?
            found = self._named(name, server, await self.list_prompts())
        if len(found) > 1:
            servers = " and ".join(repr(p.server) for p in found)
            raise MCPRequestError(
                f"MCP servers {servers} both offer a prompt named {name!r}; pass "
                f"server={found[0].server!r} (or another) to choose",
                ToolErrorKind.INVALID_ARGUMENTS,
            )
        if found:
            return found[0]
        known = [p.signature() for p in self._prompts or () if server is None or p.server == server]
        where = f"MCP server {server!r} has no prompt" if server else "no MCP server has a prompt"
        shown = ", ".join(known[:_NAMED_IN_ERRORS]) or "none"
        raise MCPRequestError(f"{where} named {name!r}; prompts: {shown}", ToolErrorKind.NOT_FOUND)

    @staticmethod
    def _named(name: str, server: str | None, prompts: list[MCPPrompt] | None) -> list[MCPPrompt]:
        return [
            p for p in prompts or () if p.name == name and (server is None or p.server == server)
        ]


async def _asked(request: Awaitable[_T]) -> _T:
    """``request``'s answer; a connection's tool error becomes a request error."""
    try:
        return await request
    except ToolError as exc:
        raise MCPRequestError(str(exc), exc.kind) from None
