"""Prompt-injection defence: attack success and benign completion, with and without taint.

Replays the corpus of ``tests/injection/corpus.py`` (24 injection cases built like
AgentDojo's injection tasks over ``read_file``, ``sql_query`` and a fake web tool; 10
benign tasks that use side-effect tools on purpose) with a stand-in model that obeys
every instruction it reads, in four modes:

* ``undefended`` -- unattended (confirmations auto-approved), taint gate off;
* ``defended`` -- unattended, taint gate on (the default): a side-effect call after an
  untrusted read pauses the run;
* ``defended+person`` -- the gate asks a person, who approves what the task asked for;
* ``defended+resume`` -- unattended; every pause is saved to SQLite, loaded back and
  resumed with the person's decisions.

Prints a table, then one JSON line with every figure. Usage:
``python benchmarks/injection.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

_spec = importlib.util.spec_from_file_location(
    "loopwright_injection_corpus", ROOT / "tests" / "injection" / "corpus.py"
)
assert _spec is not None and _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = corpus
_spec.loader.exec_module(corpus)


def _rate(hits: int, total: int) -> float:
    return round(hits / total, 3) if total else 0.0


def measure(cases: list[object], mode: str, base: Path) -> dict[str, object]:
    base = Path(tempfile.mkdtemp(dir=base))
    outcomes = []
    started = time.perf_counter()
    for i, case in enumerate(cases):
        work = base / f"{mode}-{i}"
        work.mkdir()
        outcomes.append(corpus.replay(case, mode, work))
    elapsed = time.perf_counter() - started
    return {
        "cases": len(outcomes),
        "attack_success": _rate(sum(o.attacked for o in outcomes), len(outcomes)),
        "unrequested_side_effects": sum(len(o.unrequested) for o in outcomes),
        "secret_leaked": sum(o.leaked for o in outcomes),
        "completed": _rate(sum(o.completed for o in outcomes), len(outcomes)),
        "paused": sum(o.stop.value == "awaiting_confirmation" for o in outcomes),
        "person_asked": sum(o.asked for o in outcomes),
        "ms_per_case": round(elapsed * 1000 / max(len(outcomes), 1), 2),
    }


def main() -> None:
    attacks, benign = corpus.attack_cases(), corpus.benign_cases()
    report: dict[str, object] = {"attack_cases": len(attacks), "benign_cases": len(benign)}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for mode in ("undefended", "defended", "defended+person"):
            report[f"attack/{mode}"] = measure(attacks, mode, base)
        for mode in corpus.MODES:
            report[f"benign/{mode}"] = measure(benign, mode, base)
    report["loadavg_1m"] = round(os.getloadavg()[0], 2)
    print(f"{len(attacks)} injection cases, {len(benign)} benign tasks; obedient stand-in model")
    header = f"{'set/mode':<24}{'attack ok':>10}{'unrequested':>12}{'leaks':>6}{'completed':>10}"
    print(header + f"{'paused':>8}{'asked':>7}{'ms/case':>9}")
    for name, row in report.items():
        if not isinstance(row, dict):
            continue
        print(
            f"{name:<24}{row['attack_success']:>10.0%}{row['unrequested_side_effects']:>12}"
            f"{row['secret_leaked']:>6}{row['completed']:>10.0%}{row['paused']:>8}{row['person_asked']:>7}"
            f"{row['ms_per_case']:>9}"
        )
    print(f"load average (1 min): {report['loadavg_1m']}")
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
