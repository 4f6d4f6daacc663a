"""Session bookkeeping of MCPConnection, with a stand-in SDK client (no server)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

import mcp
from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.mcp import MCPConnection, MCPServerConfig
from loopwright.mcp import connection as connection_mod


class SlowToCloseClient:
    """Enters at once; the first one takes a while to close (a server slow to exit)."""

    made: ClassVar[list[SlowToCloseClient]] = []

    def __init__(self, transport: Any, **kwargs: Any) -> None:
        self.closing_delay = 0.3 if not SlowToCloseClient.made else 0.0
        SlowToCloseClient.made.append(self)

    async def __aenter__(self) -> SlowToCloseClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.sleep(self.closing_delay)

    def listen(self, **kwargs: Any) -> Any:
        from mcp.client.subscriptions import ListenNotSupportedError

        raise ListenNotSupportedError("stand-in")


async def test_a_slow_closing_old_session_does_not_clobber_the_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def no_transport(config: Any, stack: Any) -> object:
        return object()

    SlowToCloseClient.made.clear()
    monkeypatch.setattr(mcp, "Client", SlowToCloseClient)
    monkeypatch.setattr(connection_mod, "_transport", no_transport)
    conn = MCPConnection(MCPServerConfig("stand-in", command=("unused",)))
    conn.drain_seconds = 0.01  # start the next session before the old one has closed
    first = await conn._ensure()
    error = conn._failed(ToolError("gone", kind=ToolErrorKind.TRANSIENT))
    assert error.kind is ToolErrorKind.TRANSIENT
    second = await conn._ensure()
    assert second is not first
    await asyncio.sleep(0.5)  # the first session finishes closing now
    assert conn._client is second  # still the live session's client
    assert conn.sessions_started == 2
    await conn._close()
