"""The trace viewer: one self-contained HTML file per run.

``render_html(trace)`` fills ``viewer.html`` (next to this module) with the run's spans,
messages and totals as JSON. The page needs no network: its CSS and JavaScript are
inline, nothing is fetched. Rows are drawn in one pass and details (messages, tool
arguments and results) are built only when a row is expanded, so a 10,000-event trace
opens quickly.
"""

from __future__ import annotations

from dataclasses import asdict
from importlib import resources

from loopwright.core.messages import JSONValue
from loopwright.core.text import to_json
from loopwright.tracing.spans import Trace

_PLACEHOLDER = "/*__TRACE_DATA__*/null"


def trace_data(trace: Trace) -> dict[str, JSONValue]:
    """What the page shows, as one JSON-able object."""
    return {
        "run_id": trace.run_id,
        "session_id": trace.session_id,
        "started_at": trace.header.get("started_at"),
        "totals": asdict(trace.totals),
        "prompts": list(trace.prompts),
        "result": dict(trace.result) if trace.result is not None else None,
        "events": len(trace.events),
        "messages": list(trace.messages),
        "spans": [
            {
                "id": s.id,
                "parent": s.parent,
                "kind": s.kind,
                "name": s.name,
                "start": round(s.start, 6),
                "end": round(s.end, 6),
                "error": s.error,
                "detail": dict(s.detail),
            }
            for s in trace.spans
        ],
    }


def _script_json(data: object) -> str:
    """JSON safe inside a <script> element: no ``</script>``, no ``<!--``, and the
    two line separators JavaScript rejects in string literals escaped."""
    text = to_json(data, strict=False, default=str)  # NaN is a JavaScript literal too
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def render_html(trace: Trace) -> str:
    template = resources.files("loopwright.tracing").joinpath("viewer.html").read_text("utf-8")
    if _PLACEHOLDER not in template:
        raise RuntimeError("viewer.html lost its data placeholder")
    return template.replace(_PLACEHOLDER, _script_json(trace_data(trace)), 1)
