"""Reasoning strategies: overhead over their raw model calls, and CoT-SC accuracy vs k.

**Overhead.** Each strategy runs with an instant stand-in model (a ``Model`` replaying a
prebuilt reply: no latency, no parsing of its own); the floor is the same number of raw
``complete(model, request)`` calls made directly in the same concurrency shape (one
``asyncio.gather`` per round of concurrent calls), plus the same tool calls for
plan-and-execute. Both are timed over many runs, interleaved, and compared by median;
``overhead = strategy / floor - 1``. The same is measured again with model calls that
take 1 ms (``asyncio.sleep``), closer to any real model.

**Plan-and-execute in parallel.** The prompt document's example plan (two independent
data queries, a comparison, a chart) with demo tools of 100 ms each: the median wall time
against three dependency levels (300 ms; four sequential steps would take 400 ms).

**CoT-SC.** 300 questions; a stand-in answers correctly with probability 0.4 and spreads
wrong answers over 12 values (so the right answer is the most frequent single answer).
Accuracy for k = 1, 5, 10, 20 with every sample drawn, then with adaptive stopping
(the leader cannot be overtaken), then with the confidence rule ``min_lead=3``; samples
are drawn one at a time (``concurrency=1``), so the first rule must reach exactly the
accuracy of the full vote with fewer calls.

Run: ``python benchmarks/strategies.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import os
import random
import statistics
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from loopwright import FunctionModel, Message, ModelRequest, StopReason, tool
from loopwright.core.events import ModelEvent, ResponseDone, RunEvent
from loopwright.core.protocols import complete
from loopwright.strategies import (
    PlanAndExecute,
    SearchConfig,
    SelfConsistency,
    Strategy,
    TreeOfThoughts,
)


class Instant:
    """A model replying instantly with one of a few prebuilt messages, chosen by a
    marker in the prompt (the cheapest possible model: the floor's calls cost only this)."""

    name = "instant"

    def __init__(self, replies: dict[str, str], default: str, delay: float = 0.0) -> None:
        self.delay = delay
        self._done = {
            k: ResponseDone(Message.assistant(v), StopReason.FINAL_ANSWER)
            for k, v in replies.items()
        }
        self._default = ResponseDone(Message.assistant(default), StopReason.FINAL_ANSWER)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if self.delay:
            await asyncio.sleep(self.delay)
        text = request.messages[-1].text
        for marker, done in self._done.items():
            if marker in text:
                yield done
                return
        yield self._default


REQUEST = ModelRequest([Message.user("q")])


async def floor_rounds(model: Instant, rounds: Sequence[int]) -> None:
    """Raw calls: ``rounds[i]`` concurrent calls in round i."""
    for n in rounds:
        if n == 1:
            await complete(model, REQUEST)
        else:
            await asyncio.gather(*(complete(model, REQUEST) for _ in range(n)))


# ---------------------------------------------------------------------- the cases

PLAN = json.dumps(
    {
        "action": "plan",
        "plan": [
            {"step_id": 1, "description": "a", "tool_name": "query", "tool_input": {"q": "a"}, "depends_on": []},
            {"step_id": 2, "description": "b", "tool_name": "query", "tool_input": {"q": "b"}, "depends_on": []},
            {"step_id": 3, "description": "c", "tool_name": "join", "tool_input": {"a": "$step_1_result", "b": "$step_2_result"}, "depends_on": [1, 2]},
        ],
    }
)  # fmt: skip
ACCEPT = json.dumps(
    {
        "evaluation": {k: {"score": 5} for k in ("completeness", "correctness", "format")},
        "overall_pass": True,
        "action": "accept",
    }
)


@tool
async def query(q: str) -> str:
    """Look something up."""
    return q * 2


@tool
async def join(a: str, b: str) -> str:
    """Join two texts."""
    return a + b


Case = tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[None]]]


def watched(
    strategy: Strategy, events: list[RunEvent], calls: set[int]
) -> Callable[[], Awaitable[object]]:
    """A run as users make it: default settings, every event delivered to a subscriber
    (a list, as the CLI's printers and recorders receive them). ``calls`` collects the
    number of model calls of each run."""

    async def run() -> object:
        events.clear()
        result = await strategy.arun("q", on_event=events.append)
        calls.add(result.calls)
        return result

    return run


def cases(delay: float = 0.0) -> dict[str, Case]:
    events: list[RunEvent] = []
    sc_model = Instant({}, "thinking...\nAnswer: 42", delay)
    sc = SelfConsistency(sc_model)  # k = 10, all at once, adaptive stopping
    # adaptive stopping decides after 6 equal answers; replies that have arrived by then
    # are counted, so the number of calls depends on the model's timing (6 for an instant
    # model, 10 when all calls sleep alike): the floor makes as many as the runs made
    sc_calls: set[int] = set()

    tot_model = Instant({"Propose up to": "+1\n+2\n+3"}, "left 3\nlikely", delay)
    tot = TreeOfThoughts(tot_model, search=SearchConfig(depth=3, beam=2, n_generate=3))
    # ToT rounds: per level, the frontier's proposals, then the new states' values
    tot_rounds = [1, 3, 2, 6, 2, 6]

    plan_model = Instant({"task planner": PLAN}, ACCEPT, delay)
    plan = PlanAndExecute(plan_model, [query, join], reflector=plan_model)

    async def plan_floor() -> None:
        await complete(plan_model, ModelRequest([Message.user("task planner")]))
        a, b = await asyncio.gather(query.fn(q="a"), query.fn(q="b"))  # level 1
        await complete(plan_model, REQUEST)
        await join.fn(a=a, b=b)  # level 2
        await complete(plan_model, REQUEST)

    return {
        "self_consistency k=10": (
            watched(sc, events, sc_calls),
            lambda: floor_rounds(sc_model, [max(sc_calls)]),
        ),
        "tree_of_thoughts bfs": (
            watched(tot, events, set()),
            lambda: floor_rounds(tot_model, tot_rounds),
        ),
        "plan_execute (3 steps)": (watched(plan, events, set()), plan_floor),
    }


LEVEL_S = 0.1
"""Latency of each demo tool of the example plan below."""


@tool
async def sales_query(query: str) -> str:
    """Query sales data for a period."""
    await asyncio.sleep(LEVEL_S)
    return json.dumps({"period": query[-7:], "total": 100 if "2025" in query else 80})


@tool
async def sales_compare(current: dict, previous: dict) -> str:
    """Compare two periods."""
    await asyncio.sleep(LEVEL_S)
    return f"{current['period']} vs {previous['period']}: {current['total'] - previous['total']:+d}"


@tool
async def sales_chart(data: str) -> str:
    """Draw a chart."""
    await asyncio.sleep(LEVEL_S)
    return f"[line chart: {data}]"


EXAMPLE_PLAN = json.dumps(
    {
        "analysis": "two queries, a comparison, a chart",
        "action": "plan",
        "plan": [
            {"step_id": 1, "description": "this year", "tool_name": "sales_query",
             "tool_input": {"query": "sales data for 2025-07"}, "depends_on": []},
            {"step_id": 2, "description": "last year", "tool_name": "sales_query",
             "tool_input": {"query": "sales data for 2024-07"}, "depends_on": []},
            {"step_id": 3, "description": "compare", "tool_name": "sales_compare",
             "tool_input": {"current": "$step_1_result", "previous": "$step_2_result"},
             "depends_on": [1, 2]},
            {"step_id": 4, "description": "chart", "tool_name": "sales_chart",
             "tool_input": {"data": "$step_3_result"}, "depends_on": [3]},
        ],
    }
)  # fmt: skip


async def plan_levels(repeats: int) -> list[float]:
    """Wall seconds of the prompt document's example plan (two independent queries, a
    comparison, a chart; tools of 100 ms, instant planner, rule reflector): three
    dependency levels when the queries run in parallel, four when they do not."""
    walls = []
    for _ in range(repeats):
        strategy = PlanAndExecute(
            Instant({}, EXAMPLE_PLAN), [sales_query, sales_compare, sales_chart]
        )
        started = time.perf_counter()
        result = await strategy.arun("Compare July sales with last year's and chart them")
        walls.append(time.perf_counter() - started)
        assert result.ok and "+20" in (result.answer or ""), result.detail
    return walls


async def timed(fn: Callable[[], Awaitable[object]], n: int) -> tuple[float, float]:
    """Wall time and CPU time of this thread per call of ``fn``."""
    started, cpu = time.perf_counter(), time.thread_time()
    for _ in range(n):
        await fn()
    return (time.perf_counter() - started) / n, (time.thread_time() - cpu) / n


async def overheads(repeats: int, n: int, delay: float = 0.0) -> dict[str, dict[str, float]]:
    """Per case: medians of wall and CPU time per run, strategy and floor, and the
    overheads (strategy / floor - 1) of each. On a loaded machine the wall clock mostly
    measures waiting for a core; the CPU time of the event loop's thread is what the run
    itself costs."""
    out = {}
    for name, (strategy, floor) in cases(delay).items():
        await strategy()  # warm caches (prompt files, schemas)
        s_runs, f_runs = [], []
        for _ in range(repeats):
            gc.collect()
            s_runs.append(await timed(strategy, n))
            f_runs.append(await timed(floor, n))
        s, f = (statistics.median(t[0] for t in r) for r in (s_runs, f_runs))
        s_cpu, f_cpu = (statistics.median(t[1] for t in r) for r in (s_runs, f_runs))
        out[name] = {
            "strategy_us": s * 1e6,
            "floor_us": f * 1e6,
            "overhead": s / f - 1,
            "strategy_cpu_us": s_cpu * 1e6,
            "floor_cpu_us": f_cpu * 1e6,
            "overhead_cpu": s_cpu / f_cpu - 1,
        }
    return out


# ---------------------------------------------------------------------- CoT-SC accuracy


def sc_model(p_correct: float = 0.4, spread: int = 12) -> FunctionModel:
    seen: Counter[str] = Counter()

    def reply(messages: Sequence[Message], request: ModelRequest) -> str:
        prompt = messages[-1].text
        seen[prompt] += 1
        key = hashlib.sha256(f"{seen[prompt]}:{prompt}".encode()).digest()
        rng = random.Random(int.from_bytes(key[:8], "big"))
        right = int(prompt.rsplit("#", 1)[1].split()[0])
        answer = right if rng.random() < p_correct else right + rng.randint(1, spread)
        return f"Reasoning...\nAnswer: {answer}"

    return FunctionModel(reply)


async def accuracy(
    k: int, adaptive: bool, questions: int, min_lead: int | None = None
) -> tuple[float, int]:
    model = sc_model()
    # one sample at a time in every mode: the same samples in the same order, so adaptive
    # stopping must give exactly the answers of the full vote
    sc = SelfConsistency(model, k=k, adaptive=adaptive, concurrency=1, min_lead=min_lead)
    right = calls = 0
    for q in range(questions):
        result = await sc.arun(f"Question #{q} ")
        right += result.answer == str(q)
        calls += result.calls
    return right / questions, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--questions", type=int, default=300)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    rows = asyncio.run(overheads(args.repeats, args.runs))
    slow = asyncio.run(overheads(args.repeats, max(10, args.runs // 10), 0.001))
    print(
        f"{'strategy':26} {'wall/run':>9} {'floor':>9} {'overhead':>8} | {'CPU/run':>9} "
        f"{'floor':>9} {'overhead':>8} | with 1 ms calls: wall, floor, overhead; CPU overhead"
    )
    for name, row in rows.items():
        other = slow[name]
        print(
            f"{name:26} {row['strategy_us']:7.1f}us {row['floor_us']:7.1f}us "
            f"{row['overhead']:8.0%} | {row['strategy_cpu_us']:7.1f}us "
            f"{row['floor_cpu_us']:7.1f}us {row['overhead_cpu']:8.0%} | "
            f"{other['strategy_us'] / 1000:5.2f}ms {other['floor_us'] / 1000:5.2f}ms "
            f"{other['overhead']:6.1%}; {other['overhead_cpu']:6.0%}"
        )
    walls = asyncio.run(plan_levels(args.repeats))
    plan_ratio = statistics.median(walls) / (3 * LEVEL_S)
    print(
        f"\nexample plan, tools of {LEVEL_S * 1000:.0f} ms: median wall "
        f"{statistics.median(walls) * 1000:.0f} ms = {plan_ratio:.2f}x three levels "
        f"({statistics.median(walls) / (4 * LEVEL_S):.2f}x four), {len(walls)} runs"
    )
    sc_rows = {}
    print(f"\nCoT-SC, {args.questions} questions, p(correct) = 0.4")
    print(f"{'k':>3} {'all k':>14} {'cannot be overtaken':>24} {'lead of 3 (confidence)':>26}")
    for k in (1, 5, 10, 20):
        acc, calls = asyncio.run(accuracy(k, False, args.questions))
        a_acc, a_calls = asyncio.run(accuracy(k, True, args.questions))
        c_acc, c_calls = asyncio.run(accuracy(k, True, args.questions, min_lead=3))
        sc_rows[k] = {
            "accuracy": acc,
            "calls": calls,
            "adaptive_accuracy": a_acc,
            "adaptive_calls": a_calls,
            "lead3_accuracy": c_acc,
            "lead3_calls": c_calls,
        }
        print(
            f"{k:3} {acc:6.1%} {calls:6} calls {a_acc:6.1%} {a_calls:6} calls "
            f"({1 - a_calls / calls:3.0%} saved) {c_acc:6.1%} {c_calls:6} calls "
            f"({1 - c_calls / calls:3.0%} saved)"
        )
    summary: dict[str, object] = {
        f"overhead_1ms_{n.split()[0]}": round(r["overhead"], 3) for n, r in slow.items()
    }
    summary["plan_wall_vs_three_levels"] = round(plan_ratio, 3)
    summary |= {f"overhead_{n.split()[0]}": round(r["overhead"], 3) for n, r in rows.items()}
    summary |= {
        f"overhead_cpu_{n.split()[0]}": round(r["overhead_cpu"], 3) for n, r in rows.items()
    }
    summary.update({f"sc_accuracy_k{k}": r["accuracy"] for k, r in sc_rows.items()})
    summary.update(
        {
            f"sc_lead3_calls_saved_k{k}": round(1 - r["lead3_calls"] / r["calls"], 3)
            for k, r in sc_rows.items()
        }
    )
    summary.update(
        {
            f"sc_adaptive_calls_saved_k{k}": round(1 - r["adaptive_calls"] / r["calls"], 3)
            for k, r in sc_rows.items()
        }
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
