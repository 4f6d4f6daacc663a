"""The wall clock holds whatever the program does with its output streams."""

from __future__ import annotations

import pytest

from loopwright.tools.sandbox import Sandbox, SandboxConfig, SandboxLimits
from loopwright.tools.sandbox.backends import backend_problem


@pytest.mark.parametrize("backend", ["bwrap", "nsjail", "rlimit"])
async def test_a_program_that_closes_its_output_is_still_stopped_at_the_wall_clock(
    backend: str,
) -> None:
    assert backend_problem(backend) is None
    box = Sandbox(SandboxConfig(backend=backend, limits=SandboxLimits(wall_time=1.0)))
    try:
        # with stdout and stderr closed the reader saw end of file at once and waited
        # for the exit with no deadline: the program ran its full 20 s
        result = await box.run_shell("exec >&- 2>&-; sleep 20")
    finally:
        box.close()
    assert result.timed_out
    assert result.exit_code is None
    assert result.signal == "SIGKILL"
