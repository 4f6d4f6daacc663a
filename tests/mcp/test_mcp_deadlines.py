"""An MCP server's ``timeout`` bounds connecting (starting the server, the handshake)
and listing, not only tool calls: a server that never answers fails within it."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import mcp_helpers  # noqa: F401  (skips without the mcp extra)
import pytest

from loopwright.core.errors import ConfigError, ToolError, ToolErrorKind
from loopwright.mcp import MCPConnection, MCPServerConfig, MCPToolset


def _silent_server(pid_file: Path) -> tuple[str, ...]:
    """A stdio 'server' that starts, records its pid and never says a word."""
    script = (
        "import os, pathlib, time; "
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())); time.sleep(120)"
    )
    return (sys.executable, "-c", script)


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_stdio_server_that_never_answers_fails_within_its_timeout(tmp_path: Path) -> None:
    # was: connecting waited at least 30 s whatever the server's timeout said
    pid_file = tmp_path / "pid"
    server = MCPServerConfig("mute", command=_silent_server(pid_file), timeout=1.5)
    started = time.monotonic()
    with pytest.raises(ConfigError) as failed:
        MCPToolset.connect([server])
    assert time.monotonic() - started < 6
    message = str(failed.value)
    assert "'mute'" in message and "1.5 s" in message and "handshake" in message
    assert _gone(int(pid_file.read_text()), within=5)  # the process is stopped too


def test_an_http_server_that_never_answers_fails_within_its_timeout() -> None:
    async def scenario() -> str:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await asyncio.sleep(60)  # accepts the connection, never answers

        listener = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        server = MCPServerConfig("mute-http", url=f"http://127.0.0.1:{port}/mcp", timeout=1)
        try:
            with pytest.raises(ConfigError) as failed:
                await MCPToolset.open([server])
        finally:
            listener.close()
        return str(failed.value)

    started = time.monotonic()
    message = asyncio.run(scenario())
    assert time.monotonic() - started < 6
    assert "'mute-http'" in message and "within 1 s" in message


async def test_a_call_that_must_connect_first_is_a_timeout_result(tmp_path: Path) -> None:
    conn = MCPConnection(
        MCPServerConfig("mute", command=_silent_server(tmp_path / "pid"), timeout=1)
    )
    started = time.monotonic()
    with pytest.raises(ToolError) as failed:
        await conn.call_tool("anything", {})
    assert failed.value.kind is ToolErrorKind.TIMEOUT
    assert "'mute'" in str(failed.value) and "within 1 s" in str(failed.value)
    assert time.monotonic() - started < 6
    await conn.aclose()
