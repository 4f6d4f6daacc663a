"""The embedded-model example in docs/providers.md runs (the model is not loaded)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "providers.md"


def test_embedded_section_example_runs() -> None:
    section = DOC.read_text().split("## The embedded model (`local:`)", 1)[1]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    scope: dict[str, object] = {}
    exec(compile(block, str(DOC), "exec"), scope)
    agent = scope["agent"]
    assert type(agent).__name__ == "Agent"
    same = scope["same"]
    for built in (agent, same):
        assert type(built.config.model).__name__ == "GroundedAnswers"  # type: ignore[attr-defined]
        assert built.config.model.name == "local:gemma-3-270m"  # type: ignore[attr-defined]
    assert type(scope["bare"].config.model).__name__ == "LocalModel"  # type: ignore[attr-defined]
