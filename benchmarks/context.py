"""Context benchmark (issue 5): input tokens and per-turn policy cost over a 200-turn run.

A simulated agent run: a ~500-token system prompt, a task, then N turns of one tool call
each whose result is large (2-4k tokens of JSON rows or log text). Before every model
call the history (the loop's own growing list) goes through ``DefaultPolicy`` with a
32k window and a 2k output reserve, counted exactly with the offline o200k BPE.

Figures:

1. **input tokens**: the sum over turns of the tokens sent with the default policy vs
   sending the full history, next to the ``N*S + T*N(N+1)/2`` formula with the
   measured S and mean T.
2. **per-turn cost**: the wall time of counting + applying the policy at each turn
   (new messages are tokenized once, everything else is a memo hit), median over turns
   190-200 across repeated runs; goal < 1 ms. Floors in the same run: (a) plain Python
   summing a list of precomputed per-message counts (the least any policy could do),
   (b) the naive approach of re-tokenizing the whole history every turn.

Usage: ``python benchmarks/context.py [--quick]``. Prints figures, then ONE JSON line.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from collections.abc import Callable

from loopwright.context import Budget, DefaultPolicy, bpe_counter, estimate_counter
from loopwright.context.tokens import CachedCounter
from loopwright.core import Message, ToolCallPart, ToolResultPart

SYSTEM = (
    "You are a data analyst agent. Use the tools to answer; cite row ids; never invent "
    "numbers; if a tool fails, read the error and adjust the query. " * 14
)


def tool_result(rng: random.Random, turn: int) -> str:
    if turn % 2 == 0:
        rows = [
            {
                "id": turn * 1000 + i,
                "city": rng.choice(["Paris", "Lyon", "Nice"]),
                "sales": rng.randint(100, 99999),
                "note": "quarterly figure, audited",
            }
            for i in range(rng.randint(60, 110))
        ]
        return json.dumps(rows)
    lines = [
        f"2025-01-{i % 28 + 1:02d} INFO worker-{i % 7} processed batch {turn}-{i} in "
        f"{rng.randint(1, 900)} ms"
        for i in range(rng.randint(120, 200))
    ]
    return "\n".join(lines)


def build_turns(n: int, seed: int = 7) -> list[list[Message]]:
    rng = random.Random(seed)
    turns = []
    for t in range(n):
        call = ToolCallPart(
            f"call_{t}",
            "query",
            {"sql": f"select * from sales where batch={t}"},
            json.dumps({"sql": f"select * from sales where batch={t}"}),
        )
        turns.append(
            [
                Message("assistant", (call,)),
                Message.tool_results([ToolResultPart(call.id, "query", tool_result(rng, t))]),
            ]
        )
    return turns


def run_once(
    turns: list[list[Message]], counter_factory: Callable[[], CachedCounter]
) -> dict[str, object]:
    counter = counter_factory()
    policy = DefaultPolicy(budget=Budget(32_000, 2_000), counter=counter, max_result_tokens=400)
    history = [
        Message.system(SYSTEM),
        Message.user("Which city sold most in Q1? Check every batch."),
    ]
    sent_policy = 0
    sent_full = 0
    per_turn: list[float] = []
    per_turn_cpu: list[float] = []
    steady: list[float] = []
    for turn in turns:
        history.extend(turn)
        t0 = time.perf_counter()
        c0 = time.thread_time()
        out = policy(history, None)
        sent = counter.count_messages(out)
        per_turn_cpu.append(time.thread_time() - c0)
        per_turn.append(time.perf_counter() - t0)
        # the same call again: everything memoised, i.e. the cost that grows with history
        t0 = time.perf_counter()
        policy(history, None)
        steady.append(time.perf_counter() - t0)
        sent_policy += sent
        sent_full += counter.count_messages(history)  # cached: not part of the timing
    return {
        "per_turn": per_turn,
        "per_turn_cpu": per_turn_cpu,
        "steady": steady,
        "sent_policy": sent_policy,
        "sent_full": sent_full,
        "misses": counter.misses,
        "system_tokens": counter.count_messages(history[:2]),
        "turn_tokens": [counter.count_messages(t) for t in turns],
        "last_out": len(out),
    }


def _p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * len(values))]


def floors(turns: list[list[Message]]) -> tuple[float, float]:
    """(a) sum of precomputed per-message counts; (b) naive re-tokenization, at turn N."""
    history = [Message.system(SYSTEM)] + [m for t in turns for m in t]
    counts = [len(m.text) for m in history]
    reps = []
    for _ in range(50):
        t0 = time.perf_counter()
        total = 0
        for c in counts:
            total += c
        reps.append(time.perf_counter() - t0)
    naive_counter = bpe_counter()
    naive = []
    for _ in range(3):
        t0 = time.perf_counter()
        for m in history:
            for p in m.parts:
                naive_counter.text_counter(
                    getattr(p, "content", "") or getattr(p, "raw_arguments", "")
                )
        naive.append(time.perf_counter() - t0)
    return statistics.median(reps), statistics.median(naive)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 60 if args.quick else 200
    repeats = 2 if args.quick else 5
    turns = build_turns(n)
    bpe_counter()  # load the o200k table once, outside every timing

    results: dict[str, dict[str, object]] = {}
    for label, factory in (("bpe_o200k", bpe_counter), ("estimate", estimate_counter)):
        runs = [run_once(turns, factory) for _ in range(repeats)]
        tail = [t for r in runs for t in r["per_turn"][-11:]]  # type: ignore[index]
        all_turns = [t for r in runs for t in r["per_turn"]]  # type: ignore[attr-defined]
        first = runs[0]
        s_tok = int(first["system_tokens"])  # type: ignore[call-overload]
        t_mean = statistics.mean(first["turn_tokens"])  # type: ignore[arg-type]
        formula = n * s_tok + t_mean * n * (n + 1) / 2
        results[label] = {
            "per_turn_ms_median_last10": statistics.median(tail) * 1e3,
            "per_turn_ms_p95_all": sorted(all_turns)[int(0.95 * len(all_turns))] * 1e3,
            "per_turn_cpu_ms_p95": _p95([t for r in runs for t in r["per_turn_cpu"]]) * 1e3,  # type: ignore[attr-defined]
            "steady_ms_median_last10": statistics.median(
                [t for r in runs for t in r["steady"][-11:]]  # type: ignore[index]
            )
            * 1e3,
            "per_turn_ms_median_all": statistics.median(all_turns) * 1e3,
            "input_tokens_policy": first["sent_policy"],
            "input_tokens_full": first["sent_full"],
            "formula_tokens": round(formula),
            "ratio_full_over_policy": round(first["sent_full"] / first["sent_policy"], 2),  # type: ignore[operator]
            "tokenizations": first["misses"],
            "S": s_tok,
            "T_mean": round(t_mean),
        }
    floor_sum, naive = floors(turns)
    bpe = results["bpe_o200k"]
    print(
        f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}"
    )
    print(f"{n} turns, {repeats} runs, Budget(32000 window, 2000 reserve), max_result_tokens=400")
    for label, r in results.items():
        print(
            f"[{label}] S={r['S']} T_mean={r['T_mean']} tokens: policy {r['input_tokens_policy']:,}"
            f" vs full {r['input_tokens_full']:,} (formula {r['formula_tokens']:,}); "
            f"x{r['ratio_full_over_policy']} fewer"
        )
        print(
            f"[{label}] per turn: median last 10 turns {r['per_turn_ms_median_last10']:.3f} ms, "
            f"median all {r['per_turn_ms_median_all']:.3f} ms, p95 wall {r['per_turn_ms_p95_all']:.3f} ms"
            f" / cpu {r['per_turn_cpu_ms_p95']:.3f} ms; memoised re-run (history-dependent part) "
            f"{r['steady_ms_median_last10']:.3f} ms; tokenizations {r['tokenizations']} for "
            f"{2 + 2 * n} messages"
        )
    print(
        f"floor (a) sum of {2 * n + 1} precomputed counts: {floor_sum * 1e3:.4f} ms; "
        f"floor (b) naive re-tokenize whole history at turn {n}: {naive * 1e3:.1f} ms "
        f"(x{naive / float(bpe['per_turn_ms_median_last10']) * 1e3:.0f} our per-turn cost)"
    )
    summary = {
        "benchmark": "context",
        "turns": n,
        "input_tokens_default_policy": bpe["input_tokens_policy"],
        "input_tokens_full_history": bpe["input_tokens_full"],
        "formula_tokens": bpe["formula_tokens"],
        "ratio_full_over_policy": bpe["ratio_full_over_policy"],
        "per_turn_ms_median_at_200": round(float(bpe["per_turn_ms_median_last10"]), 4),  # type: ignore[arg-type]
        "per_turn_ms_p95": round(float(bpe["per_turn_ms_p95_all"]), 4),  # type: ignore[arg-type]
        "per_turn_cpu_ms_p95": round(float(bpe["per_turn_cpu_ms_p95"]), 4),  # type: ignore[arg-type]
        "per_turn_ms_memoised_rerun": round(float(bpe["steady_ms_median_last10"]), 4),  # type: ignore[arg-type]
        "per_turn_ms_estimate_counter": round(
            float(results["estimate"]["per_turn_ms_median_last10"]), 4
        ),  # type: ignore[arg-type]
        "floor_sum_ms": round(floor_sum * 1e3, 4),
        "naive_retokenize_ms": round(naive * 1e3, 2),
        "goal_per_turn_ms": 1.0,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
