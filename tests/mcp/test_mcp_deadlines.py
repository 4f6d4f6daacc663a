"""An MCP server's ``timeout`` bounds connecting (starting the server, the handshake)
and listing, not only tool calls: a server that never answers fails within it. A reply
the SDK cannot parse fails the call at once instead of waiting out the timeout."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest
from mcp_helpers import FAULTY

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


async def test_a_reply_that_cannot_be_parsed_fails_the_call_at_once() -> None:
    # was: the SDK dropped the line and the call waited out its whole timeout
    conn = MCPConnection(
        MCPServerConfig("garbler", command=(sys.executable, str(FAULTY)), timeout=30)
    )
    try:
        started = time.monotonic()
        with pytest.raises(ToolError) as failed:
            await conn.call_tool("garble", {})
        assert time.monotonic() - started < 10
        assert failed.value.kind is ToolErrorKind.PERMANENT
        message = str(failed.value)
        assert "'garbler'" in message and "not valid JSON-RPC" in message and "[1, 2]" in message
        # an unreadable notification is no reply: the call it arrives during goes on
        answered = await conn.call_tool("garbled_notice", {})
        assert "answered" in str(answered.content)
        echoed = await conn.call_tool("echo", {"text": "still here"})
        assert "still here" in str(echoed.content)
        assert conn.sessions_started == 1
    finally:
        await conn.aclose()
