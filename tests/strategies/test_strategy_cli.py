"""``loopwright run --strategy NAME``: a strategy over the agent's model and tools, its
events reaching the CLI's subscribers (here the JSONL trace)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwright import Agent, FunctionModel, ScriptedModel, tool
from loopwright.cli.main import main


@pytest.fixture(autouse=True)
def isolated_cli_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a plan-and-execute run is a stored session: its own store and session key here
    monkeypatch.setenv("LOOPWRIGHT_STORE_URL", f"sqlite://{tmp_path / 'sessions.db'}")
    monkeypatch.delenv("LOOPWRIGHT_STORE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("LOOPWRIGHT_SESSION_KEY_FILE", raising=False)


def sc_agent() -> Agent:
    answers = iter(["Answer: 42", "Answer: 41", "Answer: 42", "Answer: 42", "Answer: 40"])
    return Agent(FunctionModel(lambda messages, request: next(answers)))


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def plan_agent() -> Agent:
    step = {"step_id": 1, "description": "shout", "tool_name": "shout",
            "tool_input": {"text": "hello"}, "depends_on": []}  # fmt: skip
    accept = {
        "evaluation": {k: {"score": 5} for k in ("completeness", "correctness", "format")},
        "overall_pass": True,
        "action": "accept",
    }
    replies = [json.dumps({"action": "plan", "plan": [step]}), json.dumps(accept)]
    return Agent(ScriptedModel(replies), [shout])


def invoke(monkeypatch: pytest.MonkeyPatch, agent: Agent, *args: str):  # type: ignore[no-untyped-def]
    # `run` builds its agent from a model string; a test double stands in for that agent
    monkeypatch.setattr("loopwright.cli.run.build_agent", lambda *a, **k: agent)
    return CliRunner().invoke(main, list(args), prog_name="loopwright")


def test_self_consistency_from_the_cli_is_traced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(
        monkeypatch, sc_agent(), "run", "--strategy", "self_consistency",
        "--json", "--trace", str(tmp_path), "What is 6 * 7?",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # each sample is a run of the agent: the answer is the first winning run's own
    assert data["answer"] == "Answer: 42" and data["stop_reason"] == "final_answer"
    lines = [json.loads(ln) for f in tmp_path.glob("*.jsonl") for ln in f.read_text().splitlines()]
    kinds = [ln.get("kind") for ln in lines if ln.get("type") == "strategy_step"]
    calls = [ln for ln in lines if ln.get("type") == "model_call_finished"]
    # 42, 41, 42, 42: the leader cannot be overtaken by the fifth sample, which is not drawn
    assert "vote" in kinds and kinds.count("sample") == len(calls) == 4


def test_plan_execute_from_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    result = invoke(
        monkeypatch, plan_agent(), "run", "--strategy", "plan_execute", "--json", "Shout hello"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["answer"] == "HELLO"


def test_stream_shows_the_strategys_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    result = invoke(
        monkeypatch, sc_agent(), "run", "--strategy", "self_consistency", "--stream", "6 * 7?"
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(ln.startswith("· self_consistency vote") and '"42": 3' in ln for ln in lines)
    assert sum(ln.startswith("· self_consistency sample") for ln in lines) == 4  # decided


@tool
def broken(text: str) -> str:
    """Always fails."""
    raise RuntimeError("the service is down")


def test_an_escalated_plan_is_stored_and_the_hint_says_how_to_continue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopwright.store import SQLiteStore
    from loopwright.strategies import PlanCheckpoints

    step = {"step_id": 1, "description": "call", "tool_name": "broken",
            "tool_input": {"text": "x"}, "depends_on": []}  # fmt: skip
    escalate = {
        "evaluation": {k: {"score": 1} for k in ("completeness", "correctness", "format")},
        "overall_pass": False,
        "action": "escalate",
    }
    model = ScriptedModel([json.dumps({"action": "plan", "plan": [step]}), json.dumps(escalate)])
    result = invoke(
        monkeypatch, Agent(model, [broken]), "run", "--strategy", "plan_execute", "--json", "go"
    )
    assert result.exit_code == 17, result.output
    data = json.loads(result.stdout)
    assert data["stop_reason"] == "awaiting_confirmation"
    assert f"loopwright resume {data['session_id']}" in data["hint"]
    saved = PlanCheckpoints(SQLiteStore(tmp_path / "sessions.db"), data["session_id"]).load()
    assert saved["results"] and saved["request"] == "go"


class _Formatless(FunctionModel):
    follows_text_formats = False  # as the embedded model says of itself


def test_a_strategy_the_model_cannot_run_fails_before_any_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _Formatless(lambda messages, request: "17 * 23 = 23.")
    result = invoke(
        monkeypatch, Agent(model), "run", "--strategy", "tree_of_thoughts", "What is 17 * 23?"
    )
    assert result.exit_code == 2
    assert "--strategy tree_of_thoughts: " in result.output and "--model" in result.output
    assert model.calls == 0


def test_strategy_settings_from_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    result = invoke(
        monkeypatch, sc_agent(), "run", "--strategy", "self_consistency",
        "--strategy-setting", "k=2", "--stream", "6 * 7?",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # two samples (42, 41): a tie, the first seen wins
    assert sum(ln.startswith("· self_consistency sample") for ln in result.stdout.splitlines()) == 2


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("k", "write NAME=VALUE"),
        ("k=2.5", "self_consistency's k is a whole number"),
        ("k=nan", "write NAME=VALUE"),
        ("depth=2", "has no setting(s) depth; its settings: k"),
    ],
)
def test_a_bad_strategy_setting_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, setting: str, message: str
) -> None:
    args = ["run", "--strategy", "self_consistency", "--strategy-setting", setting, "q"]
    result = invoke(monkeypatch, sc_agent(), *args)
    assert result.exit_code == 2 and message in result.output


def test_a_strategy_setting_needs_a_strategy(monkeypatch: pytest.MonkeyPatch) -> None:
    result = invoke(monkeypatch, sc_agent(), "run", "--strategy-setting", "k=2", "q")
    assert result.exit_code == 2 and "add --strategy" in result.output
