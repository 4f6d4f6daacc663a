"""Reading JSONL traces back: the span tree, totals and prompt versions of one run.

:func:`load_trace` parses a trace file written by :class:`~loopwright.tracing.JsonlRecorder`
into a :class:`Trace`: its header, its raw event lines, and :class:`SpanRecord` values in
the same shape as the OpenTelemetry export (one ``run`` span, a ``chat`` span per model
call attempt, an ``execute_tool`` span per tool call), with times in seconds from the
start of the run. ``trace show`` and ``trace view`` are built on it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from loopwright.core.messages import JSONValue

SpanKind = Literal["run", "chat", "tool", "step"]


class TraceError(ValueError):
    """A file is not a loopwright JSONL trace (or is damaged)."""


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One span. ``start``/``end`` are seconds from the run's first event; ``error`` is
    the error type (a tool error kind, a provider error kind, a stop reason) or None."""

    id: int
    parent: int | None
    kind: SpanKind
    name: str
    start: float
    end: float
    error: str | None = None
    detail: Mapping[str, JSONValue] = field(default_factory=dict)

    @property
    def duration(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass(frozen=True, slots=True)
class Totals:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float = 0.0
    model_calls: int = 0
    tool_calls: int = 0
    errors: int = 0


@dataclass(frozen=True, slots=True)
class Trace:
    path: Path
    header: Mapping[str, JSONValue]
    events: Sequence[Mapping[str, JSONValue]]
    spans: Sequence[SpanRecord]
    totals: Totals
    prompts: tuple[str, ...]
    result: Mapping[str, JSONValue] | None
    messages: Sequence[JSONValue] = ()
    """Every message appended during the run, in order (chat spans' ``input_from`` /
    ``input_to`` index into it)."""

    @property
    def run_id(self) -> str:
        return str(self.header.get("run_id") or self.path.stem)

    @property
    def session_id(self) -> str | None:
        sid = self.header.get("session_id")
        return None if sid is None else str(sid)


def read_lines(path: Path) -> tuple[dict[str, JSONValue], list[dict[str, JSONValue]]]:
    """The header and the event lines of a trace file (a truncated last line, from a
    process that died mid-write, is skipped)."""
    header: dict[str, JSONValue] | None = None
    events: list[dict[str, JSONValue]] = []
    try:  # a trace is written as UTF-8 whatever its text held (lone surrogates replaced)
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except UnicodeDecodeError as exc:
        raise TraceError(
            f"{path}: not UTF-8 text (byte {exc.start}); is this a loopwright trace?"
        ) from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            if number == len(lines) and header is not None:  # only a header can precede it
                break
            raise TraceError(f"{path}:{number}: not JSON; is this a loopwright trace?") from None
        if header is None:
            if not isinstance(data, dict) or data.get("type") != "trace_header":
                raise TraceError(f"{path}: the first line is not a loopwright trace header")
            header = data
            continue
        events.append(data)
    if header is None:
        raise TraceError(f"{path}: empty file, not a loopwright trace")
    return header, events


def load_trace(path: str | os.PathLike[str]) -> Trace:
    path = Path(path)
    header, events = read_lines(path)
    builder = _Builder(events)
    spans = builder.build()
    return Trace(
        path,
        header,
        events,
        spans,
        builder.totals(),
        builder.prompts(),
        builder.result,
        builder.history,
    )


class _Builder:
    """One pass over the events, pairing starts with ends."""

    def __init__(self, events: Sequence[Mapping[str, JSONValue]]) -> None:
        self.events = events
        self.t0 = float(events[0]["t"]) if events else 0.0  # type: ignore[arg-type]
        self.spans: list[SpanRecord] = []
        self.history: list[JSONValue] = []
        self.chats: dict[int, dict[str, JSONValue]] = {}  # open model calls by turn
        self.tools: dict[str, tuple[float, Mapping[str, JSONValue]]] = {}
        self.fingerprints: dict[str, None] = {}
        self.result: Mapping[str, JSONValue] | None = None
        self.errors = 0

    def build(self) -> list[SpanRecord]:
        end = 0.0
        for event in self.events:
            t = float(event.get("t", self.t0)) - self.t0  # type: ignore[arg-type]
            end = max(end, t)
            handler = getattr(self, "on_" + str(event.get("type")), None)
            if handler is not None:
                handler(event, t)
        run = self._run_span(end)
        return [run, *sorted(self.spans, key=lambda s: (s.start, s.id))]

    def _next_id(self) -> int:
        return len(self.spans) + 1

    def on_message_appended(self, event: Mapping[str, JSONValue], t: float) -> None:
        self.history.append(event.get("message"))

    def on_model_call_started(self, event: Mapping[str, JSONValue], t: float) -> None:
        count = int(event.get("message_count") or 0)  # type: ignore[call-overload]
        for fp in event.get("prompt_fingerprints") or ():  # type: ignore[union-attr]
            self.fingerprints.setdefault(str(fp), None)
        self.chats[int(event.get("turn") or 0)] = {  # type: ignore[call-overload]
            "start": t,
            "model": event.get("model"),
            "turn": event.get("turn"),
            "attempt": event.get("attempt", 1),
            "fingerprints": event.get("prompt_fingerprints") or [],
            # indices into Trace.messages (not copies: a long run would repeat its
            # whole history in every call)
            "input_from": max(0, len(self.history) - count),
            "input_to": len(self.history),
            "deltas": 0,
        }

    def on_model_streamed(self, event: Mapping[str, JSONValue], t: float) -> None:
        chat = self.chats.get(int(event.get("turn") or 0))  # type: ignore[call-overload]
        if chat is not None:
            chat["deltas"] = int(chat["deltas"]) + 1  # type: ignore[call-overload]
            chat.setdefault("first_chunk", t - float(chat["start"]))  # type: ignore[arg-type]

    def _close_chat(
        self, turn: int, t: float, error: str | None, extra: Mapping[str, JSONValue]
    ) -> None:
        chat = self.chats.pop(turn, None)
        if chat is None:
            return
        model = str(chat.pop("model") or "")
        start = float(chat.pop("start"))  # type: ignore[arg-type]
        name = "chat " + (model.partition(":")[2] or model)
        detail = {"model": model, **chat, **extra}
        self.spans.append(SpanRecord(self._next_id(), 0, "chat", name, start, t, error, detail))

    def on_model_call_finished(self, event: Mapping[str, JSONValue], t: float) -> None:
        extra = {
            "output": event.get("message"),
            "stop_reason": event.get("stop_reason"),
            "usage": event.get("usage") or {},
            "response_model": event.get("response_model") or "",
        }
        self._close_chat(int(event.get("turn") or 0), t, None, extra)  # type: ignore[call-overload]

    def on_model_call_failed(self, event: Mapping[str, JSONValue], t: float) -> None:
        error = event.get("error") or {}
        kind = str(error.get("kind", "error")) if isinstance(error, Mapping) else "error"
        self.errors += 1
        turn = int(event.get("turn") or 0)  # type: ignore[call-overload]
        self._close_chat(turn, t, kind, {"error": error, "will_retry": event.get("will_retry")})

    def on_strategy_step(self, event: Mapping[str, JSONValue], t: float) -> None:
        name = f"{event.get('strategy')} {event.get('kind')}"
        detail = {"strategy": event.get("strategy"), "kind": event.get("kind"), **_detail(event)}
        self.spans.append(SpanRecord(self._next_id(), 0, "step", name, t, t, None, detail))

    def on_tool_call_started(self, event: Mapping[str, JSONValue], t: float) -> None:
        call = event.get("call")
        if isinstance(call, Mapping):
            self.tools[str(call.get("id"))] = (t, call)

    def on_tool_call_finished(self, event: Mapping[str, JSONValue], t: float) -> None:
        call = event.get("call") if isinstance(event.get("call"), Mapping) else {}
        assert isinstance(call, Mapping)
        duration = float(event.get("duration_s") or 0.0)  # type: ignore[arg-type]
        start, _ = self.tools.pop(str(call.get("id")), (t - duration, call))
        result = event.get("result") if isinstance(event.get("result"), Mapping) else {}
        assert isinstance(result, Mapping)
        error = None
        if result.get("is_error"):
            error = str(result.get("error_kind") or "permanent")
            self.errors += 1
        detail: dict[str, JSONValue] = {
            "call_id": call.get("id"),
            "turn": event.get("turn"),
            "arguments": call.get("arguments"),
            "raw_arguments": call.get("raw_arguments"),
            "result": result.get("content"),
            "attempts": event.get("attempts", 1),
            "repairs": event.get("repairs") or [],
        }
        name = f"execute_tool {call.get('name')}"
        span = SpanRecord(self._next_id(), 0, "tool", name, start, start + duration, error, detail)
        self.spans.append(span)

    def on_run_finished(self, event: Mapping[str, JSONValue], t: float) -> None:
        result = event.get("result")
        self.result = result if isinstance(result, Mapping) else None

    def _run_span(self, end: float) -> SpanRecord:
        result = self.result or {}
        stop = result.get("stop_reason")
        error = None if stop in (None, "final_answer", "awaiting_confirmation") else str(stop)
        detail: dict[str, JSONValue] = {
            "stop_reason": stop,
            "answer": result.get("answer"),
            "detail": result.get("detail"),
            "turns": result.get("turns"),
            "finished": self.result is not None,
        }
        return SpanRecord(0, None, "run", "invoke_agent loopwright", 0.0, end, error, detail)

    def totals(self) -> Totals:
        chats = sum(1 for s in self.spans if s.kind == "chat")
        tools = sum(1 for s in self.spans if s.kind == "tool")
        # the run's own total is authoritative (it also counts failed attempts' usage);
        # a trace cut short sums its finished model calls instead
        usages = [self.result.get("usage")] if self.result is not None else []
        if not usages or not isinstance(usages[0], Mapping):
            usages = [s.detail.get("usage") for s in self.spans if s.kind == "chat"]
        total = {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0, "reasoning_tokens": 0}
        cost = 0.0
        for usage in usages:
            if isinstance(usage, Mapping):
                for key in total:
                    total[key] += int(usage.get(key, 0) or 0)  # type: ignore[call-overload]
                cost += float(usage.get("cost", 0.0) or 0.0)  # type: ignore[arg-type]
        return Totals(**total, cost=cost, model_calls=chats, tool_calls=tools, errors=self.errors)

    def prompts(self) -> tuple[str, ...]:
        return tuple(self.fingerprints)


def _detail(event: Mapping[str, JSONValue]) -> dict[str, JSONValue]:
    detail = event.get("detail")
    return {"detail": detail} if isinstance(detail, Mapping) and detail else {}


def trace_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Trace files in ``directory``, newest first (run ids sort by start time)."""
    root = Path(directory)
    if not root.is_dir():
        return []
    return sorted(root.glob("*.jsonl"), key=lambda p: p.name, reverse=True)


def find_trace(ref: str, directories: Iterable[str | os.PathLike[str]]) -> Path:
    """A trace by path, run id, or unique run-id prefix."""
    candidate = Path(ref)
    if candidate.is_file():
        return candidate
    matches: list[Path] = []
    for directory in directories:
        for path in trace_files(directory):
            if path.stem == ref:
                return path
            if path.stem.startswith(ref):
                matches.append(path)
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise TraceError(f"no trace {ref!r}; list them with `loopwright trace list`")
    names = ", ".join(p.stem for p in matches[:5])
    raise TraceError(f"{ref!r} matches several traces ({names}); give more of the run id")
