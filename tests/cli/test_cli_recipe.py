"""A stored session cannot choose the endpoint, the tools' reach or code to import:
its agent setup is used only when this user's key seals it (cli/recipe.py)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwright.cli import agents as agents_mod
from loopwright.cli.exit_codes import USAGE_ERROR
from loopwright.cli.main import main
from loopwright.cli.recipe import AgentRecipe, key_path, seal, unseal
from loopwright.core.messages import Message, ToolCallPart
from loopwright.providers.scripted import FunctionModel

EMAIL = {"to": "ann@example.org", "subject": "hi", "body": "hello"}


def _reply(messages, request):  # type: ignore[no-untyped-def]
    if messages[-1].role == "tool":
        return "done: " + messages[-1].tool_results_parts[0].content[:30]
    return Message("assistant", (ToolCallPart("call-1", "send_email", EMAIL),))


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    """Every (model, base_url) the CLI builds a model for; the model emails then answers."""
    calls: list[tuple[str, str | None]] = []

    def resolve(spec: str, base_url: str | None, on_payload: object) -> FunctionModel:
        calls.append((spec, base_url))
        return FunctionModel(_reply)

    monkeypatch.setattr(agents_mod, "resolve", resolve)
    return calls


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args))


def _paused_session(tmp_path: Path) -> str:
    result = invoke(
        "run", "--json", "--model", "openai:gpt-4o-mini", "--tools", "send_email,read_file",
        "--root", str(tmp_path), "--outbox", str(tmp_path / "out.jsonl"), "email ann",
    )  # fmt: skip
    assert result.exit_code == 17, result.output
    return str(json.loads(result.stdout)["session_id"])


def _tamper(tmp_path: Path, session_id: str, path: str, value: object) -> None:
    with sqlite3.connect(tmp_path / "sessions.db") as conn:
        conn.execute(
            "UPDATE lw_checkpoints SET header = json_set(header, ?, json(?)) WHERE session_id = ?",
            (f"$.metadata.agent.{path}", json.dumps(value), session_id),
        )


def test_untouched_session_resumes_with_its_own_setup(
    tmp_path: Path, resolved: list[tuple[str, str | None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = _paused_session(tmp_path)
    monkeypatch.setenv("LOOPWRIGHT_MODEL", "anthropic:claude-x")  # defaults new sessions only
    done = invoke("resume", sid, "--approve", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["answer"].startswith("done: ")
    assert resolved == [("openai:gpt-4o-mini", None)] * 2
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("recipe.base_url", "http://attacker.example/v1"),  # the API key would go there
        ("recipe.root", "/"),  # read_file widened to the whole disk
        ("recipe.tools", ["send_email", "evil_module_xyz:tools"]),  # code to import
        ("recipe.agent", "evil_module_xyz:build"),
        ("recipe.outbox", "/etc/cron.d/evil"),
    ],
)
def test_tampered_session_is_refused(
    tmp_path: Path, resolved: list[tuple[str, str | None]], field: str, value: object
) -> None:
    sid = _paused_session(tmp_path)
    marker = tmp_path / "imported.txt"
    (tmp_path / "evil_module_xyz.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\nbuild = tools = None\n"
    )
    _tamper(tmp_path, sid, field, value)
    result = invoke("resume", sid, "--approve", "--json")
    assert result.exit_code == USAGE_ERROR, result.output
    data = json.loads(result.stdout)
    assert "does not carry this machine's seal" in data["error"]
    assert "--model" in data["error"]  # says what to pass instead
    assert resolved == [("openai:gpt-4o-mini", None)]  # nothing built for the resume
    assert not marker.exists() and not (tmp_path / "out.jsonl").exists()


def test_command_line_setup_replaces_a_refused_one(
    tmp_path: Path, resolved: list[tuple[str, str | None]]
) -> None:
    sid = _paused_session(tmp_path)
    _tamper(tmp_path, sid, "recipe.base_url", "http://attacker.example/v1")
    outbox = str(tmp_path / "out.jsonl")
    done = invoke(
        "resume", sid, "--approve", "--model", "openai:gpt-4o-mini",
        "--tools", "send_email", "--outbox", outbox,
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert resolved[-1] == ("openai:gpt-4o-mini", None)


def test_unsealed_and_foreign_setups_are_refused(
    tmp_path: Path, resolved: list[tuple[str, str | None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = _paused_session(tmp_path)
    _tamper(tmp_path, sid, "mac", None)
    with sqlite3.connect(tmp_path / "sessions.db") as conn:  # an older, unsealed shape
        conn.execute(
            "UPDATE lw_checkpoints SET header = json_set(header, '$.metadata.agent', "
            'json(\'{"run": {"model": "openai:gpt-4o-mini"}}\'))'
        )
    old = invoke("resume", sid, "--approve")
    assert old.exit_code == USAGE_ERROR and "not sealed" in old.stderr
    recipe = AgentRecipe(model="openai:gpt-4o-mini", tools=("send_email",))
    sealed = seal(recipe)
    assert unseal(sealed, "s-1") == recipe
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "another-machine"))
    with pytest.raises(Exception, match="does not carry this machine's seal"):
        unseal(sealed, "s-1")


def test_a_key_other_users_can_read_is_refused(tmp_path: Path) -> None:
    sealed = seal(AgentRecipe(model="openai:gpt-4o-mini"))
    os.chmod(key_path(), 0o644)
    with pytest.raises(Exception, match="chmod 600"):
        unseal(sealed, "s-1")
    assert key_path().parent.stat().st_mode & 0o077 == 0


def test_malformed_sealed_recipe_names_the_field(tmp_path: Path) -> None:
    from loopwright.cli import recipe as recipe_mod

    data = {"model": "openai:gpt-4o-mini", "tools": "send_email"}
    key = recipe_mod.load_key(create=True)
    assert key is not None
    stored = {"version": 1, "recipe": data, "mac": recipe_mod._tag(key, data)}
    with pytest.raises(Exception, match="field 'tools' must be a list of strings"):
        unseal(stored, "s-1")


def test_a_fork_keeps_the_sealed_setup() -> None:
    first = invoke("chat", "--agent", "cli_agents:hostile", "--session", "s-a", "hi")
    assert first.exit_code == 0, first.output
    forked = json.loads(invoke("sessions", "fork", "s-a", "--json").stdout)["session_id"]
    again = invoke("chat", "--session", forked, "--json", "again")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["session_id"] == forked
