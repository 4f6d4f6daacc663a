"""A person approving a paused call is shown the arguments it will run with, also when
the model wrote them as text that needed repair (the provider then leaves
``arguments`` empty and keeps the text)."""

from __future__ import annotations

import json

import pytest

from loopwright.cli.results import pending_calls, print_result
from loopwright.core.messages import ToolCallPart, Usage
from loopwright.core.run import RunResult, RunStop

RAW = ToolCallPart("c1", "send_email", {}, "{'to': 'evil@example.com', 'subject': 'hi'}")
BROKEN = ToolCallPart("c2", "send_email", {}, "to=evil@example.com")


def _paused(*calls: ToolCallPart) -> RunResult[str]:
    return RunResult(
        "", RunStop.AWAITING_CONFIRMATION, 1, Usage(), (), session_id="s1", pending_calls=calls
    )


def test_json_pending_calls_carry_the_repaired_arguments() -> None:
    shown = pending_calls(_paused(RAW))
    assert shown[0]["arguments"] == {"to": "evil@example.com", "subject": "hi"}


def test_arguments_that_cannot_be_read_are_shown_as_written() -> None:
    shown = pending_calls(_paused(BROKEN))
    assert shown[0]["arguments"] == {}
    assert shown[0]["raw_arguments"] == "to=evil@example.com"


def test_the_terminal_shows_the_repaired_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    print_result(_paused(RAW), as_json=False)
    err = capsys.readouterr().err
    assert json.dumps("evil@example.com") in err
