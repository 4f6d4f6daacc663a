"""loopwright's MCP server, driven by the mcp SDK client and by the MCP Inspector CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp_helpers import free_port, node_bin, serve
from sample_registry import registry as sample

from loopwright.mcp import MCPServerConfig, MCPToolset
from loopwright.mcp.server import build_server
from loopwright.tools import ToolRegistry
from loopwright.tools.builtin import make_tools
from mcp import Client, MCPError

HERE = Path(__file__).parent
LOOPWRIGHT = [sys.executable, "-m", "loopwright.cli"]
ENV = {"PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}


def text(result: mcp_types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))


async def test_sdk_client_lists_and_calls_with_validation_and_permissions() -> None:
    server = build_server(sample, permission="write")
    async with Client(server) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        # admin tool above the level: not listed; confirmation tool: hidden by default
        assert names == ["shout"]
        ok = await client.call_tool("shout", {"text": "hi", "times": 2})
        assert not ok.is_error and text(ok) == "HI HI"
        bad = await client.call_tool("shout", {"text": 5})
        assert bad.is_error and text(bad).startswith("invalid_arguments:")
        for hidden in ("rotate_keys", "delete_everything", "nope"):
            with pytest.raises(MCPError, match=f"Unknown tool: {hidden}"):
                await client.call_tool(hidden, {})


async def test_annotations_describe_the_flags() -> None:
    async with Client(build_server(sample, permission="admin", confirm="elicit")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["shout"].annotations.idempotent_hint is True  # type: ignore[union-attr]
    assert tools["delete_everything"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["shout"].input_schema["required"] == ["text"]


@pytest.mark.parametrize(("answer", "expected"), [(True, "deleted (cleanup)"), (False, "denied")])
async def test_confirmation_by_elicitation(answer: bool, expected: str) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"approve": answer})

    server = build_server(sample, permission="write", confirm="elicit")
    async with Client(server, elicitation_callback=elicit) as client:
        result = await client.call_tool("delete_everything", {"reason": "cleanup"})
    assert asked and "delete_everything" in asked[0]
    assert expected in text(result)
    assert result.is_error is (not answer)


async def test_a_client_that_cannot_elicit_is_refused() -> None:
    async with Client(build_server(sample, permission="write", confirm="elicit")) as client:
        result = await client.call_tool("delete_everything", {"reason": "x"})
    assert result.is_error and "denied_by_user" in text(result)


def test_serve_over_stdio_to_loopwrights_own_client() -> None:
    command = (*LOOPWRIGHT, "mcp", "serve", "--tools", "calculator,get_weather")
    server = MCPServerConfig("self", command=command, env=ENV, trusted=True)
    with MCPToolset.connect([server]) as toolset:
        registry = toolset.attach(ToolRegistry())
        assert registry.names() == ["calculator", "get_weather"]
        import asyncio

        result = asyncio.run(registry.get("calculator").fn(expression="(3 + 5) * 8"))  # type: ignore[union-attr]
        assert result == "64"


@pytest.fixture(scope="module")
def served_http() -> Iterator[str]:
    port = free_port()
    argv = [*LOOPWRIGHT, "mcp", "serve", "--http", str(port)]
    argv += ["--registry", "sample_registry:registry", "--permission", "write"]
    yield from serve(argv, port, ENV)


def inspector(*args: str) -> Any:
    done = subprocess.run(
        [node_bin("mcp-inspector"), "--cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **ENV},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout[done.stdout.index("{") :])


def test_inspector_cli_over_http(served_http: str) -> None:
    listed = inspector(served_http, "--transport", "http", "--method", "tools/list")
    assert [t["name"] for t in listed["tools"]] == ["shout"]
    called = inspector(
        served_http,
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "shout",
        "--tool-arg",
        "text=mcp",
    )
    assert called["content"][0]["text"] == "MCP"


def test_inspector_cli_over_stdio() -> None:
    called = inspector(
        "-e",
        f"PYTHONPATH={ENV['PYTHONPATH']}",  # the inspector gives the server a clean env
        *LOOPWRIGHT,
        "mcp",
        "serve",
        "--tools",
        "calculator",
        "--method",
        "tools/call",
        "--tool-name",
        "calculator",
        "--tool-arg",
        "expression=2**10",
    )
    assert called["content"][0]["text"] == "1024" and not called.get("isError")


def test_sdk_client_over_http(served_http: str) -> None:
    import asyncio

    async def scenario() -> str:
        async with Client(served_http) as client:
            return text(await client.call_tool("shout", {"text": "http", "times": 3}))

    assert asyncio.run(scenario()) == "HTTP HTTP HTTP"


def test_builtin_confirmation_tools_are_hidden_by_default() -> None:
    import asyncio

    registry = ToolRegistry(make_tools(["calculator", "send_email"]))

    async def names() -> list[str]:
        async with Client(build_server(registry, permission="admin")) as client:
            return [t.name for t in (await client.list_tools()).tools]

    assert asyncio.run(names()) == ["calculator"]
