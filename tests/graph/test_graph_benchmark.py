"""benchmarks/graph.py keeps working: its graphs run on loopwright at a small size (the
LangGraph side is exercised only when the benchmark itself is run)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import loopwright.graph as lw

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "graph.py"


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_graph", PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_graph"] = module
    spec.loader.exec_module(module)
    return module


def test_benchmark_graphs_run_at_a_small_size(tmp_path: Path) -> None:
    bench = _bench()
    a = bench.section_a(None, 21, 1)
    assert set(a) == {"floor", "loopwright"}
    assert a["loopwright"]["us_per_step"] > 0
    assert bench.time_fanout(bench.build_fanout(lw, 50), 50, 1) > 0
    c = bench.section_c(None, 21, 1, str(tmp_path))
    assert c["loopwright"]["us_per_step"] > 0
