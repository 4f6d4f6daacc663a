"""Reading traces back: damaged files, unfinished runs, run-id lookup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopwright import Agent, Hooks, ScriptedModel
from loopwright.core.errors import RateLimited
from loopwright.core.messages import Usage
from loopwright.providers.scripted import Reply
from loopwright.tracing import JsonlRecorder
from loopwright.tracing.spans import TraceError, find_trace, load_trace


async def _no_sleep(_: float) -> None:
    return None


def _record(directory: Path, *replies: object) -> Path:
    recorder = JsonlRecorder(directory)
    Agent(ScriptedModel(list(replies)), hooks=Hooks(on_event=recorder), sleep=_no_sleep).run("q")
    recorder.close()
    return recorder.paths[-1]


def test_a_truncated_last_line_is_skipped(tmp_path: Path) -> None:
    path = _record(tmp_path, "answer")
    text = path.read_text()
    path.write_text(text + '{"seq": 99, "t": 1.0, "type": "mod')  # died mid-write
    trace = load_trace(path)
    assert trace.result is not None and trace.result["answer"] == "answer"


def test_a_damaged_middle_line_is_an_error(tmp_path: Path) -> None:
    path = _record(tmp_path, "answer")
    lines = path.read_text().splitlines()
    lines[2] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=":3: not JSON"):
        load_trace(path)
    other = tmp_path / "notes.jsonl"
    other.write_text('{"hello": 1}\n')
    with pytest.raises(TraceError, match="not a loopwright trace header"):
        load_trace(other)
    prose = tmp_path / "prose.jsonl"  # one line, not JSON: was called "empty file"
    prose.write_text("not json\n")
    with pytest.raises(TraceError, match=":1: not JSON"):
        load_trace(prose)
    binary = tmp_path / "binary.jsonl"  # was a bare UnicodeDecodeError (a CLI internal error)
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TraceError, match="not UTF-8"):
        load_trace(binary)


def test_an_unfinished_run_sums_its_calls(tmp_path: Path) -> None:
    path = _record(tmp_path, Reply("a", usage=Usage(10, 2, cost=0.5)))
    lines = [x for x in path.read_text().splitlines() if '"run_finished"' not in x]
    path.write_text("\n".join(lines) + "\n")
    trace = load_trace(path)
    assert trace.result is None and trace.spans[0].detail["finished"] is False
    assert trace.totals.input_tokens == 10 and trace.totals.cost == pytest.approx(0.5)


def test_failed_attempts_count_in_the_totals(tmp_path: Path) -> None:
    path = _record(tmp_path, RateLimited("429"), Reply("ok", usage=Usage(7, 1)))
    trace = load_trace(path)
    assert trace.totals.model_calls == 2 and trace.totals.errors == 1
    assert [s.error for s in trace.spans if s.kind == "chat"] == ["rate_limited", None]


def test_find_trace_by_id_prefix_and_path(tmp_path: Path) -> None:
    a = _record(tmp_path, "a")
    b = _record(tmp_path, "b")
    assert find_trace(a.stem, [tmp_path]) == a
    assert find_trace(str(b), []) == b
    common = "".join(x for x, y in zip(a.stem, b.stem, strict=False) if x == y)[:8]
    with pytest.raises(TraceError, match="matches several"):
        find_trace(common, [tmp_path])
    with pytest.raises(TraceError, match="no trace"):
        find_trace("zzz", [tmp_path])
    assert json.loads(a.read_text().splitlines()[0])["run_id"] == a.stem
