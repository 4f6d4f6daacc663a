"""MCP values to loopwright values: tool definitions to flags, results to text.

Annotations are *hints* from a server we may not trust, so they are used only in the
direction of caution or for retry safety: a tool that may be destructive asks for
confirmation (MCP's defaults: a tool that is not read-only is destructive unless it says
``destructive_hint: false``), and a read-only or idempotent tool may be retried.

Results become a text plus images (:class:`~loopwright.core.tools.ToolOutput`): text
blocks verbatim; an embedded text resource, or a blob resource of a textual type (text/*,
JSON, XML, YAML) that decodes as UTF-8, as its URI and text; an image (an image
block, or an embedded blob resource of an image type) as a line naming its type and size
in the text *and* the image itself, which providers whose API takes images in tool
results send with it (Anthropic, OpenAI Responses; the others send the line and a note
that the image is not shown); audio, other blobs and images over :data:`MAX_IMAGE_BYTES`
as a one-line placeholder only; resource links as their name, URI and type. Structured
content is shown as JSON when the server sent no text. See docs/mcp.md.
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING, Any

from loopwright.core.messages import MediaPart
from loopwright.core.tools import Permission, ToolOutput

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


MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Larger images stay a placeholder: model APIs refuse them (Anthropic's limit is 5 MB),
and every later request of the run would carry them."""
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types model APIs take (others stay a placeholder)."""


def result_output(result: mcp_types.CallToolResult) -> ToolOutput:
    """The text and images of a tool result (see the module docstring per content type)."""
    media: list[MediaPart] = []
    pieces = [_block_text(block, media) for block in result.content]
    text = "\n".join(p for p in pieces if p)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return ToolOutput(text, tuple(media))


def _block_text(block: Any, media: list[MediaPart]) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return binary_line(f"{kind} {block.mime_type}", block.mime_type, block.data, media)
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if text is not None:
            return f"[resource {res.uri}]\n{text}"
        mime = res.mime_type or "application/octet-stream"
        decoded = text_blob(mime, res.blob)
        if decoded is not None:
            return f"[resource {res.uri} {mime}]\n{decoded}"
        return binary_line(f"resource {res.uri} {mime}", mime, res.blob, media)
    if kind == "resource_link":
        mime = f" {block.mime_type}" if block.mime_type else ""
        about = f": {block.description}" if block.description else ""
        return f"[resource link {block.name} <{block.uri}>{mime}{about}]"
    return f"[{kind or type(block).__name__} content, not shown]"


_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/yaml")


def text_blob(mime: str, data: str) -> str | None:
    """The text of a base64 blob whose type is textual (a server may send a text file as
    a blob), or ``None`` when it is not text or does not decode as UTF-8."""
    if not mime.startswith(_TEXT_TYPES) and not mime.endswith(("+json", "+xml")):
        return None
    try:
        return base64.b64decode(data, validate=True).decode("utf-8")
    except ValueError:  # bad base64 or bad UTF-8 (both ValueErrors)
        return None


def binary_line(label: str, mime: str | None, data: str, media: list[MediaPart]) -> str:
    """A line naming base64 ``data``; an image of a type models take is attached too
    (only if it is valid base64: a model API would refuse the whole request)."""
    if mime in IMAGE_TYPES:
        try:
            size = len(base64.b64decode(data, validate=True))
        except ValueError:
            return f"[{label}, not valid base64, not shown]"
        if 0 < size <= MAX_IMAGE_BYTES:
            media.append(MediaPart(str(mime), data))
            return f"[{label}, {size} bytes]"
        return f"[{label}, {size} bytes, not shown]"
    return f"[{label}, {decoded_size(data)} bytes, not shown]"


def decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except ValueError:
        return len(data)
