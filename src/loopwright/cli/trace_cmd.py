"""``loopwright trace``: list, show and view recorded runs (recording them is
:mod:`loopwright.cli.observe`).

``loopwright run --trace DIR`` writes one JSONL trace per run into DIR
(``$LOOPWRIGHT_TRACE_DIR``); ``--otel`` (``LOOPWRIGHT_OTEL=1``) exports OpenTelemetry spans
over OTLP/HTTP to the endpoint in the standard ``OTEL_EXPORTER_OTLP_*`` variables.
See docs/tracing.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from loopwright.cli.options import NonEmptyPath
from loopwright.cli.output import emit_json, say
from loopwright.tracing.spans import (
    SpanRecord,
    Trace,
    TraceError,
    find_trace,
    load_trace,
    read_lines,
    trace_files,
)

TRACE_DIR_ENV = "LOOPWRIGHT_TRACE_DIR"
DEFAULT_TRACE_DIR = "traces"


def default_trace_dir() -> Path:
    return Path(os.environ.get(TRACE_DIR_ENV) or DEFAULT_TRACE_DIR)


# ------------------------------------------------------------------ rendering


def _money(cost: float) -> str:
    return f"${cost:.4f}" if cost else "$0"


def _secs(value: float) -> str:
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:.2f}s"


def _span_line(span: SpanRecord) -> str:
    d = span.detail
    bits = [span.name, _secs(span.duration)]
    if span.kind == "chat":
        usage = d.get("usage") if isinstance(d.get("usage"), dict) else {}
        assert isinstance(usage, dict)
        bits.append(f"turn {d.get('turn')}")
        if int(d.get("attempt") or 1) > 1:  # type: ignore[call-overload]
            bits.append(f"attempt {d.get('attempt')}")
        if usage:
            bits.append(f"{usage.get('input_tokens', 0)}→{usage.get('output_tokens', 0)} tok")
            if usage.get("cost"):
                bits.append(_money(float(usage["cost"])))
        if d.get("stop_reason"):
            bits.append(str(d["stop_reason"]))
    elif span.kind == "step" and isinstance(d.get("detail"), dict):
        text = json.dumps(d["detail"], ensure_ascii=False)
        bits = [span.name, text if len(text) <= 80 else text[:77] + "..."]
    elif span.kind == "tool":
        args = json.dumps(d.get("arguments") or {}, ensure_ascii=False)
        bits.insert(1, args if len(args) <= 60 else args[:57] + "...")
    if span.error:
        bits.append(f"✗ {span.error}")
        message = d.get("result") if span.kind == "tool" else d.get("error")
        if isinstance(message, dict):
            message = message.get("message")
        if message:
            text = " ".join(str(message).split())
            bits.append(text if len(text) <= 80 else text[:77] + "...")
    return "  ".join(bits)


def render_tree(trace: Trace) -> list[str]:
    run, *children = trace.spans
    t = trace.totals
    head = (
        f"run {trace.run_id}  session {trace.session_id}  "
        f"{run.detail.get('stop_reason') or 'unfinished'}  {_secs(run.duration)}  "
        f"tokens {t.input_tokens}→{t.output_tokens}  cost {_money(t.cost)}  "
        f"model calls {t.model_calls}  tool calls {t.tool_calls}  errors {t.errors}"
    )
    lines = [head]
    for i, span in enumerate(children):
        branch = "└─" if i == len(children) - 1 else "├─"
        lines.append(f"{branch} {_span_line(span)}")
    if trace.prompts:
        lines.append("prompts: " + ", ".join(trace.prompts))
    if run.detail.get("answer"):
        answer = " ".join(str(run.detail["answer"]).split())
        lines.append("answer: " + (answer if len(answer) <= 200 else answer[:197] + "..."))
    return lines


def _summary_row(path: Path) -> dict[str, Any]:
    header, events = read_lines(path)
    last = events[-1] if events else {}
    result = last.get("result") if last.get("type") == "run_finished" else None
    result = result if isinstance(result, dict) else {}
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    span = float(last.get("t", 0) or 0) - float(events[0].get("t", 0) or 0) if events else 0.0  # type: ignore[arg-type]
    return {
        "run_id": header.get("run_id") or path.stem,
        "session_id": header.get("session_id"),
        "started_at": header.get("started_at"),
        "stop_reason": result.get("stop_reason") or "unfinished",
        "turns": result.get("turns"),
        "duration_s": round(span, 3),
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
        "cost": float(usage.get("cost", 0.0)),
        "events": len(events),
        "path": str(path),
    }


# ------------------------------------------------------------------ commands


def _dir_option(f: Any) -> Any:
    return click.option(
        "--dir",
        "directory",
        type=NonEmptyPath(file_okay=False, path_type=Path),
        default=None,
        help=f"Trace directory (default: ${TRACE_DIR_ENV} or ./{DEFAULT_TRACE_DIR}).",
    )(f)


def _load(ref: str, directory: Path | None) -> Trace:
    try:
        return load_trace(find_trace(ref, [directory or default_trace_dir()]))
    except (TraceError, OSError) as exc:
        raise click.UsageError(str(exc)) from None


@click.group("trace")
def trace_group() -> None:
    """Recorded runs: list them, show one as a tree, or write an HTML viewer.

    \b
    Record with:  loopwright run --trace traces "What is 2+2?"
    Examples:
      loopwright trace list
      loopwright trace show 20261123T2126
      loopwright trace view 20261123T2126 -o run.html
    """


@trace_group.command("list")
@_dir_option
@click.option("--limit", "-n", type=int, default=20, show_default=True, help="Newest N runs.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run.")
def list_command(directory: Path | None, limit: int, as_json: bool) -> None:
    """Recent runs (newest first) with their cost, then cost per session.

    \b
    Examples:
      loopwright trace list
      loopwright trace list --limit 5 --json
      loopwright trace list --dir traces
    """
    root = directory or default_trace_dir()
    rows = []
    for path in trace_files(root)[: max(0, limit)]:
        try:
            rows.append(_summary_row(path))
        except (TraceError, OSError, ValueError) as exc:
            say(f"skipped {path.name}: {exc}", err=True)
    if as_json:
        for row in rows:
            emit_json(row)
        return
    if not rows:
        say(f"no traces in {root} (record with: loopwright run --trace {root} ...)")
        return
    say(f"{'run':<26} {'stop':<16} {'turns':>5} {'tokens':>13} {'cost':>10} {'time':>8}")
    sessions: dict[str, list[float]] = {}
    for row in rows:
        tokens = f"{row['input_tokens']}→{row['output_tokens']}"
        say(
            f"{row['run_id']:<26} {row['stop_reason']:<16} {row['turns'] or 0:>5} "
            f"{tokens:>13} {_money(row['cost']):>10} {_secs(row['duration_s']):>8}"
        )
        agg = sessions.setdefault(str(row["session_id"]), [0, 0.0])
        agg[0] += 1
        agg[1] += row["cost"]
    say("\ncost per session:")
    for session, (runs, cost) in sessions.items():
        say(f"  {session:<32} {int(runs):>3} run(s)  {_money(cost)}")


@trace_group.command("show")
@click.argument("run")
@_dir_option
def show_command(run: str, directory: Path | None) -> None:
    """A run as a tree: model calls and tool calls with timings, tokens, cost, errors.

    \b
    Examples:
      loopwright trace show 20261123T2126          a run id, or its first characters
      loopwright trace show 20261123T2126 --dir traces
    """
    for line in render_tree(_load(run, directory)):
        say(line)


@trace_group.command("view")
@click.argument("run")
@_dir_option
@click.option(
    "--output",
    "-o",
    type=NonEmptyPath(dir_okay=False, path_type=Path),
    default=Path("run.html"),
    show_default=True,
    help="The HTML file to write (self-contained; opens offline).",
)
def view_command(run: str, directory: Path | None, output: Path) -> None:
    """Write one self-contained HTML file: waterfall, messages, tool calls, totals.

    \b
    Examples:
      loopwright trace view 20261123T2126 -o run.html
    """
    from loopwright.tracing.viewer import render_html

    trace = _load(run, directory)
    output.write_text(render_html(trace), encoding="utf-8")
    say(f"wrote {output} ({len(trace.events)} events, {len(trace.spans)} spans)", err=True)


COMMANDS = [trace_group]
