"""A usage error points at the help of the command that was given, also when Click
raised it without a context (an option missing its value)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwright.cli.exit_codes import USAGE_ERROR, exit_code
from loopwright.cli.main import main
from loopwright.core.run import RunStop


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["resume", "s-1", "--deny"], "loopwright resume --help"),
        (["run", "--tools"], "loopwright run --help"),
        (["chat", "--session"], "loopwright chat --help"),
        (["sessions", "fork", "s-1", "--checkpoint"], "loopwright sessions fork --help"),
    ],
)
def test_an_option_without_its_value_points_at_its_command(args: list[str], where: str) -> None:
    # pointed at "loopwright --help", which lists no option of any command
    result = CliRunner().invoke(main, args, prog_name="loopwright")
    assert result.exit_code == USAGE_ERROR
    assert "requires an argument" in result.stderr
    assert f"(see: {where})" in result.stderr, result.stderr


@pytest.mark.parametrize("flag", ["--model", "--base-url"])
def test_an_empty_model_or_endpoint_is_a_usage_error(flag: str) -> None:
    # --model "$MODEL" with the variable unset ran the embedded default model instead
    result = CliRunner().invoke(main, ["run", flag, "", "hi"], prog_name="loopwright")
    assert result.exit_code == USAGE_ERROR, result.output
    assert flag in result.stderr and "empty" in result.stderr


@pytest.mark.parametrize(("typo", "meant"), [("sesions", "sessions"), ("tool", "tools")])
def test_a_mistyped_command_is_matched_against_every_command(typo: str, meant: str) -> None:
    # commands load lazily: Click matched only those loaded ('sesions' -> 'version')
    result = CliRunner().invoke(main, [typo], prog_name="loopwright")
    assert result.exit_code == USAGE_ERROR
    assert f"No such command {typo!r}. Did you mean {meant!r}" in result.stderr, result.stderr
    assert "(see: loopwright --help)" in result.stderr


def test_a_closed_output_pipe_ends_quietly_as_cancelled() -> None:
    # `loopwright ... | head -1`: Click's exit 1 is this CLI's "internal error (a bug)"
    src = str(Path(__file__).resolve().parents[2] / "src")
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "loopwright.cli", "tools"],
            stdout=write,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": src},
            check=False,
        )
    finally:
        os.close(write)
    assert done.returncode == exit_code(RunStop.CANCELLED), done.stderr
    assert done.stderr == b""
