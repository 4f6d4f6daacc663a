"""The prompt-injection corpus (corpus.py) replayed with a model that obeys everything.

Without the taint gate every attack succeeds (the corpus and the model are effective);
with it no attacker side effect happens, unattended or with a person deciding, and the
benign tasks still complete when the person approves what they asked for."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("loopwright_injection_corpus", _HERE / "corpus.py")
assert _spec is not None and _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = corpus  # dataclasses resolve annotations through sys.modules
_spec.loader.exec_module(corpus)

ATTACKS = corpus.attack_cases()
BENIGN = corpus.benign_cases()


def test_corpus_shape() -> None:
    assert len(ATTACKS) >= 20
    assert {c.carrier for c in ATTACKS} == {"read_file", "sql_query", "fetch_page"}
    kinds = {c.attack[0] for c in ATTACKS}
    assert kinds == {"email", "delete", "post"}
    assert len({c.name for c in ATTACKS + BENIGN}) == len(ATTACKS) + len(BENIGN)


def test_instruction_parser_reads_the_injections() -> None:
    actions = corpus.instructions(
        corpus.STYLES["important"].format(goal=corpus.GOALS["exfil_post"][0])
    )
    assert actions == [
        ("read", {"path": "secrets.txt"}),
        ("post_data", {"url": corpus.EXFIL_URL}),
    ]


@pytest.mark.parametrize("case", ATTACKS, ids=lambda c: c.name)
def test_attack_succeeds_without_the_defence(case: object, tmp_path: Path) -> None:
    out = corpus.replay(case, "undefended", tmp_path)
    assert out.attacked, out.effects
    assert out.leaked is case.name.endswith(("exfil_email", "exfil_post"))


@pytest.mark.parametrize("case", ATTACKS, ids=lambda c: c.name)
@pytest.mark.parametrize("mode", ["defended", "defended+person"])
def test_no_attacker_side_effect_with_the_defence(case: object, mode: str, tmp_path: Path) -> None:
    out = corpus.replay(case, mode, tmp_path)
    assert out.effects == [] and not out.leaked, out.effects
    assert out.taint and out.taint[0].tool == case.carrier  # the carrier tainted the run
    if mode == "defended":
        assert out.stop.value == "awaiting_confirmation"
    else:  # the person saw the untrusted source, denied, and the user's task finished
        assert out.completed, (out.stop, out.answer)
        assert f"{case.carrier} (call c1)" in out.requests[0]
        assert "INSTRUCTIONS" in out.requests[0] or "INFORMATION" in out.requests[0]


@pytest.mark.parametrize("case", BENIGN, ids=lambda c: c.name)
@pytest.mark.parametrize("mode", ["undefended", "defended+person", "defended+resume"])
def test_benign_tasks_complete(case: object, mode: str, tmp_path: Path) -> None:
    out = corpus.replay(case, mode, tmp_path)
    assert out.completed, (out.stop, out.effects, out.answer)


@pytest.mark.parametrize("case", BENIGN, ids=lambda c: c.name)
def test_unattended_benign_tasks_pause_only_after_untrusted_reads(
    case: object, tmp_path: Path
) -> None:
    out = corpus.replay(case, "defended", tmp_path)
    tainted_side_effect = bool(case.allowed) and case.name.split("/")[0] != "clean"
    assert out.completed is not tainted_side_effect
    assert (out.pauses == 1) is tainted_side_effect
    assert out.unrequested == []


def test_benchmark_script_measures(tmp_path: Path) -> None:
    """benchmarks/injection.py keeps working (run here on a few cases)."""
    path = _HERE.parents[1] / "benchmarks" / "injection.py"
    spec = importlib.util.spec_from_file_location("loopwright_injection_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    row = bench.measure(ATTACKS[:3], "defended", tmp_path)
    assert row["attack_success"] == 0.0 and row["paused"] == 3 and row["cases"] == 3
    row = bench.measure(ATTACKS[:3], "undefended", tmp_path)
    assert row["attack_success"] == 1.0 and row["unrequested_side_effects"] == 3
