"""Dispatcher overhead per call vs calling the tool function directly.

Measures, in one process: (a) the plain-Python floor: validate nothing, call the
function, json.dumps the result, build a ToolResultPart; (b) ``Dispatcher.run_one`` on
an async tool, (c) on an ``inline=True`` sync tool, (d) on an ``inline=False`` sync
tool (a worker-thread hop per call), (e) on a plain ``def`` tool with the default
``inline=None`` (on workers until proved fast, then on the loop: docs/tools.md, "Sync
tools"), (f) with arguments as a raw JSON string needing no repair, (g) a single
``jsonschema`` validation of the same arguments for scale. Each figure is the median of
``ROUNDS`` rounds of ``N`` calls, in microseconds per call, both wall-clock (``*_us``)
and process CPU time (``*_cpu_us``, steadier when other processes share the cores).
Ends with one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Annotated

from jsonschema import Draft202012Validator

from loopwright.core.messages import ToolCallPart, ToolResultPart
from loopwright.tools import Dispatcher, ToolRegistry, tool

N = 2_000
ROUNDS = 7


def add_plain(a: int, b: int) -> dict[str, int]:
    return {"sum": a + b}


@tool(name="add_async")
async def add_async(a: Annotated[int, "first"], b: Annotated[int, "second"]) -> dict[str, int]:
    """Add two integers."""
    return {"sum": a + b}


@tool(name="add_inline", inline=True)
def add_inline(a: Annotated[int, "first"], b: Annotated[int, "second"]) -> dict[str, int]:
    """Add two integers."""
    return {"sum": a + b}


@tool(name="add_thread", inline=False)
def add_thread(a: Annotated[int, "first"], b: Annotated[int, "second"]) -> dict[str, int]:
    """Add two integers."""
    return {"sum": a + b}


@tool(name="add_def")
def add_def(a: Annotated[int, "first"], b: Annotated[int, "second"]) -> dict[str, int]:
    """Add two integers."""
    return {"sum": a + b}


Sample = tuple[float, float]  # (wall seconds, cpu seconds)


def _median_us(samples: list[float]) -> float:
    return round(statistics.median(samples) / N * 1e6, 2)


def _clocks() -> Sample:
    return time.perf_counter(), time.process_time()


def _since(start: Sample, scale: float = 1.0) -> Sample:
    wall, cpu = _clocks()
    return (wall - start[0]) * scale, (cpu - start[1]) * scale


async def _bench_dispatch(d: Dispatcher, call: ToolCallPart, n: int) -> Sample:
    t0 = _clocks()
    for _ in range(n):
        out = await d.run_one(call)
    assert not out.result.is_error, out.result.content
    return _since(t0, N / n)


async def _bench_floor(n: int) -> Sample:
    args = {"a": 1, "b": 2}
    t0 = _clocks()
    for i in range(n):
        value = add_plain(**args)
        ToolResultPart(str(i), "add", json.dumps(value))
    return _since(t0)


def _bench_jsonschema(n: int) -> Sample:
    v = Draft202012Validator(add_async.spec.parameters)
    args = {"a": 1, "b": 2}
    t0 = _clocks()
    for _ in range(n):
        list(v.iter_errors(args))
    return _since(t0)


async def main() -> dict[str, float]:
    reg = ToolRegistry([add_async, add_inline, add_thread, add_def])
    d = Dispatcher(reg)
    calls = {
        "async": ToolCallPart("c1", "add_async", {"a": 1, "b": 2}),
        "inline": ToolCallPart("c2", "add_inline", {"a": 1, "b": 2}),
        "raw_json": ToolCallPart("c3", "add_async", {}, '{"a": 1, "b": 2}'),
        "def": ToolCallPart("c5", "add_def", {"a": 1, "b": 2}),
    }
    res: dict[str, list[Sample]] = {k: [] for k in [*calls, "thread", "floor", "jsonschema"]}
    for _ in range(ROUNDS):
        res["floor"].append(await _bench_floor(N))
        for name, call in calls.items():
            res[name].append(await _bench_dispatch(d, call, N))
        thread_call = ToolCallPart("c4", "add_thread", {"a": 1, "b": 2})
        res["thread"].append(await _bench_dispatch(d, thread_call, N // 4))
        res["jsonschema"].append(_bench_jsonschema(N))
    out: dict[str, float] = {}
    for k, v in res.items():
        out[f"{k}_us"] = _median_us([w for w, _ in v])
        out[f"{k}_cpu_us"] = _median_us([c for _, c in v])
    for k in ("async", "inline", "raw_json", "def", "thread", "jsonschema"):
        out[f"{k}_ratio"] = round(out[f"{k}_us"] / out["floor_us"], 1)
        out[f"{k}_cpu_ratio"] = round(out[f"{k}_cpu_us"] / out["floor_cpu_us"], 1)
        out[f"{k}_overhead_us"] = round(out[f"{k}_us"] - out["floor_us"], 2)
    return out


if __name__ == "__main__":
    figures = asyncio.run(main())
    for key, value in figures.items():
        print(f"{key:>22}: {value}")
    print(json.dumps({"benchmark": "dispatch", "n": N, "rounds": ROUNDS, **figures}))
