"""Tracing overhead (issue 15): per-step cost with JSONL recording or OTel spans on vs off.

Runs of N steps (one schema-validated tool call per step, a model that returns prebuilt
replies), median over interleaved repeats. Rows:

* ``floor``    -- a plain-Python loop doing the same appends and the same tool call;
* ``off``      -- ``agent.arun`` with no subscriber (events are not even built);
* ``events``   -- a no-op ``on_event`` subscriber (the cost of building the events);
* ``jsonl``    -- :class:`~loopwright.tracing.JsonlRecorder` (the run's time: lines are
  written by the recorder's thread; ``jsonl_drain`` is the extra time until the file is
  complete, measured separately);
* ``otel``     -- :class:`~loopwright.tracing.otel.OtelSubscriber` with the SDK's
  ``BatchSpanProcessor`` and an exporter that drops the batches (span creation and
  processing, no network);
* ``otlp``     -- the same with the real OTLP/HTTP exporter sending to a local receiver.

Clocks: ``wall``; ``loop_cpu``, the CPU time of the event loop's thread (what the run
itself pays: the recorders only timestamp and queue events there); ``cpu``, the whole
process (including the recorders' threads, which compete for the GIL in this zero-latency
loop). A last section gives each model call 1 ms of latency (real calls take 100x more)
and compares wall time per step: there the recorders' threads work while the run waits.

Goal: traced per-step cost <= 2x the untraced one, with no I/O on the event loop (files
are written and spans exported on background threads; ``max_stall_ms`` is the longest gap
between consecutive steps of a traced run, a blocked loop would show there).

Usage: ``python benchmarks/tracing.py [--quick]``. Prints figures, then ONE JSON line
with ``otel_ratio`` and ``jsonl_ratio``: traced over untraced per-step cost on the event
loop's thread (``loop_cpu``); the other clocks' ratios are in the same line.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from loopwright import Agent, Hooks, Limits, tool
from loopwright.core.events import ModelEvent, ResponseDone
from loopwright.core.messages import Message, StopReason, ToolCallPart, ToolResultPart, Usage
from loopwright.core.protocols import ModelRequest
from loopwright.tracing import JsonlRecorder
from loopwright.tracing.otel import OtelSubscriber

Timing = tuple[float, float, float]  # wall, this thread's CPU, the whole process's CPU


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _call(i: int) -> ToolCallPart:
    return ToolCallPart(f"c{i}", "add", {"a": i, "b": 2}, "")


class ZeroModel:
    """Prebuilt replies: ``steps - 1`` tool calls, then a final answer; no per-call work
    beyond one async-generator step, so the figures are the loop's and the recorders'.
    ``stamps`` gets ``(perf_counter_ns, process_time_ns)`` at each call."""

    name = "zero"

    def __init__(self, steps: int, stamps: list[tuple[int, int]], delay: float = 0.0) -> None:
        self._replies = [
            ResponseDone(Message("assistant", (_call(i),)), StopReason.TOOL_USE, Usage(), "zero")
            for i in range(steps - 1)
        ]
        self._final = ResponseDone(
            Message.assistant("done"), StopReason.FINAL_ANSWER, Usage(), "zero"
        )
        self._i = 0
        self._stamps = stamps
        self._delay = delay

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self._stamps.append((time.perf_counter_ns(), time.process_time_ns()))
        if self._delay:
            await asyncio.sleep(self._delay)
        i = self._i
        self._i = i + 1
        yield self._replies[i] if i < len(self._replies) else self._final


async def _floor(steps: int) -> tuple[float, float]:
    """The same work as a plain loop: append the call, run the tool, append the result."""
    replies = [Message("assistant", (_call(i),)) for i in range(steps - 1)]
    messages: list[Message] = [Message.user("go")]
    w0, c0 = time.perf_counter(), time.thread_time()
    for reply in replies:
        messages.append(reply)
        call = reply.parts[0]
        assert isinstance(call, ToolCallPart)
        value = await add.fn(**call.arguments)
        messages.append(Message("tool", (ToolResultPart(call.id, call.name, str(value)),)))
    messages.append(Message.assistant("done"))
    return time.perf_counter() - w0, time.thread_time() - c0


_LIMITS = Limits(max_turns=None, repeat_limit=None)


class DropExporter(SpanExporter):
    """Counts and drops: the span pipeline without any network."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


def _otlp_provider(url: str) -> TracerProvider:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url + "/v1/traces")))
    return provider


async def _run(
    steps: int, on_event: Callable[[Any], None] | None, delay: float = 0.0
) -> tuple[Timing, float]:
    """One run; returns (wall, cpu) and the longest gap between model calls (ms)."""
    stamps: list[tuple[int, int]] = []
    hooks = Hooks(on_event=on_event) if on_event is not None else None
    model = ZeroModel(steps, stamps, delay=delay)
    agent = Agent(model, [add], limits=_LIMITS, hooks=hooks)
    w0, t0, c0 = time.perf_counter(), time.thread_time(), time.process_time()
    result = await agent.arun("go")
    elapsed = (time.perf_counter() - w0, time.thread_time() - t0, time.process_time() - c0)
    assert result.ok and result.turns == steps, (result.stop, result.detail)
    gaps = [b[0] - a[0] - delay * 1e9 for a, b in itertools.pairwise(stamps)]
    return elapsed, max(gaps) / 1e6


def _lines(directory: Path) -> int:
    with next(directory.glob("*.jsonl")).open() as handle:
        return sum(1 for _ in handle)


def _noop(event: object) -> None:
    return None


async def measure(steps: int, repeats: int, otlp_url: str) -> dict[str, Any]:
    rows = ("floor", "off", "events", "jsonl", "otel", "otlp")
    series: dict[str, list[Timing]] = {k: [] for k in rows}
    stalls: dict[str, list[float]] = {k: [] for k in rows}
    drains: list[float] = []
    drop = DropExporter()
    otel_provider = TracerProvider()
    otel_provider.add_span_processor(BatchSpanProcessor(drop))
    otlp_provider = _otlp_provider(otlp_url)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            floor = await _floor(steps)
            series["floor"].append((floor[0], floor[1], floor[1]))
            for name, sub in (
                ("off", None),
                ("events", _noop),
                ("otel", OtelSubscriber(otel_provider)),
                ("otlp", OtelSubscriber(otlp_provider)),
            ):
                timing, stall = await _run(steps, sub)
                series[name].append(timing)
                stalls[name].append(stall)
            recorder = JsonlRecorder(Path(tmp))
            timing, stall = await _run(steps, recorder)
            series["jsonl"].append(timing)
            stalls["jsonl"].append(stall)
            t0 = time.perf_counter()
            recorder.close()
            drains.append(time.perf_counter() - t0)
        lines = _lines(Path(tmp))
    otel_provider.force_flush()
    otlp_provider.force_flush()
    assert drop.spans >= repeats * (2 * steps), drop.spans  # every span made it through
    otel_provider.shutdown()
    otlp_provider.shutdown()
    out: dict[str, Any] = {"events_per_run": lines - 1}
    for clock, index in (("wall", 0), ("loop_cpu", 1), ("cpu", 2)):
        per = {k: statistics.median(t[index] for t in series[k]) / steps * 1e6 for k in rows}
        print(f"[tracing] N={steps} steps, median of {repeats} interleaved runs, {clock} clock")
        for k in rows:
            ratio = per[k] / per["off"]
            print(f"  {k:<7} {per[k]:8.2f} us/step   {ratio:5.2f}x untraced")
            out[f"{clock}_{k}_us_per_step"] = round(per[k], 3)
        out[f"{clock}_jsonl_ratio"] = round(per["jsonl"] / per["off"], 3)
        out[f"{clock}_otel_ratio"] = round(per["otel"] / per["off"], 3)
        out[f"{clock}_otlp_ratio"] = round(per["otlp"] / per["off"], 3)
        # the recorders' own share: over a run that builds the same events for a no-op
        out[f"{clock}_jsonl_vs_events"] = round(per["jsonl"] / per["events"], 3)
        out[f"{clock}_otel_vs_events"] = round(per["otel"] / per["events"], 3)
    out["jsonl_drain_ms"] = round(statistics.median(drains) * 1e3, 2)
    out["max_stall_ms"] = {k: round(statistics.median(v), 3) for k, v in stalls.items() if v}
    print(f"  JSONL file complete {out['jsonl_drain_ms']} ms after the run returned (median)")
    print(f"  longest gap between two steps (median over runs, ms): {out['max_stall_ms']}")
    return out


async def with_latency(steps: int, repeats: int, delay: float) -> dict[str, Any]:
    """Wall time per step when each model call takes ``delay`` seconds (a real model takes
    far longer): the recorders' threads work while the run waits for the model."""
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DropExporter()))
    series: dict[str, list[float]] = {"off": [], "jsonl": [], "otel": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            series["off"].append((await _run(steps, None, delay))[0][0])
            recorder = JsonlRecorder(Path(tmp))
            series["jsonl"].append((await _run(steps, recorder, delay))[0][0])
            recorder.close()
            series["otel"].append((await _run(steps, OtelSubscriber(provider), delay))[0][0])
    provider.shutdown()
    per = {k: statistics.median(v) / steps * 1e6 for k, v in series.items()}
    print(f"[latency] model calls take {delay * 1e3:g} ms; N={steps}, median of {repeats}, wall")
    out: dict[str, Any] = {}
    for k, v in per.items():
        ratio = v / per["off"]
        print(f"  {k:<7} {v:9.1f} us/step   {ratio:5.3f}x untraced")
        out[f"latency_{k}_us_per_step"] = round(v, 1)
        out[f"latency_{k}_ratio"] = round(ratio, 4)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (smoke test)")
    args = parser.parse_args()
    repeats = 3 if args.quick else 9
    print(f"python {platform.python_version()} on {platform.machine()}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        figures = await measure(args.steps, repeats, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
    figures |= await with_latency(max(50, args.steps // 5), repeats, 0.001)
    result: dict[str, Any] = {
        "benchmark": "tracing",
        "steps": args.steps,
        "repeats": repeats,
        **figures,
        # the headline: what a run pays per step on its own thread (the recorders' work
        # is on background threads); the whole-process CPU ratios are reported too
        "otel_ratio": figures["loop_cpu_otel_ratio"],
        "jsonl_ratio": figures["loop_cpu_jsonl_ratio"],
    }
    result["goals_met"] = {
        "otel_le_2x": result["otel_ratio"] <= 2.0,
        "jsonl_le_2x": result["jsonl_ratio"] <= 2.0,
        "otel_le_2x_with_1ms_model": figures["latency_otel_ratio"] <= 2.0,
        "jsonl_le_2x_with_1ms_model": figures["latency_jsonl_ratio"] <= 2.0,
    }
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    asyncio.run(main())
