"""Approve/deny across processes through the CLI, against SQLite, Redis and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from store_testlib import POSTGRES_ENV, REDIS_ENV, service_url, sid

HERE = Path(__file__).parent
CLI = "import sys; from loopwright.cli.main import main; main(['{name}', *sys.argv[1:]])"


def cli(name: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI.format(name=name), *args],
        capture_output=True,
        text=True,
        cwd=HERE,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("redis", marks=pytest.mark.services),
        pytest.param("postgres", marks=pytest.mark.services),
    ]
)
def store_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LW_TEST_OUTBOX"] = str(tmp_path / "outbox.txt")
    env.pop("LOOPWRIGHT_STORE", None)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # the session key of this test
    if request.param == "sqlite":
        env["LOOPWRIGHT_STORE_URL"] = f"sqlite://{tmp_path / 'cli.db'}"
    elif request.param == "redis":
        env["LOOPWRIGHT_STORE_URL"] = service_url(REDIS_ENV)
    else:
        env["LOOPWRIGHT_STORE_URL"] = service_url(POSTGRES_ENV)
    return env


def local(name: str, args: list[str], env: dict[str, str]):
    """The same command in THIS process (click's runner; stdin is not a terminal)."""
    from click.testing import CliRunner

    from loopwright.cli.main import main

    return CliRunner().invoke(main, [name, *args], env=env, catch_exceptions=False)


def outbox(env: dict[str, str]) -> list[str]:
    path = Path(env["LW_TEST_OUTBOX"])
    return path.read_text().splitlines() if path.exists() else []


def test_pause_list_approve_across_processes(store_env: dict[str, str]) -> None:
    s = sid()
    first = cli(
        "chat", ["--agent", "store_cli_agent:build", "--session", s, "ann@x.org"], store_env
    )
    assert first.returncode == 17, first.stderr  # awaiting_confirmation
    assert f"session_id: {s}" in first.stdout
    assert f"loopwright resume {s} --approve" in first.stderr
    assert outbox(store_env) == []
    listed = local("sessions", ["--json"], store_env)
    assert listed.exit_code == 0, listed.output
    rows = {r["session_id"]: r for r in json.loads(listed.stdout)["sessions"]}
    assert rows[s]["status"] == "awaiting_confirmation"
    # another process, no --agent: the agent recipe was recorded in the session
    done = cli("resume", [s, "--approve", "--json"], store_env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["stop_reason"] == "final_answer" and data["session_id"] == s
    assert data["answer"] == "sent to ann@x.org"
    assert outbox(store_env) == ["ann@x.org"]
    again = local("resume", [s, "--approve"], store_env)  # finished: nothing re-runs
    assert again.exit_code == 0 and outbox(store_env) == ["ann@x.org"]


def test_deny_across_processes(store_env: dict[str, str]) -> None:
    s = sid()
    first = local(
        "chat", ["--agent", "store_cli_agent:build", "--session", s, "bob@x.org"], store_env
    )
    assert first.exit_code == 17, first.output
    denied = cli("resume", [s, "--deny", "not today", "--json"], store_env)
    assert denied.returncode == 0, denied.stderr
    data = json.loads(denied.stdout)
    assert "not today" in data["answer"]
    assert outbox(store_env) == []


def test_cli_errors_are_precise(store_env: dict[str, str]) -> None:
    missing = local(
        "resume", ["no-such-session", "--approve", "--agent", "store_cli_agent:build"], store_env
    )
    assert missing.exit_code == 2
    assert "session 'no-such-session' not found" in missing.stderr
    s = sid()
    local("chat", ["--agent", "store_cli_agent:build", "--session", s, "c@x.org"], store_env)
    nothing = local("resume", [s], store_env)
    assert nothing.exit_code == 2 and "awaits confirmation for call-1" in nothing.stderr
    bad = local("sessions", ["--store", "redis", "--store-url", "sqlite:///x.db"], store_env)
    assert bad.exit_code == 2 and "does not match" in bad.stderr
    shown = local("sessions", ["--json", "show", s], store_env)
    assert json.loads(shown.stdout)["pending_calls"][0]["id"] == "call-1"
    forked = local("sessions", ["fork", s, "--checkpoint", "1"], store_env)
    assert forked.exit_code == 0 and forked.stdout.strip().startswith("s-")
    assert local("sessions", ["delete", s], store_env).exit_code == 0
    assert local("sessions", ["delete", s], store_env).exit_code == 2


def test_store_down_cli(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, LOOPWRIGHT_STORE_URL=f"redis://127.0.0.1:{port}/0")
    down = local("sessions", [], env)
    assert down.exit_code == 3  # store error
    assert f"redis store at redis://127.0.0.1:{port}/0 is unavailable" in down.stderr


def test_loopwright_run_pause_is_saved_and_resumable(tmp_path: Path, monkeypatch) -> None:
    """The seam in `loopwright run`: no terminal and no --yes/--no -> the run goes through
    a durable session holding its sealed recipe; a later resume sends once."""
    from loopwright.cli.recipe import AgentRecipe, unseal
    from loopwright.cli.stored import may_pause, run_durably
    from loopwright.core.messages import Message, ToolCallPart
    from loopwright.core.run import RunStop
    from loopwright.durable import Durable
    from loopwright.loop import Agent
    from loopwright.providers.scripted import FunctionModel
    from loopwright.store import SQLiteStore
    from loopwright.tools import Confirmation, DispatchConfig
    from loopwright.tools.builtin import BuiltinConfig, make_tools

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    outbox = tmp_path / "outbox.jsonl"
    builtin = BuiltinConfig(root=tmp_path, outbox=outbox)

    def reply(messages, request):
        if messages[-1].role == "tool":
            return "done: " + messages[-1].tool_results_parts[0].content[:40]
        args = {"to": "ann@example.org", "subject": "hi", "body": "hello"}
        return Message("assistant", (ToolCallPart("call-1", "send_email", args),))

    def agent() -> Agent:
        return Agent(
            FunctionModel(reply),
            make_tools(["send_email"], builtin),
            dispatch=DispatchConfig(confirm=lambda c, s: Confirmation.later()),
        )

    assert may_pause(agent(), yes=False, no=False, interactive=False)
    assert not may_pause(agent(), yes=False, no=False, interactive=True)
    recipe = AgentRecipe(model="openai:gpt-4o-mini", tools=("send_email",), outbox=str(outbox))
    store = SQLiteStore(tmp_path / "sessions.db")
    result = run_durably(agent(), "email ann", store, recipe)
    assert result.stop is RunStop.AWAITING_CONFIRMATION and result.session_id
    stored = store.load(result.session_id).metadata["agent"]
    assert unseal(stored, result.session_id) == recipe
    assert not outbox.exists()
    done = Durable(agent(), store).resume(result.session_id, approve=True)
    assert done.ok
    assert len(outbox.read_text().splitlines()) == 1
