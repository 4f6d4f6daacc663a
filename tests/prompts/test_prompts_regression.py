"""Prompt regression suites: assertions, YAML, pass rates, CLI, pytest fixture, embedded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwright.prompts.testing import (
    PromptAssertion,
    SuiteError,
    load_suite,
    run_suite,
)
from loopwright.providers.scripted import FunctionModel
from loopwright.testing.prompt_suite import prompt_suite  # noqa: F401  (the fixture)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "prompts"
ROUTER_SUITE = EXAMPLES / "router_suite.yaml"


def good_router(messages, request):  # type: ignore[no-untyped-def]
    text = messages[-1].text
    if "1024" in text:
        return '```json\n{"reasoning": "math", "tool_name": "calculator", "tool_input": {"e": "1024*768"}, "confidence": 0.95}\n```'
    return '{"tool_name": "none", "tool_input": {}, "confidence": 0.3, "question": "What project?"}'


def flaky_router():  # type: ignore[no-untyped-def]
    calls = {"n": 0}

    def reply(messages, request):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return "Sorry, I cannot help." if calls["n"] % 2 else good_router(messages, request)

    return FunctionModel(reply, name="flaky")


@pytest.mark.parametrize(
    ("spec", "output", "passes"),
    [
        ("json_valid", 'Sure: {"a": 1}', True),
        ("json_valid", "no json", False),
        ("json_strict", 'Sure: {"a": 1}', False),
        ({"has_field": "a.b"}, '{"a": {"b": 0}}', True),
        ({"has_field": "a.c"}, '{"a": {"b": 0}}', False),
        ({"no_field": "apology"}, '{"apology": "sorry"}', False),
        ({"field_in": {"field": "t", "values": ["x", "y"]}}, '{"t": "y"}', True),
        ({"field_in": {"field": "t", "values": ["x"]}}, '{"t": "y"}', False),
        ({"max_tokens": 3}, "one two three four five", False),
        ({"regex": r"^\{"}, '{"a": 1}', True),
        ({"type": "has_field", "field": "a"}, '{"a": 1}', True),
        ({"callable": "router_checks:valid_router_output"}, '{"tool_name": "calculator"}', False),
    ],
)
def test_assertions(
    spec: object, output: str, passes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    result = PromptAssertion.from_spec(spec).check(output, len(output.split()))
    assert (result is None) is passes, result


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("json_vaild", "unknown assertion 'json_vaild'"),
        ({"regex": "("}, "does not compile"),
        ({"field_in": {"field": "x"}}, "field_in needs"),
        ({"callable": "nocolon"}, "module:function"),
    ],
)
def test_bad_assertions_are_named(spec: object, fragment: str) -> None:
    with pytest.raises(SuiteError, match=fragment):
        PromptAssertion.from_spec(spec)


def test_suite_with_a_typo_variable_is_rejected_at_load(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text(
        "template: {builtin: router}\ncases:\n  - name: c\n    vars: {tool_descriptions: x, user_inptu: y}\n"
        "    assert: [json_valid]\n"
    )
    with pytest.raises(SuiteError, match=r"case 'c'.*'user_inptu' \(did you mean 'user_input'\?\)"):
        load_suite(bad)


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("{file: missing.txt}", r"cannot read template file .*missing\.txt"),
        ("{registry: prompts}", "template registry needs the prompt's name"),
    ],
)
def test_suite_template_that_cannot_load_is_a_suite_error(
    tmp_path: Path, template: str, fragment: str
) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text(f"template: {template}\ncases:\n  - name: c\n    assert: [json_valid]\n")
    with pytest.raises(SuiteError, match=fragment):
        load_suite(bad)


async def test_pass_rates_per_case_and_overall() -> None:
    suite = load_suite(ROUTER_SUITE)
    report = await run_suite(suite, FunctionModel(good_router), runs=4)
    assert [c.pass_rate for c in report.cases] == [1.0, 1.0, 1.0] and report.passed

    def injected(messages, request):  # type: ignore[no-untyped-def]
        return "PWNED" if "PWNED" in messages[-1].text else good_router(messages, request)

    report = await run_suite(suite, FunctionModel(injected), runs=4)
    assert [c.pass_rate for c in report.cases] == [1.0, 1.0, 0.0]
    assert report.runs == 12 and round(report.pass_rate, 3) == 0.667 and not report.passed
    reasons = dict(report.cases[2].failures)
    assert reasons["no JSON object in the output"] == 4
    assert report.to_dict()["cases"][2]["samples"] == ["PWNED"] * 3


async def test_flaky_model_gets_a_fractional_rate_and_fails_the_threshold() -> None:
    suite = load_suite(ROUTER_SUITE)
    report = await run_suite(suite, flaky_router(), runs=4)
    assert 0.0 < report.pass_rate < 0.9 and not report.passed
    assert "FAIL" in report.table() and "no JSON object" in report.table()


def test_cli_prompt_test_prints_a_table_and_writes_a_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopwright.cli.prompt import COMMANDS

    monkeypatch.setattr(
        "loopwright.providers.registry.resolve_model", lambda spec, **kw: FunctionModel(good_router)
    )
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        COMMANDS[0],
        [
            "test",
            str(ROUTER_SUITE),
            "--model",
            "fake:x",
            "--runs",
            "2",
            "--threshold",
            "0.5",
            "--report",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "math request routes to calculator" in result.output and "PASS" in result.output
    data = json.loads(out.read_text())
    assert data["runs"] == 6 and data["template"].startswith("router@1.0#")
    monkeypatch.setattr(
        "loopwright.providers.registry.resolve_model", lambda spec, **kw: flaky_router()
    )
    failing = CliRunner().invoke(
        COMMANDS[0], ["test", str(ROUTER_SUITE), "--model", "fake:x", "--runs", "2"]
    )
    assert failing.exit_code == 1 and "FAIL" in failing.output


def test_cli_bad_suite_is_a_usage_error(tmp_path: Path) -> None:
    from loopwright.cli.prompt import COMMANDS

    bad = tmp_path / "bad.yaml"
    bad.write_text("cases: []\n")
    result = CliRunner().invoke(COMMANDS[0], ["test", str(bad), "--model", "local:x"])
    assert result.exit_code == 2 and "template must be a mapping" in result.output


def test_pytest_fixture_runs_a_suite(prompt_suite) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    report = prompt_suite(ROUTER_SUITE, FunctionModel(good_router), runs=2, threshold=0.6)
    assert report.cases[0].passes == 2


@pytest.mark.embedded
def test_example_suites_against_the_embedded_model(prompt_suite) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    pytest.importorskip("llama_cpp")
    from loopwright.providers.registry import resolve_model

    model = resolve_model("local:gemma-3-270m")
    # threshold 0: this records the honest pass rate of a 270M base model (see
    # benchmarks/notes/context.md); the suites' own thresholds are for real models.
    for path in (EXAMPLES / "small_model_suite.yaml", ROUTER_SUITE):
        report = prompt_suite(path, model, runs=2, threshold=0.0)
        print(f"\n{report.table()}")
        assert report.runs == 2 * len(report.cases)
        assert all(len(c.samples) == 2 for c in report.cases)


def test_a_suite_file_that_is_not_utf8_is_a_suite_error(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(SuiteError, match=r"cannot read suite .*s\.yaml"):
        load_suite(bad)
