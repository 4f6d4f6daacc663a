"""Tracing for commands that run agents: ``--trace DIR`` and ``--otel``.

``loopwright run --trace DIR`` writes one JSONL trace per run into DIR
(``$LOOPWRIGHT_TRACE_DIR``); ``--otel`` (``LOOPWRIGHT_OTEL=1``) exports OpenTelemetry spans
over OTLP/HTTP to the endpoint in the standard ``OTEL_EXPORTER_OTLP_*`` variables.
See docs/tracing.md. (``loopwright trace`` reads the traces: cli/trace_cmd.py.)
"""

from __future__ import annotations

import atexit
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from loopwright.cli.output import say
from loopwright.core.errors import UserError
from loopwright.core.events import RunEvent, RunFinished
from loopwright.loop import Agent
from loopwright.tracing import JsonlRecorder, fanout


def instrument(
    agent: Agent,
    trace_dir: Path | None,
    otel: bool,
    *,
    closers: list[Callable[[], object]] | None = None,
) -> Agent:
    """``agent`` with the recorders asked for on the command line added to its
    ``on_event`` (the agent's own subscriber, if any, still runs first).

    Without ``closers`` (one run): when the run finishes, the trace file is flushed, its
    path printed on stderr, and pending spans exported. With ``closers`` (a batch): the
    functions that flush and close the recorders are appended for the caller to call.
    """
    subscribers: list[Callable[[RunEvent], object]] = []
    recorder = JsonlRecorder(trace_dir) if trace_dir is not None else None
    provider = _otel_provider() if otel else None
    if recorder is not None:
        subscribers.append(recorder)
    spans = None
    if provider is not None:
        from loopwright.tracing.otel import OtelSubscriber

        spans = OtelSubscriber(provider)
        subscribers.append(spans)
        atexit.register(provider.shutdown)  # the last spans, whatever happens
    if not subscribers:
        return agent
    if closers is None:
        subscribers.append(_finisher(recorder, spans, provider))
    else:
        if recorder is not None:
            closers.append(recorder.close)
        if spans is not None and provider is not None:
            closers.append(spans.close)  # the spans are built on the subscriber's thread
            closers.append(provider.force_flush)
    config = agent.config
    hooks = replace(config.hooks, on_event=fanout(config.hooks.on_event, *subscribers))
    return Agent.from_config(replace(config, hooks=hooks))


def _finisher(
    recorder: JsonlRecorder | None, spans: Any, provider: Any
) -> Callable[[RunEvent], None]:
    """At the end of a CLI run (the process exits next): flush, and say where the trace is."""

    def finish(event: RunEvent) -> None:
        if type(event) is not RunFinished:
            return
        if recorder is not None and recorder.paths:
            recorder.flush()
            path = recorder.paths[-1]
            line = f"trace: {path} (view: loopwright trace view {path.stem} -o run.html)"
            if recorder.error is not None:
                line = f"trace: could not write {path}: {recorder.error}"
            # said when the command ends, after its own output (a streamed answer is still
            # being printed when this event arrives)
            ctx = click.get_current_context(silent=True)
            if ctx is not None:
                ctx.call_on_close(lambda: say(line, err=True))
            else:
                say(line, err=True)
        if spans is not None:
            spans.flush()  # the spans are built on the subscriber's thread
            provider.force_flush()

    return finish


def _otel_provider() -> Any:
    try:
        from loopwright.tracing.otel import configure_otlp
    except ImportError as exc:
        raise UserError(
            f"--otel needs OpenTelemetry ({exc.name} is missing): pip install 'loopwright[otel]'"
        ) from None
    try:
        return configure_otlp()
    except ValueError as exc:
        raise UserError(str(exc)) from None
