"""MCP values to loopwright values: tool definitions to flags, results to text.

Annotations are *hints* from a server we may not trust, so they are used only in the
direction of caution or for retry safety: a tool that may be destructive asks for
confirmation (MCP's defaults: a tool that is not read-only is destructive unless it says
``destructive_hint: false``), and a read-only or idempotent tool may be retried.

Results become text, because a tool result in loopwright's canonical history is text:
text blocks verbatim; an embedded text resource with its URI; images, audio and blobs
as a one-line placeholder naming their type and size (the bytes are kept out of the
prompt; providers that take images in tool results are not fed them by this path);
resource links as their name, URI and type. Structured content is shown as JSON when
the server sent no text.
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING, Any

from loopwright.core.tools import Permission

if TYPE_CHECKING:  # the SDK is an optional extra, imported where used
    import mcp_types

_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(prefix: str, name: str) -> str:
    """A loopwright tool name (``[A-Za-z0-9_-]{1,64}``) for an MCP tool name."""
    clean = _BAD_NAME_CHARS.sub("_", prefix + name)
    return clean[:64] or "_"


def flags(
    annotations: mcp_types.ToolAnnotations | None, confirm_destructive: bool
) -> dict[str, Any]:
    """The :func:`loopwright.tools.tool` flags an MCP tool's annotations imply."""
    read_only = bool(annotations and annotations.read_only_hint)
    destructive = not read_only and not (
        annotations is not None and annotations.destructive_hint is False
    )
    idempotent = read_only or bool(annotations and annotations.idempotent_hint)
    return {
        "permission": Permission.READ if read_only else Permission.WRITE,
        "idempotent": idempotent,
        "requires_confirmation": destructive and confirm_destructive,
    }


def describe(tool: mcp_types.Tool) -> str:
    """The description the model sees (the title when there is no description)."""
    if tool.description:
        return tool.description
    title = tool.title or (tool.annotations.title if tool.annotations else None)
    return title or tool.name


def result_text(result: mcp_types.CallToolResult) -> str:
    """The text of a tool result (see the module docstring for each content type)."""
    pieces = [_block_text(block) for block in result.content]
    text = "\n".join(p for p in pieces if p)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return text


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]"
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if text is not None:
            return f"[resource {res.uri}]\n{text}"
        mime = res.mime_type or "application/octet-stream"
        return f"[resource {res.uri} {mime}, {_decoded_size(res.blob)} bytes, not shown]"
    if kind == "resource_link":
        mime = f" {block.mime_type}" if block.mime_type else ""
        about = f": {block.description}" if block.description else ""
        return f"[resource link {block.name} <{block.uri}>{mime}{about}]"
    return f"[{kind or type(block).__name__} content, not shown]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except ValueError:
        return len(data)
