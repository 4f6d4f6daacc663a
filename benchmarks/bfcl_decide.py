"""Call or answer on the BFCL pool, from the request's words alone (no model).

On tools whose schemas give no example values (every BFCL function), the embedded
model's first turn is decided by ``local_decide.first_turn_kind`` before any decoding:
a call, or an answer. So the decision ``bfcl_eval.py`` would see can be counted on a
whole category in seconds, which the model run cannot do on this machine. The counts
to watch move in opposite directions: calls on ``live_simple`` / ``multiple`` (and
``live_multiple``, ``simple``: relevant questions never sampled by ``bfcl_eval.py``)
and answers on ``live_irrelevance`` (and ``irrelevance``).

A held-out sample (``--held-out-seed``, the same sample ``bfcl_eval.py --seed`` runs)
is left out of the pool, so the rules can be developed here and checked once there::

    python benchmarks/bfcl_decide.py --held-out-seed 5 --dev-seeds 1,2,4

Prints ONE JSON line: per category the pool size, the decisions (``tools``,
``answer``, ``None`` = left to the model's score), the good ones (calls on relevant
categories, answers on irrelevance) and the same count on each dev seed's sample.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

from loopwright.providers import local_decide as ld
from loopwright.providers.local import LocalConfig
from loopwright.tools import Tool

CATEGORIES = (
    "live_simple",
    "multiple",
    "live_irrelevance",
    "live_multiple",
    "simple",
    "irrelevance",
)


def _bench() -> Any:
    """``bfcl_eval.py`` loaded by path (its module name is the wheel's package name)."""
    path = Path(__file__).with_name("bfcl_eval.py")
    spec = importlib.util.spec_from_file_location("bfcl_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sample(size: int, seed: int, n: int) -> set[int]:
    """The indices ``bfcl_eval.py --n n --seed seed`` runs."""
    return set(random.Random(seed).sample(range(size), min(n, size)))


def decide(entry: dict[str, Any], table: Any, overlap: float) -> str | None:
    """The first turn's kind for one BFCL question, as ``bfcl_eval.py`` builds it."""
    tools = [
        Tool.from_schema(
            f["name"], f["description"], bench.to_json_schema(f["parameters"], table), _noop
        ).spec
        for f in entry["function"]
    ]
    turn = entry["question"][0]
    request = "\n".join(m["content"] for m in turn if m["role"] == "user")
    return ld.first_turn_kind(tools, request, overlap)


def _noop(**arguments: Any) -> str:
    return "ok"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wheel", type=Path, default=None)
    parser.add_argument("--categories", default=",".join(CATEGORIES))
    parser.add_argument("--held-out-seed", type=int, default=None)
    parser.add_argument("--dev-seeds", default="1,2,4")
    parser.add_argument("--n", type=int, default=50, help="questions per sample")
    args = parser.parse_args()
    wheel_path = args.wheel or next(Path("/tmp/bfcl").glob("bfcl_eval-*.whl"))
    sys.path.insert(0, str(wheel_path))
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI  # type: ignore[import-not-found]

    overlap = LocalConfig().call_overlap
    seeds = [int(s) for s in args.dev_seeds.split(",") if s]
    out: dict[str, Any] = {"wheel": wheel_path.name, "held_out_seed": args.held_out_seed}
    with zipfile.ZipFile(wheel_path) as wheel:
        for category in args.categories.split(","):
            entries = bench._lines(wheel, bench.DATA.format(category))
            held: set[int] = set()
            if args.held_out_seed is not None:
                held = sample(len(entries), args.held_out_seed, args.n)
            dev = {s: sample(len(entries), s, args.n) for s in seeds}
            good_kind = "answer" if "irrelevance" in category else "tools"
            kinds: Counter[str] = Counter()
            per_seed: Counter[int] = Counter()
            for i, entry in enumerate(entries):
                kind = decide(entry, GORILLA_TO_OPENAPI, overlap)
                per_seed.update(s for s, picked in dev.items() if i in picked and kind == good_kind)
                if i not in held:
                    kinds[str(kind)] += 1
            pool = sum(kinds.values())
            out[category] = {
                "pool": pool,
                "decisions": dict(kinds),
                "good": kinds[good_kind],
                "good_rate": round(kinds[good_kind] / pool, 3),
                "dev_seeds": {str(s): per_seed[s] for s in seeds},
            }
    print(json.dumps(out))


bench = _bench()

if __name__ == "__main__":
    main()
