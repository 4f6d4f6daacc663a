"""Every CLI error path: one line naming the field and the fix, valid JSON with --json,
the documented exit code, never a traceback."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwright.cli import agents as agents_mod
from loopwright.cli.exit_codes import INTERNAL_ERROR, STORE_ERROR, USAGE_ERROR, exit_code
from loopwright.cli.main import main
from loopwright.cli.options import recipe_from
from loopwright.core.run import RunStop

HERE = Path(__file__).parent


def invoke(*args: str, input: bytes | str | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), input=input, prog_name="loopwright")


def check_failure(result, code: int, *fragments: str) -> dict | None:  # type: ignore[no-untyped-def]
    """Exit ``code``, one ``error:`` line holding ``fragments``; the JSON object if any."""
    assert result.exit_code == code, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    if not lines:
        return None
    assert len(lines) == 1, result.stdout
    data = json.loads(lines[0])
    assert data["exit_code"] == code and data["error"]
    return data


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "soon"])
def test_bad_timeout_is_a_usage_error(value: str) -> None:
    data = check_failure(invoke("run", "--json", "--timeout", value, "x"), 2, "--timeout")
    assert data is not None and data["stop_reason"] == "usage_error"


@pytest.mark.parametrize("command", [["chat", "hi"], ["resume", "s-1", "--approve"]])
def test_agent_factory_that_raises_is_one_line(command: list[str]) -> None:
    if command[0] == "resume":
        invoke("chat", "--agent", "cli_agents:hostile", "--session", "s-1", "hi")
    result = invoke(*command, "--json", "--agent", "cli_agents:raising")
    data = check_failure(result, USAGE_ERROR, "cli_agents:raising", "RuntimeError", "boom")
    assert data is not None and "return an Agent" in data["error"]
    other = invoke("chat", "--agent", "cli_agents:not_an_agent", "hi")
    check_failure(other, USAGE_ERROR, "neither an Agent nor a factory")
    missing = invoke("chat", "--agent", "no_such_module_here:build", "hi")
    check_failure(missing, USAGE_ERROR, "importing no_such_module_here failed")


def _cli_process(args: list[bytes], tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, LOOPWRIGHT_STORE_URL=f"sqlite://{tmp_path / 's.db'}")
    return subprocess.run(
        [sys.executable.encode(), b"-m", b"loopwright.cli", *args],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_non_utf8_command_line_prompt_is_a_usage_error(tmp_path: Path) -> None:
    proc = _cli_process([b"run", b"--json", b"--tools", b"", b"caf\xe9 au lait"], tmp_path)
    assert proc.returncode == USAGE_ERROR, proc.stderr
    data = json.loads(proc.stdout.decode("utf-8"))  # strict: the JSON is UTF-8
    assert data["stop_reason"] == "usage_error"
    assert "argument 5" in data["error"] and "byte 0xe9 at offset 3" in data["error"]
    named = _cli_process([b"run", b"--system", b"\xff\xfe", b"hi"], tmp_path)
    assert named.returncode == USAGE_ERROR
    assert b"the value of --system" in named.stderr and b"Traceback" not in named.stderr


def test_store_commands_print_json_on_error(tmp_path: Path) -> None:
    unknown = invoke("resume", "no-such-session", "--approve", "--json")
    data = check_failure(unknown, USAGE_ERROR, "session 'no-such-session' not found")
    assert data is not None and data["session_id"] == "no-such-session"
    folder = tmp_path / "folder.db"
    folder.mkdir()
    url = f"sqlite://{folder}"
    for command in (
        ["sessions", "--json", "--store-url", url],
        ["sessions", "show", "s-1", "--json", "--store-url", url],
        ["chat", "--json", "--store-url", url, "hi"],
        ["resume", "s-1", "--approve", "--json", "--store-url", url],
    ):
        data = check_failure(invoke(*command), STORE_ERROR, "sqlite store")
        assert data is not None and data["stop_reason"] == "store_error", command
    bad_flag = invoke("sessions", "--json", "--limit", "0")
    assert check_failure(bad_flag, USAGE_ERROR, "--limit") is not None
    deleted = invoke("sessions", "delete", "s-none", "--json")
    check_failure(deleted, USAGE_ERROR, "not found")


def test_corrupt_session_is_reported_as_corrupt(tmp_path: Path) -> None:
    first = invoke("chat", "--agent", "cli_agents:hostile", "--session", "s-c", "hi")
    assert first.exit_code == 0, first.output
    with sqlite3.connect(tmp_path / "sessions.db") as conn:
        conn.execute("UPDATE lw_checkpoints SET header = '{not json' WHERE session_id = 's-c'")
    for command in (["resume", "s-c", "--approve"], ["chat", "--session", "s-c", "more"]):
        result = invoke(*command, "--json")
        data = check_failure(result, STORE_ERROR, "corrupt checkpoint data for session 's-c'")
        assert data is not None and "no agent" not in data["error"]
        assert "loopwright sessions fork s-c --checkpoint N" in data["error"]


def test_unexpected_exception_is_an_internal_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(agents_mod, "resolve", broken)
    data = check_failure(invoke("run", "--json", "x"), INTERNAL_ERROR, "internal error")
    assert data is not None and data["stop_reason"] == "internal_error"
    assert "ZeroDivisionError" in data["error"] and "report" in data["error"]


def test_ctrl_c_is_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(agents_mod, "resolve", interrupted)
    result = invoke("run", "--json", "x")
    check_failure(result, exit_code(RunStop.CANCELLED), "interrupted")


def test_non_utf8_stdin_turn_in_chat_is_a_usage_error() -> None:
    result = invoke("chat", "--json", "--agent", "cli_agents:hostile", input=b"ok\n\xff\xfe\n")
    assert result.exit_code == USAGE_ERROR
    assert "stdin line 2 is not UTF-8" in result.stderr


def test_the_documented_error_object_is_what_the_cli_prints() -> None:
    docs = (HERE.parents[1] / "docs" / "cli.md").read_text("utf-8")
    example = json.loads(docs.split("```json\n", 1)[1].split("```", 1)[0])
    printed = json.loads(invoke("run", "--json", "--timeout", "nan", "x").stdout)
    assert printed.keys() == example.keys()
    assert printed["error"] == example["error"]


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--tools", "read_file", "--root", "{tmp}/gone"], "--root"),
        (["--tools", "sql_query,calculator", "--db", "{tmp}/shop.bd"], "--db"),
        (["--tools", "sql_query"], "loopwright.db"),  # the default database is missing too
    ],
)
def test_missing_file_of_a_named_builtin_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], fragment: str
) -> None:
    monkeypatch.chdir(tmp_path)
    args = [f.replace("{tmp}", str(tmp_path)) for f in flags]
    data = check_failure(invoke("run", "--json", *args, "How many orders?"), USAGE_ERROR, fragment)
    assert data is not None and "no such" in data["error"] and data["turns"] == 0


def test_a_db_that_is_not_sqlite_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It ran: sql_query was described without tables and every query failed with "file
    is not a database"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("customers: ann, bob\n")
    args = ["--tools", "sql_query", "--db", "notes.txt"]
    data = check_failure(invoke("run", "--json", *args, "How many?"), USAGE_ERROR, "--db")
    assert data is not None and "not a SQLite database" in data["error"] and data["turns"] == 0
    (tmp_path / "empty.db").write_bytes(b"")  # an empty file is an empty database
    agents_mod._check_sqlite(tmp_path / "empty.db")


def test_duplicate_tools_are_built_once_or_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "dup_tools_mod.py").write_text(
        "from loopwright import tool\n\n\n@tool\ndef calculator(expression: str) -> str:\n"
        '    """Mine."""\n    return expression\n\n\ntools = [calculator]\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    clash = invoke("run", "--json", "--tools", "calculator,dup_tools_mod:tools", "hi")
    data = check_failure(clash, USAGE_ERROR, "'calculator' is already registered")
    assert data is not None and data["turns"] == 0
    # the same built-in named twice is one tool, not an internal error
    built = agents_mod._tools(recipe_from({"tools": ("calculator", "calculator")}))
    assert [t.name for t in built] == ["calculator"]  # type: ignore[attr-defined]


def test_tools_reference_takes_a_registry_and_names_what_is_not_a_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "reg_tools_mod.py").write_text(
        "from loopwright import ToolRegistry, tool\n\n\n@tool\ndef shout(text: str) -> str:\n"
        '    """Shout."""\n    return text.upper()\n\n\nregistry = ToolRegistry([shout])\n'
        "odd = [shout, 42]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    built = agents_mod._tools(recipe_from({"tools": ("reg_tools_mod:registry",)}))
    assert [t.name for t in built] == ["shout"]  # type: ignore[attr-defined]
    bad = invoke("run", "--json", "--tools", "reg_tools_mod:odd", "hi")
    check_failure(bad, USAGE_ERROR, "--tools 'reg_tools_mod:odd': int is not a tool")


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--trace", "", "x"],
        ["run", "--trace", "  ", "x"],
        ["run", "--root", "", "x"],
        ["run", "--db", "", "x"],
        ["trace", "list", "--dir", ""],
    ],
)
def test_an_empty_path_is_a_usage_error_and_writes_nothing(args: list[str], tmp_path: Path) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())
    result = invoke(*args)
    option = next(a for a, value in itertools.pairwise(args) if not value.strip())
    check_failure(result, USAGE_ERROR, option, "empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # the cwd is tmp_path


@pytest.mark.parametrize("session", ["", "  ", " s-1"])
def test_chat_with_a_session_id_that_names_no_session_is_a_usage_error(session: str) -> None:
    # "" started a new session with the default (embedded) model and never printed its id
    result = invoke("chat", "--agent", "cli_agents:hostile", "--session", session, "hi")
    check_failure(result, USAGE_ERROR, "--session")


def test_ctrl_c_in_a_stored_session_names_it_and_how_to_continue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It printed only "error: interrupted" (and "stop_reason": "error" with --json),
    though the session keeps its last checkpoint and ``resume`` continues it."""
    (tmp_path / "ctrl_c_agent.py").write_text(
        "from loopwright import Agent, FunctionModel\n\n\n"
        "def reply(messages, request):\n    raise KeyboardInterrupt\n\n\n"
        "def build():\n    return Agent(FunctionModel(reply))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    result = invoke("chat", "--json", "--agent", "ctrl_c_agent:build", "go")
    data = check_failure(result, exit_code(RunStop.CANCELLED), "interrupted; session s-")
    assert data is not None and data["stop_reason"] == "cancelled"
    sid = data["session_id"]
    assert sid and f"continue it with `loopwright resume {sid}`" in data["error"]
    shown = invoke("sessions", "show", sid)
    assert shown.exit_code == 0, shown.output  # the session was kept


def test_a_decision_for_a_session_with_no_pending_calls_says_it_decided_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`resume SID --deny REASON` on a finished session printed its old answer with exit 0
    and no word that nothing was denied."""
    (tmp_path / "done_agent.py").write_text(
        "from loopwright import Agent, ScriptedModel\n\n\n"
        "def build():\n    return Agent(ScriptedModel(['all done', 'again']))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    first = invoke("chat", "--json", "--agent", "done_agent:build", "go")
    sid = json.loads(first.stdout)["session_id"]
    denied = invoke("resume", sid, "--deny", "stop")
    assert denied.exit_code == 0
    assert f"note: session {sid} has no pending calls: its run already ended (final_answer)" in (
        denied.stderr
    )
    plain = invoke("resume", sid)  # no decision given: nothing to say
    assert "note:" not in plain.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--db", "shop.db"], "--db configures the sql_query tool, which is not among the tools"),
        (["--tools", "add", "--root", "."], "add it: --tools add,read_file"),
        (
            ["--tools", "", "--outbox", "o.jsonl"],
            "send_email tool, which is not among the tools (none)",
        ),
    ],
)
def test_a_path_flag_for_a_tool_the_agent_lacks_is_a_usage_error(
    flags: list[str], message: str
) -> None:
    """`run --db shop.db "How many orders?"` ran with the default tools and never read the
    database: nothing said the flag applied to a tool that was not there."""
    data = check_failure(invoke("run", "--json", *flags, "How many orders?"), USAGE_ERROR, message)
    assert data is not None and data["turns"] == 0


def test_stdin_turns_left_unsent_by_a_pause_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`chat` reading turns from stdin stopped at a pause and dropped the rest without a
    word."""
    (tmp_path / "pausing_agent.py").write_text(
        "from loopwright import Agent, ScriptedModel, tool, tool_call\n\n\n"
        "@tool(requires_confirmation=True)\ndef send(to: str) -> str:\n"
        '    """Send."""\n    return to\n\n\n'
        "def build():\n"
        "    return Agent(ScriptedModel([[tool_call('send', {'to': 'ann'})], 'ok']), [send])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    result = invoke(
        "chat", "--agent", "pausing_agent:build", input="mail ann\n\nthen bob\nand cy\n"
    )
    assert result.exit_code == exit_code(RunStop.AWAITING_CONFIRMATION)
    assert "note: 2 more stdin line(s) are not sent: session s-" in result.stderr


def test_an_error_made_of_lines_prints_one_per_line(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('"fine"\nnot json\n{"prompt": ""}\n')
    result = invoke("batch", str(prompts), "--model", "scripted")
    assert result.exit_code == USAGE_ERROR
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: {prompts}: 2 bad lines, nothing was run:"
    assert lines[1].startswith(f"  {prompts}:2: not JSON") and lines[2].startswith(
        f"  {prompts}:3:"
    )
