"""chat's stdin turns are checked like run's prompt: text without NUL bytes."""

from __future__ import annotations

from click.testing import CliRunner

from loopwright.cli.exit_codes import USAGE_ERROR
from loopwright.cli.main import main


def test_a_stdin_line_with_a_nul_byte_is_refused_naming_it() -> None:
    # run refused such a prompt ("contains NUL bytes"); chat sent it to the model
    result = CliRunner().invoke(
        main,
        ["chat", "--agent", "cli_agents:hostile"],
        input=b"a\x00b\n",
        prog_name="loopwright",
    )
    assert result.exit_code == USAGE_ERROR, result.output
    assert "stdin line 1" in result.stderr and "NUL" in result.stderr
