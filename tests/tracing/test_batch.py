"""The batch runner: bounded concurrency, result lines, the progress line."""

from __future__ import annotations

import asyncio
import io
import json

from loopwright import Agent, FunctionModel
from loopwright.cli.batch import BatchItem, Progress, run_batch


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_at_most_n_runs_at_a_time() -> None:
    state = {"now": 0, "peak": 0}

    async def reply(messages, request):  # type: ignore[no-untyped-def]
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return "ok " + messages[-1].text

    agent = Agent(FunctionModel(reply))
    items = [BatchItem(i, f"p{i}") for i in range(12)]
    out = io.StringIO()
    codes = asyncio.run(run_batch(agent, items, 3, out, Progress(12, io.StringIO())))
    assert state["peak"] == 3
    assert codes == [0] * 12
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert sorted(x["answer"] for x in lines) == sorted(f"ok p{i}" for i in range(12))


def test_progress_redraws_one_line_on_a_terminal() -> None:
    stream = _Tty()
    progress = Progress(2, stream)
    progress.add(True, 0.25)
    progress.add(False, 0.5)
    text = stream.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    assert "batch 2/2" in text and "errors 1" in text and "cost $0.7500" in text


def test_progress_without_a_terminal_is_rate_limited() -> None:
    stream = io.StringIO()
    progress = Progress(1000, stream, interval=3600)
    for _ in range(999):
        progress.add(True, 0.0)
    assert stream.getvalue().count("\n") == 1  # the first line only
    progress.add(True, 0.0)
    assert stream.getvalue().splitlines()[-1].startswith("batch 1000/1000")
