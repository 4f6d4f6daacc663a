"""``loopwright run --mcp ...`` and ``loopwright mcp tools`` (scripted model, real servers)."""

from __future__ import annotations

import json
import shlex
import socket
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp_helpers import FAULTY, LIBRARY, python_bin

from loopwright.cli import agents as agents_mod
from loopwright.cli.main import main
from loopwright.cli.recipe import AgentRecipe, RecipeError
from loopwright.core.messages import Message, ToolCallPart
from loopwright.providers.scripted import FunctionModel, ScriptedModel, tool_call


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_run_with_an_mcp_server(monkeypatch: pytest.MonkeyPatch) -> None:
    model = ScriptedModel(
        [[tool_call("get_current_time", {"timezone": "Asia/Tokyo"})], "It is late in Tokyo."]
    )
    monkeypatch.setattr(agents_mod, "resolve", lambda spec, base_url, on_payload: model)
    code, out, err = invoke(
        "run", "--json", "--tools", "", "--mcp", python_bin("mcp-server-time"), "Time in Tokyo?"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["answer"] == "It is late in Tokyo."
    assert model.requests[0].tool_names == ("get_current_time", "convert_time")
    result = data["messages"][2]["parts"][0]
    assert not result["is_error"] and "Asia/Tokyo" in result["content"]


def test_run_with_a_named_server_from_a_config_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    servers = {
        "time": {"command": python_bin("mcp-server-time"), "prefix": "t_"},
        "unused": {"command": "no-such-mcp-server"},
    }
    config.write_text(json.dumps({"servers": servers}))
    model = ScriptedModel(["ok"])
    monkeypatch.setattr(agents_mod, "resolve", lambda spec, base_url, on_payload: model)
    code, _out, err = invoke("run", "--tools", "calculator", "--mcp", f"{config}#time", "hi")
    assert code == 0, err
    assert model.requests[0].tool_names == ("calculator", "t_get_current_time", "t_convert_time")


def test_an_unknown_server_name_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": {"time": {"command": "mcp-server-time"}}}))
    code, _out, err = invoke("run", "--mcp", f"{config}#nope", "hi")
    assert code == 2
    assert err.strip() == f"error: {config} has no MCP server named 'nope'; it has: time"


def test_a_server_that_cannot_start_is_one_line() -> None:
    code, _out, err = invoke("run", "--mcp", "no-such-mcp-server-binary", "hi")
    assert code == 2
    assert err.startswith("error: cannot connect to MCP server 'no-such-mcp-server-binary'")
    assert len(err.strip().splitlines()) == 1


def test_mcp_tools_lists_flags() -> None:
    code, out, err = invoke("mcp", "tools", "--json", python_bin("mcp-server-time"))
    assert code == 0, err
    tools = {t["name"]: t for t in json.loads(out)}
    assert tools["get_current_time"]["permission"] == "read"
    assert tools["get_current_time"]["idempotent"] is True


def _echo_then_answer(messages, request):  # type: ignore[no-untyped-def]
    if messages[-1].role == "tool":
        return "done: " + messages[-1].tool_results_parts[0].content
    return Message("assistant", (ToolCallPart("call-1", "echo", {"text": "kept"}),))


@pytest.fixture
def isolated_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store and session key of this test's own; the model echoes, then answers."""
    monkeypatch.setenv("LOOPWRIGHT_STORE_URL", f"sqlite://{tmp_path / 'sessions.db'}")
    monkeypatch.delenv("LOOPWRIGHT_STORE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("LOOPWRIGHT_SESSION_KEY_FILE", raising=False)
    model = lambda spec, base_url, on_payload: FunctionModel(_echo_then_answer)  # noqa: E731
    monkeypatch.setattr(agents_mod, "resolve", model)


@pytest.mark.usefixtures("isolated_sessions")
@pytest.mark.parametrize("from_file", [False, True])
def test_resume_reconnects_the_sessions_mcp_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, from_file: bool
) -> None:
    # the faulty server's echo is not read-only, so calling it needs confirmation: without
    # --yes the run pauses, and the call runs only when `resume --approve` answers it
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAULTY))}"
    spec = command
    if from_file:
        config = tmp_path / "mcp.json"
        entry = {"command": sys.executable, "args": [str(FAULTY)]}
        config.write_text(json.dumps({"servers": {"f": entry}}))
        spec = "mcp.json#f"  # relative: the session records the absolute path
    monkeypatch.chdir(tmp_path)
    paused = CliRunner().invoke(main, ["run", "--json", "--tools", "", "--mcp", spec, "echo"])
    assert paused.exit_code == 17, paused.output
    session = json.loads(paused.stdout)["session_id"]
    monkeypatch.chdir(tmp_path.parent)  # resumed from elsewhere, with no --mcp given
    done = CliRunner().invoke(main, ["resume", session, "--approve", "--json"])
    assert done.exit_code == 0, done.output
    answer = json.loads(done.stdout)["answer"]
    assert answer.startswith("done: ") and "echo: kept (pid " in answer, answer


def test_a_recipe_keeps_mcp_values_as_strings_only() -> None:
    recipe = AgentRecipe(mcp=("mcp-server-time", "/abs/mcp.json#time"))
    assert AgentRecipe.from_dict(recipe.to_dict()) == recipe
    with pytest.raises(RecipeError, match="'mcp' must be a list of strings"):
        AgentRecipe.from_dict({"mcp": "mcp-server-time"})


def test_mcp_serve_on_a_bad_or_busy_port_is_a_usage_error() -> None:
    # was: --http 99999 an internal error with a traceback; a busy port exit 3 (this
    # CLI's code for a store error) after the SDK logged the failed bind
    code, _out, err = invoke("mcp", "serve", "--http", "99999")
    assert code == 2 and "99999 is not in the range 1<=x<=65535" in err
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code, _out, err = invoke("mcp", "serve", "--http", str(port))
    assert code == 2 and err.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")


LIBRARY_CMD = f"{shlex.quote(sys.executable)} {shlex.quote(str(LIBRARY))}"


def test_mcp_resources_and_prompts_list_what_a_server_offers() -> None:
    code, out, err = invoke("mcp", "resources", LIBRARY_CMD)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == ["docs://readme  (readme, text/plain)", "  How the library works."]
    assert "notes://{topic}  (template: notes, text/plain)" in lines
    code, out, err = invoke("mcp", "resources", "--json", LIBRARY_CMD)
    data = json.loads(out)
    assert data["templates"][0]["uri_template"] == "notes://{topic}"
    code, out, err = invoke("mcp", "prompts", LIBRARY_CMD)
    assert code == 0, err
    assert out.splitlines()[:4] == [
        "review(code, language?)",
        "  Ask for a review of some code.",
        "    code (required)",
        "    language",
    ]
    code, out, _ = invoke("mcp", "prompts", "--json", LIBRARY_CMD)
    assert json.loads(out)[1]["arguments"] == [
        {"name": "topic", "description": "", "required": True}
    ]


def test_mcp_read_prints_a_text_resource_and_refuses_a_binary_one() -> None:
    code, out, err = invoke("mcp", "read", LIBRARY_CMD, "notes://owls")
    assert code == 0, err
    assert out == "Notes about owls: shelved in aisle 4.\n"
    code, out, err = invoke("mcp", "read", "--as-data", LIBRARY_CMD, "notes://owls")
    assert code == 0, err
    from loopwright.core.messages import Message
    from loopwright.tools.taint import retrieved_in

    [source] = retrieved_in(Message.user("Summarise: " + out))  # taints the run it is put in
    assert source.excerpt.endswith("Notes about owls: shelved in aisle 4.")
    assert source.tool.endswith(":notes://owls")
    code, _out, err = invoke("mcp", "read", LIBRARY_CMD, "images://logo.png")
    assert code == 2
    assert err.startswith("error: resource 'images://logo.png' is binary (image/png, 70 bytes)")
    code, _out, err = invoke("mcp", "read", LIBRARY_CMD, "nope://x")
    assert code == 2 and "has no resource 'nope://x'" in err and "docs://readme" in err


def test_mcp_help_teaches_resources_and_prompts() -> None:
    code, out, _ = invoke("mcp", "--help")
    assert code == 0
    assert "loopwright mcp resources" in out and "loopwright mcp prompts" in out
    assert "loopwright mcp read" in out
    code, out, _ = invoke("mcp", "resources", "--help")
    assert "read_resource tool" in out


def test_run_with_a_resource_server_gives_the_agent_read_resource(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = ScriptedModel([[tool_call("read_resource", {"uri": "docs://readme"})], "Three weeks."])
    monkeypatch.setattr(agents_mod, "resolve", lambda spec, base_url, on_payload: model)
    code, out, err = invoke("run", "--json", "--tools", "", "--mcp", LIBRARY_CMD, "Loan period?")
    assert code == 0, err
    assert model.requests[0].tool_names == ("ping", "shelve", "read_resource")
    result = json.loads(out)["messages"][2]["parts"][0]
    assert "three weeks" in result["content"] and "untrusted data" in result["content"]


def test_mcp_prompt_renders_a_prompt_with_checked_arguments() -> None:
    code, out, err = invoke("mcp", "prompt", LIBRARY_CMD, "review", "code=x = 1")
    assert code == 0, err
    assert out == "Review this python code:\nx = 1\n"  # one user message: its text alone
    code, out, err = invoke("mcp", "prompt", "--json", LIBRARY_CMD, "recap", "topic=loans")
    assert code == 0, err
    assert [m["role"] for m in json.loads(out)] == ["user", "assistant", "user"]
    code, _out, err = invoke("mcp", "prompt", LIBRARY_CMD, "review", "lang=c")
    assert code == 2
    assert err.strip().endswith("has no argument 'lang'; its arguments: code (required), language")
    code, _out, err = invoke("mcp", "prompt", LIBRARY_CMD, "review", "code")
    assert code == 2 and "prompt argument 'code' must be NAME=VALUE" in err
