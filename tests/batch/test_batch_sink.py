"""The results sink records each task key exactly once, resumes a file, and refuses to
share it with a second batch."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from loopwright.batch import ResultSink
from loopwright.core.errors import UserError


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_key_is_written_once_however_often_it_is_delivered() -> None:
    out = io.StringIO()
    sink = ResultSink.to_stream(out)
    assert sink.write({"task": "a", "answer": "1"})
    assert not sink.write({"task": "a", "answer": "2"})  # a re-executed task's result
    assert sink.write({"task": "b", "answer": "3"})
    assert [json.loads(x)["answer"] for x in out.getvalue().splitlines()] == ["1", "3"]
    assert sink.duplicates == 1 and "a" in sink and len(sink) == 2


def test_reopening_a_file_resumes_it(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    sink = ResultSink.open(path)
    sink.write({"task": "a"})
    sink.close()
    sink = ResultSink.open(path)
    assert "a" in sink
    assert not sink.write({"task": "a"})
    assert sink.write({"task": "b"})
    sink.close()
    assert [r["task"] for r in _lines(path)] == ["a", "b"]


def test_a_line_cut_off_mid_write_is_dropped_so_its_task_runs_again(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"task": "a"}\n{"task": "b", "ans')
    sink = ResultSink.open(path)
    assert "a" in sink and "b" not in sink
    sink.write({"task": "b", "answer": "whole"})
    sink.close()
    assert _lines(path) == [{"task": "a"}, {"task": "b", "answer": "whole"}]


def test_a_second_batch_on_the_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    first = ResultSink.open(path)
    try:
        with pytest.raises(UserError, match="being written by another batch"):
            ResultSink.open(path)
    finally:
        first.close()
    ResultSink.open(path).close()  # free again once the first one closed


def test_a_file_that_is_not_results_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"task": "a"}\n"just a prompt"\n')
    with pytest.raises(UserError, match=r"results.jsonl:2: not a batch result line"):
        ResultSink.open(path)
