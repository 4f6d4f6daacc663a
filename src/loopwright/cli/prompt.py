"""``loopwright prompt``: list, show and regression-test prompts.

\b
  loopwright prompt list                       built-in prompts and their versions
  loopwright prompt show router [--version V]  a prompt's text, fingerprint, changelog
  loopwright prompt test SUITE.yaml --model local:gemma-3-270m --runs 5 \\
      --threshold 0.8 --report out.json

``prompt test`` exits 0 when the pass rate reaches the threshold, 1 when it does not,
2 for a bad suite file or model string.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from loopwright.cli.options import NonEmptyPath
from loopwright.cli.output import CliError, say
from loopwright.core.errors import LoopwrightError
from loopwright.core.text import to_json


@click.group("prompt")
def prompt_group() -> None:
    """Prompt templates: list, show, regression-test.

    \b
    Examples:
      loopwright prompt list
      loopwright prompt show planner
      loopwright prompt show router --version 1.0
      loopwright prompt test suite.yaml --model local:gemma-3-270m --runs 3
    """


@prompt_group.command("list")
def list_command() -> None:
    """List the built-in prompts, their versions and fingerprints.

    \b
    Examples:
      loopwright prompt list
    """
    from loopwright.prompts import builtin_registry

    reg = builtin_registry()
    for name in reg.names():
        latest = reg.get(name)
        say(f"{name:<12} {', '.join(reg.versions(name)):<20} {latest.fingerprint}")


@prompt_group.command("show")
@click.argument("name")
@click.option("--version", "version", default="latest", show_default=True)
@click.option("--dir", "directory", type=NonEmptyPath(file_okay=False), help="A registry folder.")
def show_command(name: str, version: str, directory: str | None) -> None:
    """Print a prompt's text, variables, fingerprint and changelog.

    \b
    Examples:
      loopwright prompt show planner
      loopwright prompt show router --version 1.0
      loopwright prompt show router --dir ./prompts     your own registry folder
    """
    from loopwright.prompts import PromptRegistry, builtin_registry

    try:
        reg = PromptRegistry(directory) if directory else builtin_registry()
        template = reg.get(name, version)
    except LoopwrightError as exc:
        raise CliError(str(exc)) from exc
    say(f"# {template.fingerprint}  variables: {', '.join(template.variables)}")
    say(template.text)
    log = reg.changelog(name)
    if log:
        say("\n" + log)


@prompt_group.command("test")
@click.argument("suite_file", type=NonEmptyPath(exists=True, dir_okay=False))
@click.option(
    "--model",
    "model_spec",
    required=True,
    help="Model string, e.g. local:gemma-3-270m or openai:gpt-4o-mini.",
)
@click.option("--runs", type=click.IntRange(min=1), help="Runs per case (default: the suite's).")
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0),
    help="Overall pass rate required (default: the suite's).",
)
@click.option(
    "--report", "report_path", type=NonEmptyPath(dir_okay=False), help="Write the JSON report here."
)
@click.option("--base-url", help="Override the provider endpoint.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Runs in flight at once (keep 1 for the embedded model).",
)
def test_command(
    suite_file: str,
    model_spec: str,
    runs: int | None,
    threshold: float | None,
    report_path: str | None,
    base_url: str | None,
    concurrency: int,
) -> None:
    """Run a YAML prompt suite against a model; print a table; exit 1 under the threshold.

    \b
    Examples:
      loopwright prompt test suite.yaml --model local:gemma-3-270m
      loopwright prompt test suite.yaml --model openai:gpt-4o-mini --runs 5 \\
          --threshold 0.8 --report report.json
    """
    from loopwright.prompts.testing import load_suite, run_suite
    from loopwright.providers.registry import resolve_model

    try:
        suite = load_suite(suite_file)
        model = resolve_model(model_spec, base_url=base_url)
    except LoopwrightError as exc:
        raise CliError(str(exc)) from exc
    try:
        report = asyncio.run(
            run_suite(suite, model, runs=runs, threshold=threshold, concurrency=concurrency)
        )
    except LoopwrightError as exc:
        raise CliError(str(exc)) from exc
    say(report.table())
    if report_path:
        Path(report_path).write_text(to_json(report.to_dict(), indent=2), "utf-8")
        say(f"report written to {report_path}")
    if not report.passed:
        raise SystemExit(1)


COMMANDS: tuple[click.Command, ...] = (prompt_group,)
