"""CLI behaviour with a scripted model (fast, no embedded model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwright.cli import agents as agents_mod
from loopwright.cli.exit_codes import STOP_CODES as EXIT_CODES
from loopwright.cli.main import main
from loopwright.core.run import RunStop
from loopwright.providers.scripted import ScriptedModel, tool_call
from loopwright.tools import Tool
from loopwright.tools.builtin import BUILTIN_TOOLS


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch):
    def install(*replies: object) -> None:
        model = ScriptedModel(list(replies))
        monkeypatch.setattr(agents_mod, "resolve", lambda spec, base_url, on_payload: model)

    return install


def invoke(*args: str, input: bytes | str | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def _json_line(output: str) -> dict:
    lines = [ln for ln in output.splitlines() if ln.startswith("{")]
    assert len(lines) == 1, output
    return json.loads(lines[0])


def test_run_calls_calculator_and_answers(script) -> None:
    script([tool_call("calculator", {"expression": "(3 + 5) * 8"})], "64")
    result = invoke("run", "What is (3 + 5) * 8?")
    assert result.exit_code == 0
    assert result.output.strip() == "64"


def test_run_json_has_required_keys(script) -> None:
    script([tool_call("calculator", {"expression": "2 + 2"})], "4")
    result = invoke("run", "--json", "What is 2 + 2?")
    data = _json_line(result.output)
    for key in ("answer", "stop_reason", "turns", "usage", "messages", "session_id"):
        assert key in data
    assert data["answer"] == "4"
    assert data["stop_reason"] == "final_answer"
    assert data["messages"][2]["parts"][0]["content"] == "4"


def test_stream_renders_steps(script) -> None:
    script([tool_call("get_weather", {"city": "Beijing"})], "Beijing: sunny")
    result = invoke("run", "--stream", "What's the weather in Beijing?")
    assert "→ get_weather" in result.output
    assert "Beijing" in result.output
    assert "answer: Beijing: sunny" in result.output


def test_max_turns_has_its_exit_code(script) -> None:
    script(
        [tool_call("calculator", {"expression": "1 + 1"})],
        [tool_call("calculator", {"expression": "2 + 2"})],
    )
    result = invoke("run", "--max-turns", "1", "--json", "loop")
    assert result.exit_code == EXIT_CODES[RunStop.MAX_TURNS]
    assert _json_line(result.output)["stop_reason"] == "max_turns"


def test_confirmation_without_tty_pauses_and_says_how(script, tmp_path: Path) -> None:
    args = {"to": "ana@example.com", "subject": "Hi", "body": "Hello"}
    script([tool_call("send_email", args)], "sent")
    outbox = tmp_path / "o.jsonl"
    result = invoke("run", "--tools", "send_email", "--outbox", str(outbox), "--json", "mail ana")
    assert result.exit_code == EXIT_CODES[RunStop.AWAITING_CONFIRMATION]
    data = _json_line(result.output)
    assert data["stop_reason"] == "awaiting_confirmation"
    assert "--yes" in data["hint"]
    assert data["pending_calls"][0]["name"] == "send_email"
    assert not outbox.exists()


def test_yes_approves_and_no_denies(script, tmp_path: Path) -> None:
    args = {"to": "ana@example.com", "subject": "Hi", "body": "Hello"}
    outbox = tmp_path / "o.jsonl"
    script([tool_call("send_email", args)], "sent")
    assert (
        invoke("run", "--tools", "send_email", "--outbox", str(outbox), "--yes", "x").exit_code == 0
    )
    assert len(outbox.read_text().splitlines()) == 1
    script([tool_call("send_email", args)], "not sent")
    result = invoke("run", "--tools", "send_email", "--outbox", str(outbox), "--no", "--json", "x")
    data = _json_line(result.output)
    assert data["messages"][2]["parts"][0]["error_kind"] == "denied_by_user"
    assert len(outbox.read_text().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run", "--bogus", "x"], "No such option"),
        (["run", "--tools", "nope", "x"], "unknown tool 'nope'"),
        (["run", "--model", "foo:bar", "x"], "unknown model prefix"),
        (["run", "--max-turns", "0", "x"], "must be a whole number > 0"),
        (["run", "   "], "prompt is empty"),
        (["run", "--yes", "--no", "x"], "exclude each other"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], fragment: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert fragment in result.output
    assert "Traceback" not in result.output
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1


def test_bad_input_with_json_still_prints_an_object() -> None:
    result = CliRunner().invoke(main, ["run", "--json", "--tools", "nope", "x"])
    data = _json_line(result.output)
    assert data["stop_reason"] == "usage_error"
    assert "unknown tool" in data["error"]


def test_non_utf8_stdin_is_one_line_error() -> None:
    result = CliRunner().invoke(main, ["run", "--json", "-"], input=b"\xff\xfe\xfa")
    assert result.exit_code == 2
    assert "not UTF-8" in _json_line(result.output)["error"]


def test_stdin_prompt_is_read(script) -> None:
    script("hello back")
    result = invoke("run", "-", input=b"hello")
    assert result.output.strip() == "hello back"


def test_corrupt_gguf_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a model")
    result = CliRunner().invoke(main, ["run", "--json", "--model", f"local:{bad}", "hi"])
    assert result.exit_code == 2
    assert "not a GGUF model file" in _json_line(result.output)["error"]
    missing = CliRunner().invoke(main, ["run", "--model", f"local:{tmp_path / 'none.gguf'}", "hi"])
    assert missing.exit_code == 2
    assert "does not exist" in missing.output


def test_unserialisable_tool_result_is_handled(script, monkeypatch: pytest.MonkeyPatch) -> None:
    weird = Tool.from_schema(
        "weird", "Returns an object.", {"type": "object", "properties": {}}, lambda: object()
    )
    monkeypatch.setitem(BUILTIN_TOOLS, "weird", lambda config: weird)  # type: ignore[index]
    script([tool_call("weird", {})], "done")
    result = invoke("run", "--tools", "weird", "--json", "x")
    data = _json_line(result.output)
    assert data["stop_reason"] == "final_answer"
    assert data["messages"][2]["parts"][0]["name"] == "weird"


def test_tools_and_version_commands() -> None:
    listing = invoke("tools")
    assert "calculator" in listing.output and "send_email" in listing.output
    as_json = json.loads(invoke("tools", "--json").output)
    assert {t["name"] for t in as_json} >= {"calculator", "get_weather", "read_file", "sql_query"}
    assert invoke("version").output.startswith("loopwright ")
    help_text = invoke("run", "--help").output
    assert "Examples:" in help_text and "awaiting_confirmation" in help_text


@pytest.mark.parametrize(
    ("extra", "line"), [((), "stopped: max_turns: "), (("--stream",), "! stopped: max_turns: ")]
)
def test_the_stop_line_separates_the_reason_from_its_detail(script, extra, line) -> None:
    # printed as one phrase: "stopped: timeout the run exceeded its 0.5s timeout"
    script(
        [tool_call("calculator", {"expression": "1 + 1"})],
        [tool_call("calculator", {"expression": "2 + 2"})],
    )
    result = CliRunner().invoke(main, ["run", *extra, "--max-turns", "1", "loop"])
    assert f"{line}reached max_turns=1" in result.output, result.output
