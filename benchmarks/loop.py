"""Control-loop benchmarks on the path users take: the public ``Agent``, a
``FunctionModel`` that answers from the last message, default settings, GC on.

1. **per step** -- one run of N steps (N = 200 and 1,000), each step one model call and
   one tool call; wall time per step, median of several runs, for: an ``async def``
   tool, a plain ``def`` tool, ``async def`` with one ``on_event`` subscriber, with
   ``stream()``, and through the synchronous ``Agent.run()``. Floor: a plain-Python loop
   doing the same appends and tool calls, in the same process. Goals: <= 25 us per step
   for either tool kind; a subscriber or ``stream()`` adds <= 10 us.
2. **history growth** -- duration of step ~10 vs step ~1,000 (time between consecutive
   model calls), median over runs. Goal: <= 1.2x.
3. **concurrency** -- 1,000 runs in one event loop, 6 model calls each sleeping 20 ms
   (5 tool turns + an answer), default ``Limits()``; the model function is an ``async
   def`` that awaits ``asyncio.sleep(0.02)`` (what a user's own stub writes), and a
   second line gives the same burst with ``Reply(..., delay=0.02)``. Goal: wall <= 1.3x
   the 120 ms ideal. Floor: plain asyncio tasks doing the same sleeps and appends.
4. **tracked objects** -- GC-tracked objects each of 1,000 in-flight runs holds (what the
   collections a burst of runs triggers walk), against the same plain tasks.

Usage: ``python benchmarks/loop.py [--quick]``. Prints figures, then ONE JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from loopwright import Agent, FunctionModel, Hooks, Limits, Reply, tool
from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.protocols import ModelRequest


@tool
async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def add_plain(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


_LIMITS = Limits(max_turns=None, repeat_limit=None)


def _replier(
    steps: int, name: str, delay: float = 0.0, awaited: bool = False
) -> Callable[..., object]:
    """Answers from the last message: a tool call until ``steps`` calls were made, then
    the final answer. ``delay``: the model's latency, as ``Reply(..., delay=)`` or, with
    ``awaited``, as what a user's own stub writes: an ``async def`` that awaits
    ``asyncio.sleep(delay)`` and returns the reply."""

    def reply(messages: Sequence[Message], request: ModelRequest) -> object:
        turn = len(messages) // 2  # user, then (assistant, tool) per step
        content: object = (
            [ToolCallPart(f"c{turn}", name, {"a": turn, "b": 2})] if turn < steps else "done"
        )
        return Reply(content, delay=delay) if delay else content  # type: ignore[arg-type]

    if not awaited:
        return reply
    answer = _replier(steps, name)

    async def slept(messages: Sequence[Message], request: ModelRequest) -> object:
        await asyncio.sleep(delay)
        return answer(messages, request)

    return slept


def _agent(
    steps: int,
    tool_fn: Any,
    hooks: Hooks | None = None,
    delay: float = 0.0,
    limits: bool = True,
    awaited: bool = False,
) -> Agent:
    """``limits=False``: the default ``Limits()`` (20 turns, repetition detection on),
    what a user gets; the per-step cases need more than 20 turns."""
    model = FunctionModel(_replier(steps, tool_fn.name, delay, awaited))  # type: ignore[arg-type]
    return Agent(model, [tool_fn], limits=_LIMITS if limits else Limits(), hooks=hooks)


Timing = tuple[float, float]
"""(wall seconds, CPU seconds of this process): under load the wall clock also counts
time spent waiting for a core; the CPU time does not."""


def _clocks() -> Timing:
    return time.perf_counter(), time.process_time()


def _since(t0: Timing) -> Timing:
    return time.perf_counter() - t0[0], time.process_time() - t0[1]


def floor(steps: int) -> Timing:
    """The same work written as a plain loop: append the call, run the tool, append the
    result."""
    t0 = _clocks()
    messages: list[Message] = [Message.user("go")]
    for i in range(steps):
        call = ToolCallPart(f"c{i}", "add", {"a": i, "b": 2})
        messages.append(Message("assistant", (call,)))
        value = call.arguments["a"] + call.arguments["b"]
        messages.append(Message.tool_results(()) if value is None else Message.user(str(value)))
    return _since(t0)


async def _one(case: str, steps: int) -> Timing:
    if case == "def":
        agent = _agent(steps, add_plain)
    elif case == "subscriber":
        seen: list[object] = []
        agent = _agent(steps, add_async, Hooks(on_event=seen.append))
    else:
        agent = _agent(steps, add_async)
    t0 = _clocks()
    if case == "stream":
        async for _ in agent.stream("go"):
            pass
    else:
        result = await agent.arun("go")
        assert result.turns == steps + 1, (case, result.stop, result.detail)
    return _since(t0)


def _sync_run(steps: int) -> Timing:
    agent = _agent(steps, add_async)
    t0 = _clocks()
    result = agent.run("go")
    elapsed = _since(t0)
    assert result.turns == steps + 1
    return elapsed


CASES = ("async def", "def", "subscriber", "stream", "run() sync")


def per_step(steps: int, repeats: int) -> dict[str, dict[str, float]]:
    """Median microseconds per step (wall and CPU) for every case, interleaved."""
    times: dict[str, list[Timing]] = {c: [] for c in ("floor", *CASES)}
    for _ in range(repeats):
        times["floor"].append(floor(steps))
        for case in CASES:
            if case == "run() sync":
                times[case].append(_sync_run(steps))
            else:
                times[case].append(asyncio.run(_one(case, steps)))
    return {
        c: {
            "wall": statistics.median(t[0] for t in v) / steps * 1e6,
            "cpu": statistics.median(t[1] for t in v) / steps * 1e6,
        }
        for c, v in times.items()
    }


async def _growth_run(steps: int) -> list[float]:
    stamps: list[float] = []
    inner = _replier(steps, add_async.name)

    def reply(messages: Sequence[Message], request: ModelRequest) -> object:
        stamps.append(time.perf_counter())
        return inner(messages, request)

    await Agent(FunctionModel(reply), [add_async], limits=_LIMITS).arun("go")  # type: ignore[arg-type]
    return [b - a for a, b in itertools.pairwise(stamps)]


def history_growth(steps: int, repeats: int) -> dict[str, float]:
    early: list[float] = []
    late: list[float] = []
    for _ in range(repeats):
        gaps = asyncio.run(_growth_run(steps))
        early.append(statistics.median(gaps[5:15]))
        late.append(statistics.median(gaps[-10:]))
    e, lt = statistics.median(early), statistics.median(late)
    return {"step_10_us": e * 1e6, "step_n_us": lt * 1e6, "ratio": lt / e}


async def _plain_task(calls: int, delay: float) -> None:
    messages: list[Message] = [Message.user("go")]
    for i in range(calls):
        await asyncio.sleep(delay)
        if i < calls - 1:
            messages.append(Message("assistant", (ToolCallPart(f"c{i}", "add", {"a": i}),)))
            messages.append(Message.user(str(i + 2)))


async def _concurrent(
    runs: int, calls: int, delay: float, plain: bool, awaited: bool = True
) -> Timing:
    """``runs`` runs of ``calls`` model calls of ``delay`` seconds; ``awaited``: the model
    function awaits ``asyncio.sleep`` (the user's path), else it returns ``Reply(delay=)``."""
    agent = _agent(calls - 1, add_async, delay=delay, limits=False, awaited=awaited)
    t0 = _clocks()
    if plain:
        await asyncio.gather(*(_plain_task(calls, delay) for _ in range(runs)))
    else:
        results = await asyncio.gather(*(agent.arun("go") for _ in range(runs)))
        assert all(r.ok for r in results)
    return _since(t0)


class _CollectorClock:
    """CPU seconds the garbage collector spent while installed (``gc.callbacks``), in all
    and per generation (0 young, 1 middle, 2 full), with the number of collections."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.by_generation = [[0, 0.0] for _ in range(3)]  # [collections, seconds]
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            spent = time.process_time() - self._start
            self.seconds += spent
            generation = self.by_generation[info["generation"]]
            generation[0] += 1
            generation[1] += spent

    def measure(self, fn: Callable[[], Timing]) -> tuple[float, float, float, list[list[float]]]:
        """``fn()``'s (wall, CPU), the collector's CPU seconds within it and its
        ``[collections, seconds]`` per generation."""
        self.seconds = 0.0
        self.by_generation = [[0, 0.0] for _ in range(3)]
        gc.callbacks.append(self)
        try:
            wall, cpu = fn()
        finally:
            gc.callbacks.remove(self)
        return wall, cpu, self.seconds, self.by_generation


def concurrency(runs: int, repeats: int) -> dict[str, float]:
    """Median wall and CPU milliseconds of ``runs`` concurrent runs and of the plain
    asyncio floor, interleaved, and the garbage collector's share of the CPU. Under load
    the wall clock also counts time spent waiting for a core; the CPU time is the work
    the runs cost. The headline (``agent_*``) is the user's path: the model function
    awaits ``asyncio.sleep``; ``reply_delay_*`` is the same burst with the latency given
    as ``Reply(..., delay=)``, the double's own way to wait."""
    clock = _CollectorClock()
    cases: dict[str, list[tuple[float, float, float, list[list[float]]]]] = {
        "plain": [],
        "agent": [],
        "reply_delay": [],
    }
    for _ in range(repeats):
        for case, bench in cases.items():
            plain, awaited = case == "plain", case == "agent"
            bench.append(
                clock.measure(
                    lambda: asyncio.run(_concurrent(runs, 6, 0.02, plain, awaited))  # noqa: B023
                )
            )
    out: dict[str, float] = {"ideal_ms": 120.0}
    for case, bench in cases.items():
        out[f"{case}_ms"] = statistics.median(t[0] for t in bench) * 1e3
        out[f"{case}_cpu_ms"] = statistics.median(t[1] for t in bench) * 1e3
        out[f"{case}_gc_ms"] = statistics.median(t[2] for t in bench) * 1e3
        for g in range(3):  # young, middle, full: how many, and the collector's CPU in them
            out[f"{case}_gc{g}_n"] = statistics.median(t[3][g][0] for t in bench)
            out[f"{case}_gc{g}_ms"] = statistics.median(t[3][g][1] for t in bench) * 1e3
    out["ratio"] = out["agent_ms"] / 120.0
    out["reply_delay_ratio"] = out["reply_delay_ms"] / 120.0
    return out


def tracked_per_run(runs: int) -> dict[str, float]:
    """Objects the garbage collector tracks per in-flight run: ``gc.get_objects()``
    counted when the first run starts its third model call (every run is then waiting
    in its second or third), minus the count before the runs started, over ``runs``; the
    same for the plain-asyncio floor. The full collections a burst of runs triggers walk
    all of these (benchmarks/notes/loop.md, "concurrency")."""
    counts: dict[str, int] = {}
    calls = itertools.count(1)
    inner = _replier(5, add_async.name, 0.02)

    def reply(messages: Sequence[Message], request: ModelRequest) -> object:
        if next(calls) == 2 * runs + 1:
            counts["agent"] = len(gc.get_objects())
        return inner(messages, request)

    async def plain_task(delay: float) -> None:
        messages: list[Message] = [Message.user("go")]
        for i in range(6):
            if next(calls) == 2 * runs + 1:
                counts["plain"] = len(gc.get_objects())
            await asyncio.sleep(delay)
            messages.append(Message("assistant", (ToolCallPart(f"c{i}", "add", {"a": i}),)))
            messages.append(Message.user(str(i + 2)))

    async def measure(plain: bool) -> int:
        agent = Agent(FunctionModel(reply), [add_async])  # type: ignore[arg-type]
        gc.collect()
        before = len(gc.get_objects())
        if plain:
            await asyncio.gather(*(plain_task(0.02) for _ in range(runs)))
        else:
            await asyncio.gather(*(agent.arun("go") for _ in range(runs)))
        return before

    out = {}
    for case in ("plain", "agent"):
        calls = itertools.count(1)
        before = asyncio.run(measure(case == "plain"))
        out[f"{case}_objects"] = (counts[case] - before) / runs
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    out: dict[str, Any] = {"python": platform.python_version(), "load": os.getloadavg()[0]}
    for steps in (200, 1000):
        figures = per_step(steps, repeats)
        out[f"per_step_us_{steps}"] = figures
        print(f"per step, N = {steps} (median of {repeats}, us):   wall      cpu")
        base = figures["async def"]["cpu"]
        for case, us in figures.items():
            extra = "" if case == "floor" else f"  ({us['cpu'] - base:+.1f} cpu vs async def)"
            print(f"  {case:<12} {us['wall']:8.2f} {us['cpu']:8.2f}{extra}")
    growth = history_growth(1000, repeats)
    out["history_growth"] = growth
    print(
        f"step 10: {growth['step_10_us']:.1f} us, step 1000: {growth['step_n_us']:.1f} us, "
        f"ratio {growth['ratio']:.2f}"
    )
    conc = concurrency(1000, max(3, repeats // 2))
    out["concurrency"] = conc
    print(
        f"1,000 runs x 6 calls x 20 ms (the model function awaits asyncio.sleep): "
        f"{conc['agent_ms']:.1f} ms = {conc['ratio']:.2f}x ideal "
        f"(plain asyncio {conc['plain_ms']:.1f} ms = {conc['plain_ms'] / 120:.2f}x); CPU "
        f"{conc['agent_cpu_ms']:.1f} ms vs {conc['plain_cpu_ms']:.1f} ms, of which the garbage "
        f"collector {conc['agent_gc_ms']:.1f} vs {conc['plain_gc_ms']:.1f} ms"
    )
    for case in ("agent", "plain"):
        gens = ", ".join(
            f"{conc[f'{case}_gc{g}_n']:.0f} {kind} {conc[f'{case}_gc{g}_ms']:.1f} ms"
            for g, kind in enumerate(("young", "middle", "full"))
        )
        print(f"  collections, {case}: {gens}")
    print(
        f"  the same with Reply(delay=0.02): {conc['reply_delay_ms']:.1f} ms = "
        f"{conc['reply_delay_ratio']:.2f}x ideal; CPU {conc['reply_delay_cpu_ms']:.1f} ms, "
        f"the collector {conc['reply_delay_gc_ms']:.1f} ms"
    )
    tracked = tracked_per_run(1000)
    out["tracked_per_run"] = tracked
    print(
        f"GC-tracked objects per in-flight run: {tracked['agent_objects']:.1f} "
        f"(plain asyncio {tracked['plain_objects']:.1f})"
    )
    print(f"load average (1 min): {out['load']:.2f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
