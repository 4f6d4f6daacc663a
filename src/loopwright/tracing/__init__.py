"""Recording runs: JSONL traces, OpenTelemetry spans, trace reading and the HTML viewer.

Every recorder is an *event subscriber*: give it to ``Hooks(on_event=...)`` (or call it
with each event of ``agent.stream``). Nothing here is called from inside the loop or the
adapters. See docs/tracing.md.

* :class:`JsonlRecorder` -- one JSONL file per run (``loopwright.tracing.jsonl``).
* ``loopwright.tracing.otel.OtelSubscriber`` -- GenAI spans (needs the ``otel`` extra;
  import it from its module, it is not loaded here).
* :func:`fanout` -- several subscribers behind one ``on_event``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from loopwright.core.events import RunEvent
from loopwright.core.lazy import lazy_exports
from loopwright.tracing.redact import REDACTED, redact, redact_text

if TYPE_CHECKING:
    from loopwright.tracing.jsonl import JsonlRecorder
    from loopwright.tracing.serialize import event_to_dict

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "loopwright.tracing.jsonl": ("JsonlRecorder",),
        "loopwright.tracing.serialize": ("event_to_dict",),
    },
)

Subscriber = Callable[[RunEvent], object]


def fanout(*subscribers: Subscriber | None) -> Callable[[RunEvent], None]:
    """One subscriber calling each given one in order (``None`` entries are dropped)."""
    subs = tuple(s for s in subscribers if s is not None)
    if len(subs) == 1:
        only = subs[0]

        def single(event: RunEvent) -> None:
            only(event)

        return single

    def each(event: RunEvent) -> None:
        for sub in subs:
            sub(event)

    return each


__all__ = [
    "REDACTED",
    "JsonlRecorder",
    "Subscriber",
    "event_to_dict",
    "fanout",
    "redact",
    "redact_text",
]
