"""MCP resources as loopwright values, and what a model sees of them.

A server's resources (documents, records, files it offers by URI) and resource templates
(``notes://{topic}``) are listed as :class:`MCPResource` / :class:`MCPResourceTemplate`;
reading a URI gives a :class:`ResourceRead` (one URI may hold several contents). Text
contents, and blobs of a textual type that decode as UTF-8 (JSON, XML, YAML, ``text/*``),
are text; other blobs are binary (:attr:`ResourceContent.data`).

A model reaches resources through the ``read_resource`` tool (:func:`resource_tool`),
whose description lists the URIs and templates; images come back with the result the
way MCP tool results bring them, other binary contents are an error naming the fix.
A person (or code) can put a resource into the conversation directly:
:meth:`ResourceRead.for_context` is its text, delimited as untrusted data when the
server is not trusted. Routing a URI to a server and the listings are
:class:`loopwright.mcp.context.MCPContext`'s. See docs/mcp.md.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loopwright.core.errors import ToolError, ToolErrorKind, UserError
from loopwright.core.messages import MediaPart, Message
from loopwright.core.tools import Permission, ToolOutput
from loopwright.core.untrusted import wrap_retrieved
from loopwright.mcp import convert
from loopwright.tools import Tool

if TYPE_CHECKING:
    import mcp_types

LISTED_IN_DESCRIPTION = 40
"""Resources and templates named in the ``read_resource`` tool's description (the rest
can still be read by URI; the description says how many were left out)."""
_ABOUT_CHARS = 160


class MCPRequestError(UserError):
    """A resource or prompt request that failed; ``kind`` is the tool error kind
    (``not_found``, ``invalid_arguments``, ``timeout``, ``transient``, ...) and the
    message names the server and the fix."""

    def __init__(self, message: str, kind: ToolErrorKind = ToolErrorKind.PERMANENT) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class MCPResource:
    """One resource a server lists."""

    server: str
    uri: str
    name: str
    description: str = ""
    mime_type: str | None = None

    @classmethod
    def of(cls, server: str, item: mcp_types.Resource) -> MCPResource:
        return cls(
            server, item.uri, item.title or item.name, item.description or "", item.mime_type
        )


@dataclass(frozen=True, slots=True)
class MCPResourceTemplate:
    """A family of resources a server can read: ``notes://{topic}`` (RFC 6570)."""

    server: str
    uri_template: str
    name: str
    description: str = ""
    mime_type: str | None = None

    @classmethod
    def of(cls, server: str, item: mcp_types.ResourceTemplate) -> MCPResourceTemplate:
        return cls(
            server,
            item.uri_template,
            item.title or item.name,
            item.description or "",
            item.mime_type,
        )

    def matches(self, uri: str) -> bool:
        """Whether ``uri`` is one of this template's URIs."""
        return _template_pattern(self.uri_template).fullmatch(uri) is not None


@dataclass(frozen=True, slots=True)
class ResourceContent:
    """One content of a read: ``text`` for text (and textual blobs), else ``data``."""

    uri: str
    mime_type: str | None
    text: str | None = None
    data: bytes | None = None

    @property
    def label(self) -> str:
        return f"{self.uri} {self.mime_type or 'application/octet-stream'}"


@dataclass(frozen=True, slots=True)
class ResourceRead:
    """What reading ``uri`` on ``server`` gave. ``trusted`` is the server's flag."""

    server: str
    uri: str
    contents: tuple[ResourceContent, ...]
    trusted: bool = False

    @property
    def text(self) -> str:
        """The text of every content; a binary content is an error naming its bytes."""
        for i, content in enumerate(self.contents):
            if content.text is None:
                raise MCPRequestError(
                    f"resource {self.uri!r} of MCP server {self.server!r} is binary "
                    f"({content.mime_type or 'no type'}, {len(content.data or b'')} bytes), "
                    f"not text; its bytes are in .contents[{i}].data",
                    ToolErrorKind.INVALID_ARGUMENTS,
                )
        return "\n".join(c.text or "" for c in self.contents)

    def for_context(self) -> str:
        """The text to put in a prompt: ``[resource URI]`` and the text, delimited as
        untrusted data unless the server is trusted (as tool results are)."""
        body = f"[resource {self.uri}]\n{self.text}"
        return body if self.trusted else wrap_retrieved(body, f"{self.server}:{self.uri}")

    def as_message(self) -> Message:
        """A user message holding :meth:`for_context` (for ``history=``)."""
        return Message.user(self.for_context())


def read_of(
    server: str, uri: str, result: mcp_types.ReadResourceResult, trusted: bool
) -> ResourceRead:
    """A :class:`ResourceRead` from the SDK's ``resources/read`` result."""
    contents: list[ResourceContent] = []
    for item in result.contents:
        text = getattr(item, "text", None)
        if text is not None:
            contents.append(ResourceContent(item.uri, item.mime_type, text=text))
            continue
        blob = str(getattr(item, "blob", ""))
        decoded = convert.text_blob(item.mime_type or "", blob)
        if decoded is not None:
            contents.append(ResourceContent(item.uri, item.mime_type, text=decoded))
        else:
            contents.append(ResourceContent(item.uri, item.mime_type, data=_bytes(blob)))
    return ResourceRead(server, uri, tuple(contents), trusted)


def tool_output(read: ResourceRead) -> str | ToolOutput:
    """What the ``read_resource`` tool returns: the text, images attached (as MCP tool
    results' images are); a binary content that is no image is an error."""
    media: list[MediaPart] = []
    lines: list[str] = []
    for content in read.contents:
        if content.text is not None:
            lines.append(
                content.text if len(read.contents) == 1 else f"[{content.uri}]\n{content.text}"
            )
            continue
        data = base64.b64encode(content.data or b"").decode("ascii")
        if content.mime_type not in convert.IMAGE_TYPES:
            raise ToolError(
                f"resource {read.uri!r} is binary ({content.mime_type or 'no type'}, "
                f"{len(content.data or b'')} bytes) and cannot be shown as text; read a "
                "text resource instead",
                kind=ToolErrorKind.INVALID_ARGUMENTS,
            )
        lines.append(
            convert.binary_line(f"resource {content.label}", content.mime_type, data, media)
        )
    text = "\n".join(lines)
    return ToolOutput(text, tuple(media)) if media else text


def resource_tool(
    read: Callable[[str], Awaitable[ResourceRead]],
    resources: Sequence[MCPResource],
    templates: Sequence[MCPResourceTemplate],
    *,
    name: str = "read_resource",
    untrusted: bool = True,
) -> Tool:
    """The read-only tool that reads a resource by URI through ``read``."""

    async def read_resource(uri: str) -> str | ToolOutput:
        try:
            return tool_output(await read(uri))
        except MCPRequestError as exc:
            raise ToolError(str(exc), kind=exc.kind) from None

    read_resource.__name__ = name
    parameters = {
        "type": "object",
        "properties": {
            "uri": {"type": "string", "description": "The URI of the resource to read."}
        },
        "required": ["uri"],
        "additionalProperties": False,
    }
    return Tool.from_schema(
        name,
        describe(resources, templates),
        parameters,
        read_resource,
        permission=Permission.READ,
        idempotent=True,
        timeout=None,  # each step is bounded by its server's timeout (MCPConnection)
        untrusted_output=untrusted,
    )


def describe(resources: Sequence[MCPResource], templates: Sequence[MCPResourceTemplate]) -> str:
    """The tool's description: what it does, then the URIs and templates it can read."""
    lines = ["Read a resource (a document or data the connected MCP servers offer) by URI."]
    entries = [_entry(r.uri, r.name, r.description) for r in resources]
    filled = [_entry(t.uri_template, t.name, t.description) for t in templates]
    shown = LISTED_IN_DESCRIPTION
    if entries:
        lines += ["Resources:", *entries[:shown]]
    if filled and shown > len(entries):
        lines += ["URI templates (fill in the {placeholders}):", *filled[: shown - len(entries)]]
    left = len(entries) + len(filled) - shown
    if left > 0:
        lines.append(f"({left} more not listed here; they can be read by URI too)")
    return "\n".join(lines)


def _entry(uri: str, name: str, about: str) -> str:
    about = " ".join(about.split())
    if len(about) > _ABOUT_CHARS:
        about = about[: _ABOUT_CHARS - 3] + "..."
    return f"- {uri} ({name})" + (f": {about}" if about else "")


_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^}]*)\}")


def _template_pattern(template: str) -> re.Pattern[str]:
    """A regular expression for the URIs of an RFC 6570 template: a simple ``{var}``
    is one path segment, ``{+var}``/``{#var}`` anything, ``{?a,b}`` an optional query."""
    out: list[str] = []
    last = 0
    for match in _EXPRESSION.finditer(template):
        out.append(re.escape(template[last : match.start()]))
        operator = match.group(1)
        if operator in ("+", "#"):
            out.append(".*")
        elif operator in ("?", "&"):
            out.append(r"(?:[?&][^#]*)?")
        else:
            out.append(r"[^/?#]+")
        last = match.end()
    out.append(re.escape(template[last:]))
    return re.compile("".join(out))


def _bytes(blob: str) -> bytes:
    try:
        return base64.b64decode(blob, validate=False)
    except ValueError:
        return blob.encode("utf-8", "replace")
