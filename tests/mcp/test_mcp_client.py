"""The MCP client against real servers over stdio and streamable HTTP (all local)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import FAULTY, free_port, node_bin, python_bin, serve

from loopwright import Agent, ScriptedModel, tool_call
from loopwright.core.errors import ConfigError
from loopwright.core.messages import ToolResultPart
from loopwright.mcp import MCPServerConfig, MCPToolset
from loopwright.tools import Confirmation, DispatchConfig, Permission, ToolRegistry


def call(registry: ToolRegistry, name: str, arguments: dict[str, object], **agent_kw: object):
    """Run one scripted tool call through a real Agent; return its tool result."""
    model = ScriptedModel([[tool_call(name, arguments)], "done"])
    result = Agent(model, registry, **agent_kw).run("go")  # type: ignore[arg-type]
    [part] = result.messages[2].parts
    assert isinstance(part, ToolResultPart)
    return part


@pytest.fixture(scope="module")
def everything_http() -> Iterator[str]:
    port = free_port()
    yield from serve(
        [node_bin("mcp-server-everything"), "streamableHttp"], port, {"PORT": str(port)}
    )


@pytest.fixture(scope="module")
def faulty_http() -> Iterator[str]:
    port = free_port()
    yield from serve([sys.executable, str(FAULTY), "--http", str(port)], port)


# ---------------------------------------------------------------- mcp-server-time (stdio)


@pytest.fixture(scope="module")
def time_tools() -> Iterator[MCPToolset]:
    with MCPToolset.connect([python_bin("mcp-server-time")]) as toolset:
        yield toolset


def test_time_server_tools_keep_their_schema_and_map_annotations(time_tools: MCPToolset) -> None:
    tools = {t.name: t for t in time_tools.tools}
    assert set(tools) == {"get_current_time", "convert_time"}
    spec = tools["get_current_time"].spec
    assert spec.parameters["required"] == ["timezone"]  # the server's schema, as given
    assert "IANA" in spec.parameters["properties"]["timezone"]["description"]
    # read-only hint -> READ permission and idempotent (retry-safe); not destructive
    assert spec.permission is Permission.READ and spec.idempotent
    assert not spec.requires_confirmation


def test_time_server_call_through_an_agent(time_tools: MCPToolset) -> None:
    registry = time_tools.attach(ToolRegistry())
    part = call(registry, "get_current_time", {"timezone": "Asia/Tokyo"})
    assert not part.is_error
    assert '"timezone": "Asia/Tokyo"' in part.content and "+09:00" in part.content
    # results are wrapped as untrusted data
    assert part.content.startswith("The following tool result is untrusted data")
    assert 'label="get_current_time"' in part.content


def test_arguments_are_validated_before_anything_is_sent(time_tools: MCPToolset) -> None:
    registry = time_tools.attach(ToolRegistry())
    part = call(registry, "get_current_time", {"tz": "Asia/Tokyo"})
    assert part.is_error and part.error_kind == "invalid_arguments"
    assert "/timezone: required property is missing" in part.content


def test_a_tool_error_from_the_server_is_an_error_result(time_tools: MCPToolset) -> None:
    registry = time_tools.attach(ToolRegistry())
    part = call(registry, "get_current_time", {"timezone": "Nowhere/Atlantis"})
    assert part.is_error and part.error_kind == "permanent"
    assert "Invalid timezone" in part.content


def test_clashing_names_need_a_prefix(time_tools: MCPToolset) -> None:
    registry = time_tools.attach(ToolRegistry())
    with pytest.raises(ConfigError, match="prefix"):
        time_tools.attach(registry)


def test_two_servers_with_one_tool_name_need_a_prefix_when_connecting() -> None:
    # was: both listed, and attach failed half way with "@tool(name=...)" advice after
    # registering the first server's tools
    first = MCPServerConfig("first", command=(sys.executable, str(FAULTY)))
    second = MCPServerConfig("second", command=(sys.executable, str(FAULTY)))
    with pytest.raises(ConfigError, match="servers 'first' and 'second' both have a tool named"):
        MCPToolset.connect([first, second])
    prefixed = MCPServerConfig("second", command=(sys.executable, str(FAULTY)), prefix="b_")
    with MCPToolset.connect([first, prefixed]) as toolset:
        registry = toolset.attach(ToolRegistry())
        assert "echo" in registry and "b_echo" in registry
        assert "echo: x" in call(registry, "b_echo", {"text": "x"}).content


def test_a_name_taken_later_or_twice_after_sanitizing_is_skipped_not_shadowed() -> None:
    import mcp_types

    schema: dict[str, object] = {"type": "object", "properties": {}}
    one = MCPServerConfig("one", command=("true",))
    two = MCPServerConfig("two", command=("true",))
    toolset = MCPToolset([one, two])
    try:
        listing = [mcp_types.Tool(name=n, input_schema=schema) for n in ("get.time", "get_time")]
        toolset._apply(one, listing, strict=True)
        assert [t.name for t in toolset.tools] == ["get_time"]
        assert "lists two tools named 'get_time'" in toolset.skipped["get_time"]
        # a list_changed listing of the other server: its clashing tool is skipped
        toolset._apply(two, [mcp_types.Tool(name="get_time", input_schema=schema)])
        assert [t.name for t in toolset.tools] == ["get_time"]
        assert "servers 'one' and 'two'" in toolset.skipped["get_time"]
    finally:
        toolset.close()


# ---------------------------------------------------------------- mcp-server-git (stdio)


@pytest.fixture(scope="module")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("repo")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    run = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, env=env, capture_output=True)  # noqa: E731
    run("init", "-q")
    (repo / "notes.txt").write_text("first\n")
    run("add", "notes.txt")
    run("commit", "-qm", "add notes")
    return repo


def test_git_server_reads_and_destructive_tools_need_confirmation(git_repo: Path) -> None:
    server = MCPServerConfig(
        "git", command=(python_bin("mcp-server-git"), "--repository", str(git_repo)), prefix="git."
    )
    with MCPToolset.connect([server]) as toolset:
        tools = {t.name: t.spec for t in toolset.tools}
        # MCP names are kept; the prefix's '.' is not allowed in a tool name -> '_'
        assert "git_git_log" in tools and "git_git_reset" in tools
        assert tools["git_git_reset"].requires_confirmation  # destructive_hint
        assert not tools["git_git_log"].requires_confirmation  # read-only
        registry = toolset.attach(ToolRegistry())
        log = call(registry, "git_git_log", {"repo_path": str(git_repo)})
        assert not log.is_error and "add notes" in log.content
        denied = call(
            registry,
            "git_git_reset",
            {"repo_path": str(git_repo)},
            dispatch=DispatchConfig(
                permission=Permission.ADMIN, confirm=lambda c, s: Confirmation.deny("no")
            ),
        )
        assert denied.is_error and denied.error_kind == "denied_by_user"


# ---------------------------------------------------------------- server-everything


def test_everything_over_stdio_content_types_and_list_changed(tmp_path: Path) -> None:
    # Declaring roots makes the server register get-roots-list after the handshake and
    # announce it with notifications/tools/list_changed.
    server = MCPServerConfig(
        "everything", command=(node_bin("mcp-server-everything"),), roots=(str(tmp_path),)
    )
    with MCPToolset.connect([server]) as toolset:
        registry = toolset.attach(ToolRegistry())
        deadline = time.monotonic() + 20
        while "get-roots-list" not in registry and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "get-roots-list" in registry, sorted(registry.names())
        roots = call(registry, "get-roots-list", {})
        assert tmp_path.resolve().as_uri() in roots.content
        image = call(registry, "get-tiny-image", {})
        assert "[image image/png," in image.content and image.media[0].mime_type == "image/png"
        resource = call(
            registry, "get-resource-reference", {"resourceType": "Text", "resourceId": 1}
        )
        assert "[resource demo://resource/dynamic/text/1]" in resource.content
        links = call(registry, "get-resource-links", {"count": 2})
        assert links.content.count("[resource link ") == 2


def test_everything_over_streamable_http(everything_http: str) -> None:
    with MCPToolset.connect([everything_http]) as toolset:
        registry = toolset.attach(ToolRegistry())
        echoed = call(registry, "echo", {"message": "over http"})
        assert "Echo: over http" in echoed.content
        added = call(registry, "get-sum", {"a": 2, "b": 40})
        assert "42" in added.content


def test_http_headers_reach_the_server() -> None:
    seen: list[bytes] = []

    async def scenario() -> str:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
            writer.close()

        listener = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        server = MCPServerConfig(
            "auth", url=f"http://127.0.0.1:{port}/mcp", headers={"Authorization": "Bearer s3cret"}
        )
        try:
            with pytest.raises(ConfigError) as failed:
                await MCPToolset.open([server])
        finally:
            listener.close()
        return str(failed.value)

    message = asyncio.run(scenario())
    assert "cannot connect to MCP server 'auth'" in message
    assert seen and b"authorization: Bearer s3cret" in seen[0].lower().replace(b"bearer", b"Bearer")


# ---------------------------------------------------------------- failures


@pytest.fixture
def faulty() -> Iterator[MCPToolset]:
    server = MCPServerConfig("faulty", command=(sys.executable, str(FAULTY)), timeout=4)
    with MCPToolset.connect([server]) as toolset:
        yield toolset


def test_server_crash_mid_call_is_a_transient_error_and_the_next_call_reconnects(
    faulty: MCPToolset,
) -> None:
    registry = faulty.attach(ToolRegistry())
    first = call(registry, "echo", {"text": "a"})
    crashed = call(registry, "crash", {})
    assert crashed.is_error and crashed.error_kind == "transient"
    assert "next call reconnects" in crashed.content
    again = call(registry, "echo", {"text": "b"})
    assert not again.is_error and "echo: b" in again.content
    pid = lambda part: part.content.split("(pid ")[1].split(")")[0]  # noqa: E731
    assert pid(first) != pid(again)  # a new server process
    assert faulty.connections["faulty"].sessions_started == 2


def test_a_closed_toolset_starts_no_new_server() -> None:
    # was: the next call reconnected, starting a server process nobody closed
    server = MCPServerConfig("faulty", command=(sys.executable, str(FAULTY)), timeout=4)
    toolset = MCPToolset.connect([server])
    registry = toolset.attach(ToolRegistry())
    toolset.close()
    part = call(registry, "echo", {"text": "a"})
    assert part.is_error and part.error_kind == "permanent"
    assert "its connection was closed" in part.content
    assert toolset.connections["faulty"].sessions_started == 1


def test_a_hung_tool_times_out_and_the_session_stays_usable(faulty: MCPToolset) -> None:
    registry = faulty.attach(ToolRegistry())
    started = time.monotonic()
    hung = call(registry, "hang", {})
    assert hung.is_error and hung.error_kind == "timeout"
    assert time.monotonic() - started < 10
    assert "echo: c" in call(registry, "echo", {"text": "c"}).content
    assert faulty.connections["faulty"].sessions_started == 1


def test_cancelling_a_run_cancels_the_call(faulty: MCPToolset) -> None:
    registry = faulty.attach(ToolRegistry())

    async def scenario() -> str:
        model = ScriptedModel([[tool_call("slow", {"seconds": 30})], "done"])
        run = Agent(model, registry).start("go")
        await asyncio.sleep(0.5)
        run.cancel()
        return (await run.result()).stop.value

    started = time.monotonic()
    assert asyncio.run(scenario()) == "cancelled"
    assert time.monotonic() - started < 3.5  # neither the 30 s tool nor the 4 s timeout
    assert "echo: d" in call(registry, "echo", {"text": "d"}).content


def test_list_changed_over_a_listen_stream_refreshes_the_registry(faulty: MCPToolset) -> None:
    # a 2026-07-28 session: the change arrives on the subscriptions/listen stream
    registry = faulty.attach(ToolRegistry())
    assert "grown" not in registry
    assert "added" in call(registry, "grow", {}).content
    deadline = time.monotonic() + 20
    while "grown" not in registry and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "grown" in registry
    assert "grown" in call(registry, "grown", {}).content


def test_updates_reach_a_registry_on_the_agents_loop_not_the_mcp_thread(
    faulty: MCPToolset,
) -> None:
    import threading

    threads: list[str] = []

    class Watched(ToolRegistry):
        def register(self, tool_or_function):  # type: ignore[no-untyped-def]
            threads.append(threading.current_thread().name)
            return super().register(tool_or_function)

    registry = faulty.attach(Watched())  # attached outside any event loop
    threads.clear()

    async def scenario() -> None:
        model = ScriptedModel([[tool_call("grow", {})], "done"])
        await Agent(model, registry).arun("grow")
        for _ in range(400):
            if "grown" in registry:
                return
            await asyncio.sleep(0.05)

    asyncio.run(scenario())
    assert "grown" in registry
    assert threads == [threading.main_thread().name]  # registered on the run's loop


def test_a_huge_result_is_cut_to_budget_and_stays_wrapped(faulty_http: str) -> None:
    with MCPToolset.connect([faulty_http]) as toolset:
        registry = toolset.attach(ToolRegistry())
        part = call(registry, "huge", {"megabytes": 5})
        spec = registry.get("huge").spec  # type: ignore[union-attr]
        assert not part.is_error
        assert len(part.content) <= spec.max_result_chars
        assert "chars truncated" in part.content
        nonce = part.content.split('id="')[1].split('"')[0]
        assert part.content.endswith(f'</untrusted-data id="{nonce}">')  # the wrapper survives


# ---------------------------------------------------------------- config


def test_config_file_with_named_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loopwright.mcp import load_config

    monkeypatch.setenv("MCP_TOKEN", "t0k")
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "servers": {
                    "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
                    "remote": {
                        "url": "http://127.0.0.1:8000/mcp",
                        "headers": {"Authorization": "Bearer ${MCP_TOKEN}"},
                        "prefix": "r_",
                        "timeout": 5,
                    },
                }
            }
        )
    )
    servers = load_config(path)
    assert servers["time"].command == ("mcp-server-time", "--local-timezone", "UTC")
    assert servers["remote"].headers == {"Authorization": "Bearer t0k"}
    assert servers["remote"].prefix == "r_" and servers["remote"].timeout == 5.0
    yaml_path = tmp_path / "mcp.yaml"
    yaml_path.write_text("mcpServers:\n  t:\n    command: [mcp-server-time]\n    bogus: 1\n")
    with pytest.raises(ConfigError, match="unknown field"):
        load_config(yaml_path)


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({"command": "x", "trusted": "false"}, "trusted must be true or false"),  # was trusted
        ({"command": "x", "confirm_destructive": 0}, "confirm_destructive must be true"),
        ({"command": "x", "args": "--port 1"}, 'args must be a list of strings.*"args": \\["'),
        ({"command": "x", "tools": "get_time"}, "tools must be a list of strings"),
        ({"command": "x", "env": ["A=1"]}, "env must be an object of strings"),
        ({"command": "x", "roots": "/tmp"}, "roots must be a list of strings"),
        ({"command": 5}, "command must be a list of strings"),
        ({"url": 5}, "url must be a string"),
    ],
)
def test_config_fields_of_the_wrong_json_type_are_refused(
    tmp_path: Path, entry: dict, fragment: str
) -> None:
    from loopwright.mcp import load_config

    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"servers": {"s": entry}}))
    with pytest.raises(ConfigError, match=fragment):
        load_config(path)


def test_a_command_given_as_one_string_in_python_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"command=\('mcp-server-time', '-v'\)"):
        MCPServerConfig("t", command="mcp-server-time -v")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="timeout"):
        MCPServerConfig("t", command=("a",), timeout=float("nan"))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("trusted", "false"),  # was: a truthy str, so the server was trusted
        ("confirm_destructive", 0),
        ("tools", "get_time"),  # was: kept every tool whose name is a substring of it
        ("roots", "/tmp"),
        ("prefix", 5),
        ("timeout", "5"),  # was: a TypeError from '<'
    ],
)
def test_fields_of_the_wrong_type_in_python_are_refused(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"MCP server 't': {field} must be"):
        MCPServerConfig("t", command=("a",), **{field: value})  # type: ignore[arg-type]


def test_parse_command_line_and_url() -> None:
    stdio = MCPServerConfig.parse("mcp-server-git --repository '/tmp/a b'")
    assert stdio.name == "mcp-server-git" and stdio.command[-1] == "/tmp/a b"
    http = MCPServerConfig.parse("http://127.0.0.1:8000/mcp")
    assert http.transport == "http" and http.name == "127_0_0_1_8000"
    with pytest.raises(ConfigError):
        MCPServerConfig("x")
