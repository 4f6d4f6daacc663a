"""What a running tool may know about its call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Passed to a tool function that declares a parameter annotated ``ToolContext``
    (that parameter is left out of the tool's JSON Schema).

    ``attempt`` is 1 on the first try and grows on each runtime retry.
    ``idempotency_key`` is the call's key (``@tool(idempotency_key=...)``) or ``None``:
    a tool with side effects can use it to deduplicate on its own side too.
    """

    call_id: str
    idempotency_key: str | None = None
    attempt: int = 1
    session_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
