"""What the control loop itself tells the model, read once at import from
``prompts/templates/loop/<name>.txt`` (prompt text lives in files, not in code)."""

from __future__ import annotations

from importlib import resources
from string import Template


def _prompt(name: str) -> str:
    """The text of ``prompts/templates/loop/<name>.txt``."""
    path = resources.files("loopwright").joinpath("prompts", "templates", "loop", f"{name}.txt")
    return path.read_text(encoding="utf-8")


EMPTY_REPLY_OBSERVATION = _prompt("empty_reply")
"""What the model is told after a reply with neither text nor a tool call."""
INTERRUPTED_RESULT = Template(_prompt("interrupted_result"))
"""The result of a call that started but was cut off (``$why``: timeout, cancel, error)."""
SKIPPED_RESULT = Template(_prompt("skipped_result"))
"""The result of a call that never started because its batch was cut off."""
FINAL_ACCEPTED = _prompt("final_accepted")
"""The result of a valid ``final_result`` call."""
NOT_RUN_AFTER_FINAL = _prompt("not_run_after_final")
"""The result of the calls sent beside a ``final_result`` call (they are not run)."""
