"""A tool registry for ``loopwright mcp serve --registry sample_registry:registry``."""

from __future__ import annotations

from loopwright.tools import ToolRegistry, tool


@tool(idempotent=True)
def shout(text: str, times: int = 1) -> str:
    """Upper-case the text, repeated."""
    return " ".join([text.upper()] * times)


@tool(requires_confirmation=True, permission="write")
def delete_everything(reason: str) -> str:
    """Delete every record (asks first)."""
    return f"deleted ({reason})"


@tool(permission="admin")
def rotate_keys() -> str:
    """Rotate the signing keys."""
    return "rotated"


registry = ToolRegistry([shout, delete_everything, rotate_keys])
