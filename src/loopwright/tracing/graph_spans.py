"""OpenTelemetry spans for ``loopwright.graph`` runs (see docs/tracing.md).

A graph run's own progress is visible in ``stream_mode="events"``; these spans make it
visible to a tracing backend, and make each node the parent of the agent runs it makes::

    invoke_agent support-graph           (the invocation; INTERNAL)
      node classify                      (one task of a superstep)
        invoke_agent loopwright          (an agent run inside the node, OtelSubscriber)
      node answer
      ...

Pass it as the graph's tracer: ``graph.invoke(input, {"tracer": GraphSpans(provider)})``.
Unlike :class:`~loopwright.tracing.otel.OtelSubscriber`, which builds its spans from
events on a background thread, these spans are opened where the graph and its nodes run
(the graph enters them), because they must be the current span while a node executes.
A node span is cheap next to any node that calls a model.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from loopwright.tracing.otel import AGENT_NAME, CONVERSATION_ID, ERROR_TYPE, OPERATION, _version
from loopwright.tracing.redact import redact_text

GRAPH_NODE = "loopwright.graph.node"
GRAPH_STEP = "loopwright.graph.step"
GRAPH_TASK = "loopwright.graph.task_id"


class GraphSpans:
    """A graph tracer (``loopwright.graph.types.GraphTracer``) recording OpenTelemetry
    spans. ``tracer_provider``: where spans go (default: the global provider)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer("loopwright", _version(), tracer_provider=tracer_provider)

    @contextmanager
    def invocation(self, graph: str, thread: str) -> Iterator[Callable[[BaseException], None]]:
        """The graph run: ``invoke_agent {graph}``, the thread id as the conversation id.
        The graph reports a failure through the callable (a subgraph's interrupt passes
        through here as an exception and is not one)."""
        attributes: dict[str, str | int] = {OPERATION: "invoke_agent", AGENT_NAME: graph}
        if thread:
            attributes[CONVERSATION_ID] = thread
        with self._span(f"invoke_agent {graph}", attributes) as failed:
            yield failed

    @contextmanager
    def node(self, name: str, step: int, task_id: str) -> Iterator[Callable[[BaseException], None]]:
        """One task: ``node {name}`` with its superstep and task id. The graph reports a
        node's failure through the callable (it catches the node's exceptions itself)."""
        attributes: dict[str, str | int] = {GRAPH_NODE: name, GRAPH_STEP: step, GRAPH_TASK: task_id}
        with self._span(f"node {name}", attributes) as failed:
            yield failed

    @contextmanager
    def _span(
        self, name: str, attributes: dict[str, str | int]
    ) -> Iterator[Callable[[BaseException], None]]:
        # failures are reported by the graph through the callable, never by an exception
        # passing through (interrupts do, and are not failures)
        with self._tracer.start_as_current_span(
            name,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield functools.partial(_failed, span)


def _failed(span: Span, error: BaseException) -> None:
    span.set_attribute(ERROR_TYPE, type(error).__name__)
    span.set_status(Status(StatusCode.ERROR, redact_text(str(error))[:500]))
