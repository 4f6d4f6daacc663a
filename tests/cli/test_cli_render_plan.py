"""The --stream renderer puts a model's plan/reasoning on its own line."""

from __future__ import annotations

import io

from loopwright.core.events import ReasoningDelta
from loopwright.core.messages import ToolCallPart


def _call(name: str, args: dict, cid: str) -> ToolCallPart:
    return ToolCallPart(cid, name, args, "{}")


def test_stream_renderer_ends_the_plan_line_before_the_tool_call() -> None:
    from loopwright.cli.render import StreamRenderer
    from loopwright.core.events import ModelStreamed, ToolCallStarted

    out = io.StringIO()
    render = StreamRenderer(out)
    render(ModelStreamed(1, ReasoningDelta("Plan: 1 + 2 = add(1, 2)")))
    render(ToolCallStarted(1, _call("add", {"a": 1, "b": 2}, "c1")))
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("add(1, 2)")
    assert "add" in lines[1] and lines[1].lstrip().startswith("→")
