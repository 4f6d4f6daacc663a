"""The strategy benchmarks run at a small size (keeps them from rotting)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _last_json(*args: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=300, check=True, cwd=ROOT
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_strategies_benchmark_runs() -> None:
    summary = _last_json(
        "benchmarks/strategies.py", "--repeats", "1", "--runs", "3", "--questions", "5"
    )
    accuracy = summary["sc_accuracy_k20"]
    assert isinstance(accuracy, float) and 0.0 <= accuracy <= 1.0
    assert isinstance(summary["overhead_plan_execute"], float)


def test_reflexion_humaneval_example_passes_with_lessons(tmp_path: Path) -> None:
    summary = _last_json(
        "benchmarks/reflexion_humaneval.py", "--problems", "3", "--store", str(tmp_path / "l.db")
    )
    assert summary["problems"] == 3 and summary["passed"] == 3
