"""Control-loop benchmarks (issue 2, "Performance"): overhead, history growth, concurrency.

Each section compares loopwright against a plain-Python floor measured in the same run:

1. **overhead** -- N steps of one tool call each (a schema-validated ``add`` tool run
   through the real dispatcher), driven by (a) a zero-cost model that returns prebuilt
   replies and (b) :class:`ScriptedModel`. Floor: a plain loop doing the same appends and
   the same tool call. Goal: loop + dispatcher overhead <= 25 us per step.
2. **history growth** -- the duration of step k (time between consecutive model calls),
   median over several runs, at step ~10 and at step ~N. Goal: ratio <= 1.2.
3. **concurrency** -- 1,000 runs in one event loop, 6 model calls each sleeping 20 ms
   (5 tool turns + a final answer). Goal: wall time <= 1.3 x the 120 ms ideal, and peak
   traced memory per in-flight run < 20 KB (tracemalloc, separate pass). Floor: plain
   asyncio tasks doing the same sleeps and appends. Main figure: one agent serving all
   1,000 runs (a server's shape; its model picks each reply from the request, like a
   real model client); also reported: 1,000 separate agents, each with its own
   stateful model (1,000 agents + models + prebuilt replies on the heap, which the
   garbage collector rescans: this measures that fixture as much as the runs).

Usage: ``python benchmarks/loop.py [--quick]``. Prints figures, then ONE JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import platform
import statistics
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from typing import Any

from loopwright import Agent, Limits, ScriptedModel, ToolRegistry, tool
from loopwright.core.events import ModelEvent, ResponseDone
from loopwright.core.messages import (
    Message,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from loopwright.core.protocols import ModelRequest

_USAGE = Usage()


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _call(i: int) -> ToolCallPart:
    args = {"a": i, "b": 2}
    return ToolCallPart(f"c{i}", "add", args, "")


@functools.cache
def _prebuilt(steps: int) -> tuple[list[ResponseDone], ResponseDone]:
    """The replies of a ``steps``-turn script, built once and shared by every model
    that plays it (1,000 models need not hold 1,000 copies: they are immutable)."""
    replies = [
        ResponseDone(Message("assistant", (_call(i),)), StopReason.TOOL_USE, _USAGE, "zero")
        for i in range(steps - 1)
    ]
    final = ResponseDone(
        Message("assistant", (TextPart("done"),)), StopReason.FINAL_ANSWER, _USAGE, "zero"
    )
    return replies, final


class ZeroModel:
    """Returns prebuilt replies: N-1 tool calls then a final answer. No per-call work
    beyond one async-generator step, so the figure is the loop + dispatcher alone.
    ``stamps`` (if a list) receives ``(perf_counter_ns(), process_time_ns())`` at each
    call."""

    name = "zero"

    def __init__(
        self, steps: int, stamps: list[tuple[int, int]] | None = None, delay: float = 0.0
    ) -> None:
        self._replies, self._final = _prebuilt(steps)
        self._i = 0
        self._stamps = stamps
        self._delay = delay

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if self._stamps is not None:
            self._stamps.append((time.perf_counter_ns(), time.process_time_ns()))
        if self._delay:
            await asyncio.sleep(self._delay)
        i = self._i
        self._i = i + 1
        yield self._replies[i] if i < len(self._replies) else self._final


class TurnModel:
    """Stateless: the reply for turn k is chosen from the request itself (a history of
    ``1 + 2k`` messages at turn k), so one model -- and one agent -- serves any number of
    concurrent runs, as a real model client does. Each call sleeps ``delay`` first."""

    name = "turns"

    def __init__(self, calls: int, delay: float) -> None:
        replies, final = _prebuilt(calls)
        self._replies = [*replies, final]
        self._delay = delay

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        await asyncio.sleep(self._delay)
        yield self._replies[min(len(request.messages) // 2, len(self._replies) - 1)]


def _limits() -> Limits:
    # max_turns off so a 1,000-step run can finish; detection stays on (args vary)
    return Limits(max_turns=None)


Timing = tuple[float, float]  # (wall seconds, process CPU seconds)


def _clocks() -> Timing:
    return time.perf_counter(), time.process_time()


def _since(t0: Timing) -> Timing:
    return time.perf_counter() - t0[0], time.process_time() - t0[1]


async def _floor(steps: int) -> Timing:
    """Plain loop: the same appends and the same tool call, nothing else."""
    replies = [Message("assistant", (_call(i),)) for i in range(steps - 1)]
    fn = add.fn
    messages: list[Message] = [Message.user("go")]
    t0 = _clocks()
    for reply in replies:
        messages.append(reply)
        call = reply.parts[0]
        assert isinstance(call, ToolCallPart)
        value = await fn(**call.arguments)
        messages.append(Message("tool", (_result(call, value),)))
    messages.append(Message.assistant("done"))
    return _since(t0)


def _result(call: ToolCallPart, value: object) -> ToolResultPart:
    return ToolResultPart(call.id, call.name, str(value))


async def _loop(model_factory: Callable[[], Any], steps: int) -> Timing:
    agent = Agent(model_factory(), [add], limits=_limits())
    t0 = _clocks()
    result = await agent.arun("go")
    elapsed = _since(t0)
    assert result.turns == steps and result.ok, (result.stop, result.detail)
    return elapsed


def _scripted(steps: int) -> ScriptedModel:
    return ScriptedModel([[_call(i)] for i in range(steps - 1)] + ["done"], record_tail=1)


async def overhead(steps: int, repeats: int) -> dict[str, float]:
    """Per-step time = run time / N, median over ``repeats`` interleaved runs, on two
    clocks: wall (perf_counter) and this process's CPU time (process_time). On a shared
    machine the CPU clock is the fair one: it does not count time other processes ran."""
    series: dict[str, list[Timing]] = {"floor": [], "zero": [], "scripted": []}
    for _ in range(repeats):
        series["floor"].append(await _floor(steps))
        series["zero"].append(await _loop(lambda: ZeroModel(steps), steps))
        series["scripted"].append(await _loop(lambda: _scripted(steps), steps))
    out: dict[str, float] = {}
    for clock, index in (("wall", 0), ("cpu", 1)):
        f, z, s = (
            statistics.median(t[index] for t in series[k]) / steps * 1e6
            for k in ("floor", "zero", "scripted")
        )
        out |= {
            f"{clock}_floor_us_per_step": f,
            f"{clock}_zero_model_us_per_step": z,
            f"{clock}_scripted_us_per_step": s,
            f"{clock}_overhead_zero_us": z - f,
            f"{clock}_overhead_scripted_us": s - f,
        }
        print(f"[overhead] N={steps} steps, median of {repeats} runs, {clock} clock")
        print(f"  plain-Python floor          {f:8.2f} us/step")
        print(f"  loop+dispatcher, zero model {z:8.2f} us/step  (overhead {z - f:.2f} us)")
        print(f"  loop+dispatcher, Scripted   {s:8.2f} us/step  (overhead {s - f:.2f} us)")
    return out


async def history_growth(steps: int, repeats: int) -> dict[str, float]:
    """Duration of step k = time between model calls k and k+1; median over runs for each
    k, then the median over a window of steps: 5..24 ("step 10") and the last 20 ("step
    N"). Reported on the wall clock and on this process's CPU clock (robust to load)."""
    per_step: dict[str, list[list[int]]] = {
        "wall": [[] for _ in range(steps - 1)],
        "cpu": [[] for _ in range(steps - 1)],
    }
    for _ in range(repeats):
        stamps: list[tuple[int, int]] = []
        agent = Agent(ZeroModel(steps, stamps), [add], limits=_limits())
        await agent.arun("go")
        for k in range(steps - 1):
            per_step["wall"][k].append(stamps[k + 1][0] - stamps[k][0])
            per_step["cpu"][k].append(stamps[k + 1][1] - stamps[k][1])
    out: dict[str, float] = {}
    print(f"[history] {repeats} runs x {steps} steps; median step duration")
    for clock, series in per_step.items():
        med = [statistics.median(d) / 1000 for d in series]  # us
        early = statistics.median(med[4:24])
        late = statistics.median(med[-20:])
        out |= {
            f"{clock}_step10_us": early,
            f"{clock}_stepN_us": late,
            f"{clock}_growth_ratio": late / early,
        }
        print(
            f"  {clock:4s} clock: step ~10 {early:6.2f} us, step ~{steps} {late:6.2f} us, "
            f"ratio {late / early:.2f} (goal <= 1.2)"
        )
    return out


async def _plain_run(calls: int, delay: float, sink: list[list[Message]]) -> None:
    messages: list[Message] = [Message.user("go")]
    sink.append(messages)
    for i in range(calls):
        await asyncio.sleep(delay)
        if i < calls - 1:
            messages.append(Message("assistant", (_call(i),)))
            messages.append(Message("tool", (_result(_call(i), i + 2),)))
        else:
            messages.append(Message.assistant("done"))


Mode = str  # "plain" (floor), "shared" (one agent), "agents" (one agent per run)


def _agents(mode: Mode, runs: int, calls: int, delay: float) -> list[Agent]:
    if mode == "shared":
        return [Agent(TurnModel(calls, delay), ToolRegistry([add]), limits=_limits())] * runs
    # each run needs its own script position, so each gets its own (tiny) agent and model;
    # they share one tool registry
    registry = ToolRegistry([add])
    return [Agent(ZeroModel(calls, delay=delay), registry, limits=_limits()) for _ in range(runs)]


async def _concurrent(runs: int, calls: int, delay: float, mode: Mode) -> Timing:
    gc.collect()
    if mode == "plain":
        sink: list[list[Message]] = []
        t0 = _clocks()
        await asyncio.gather(*(_plain_run(calls, delay, sink) for _ in range(runs)))
        return _since(t0)
    agents = _agents(mode, runs, calls, delay)
    t0 = _clocks()
    results = await asyncio.gather(*(a.arun("go") for a in agents))
    elapsed = _since(t0)
    assert all(r.ok and r.turns == calls for r in results)
    return elapsed


async def _concurrent_memory(runs: int, calls: int, delay: float, mode: Mode) -> float:
    """Peak traced bytes per in-flight run (agents/models built before tracing starts)."""
    gc.collect()
    if mode == "plain":
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        sink: list[list[Message]] = []
        await asyncio.gather(*(_plain_run(calls, delay, sink) for _ in range(runs)))
    else:
        run_agents = _agents(mode, runs, calls, delay)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        await asyncio.gather(*(a.arun("go") for a in run_agents))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / runs


async def concurrency(runs: int, repeats: int) -> dict[str, float]:
    calls, delay = 6, 0.020
    ideal = calls * delay
    modes = ("plain", "shared", "agents")
    times: dict[str, list[Timing]] = {m: [] for m in modes}
    for _ in range(repeats):  # interleaved, so load from other processes hits all alike
        for mode in modes:
            times[mode].append(await _concurrent(runs, calls, delay, mode))
    wall = {m: statistics.median(t[0] for t in times[m]) for m in modes}
    cpu = {m: statistics.median(t[1] for t in times[m]) for m in modes}
    mem = {m: await _concurrent_memory(runs, calls, delay, m) for m in modes}
    p = wall["plain"]
    print(f"[concurrency] {runs} runs x {calls} model calls sleeping {delay * 1e3:.0f} ms")
    print(f"  ideal               {ideal * 1e3:8.1f} ms")
    print(f"  plain asyncio floor {p * 1e3:8.1f} ms  ({p / ideal:.2f}x ideal)")
    for mode, label in (("shared", "one agent"), ("agents", "1,000 agents")):
        w = wall[mode]
        print(
            f"  loopwright, {label:12s} {w * 1e3:8.1f} ms  ({w / ideal:.2f}x ideal, goal <= 1.3;"
            f" {w / p:.2f}x the floor)"
        )
    print(
        f"  process CPU time: floor {cpu['plain'] * 1e3:.1f} ms, one agent "
        f"{cpu['shared'] * 1e3:.1f} ms, 1,000 agents {cpu['agents'] * 1e3:.1f} ms"
    )
    print(
        f"  peak memory per in-flight run: plain {mem['plain'] / 1024:.1f} KB, one agent "
        f"{mem['shared'] / 1024:.1f} KB, 1,000 agents {mem['agents'] / 1024:.1f} KB "
        "(goal < 20 KB)"
    )
    w = wall["shared"]
    return {
        "wall_ms": w * 1e3,
        "floor_wall_ms": p * 1e3,
        "ideal_ms": ideal * 1e3,
        "wall_vs_ideal": w / ideal,
        "wall_vs_floor": w / p,
        "cpu_ms": cpu["shared"] * 1e3,
        "floor_cpu_ms": cpu["plain"] * 1e3,
        "cpu_vs_floor": cpu["shared"] / cpu["plain"],
        "mem_per_run_kb": mem["shared"] / 1024,
        "floor_mem_per_run_kb": mem["plain"] / 1024,
        "agents_wall_ms": wall["agents"] * 1e3,
        "agents_wall_vs_ideal": wall["agents"] / ideal,
        "agents_cpu_ms": cpu["agents"] * 1e3,
        "agents_mem_per_run_kb": mem["agents"] / 1024,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=1000, help="concurrent runs")
    parser.add_argument("--quick", action="store_true", help="fewer repeats (smoke test)")
    args = parser.parse_args()
    repeats = 3 if args.quick else 9
    print(f"python {platform.python_version()} on {platform.machine()}")
    result: dict[str, Any] = {"benchmark": "loop", "steps": args.steps}
    result["overhead"] = await overhead(args.steps, repeats)
    result["history"] = await history_growth(args.steps, max(5, repeats))
    result["concurrency"] = await concurrency(args.runs, 3 if args.quick else 5)
    result["goals_met"] = {
        "overhead_le_25us_cpu": result["overhead"]["cpu_overhead_zero_us"] <= 25.0,
        "overhead_le_25us_wall": result["overhead"]["wall_overhead_zero_us"] <= 25.0,
        "growth_le_1_2_cpu": result["history"]["cpu_growth_ratio"] <= 1.2,
        "growth_le_1_2_wall": result["history"]["wall_growth_ratio"] <= 1.2,
        "wall_le_1_3x": result["concurrency"]["wall_vs_ideal"] <= 1.3,
        "mem_lt_20kb": result["concurrency"]["mem_per_run_kb"] < 20.0,
    }
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    asyncio.run(main())
