"""Hostile text from a model or a tool through the real CLI: a lone surrogate never kills
the output (plain, --json, --stream, a stored session), and control sequences never reach
the terminal (they do reach --json, exactly)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_agents import CLEAR, CLIPBOARD, HOSTILE_TEXT
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwright.cli import agents as agents_mod
from loopwright.cli.main import main
from loopwright.core.text import for_terminal, scrub
from loopwright.providers.scripted import ScriptedModel, tool_call

HERE = Path(__file__).parent
SGR = re.compile(r"\x1b\[[0-9;]*m")  # the only escapes the CLI itself writes (colours)


def _model(monkeypatch: pytest.MonkeyPatch, *replies: object) -> None:
    model = ScriptedModel(list(replies))
    monkeypatch.setattr(agents_mod, "resolve", lambda spec, base_url, on_payload: model)


def _no_foreign_escapes(text: str) -> None:
    assert "\x1b" not in SGR.sub("", text), repr(text)
    assert "\x07" not in text and "\u202e" not in text


@pytest.mark.parametrize("mode", [[], ["--json"], ["--stream"], ["--stream", "--json"]])
def test_lone_surrogate_in_model_text_is_written_in_every_mode(
    monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    _model(monkeypatch, "bad \ud800 text")
    result = CliRunner().invoke(main, ["run", *mode, "hello"])
    assert result.exit_code == 0, result.output
    result.stdout.encode("utf-8")
    result.stderr.encode("utf-8")
    if "--json" in mode:
        assert json.loads(result.stdout)["answer"] == "bad \ufffd text"
    else:
        assert "bad \ufffd text" in result.stdout


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), min_size=1, max_size=40))
def test_any_model_text_through_plain_and_json_output(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    for mode in ([], ["--json"], ["--stream"]):
        _model(monkeypatch, text)
        result = CliRunner().invoke(main, ["run", *mode, "hello"], color=True)
        assert result.exit_code == 0, result.output
        result.stdout.encode("utf-8")
        if mode == ["--json"]:
            assert json.loads(result.stdout)["answer"] == scrub(text)
        else:
            _no_foreign_escapes(result.stdout)
            if not mode:
                assert result.stdout == for_terminal(text) + "\n"


def test_control_sequences_from_model_and_tool_are_neutralised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _model(monkeypatch, [tool_call("get_weather", {"city": CLIPBOARD})], HOSTILE_TEXT)
    streamed = CliRunner().invoke(main, ["run", "--stream", "weather?"], color=True)
    assert streamed.exit_code == 0, streamed.output
    _no_foreign_escapes(streamed.stdout)
    assert "\\x1b]52;c;" in streamed.stdout  # shown, visibly, not executed
    assert "\\x1b[2J" in streamed.stdout and "\\u202e" in streamed.stdout
    _model(monkeypatch, HOSTILE_TEXT)
    plain = CliRunner().invoke(main, ["run", "weather?"], color=True)
    _no_foreign_escapes(plain.stdout)


def test_json_output_keeps_the_exact_text(monkeypatch: pytest.MonkeyPatch) -> None:
    _model(monkeypatch, CLEAR + "answer")
    result = CliRunner().invoke(main, ["run", "--json", "x"])
    assert json.loads(result.stdout)["answer"] == CLEAR + "answer"
    assert "\\u001b[2J" in result.stdout  # JSON's own escape, not a raw ESC byte


def _subprocess(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    env.update(
        LANG="C",
        LC_ALL="C",
        LOOPWRIGHT_STORE_URL=f"sqlite://{tmp_path / 's.db'}",
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    env.pop("PYTHONIOENCODING", None)
    return subprocess.run(
        [sys.executable, "-m", "loopwright.cli", *args],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_real_process_in_c_locale_writes_utf8_and_no_escapes(tmp_path: Path) -> None:
    """A real pipe in the C locale (stdout errors=surrogateescape) and a stored session."""
    plain = _subprocess(["chat", "--agent", "cli_agents:hostile", "hi"], tmp_path)
    assert plain.returncode == 0, plain.stderr
    out = plain.stdout.decode("utf-8")  # strict: no stray non-UTF-8 byte
    assert "bad \ufffd half" in out
    assert b"\x1b" not in plain.stdout and b"\x1b" not in plain.stderr
    as_json = _subprocess(["chat", "--json", "--agent", "cli_agents:hostile", "hi"], tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout.decode("utf-8"))
    assert data["answer"] == scrub(HOSTILE_TEXT)
    listed = _subprocess(["sessions", "--json"], tmp_path)
    assert listed.returncode == 0 and len(json.loads(listed.stdout)["sessions"]) == 2


def test_json_output_is_strict_json_even_with_non_finite_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _model(monkeypatch, [tool_call("calculator", {"expression": float("nan")})], "done")
    result = CliRunner().invoke(main, ["run", "--json", "x"])

    def refuse(token: str) -> None:
        raise AssertionError(f"{token} is not JSON")

    data = json.loads(result.stdout, parse_constant=refuse)
    call = data["messages"][1]["parts"][0]
    assert call["kind"] == "tool_call" and call["arguments"] == {"expression": None}


def test_trace_of_a_run_with_a_lone_surrogate_is_complete(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _model(monkeypatch, [tool_call("get_weather", {"city": "\ud83d"})], "bad \ud800 text")
    traces = tmp_path / "traces"
    result = CliRunner().invoke(main, ["run", "--trace", str(traces), "--json", "x"])
    assert result.exit_code == 0, result.output
    (path,) = traces.glob("*.jsonl")
    lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert lines[-1]["type"] == "run_finished"
    assert lines[-1]["result"]["answer"] == "bad \ufffd text"
    seqs = [line["seq"] for line in lines[1:]]
    assert seqs == list(range(1, len(seqs) + 1))  # no event lost
    html = tmp_path / "run.html"
    viewed = CliRunner().invoke(
        main, ["trace", "view", path.stem, "--dir", str(traces), "-o", str(html)]
    )
    assert viewed.exit_code == 0, viewed.output
    html.read_text("utf-8")
