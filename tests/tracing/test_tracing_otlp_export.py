"""End to end: spans exported over OTLP/HTTP to a receiver started by the test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from loopwright import Agent, Hooks, ScriptedModel, tool, tool_call
from loopwright.tracing.otel import OtelSubscriber, configure_otlp


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class _Receiver(BaseHTTPRequestHandler):
    requests: list[tuple[str, dict[str, str], bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    requests: list[tuple[str, dict[str, str], bytes]] = []
    handler = type("Handler", (_Receiver,), {"requests": requests})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", requests
    server.shutdown()
    server.server_close()


def test_spans_reach_an_otlp_http_receiver(
    receiver: tuple[str, list[tuple[str, dict[str, str], bytes]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, requests = receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=team-a")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "otlp-e2e")
    provider = configure_otlp(set_global=False)
    model = ScriptedModel(
        [[tool_call("add", {"a": 2, "b": 2})], "4"], name="gemini:gemini-2.0-flash"
    )
    subscriber = OtelSubscriber(provider)
    Agent(model, [add], hooks=Hooks(on_event=subscriber)).run("2+2?")
    subscriber.flush()  # the spans are built on the subscriber's thread
    provider.shutdown()  # exports what the batch processor holds

    assert requests, "the exporter sent nothing"
    spans = []
    for path, headers, body in requests:
        assert path == "/v1/traces"
        assert headers["content-type"] == "application/x-protobuf"
        assert headers["x-tenant"] == "team-a"
        message = ExportTraceServiceRequest()
        message.ParseFromString(body)
        for rs in message.resource_spans:
            service = {a.key: a.value.string_value for a in rs.resource.attributes}
            assert service["service.name"] == "otlp-e2e"
            for ss in rs.scope_spans:
                assert ss.scope.name == "loopwright"
                spans.extend(ss.spans)
    names = sorted(s.name for s in spans)
    assert names == [
        "chat gemini-2.0-flash",
        "chat gemini-2.0-flash",
        "execute_tool add",
        "invoke_agent loopwright",
    ]
    run = next(s for s in spans if s.name.startswith("invoke_agent"))
    for s in spans:
        assert s.trace_id == run.trace_id
        if s is not run:
            assert s.parent_span_id == run.span_id
    chat = next(s for s in spans if s.name.startswith("chat"))
    attrs = {a.key: a.value for a in chat.attributes}
    assert attrs["gen_ai.provider.name"].string_value == "gcp.gemini"
    assert attrs["gen_ai.request.model"].string_value == "gemini-2.0-flash"


def test_grpc_protocol_is_refused_with_a_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(ValueError, match="http/protobuf"):
        configure_otlp(set_global=False)
