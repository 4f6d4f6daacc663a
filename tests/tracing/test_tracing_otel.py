"""GenAI spans from run events, checked with an in-memory exporter."""

from __future__ import annotations

import asyncio
import json

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as semconv
from opentelemetry.semconv.attributes import error_attributes
from opentelemetry.trace import SpanKind, StatusCode

from loopwright import Agent, FunctionModel, Hooks, Limits, Reply, ScriptedModel, tool, tool_call
from loopwright.core.errors import RateLimited
from loopwright.core.messages import Usage
from loopwright.strategies.runtime import Strategy
from loopwright.tracing import otel
from loopwright.tracing.otel import OtelSubscriber
from loopwright.tracing.worker import flush_all


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


def _no_sleep(_: float) -> None:
    async def done() -> None:
        return None

    return done()  # type: ignore[return-value]


def _finished(exporter: InMemorySpanExporter) -> tuple[ReadableSpan, ...]:
    flush_all()  # spans are built on the subscriber's thread
    return exporter.get_finished_spans()


def _by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def test_two_tool_run_span_tree(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    model = ScriptedModel(
        [
            Reply(
                [tool_call("get_weather", {"city": "Paris"}), tool_call("add", {"a": 2, "b": 3})],
                usage=Usage(input_tokens=30, output_tokens=12, cost=0.0015),
            ),
            Reply("Sunny, and 5.", usage=Usage(input_tokens=50, output_tokens=4, cost=0.001)),
        ],
        name="openai:gpt-4o",
    )
    agent = Agent(model, [get_weather, add], hooks=Hooks(on_event=OtelSubscriber(provider)))
    result = agent.run("Weather in Paris, and 2+3?")
    assert result.ok

    spans = _finished(exporter)
    (run,) = _by_name(spans, "invoke_agent")
    chats = _by_name(spans, "chat ")
    tools = _by_name(spans, "execute_tool ")
    assert len(spans) == 5 and len(chats) == 2 and len(tools) == 2
    # one trace, every span a child of the run span
    assert run.parent is None
    for span in (*chats, *tools):
        assert span.context.trace_id == run.context.trace_id
        assert span.parent is not None and span.parent.span_id == run.context.span_id
    # order in time: chat, tools, chat
    first, second = sorted(chats, key=lambda s: s.start_time)
    for t in tools:
        assert first.end_time <= t.start_time <= t.end_time <= second.start_time

    assert (
        run.kind is SpanKind.INTERNAL and run.attributes["gen_ai.operation.name"] == "invoke_agent"
    )
    assert run.attributes["gen_ai.conversation.id"] == result.session_id
    assert run.attributes["gen_ai.usage.input_tokens"] == 80
    assert run.attributes["gen_ai.usage.output_tokens"] == 16
    assert run.attributes["loopwright.usage.cost"] == pytest.approx(0.0025)
    assert run.attributes["loopwright.stop_reason"] == "final_answer"
    assert run.status.status_code is StatusCode.UNSET

    assert first.kind is SpanKind.CLIENT and first.name == "chat gpt-4o"
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == "openai"
    assert first.attributes["gen_ai.request.model"] == "gpt-4o"
    assert first.attributes["gen_ai.response.model"] == "gpt-4o"
    assert first.attributes["gen_ai.usage.input_tokens"] == 30
    assert first.attributes["gen_ai.usage.output_tokens"] == 12
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)

    names = {t.attributes["gen_ai.tool.name"]: t for t in tools}
    assert set(names) == {"get_weather", "add"}
    weather = names["get_weather"]
    assert weather.name == "execute_tool get_weather"
    assert weather.attributes["gen_ai.operation.name"] == "execute_tool"
    assert weather.attributes["gen_ai.tool.call.id"] == "call_1"
    assert "error.type" not in weather.attributes
    # no content unless opted in
    for span in spans:
        assert "gen_ai.input.messages" not in span.attributes
        assert "gen_ai.tool.call.arguments" not in span.attributes


def test_failing_tool_marks_its_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([[tool_call("explode", {"reason": "x"})], "It failed."])
    Agent(model, [explode], hooks=Hooks(on_event=OtelSubscriber(provider))).run("go")
    (span,) = _by_name(_finished(exporter), "execute_tool")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "permanent"
    assert "boom" in (span.status.description or "")
    (run,) = _by_name(_finished(exporter), "invoke_agent")
    assert run.status.status_code is StatusCode.UNSET  # the run itself recovered


def test_retried_model_call_gives_two_chat_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([RateLimited("slow down", status=429), "fine"], name="anthropic:claude-x")
    agent = Agent(model, hooks=Hooks(on_event=OtelSubscriber(provider)), sleep=_no_sleep)
    assert agent.run("hi").ok
    chats = sorted(_by_name(_finished(exporter), "chat"), key=lambda s: s.start_time)
    assert [c.attributes["loopwright.attempt"] for c in chats] == [1, 2]
    failed, ok = chats
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "rate_limited"
    assert failed.attributes["loopwright.will_retry"] is True
    assert ok.status.status_code is StatusCode.UNSET
    assert ok.attributes["gen_ai.provider.name"] == "anthropic"


def test_model_error_marks_the_run(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([RateLimited("no")] * 3)
    agent = Agent(
        model,
        limits=Limits(model_retries=1),
        hooks=Hooks(on_event=OtelSubscriber(provider)),
        sleep=_no_sleep,
    )
    assert agent.run("hi").stop.value == "model_error"
    (run,) = _by_name(_finished(exporter), "invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"] == "model_error"


def test_content_capture_is_opt_in(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([[tool_call("add", {"a": 1, "b": 2})], "3"])
    sub = OtelSubscriber(provider, capture_content=True)
    Agent(model, [add], hooks=Hooks(on_event=sub)).run("1+2?")
    spans = _finished(exporter)
    first = min(_by_name(spans, "chat"), key=lambda s: s.start_time)
    sent = json.loads(first.attributes["gen_ai.input.messages"])
    assert sent == [{"role": "user", "parts": [{"type": "text", "content": "1+2?"}]}]
    out = json.loads(first.attributes["gen_ai.output.messages"])
    assert out[0]["parts"][0]["type"] == "tool_call" and out[0]["finish_reason"] == "tool_call"
    (tool_span,) = _by_name(spans, "execute_tool")
    assert json.loads(tool_span.attributes["gen_ai.tool.call.arguments"]) == {"a": 1, "b": 2}
    assert tool_span.attributes["gen_ai.tool.call.result"] == "3"


def test_capture_switch_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(otel.CAPTURE_ENV, "true")
    assert OtelSubscriber(TracerProvider()).capture_content is True
    monkeypatch.setenv(otel.CAPTURE_ENV, "false")
    assert OtelSubscriber(TracerProvider()).capture_content is False


def test_run_nests_under_the_callers_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = provider.get_tracer("test")
    agent = Agent(ScriptedModel(["a"]), hooks=Hooks(on_event=OtelSubscriber(provider)))
    with tracer.start_as_current_span("plan_execute step 1") as outer:
        agent.run("q")
    (run,) = _by_name(_finished(exporter), "invoke_agent")
    assert run.parent is not None and run.parent.span_id == outer.get_span_context().span_id


def test_concurrent_runs_keep_their_own_trees(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    import asyncio

    sub = OtelSubscriber(provider)

    async def main() -> None:
        agents = [
            Agent(
                ScriptedModel([Reply([tool_call("add", {"a": i, "b": 1})], delay=0.01), "ok"]),
                [add],
                hooks=Hooks(on_event=sub),
            )
            for i in range(4)
        ]
        await asyncio.gather(*(a.arun("x") for a in agents))

    asyncio.run(main())
    spans = _finished(exporter)
    runs = _by_name(spans, "invoke_agent")
    assert len(runs) == 4
    for run in runs:
        children = [
            s for s in spans if s.parent is not None and s.parent.span_id == run.context.span_id
        ]
        assert sorted(s.name.split()[0] for s in children) == ["chat", "chat", "execute_tool"]


SEMCONV_NAMES = {
    otel.OPERATION: semconv.GEN_AI_OPERATION_NAME,
    otel.PROVIDER: semconv.GEN_AI_PROVIDER_NAME,
    otel.REQUEST_MODEL: semconv.GEN_AI_REQUEST_MODEL,
    otel.RESPONSE_MODEL: semconv.GEN_AI_RESPONSE_MODEL,
    otel.INPUT_TOKENS: semconv.GEN_AI_USAGE_INPUT_TOKENS,
    otel.OUTPUT_TOKENS: semconv.GEN_AI_USAGE_OUTPUT_TOKENS,
    otel.CACHE_READ_TOKENS: semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    otel.REASONING_TOKENS: semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    otel.FINISH_REASONS: semconv.GEN_AI_RESPONSE_FINISH_REASONS,
    otel.TIME_TO_FIRST_CHUNK: semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
    otel.AGENT_NAME: semconv.GEN_AI_AGENT_NAME,
    otel.CONVERSATION_ID: semconv.GEN_AI_CONVERSATION_ID,
    otel.TOOL_NAME: semconv.GEN_AI_TOOL_NAME,
    otel.TOOL_CALL_ID: semconv.GEN_AI_TOOL_CALL_ID,
    otel.TOOL_TYPE: semconv.GEN_AI_TOOL_TYPE,
    otel.TOOL_ARGUMENTS: semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
    otel.TOOL_RESULT: semconv.GEN_AI_TOOL_CALL_RESULT,
    otel.INPUT_MESSAGES: semconv.GEN_AI_INPUT_MESSAGES,
    otel.OUTPUT_MESSAGES: semconv.GEN_AI_OUTPUT_MESSAGES,
    otel.ERROR_TYPE: error_attributes.ERROR_TYPE,
}


def test_attribute_names_match_the_semantic_conventions() -> None:
    for ours, theirs in SEMCONV_NAMES.items():
        assert ours == theirs
    ops = {v.value for v in semconv.GenAiOperationNameValues}
    assert {"chat", "execute_tool", "invoke_agent"} <= ops
    providers = {v.value for v in semconv.GenAiProviderNameValues}
    for prefix in ("openai", "anthropic", "gemini", "bedrock", "deepseek", "groq", "mistral"):
        assert otel.split_model(f"{prefix}:m")[0] in providers


def test_every_attribute_we_emit_is_a_convention_name_or_ours(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([[tool_call("add", {"a": 1, "b": 2})], "3"])
    Agent(model, [add], hooks=Hooks(on_event=OtelSubscriber(provider, capture_content=True))).run(
        "x"
    )
    known = {getattr(semconv, n) for n in dir(semconv) if n.startswith("GEN_AI_")} | {
        error_attributes.ERROR_TYPE
    }
    for span in _finished(exporter):
        for name in span.attributes:
            assert name in known or name.startswith("loopwright."), name


def test_no_global_provider_needed() -> None:
    # with the API's default (no-op) provider the subscriber still runs
    agent = Agent(ScriptedModel(["a"]), hooks=Hooks(on_event=OtelSubscriber()))
    assert agent.run("q").ok


def test_spans_are_built_off_the_event_loop_thread(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """The SDK's span work (tens of microseconds each) runs on the subscriber's thread;
    only the run span (one per run, current while the run executes) starts on the loop's
    thread."""
    import threading

    from opentelemetry.sdk.trace import SpanProcessor

    started: list[tuple[str, int]] = []

    class Spy(SpanProcessor):
        def on_start(self, span, parent_context=None) -> None:  # type: ignore[no-untyped-def]
            started.append((span.name, threading.get_ident()))

    provider.add_span_processor(Spy())
    model = ScriptedModel([[tool_call("add", {"a": 1, "b": 2})], "3"])
    Agent(model, [add], hooks=Hooks(on_event=OtelSubscriber(provider))).run("x")
    assert len(_finished(exporter)) == 4
    here = threading.get_ident()
    assert [name for name, thread in started if thread == here] == ["invoke_agent loopwright"]
    assert len([name for name, thread in started if thread != here]) == 3


def test_tools_run_inside_their_execute_tool_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """While a tool runs, its call's ``execute_tool`` span is the current one: the tool's
    outgoing calls (an MCP request, whose SDK injects the current trace context, an
    instrumented HTTP client) are children of it, in the run's trace. After the run the
    caller's context is back."""
    seen = []

    @tool
    def probe(x: int) -> int:
        """Record the current span."""
        seen.append(trace.get_current_span().get_span_context())
        with provider.get_tracer("client").start_as_current_span("mcp tools/call"):
            pass
        return x

    model = ScriptedModel([[tool_call("probe", {"x": 1})], "done"])
    Agent(model, [probe], hooks=Hooks(on_event=OtelSubscriber(provider))).run("go")
    spans = _finished(exporter)
    (run,) = _by_name(spans, "invoke_agent")
    (call,) = _by_name(spans, "execute_tool")
    (client,) = _by_name(spans, "mcp tools/call")
    assert seen[0].trace_id == run.context.trace_id and seen[0].span_id == call.context.span_id
    assert call.parent is not None and call.parent.span_id == run.context.span_id
    assert client.parent is not None and client.parent.span_id == call.context.span_id
    assert not trace.get_current_span().get_span_context().is_valid  # detached


def test_a_sub_agent_run_from_a_tool_nests_under_that_tool_call(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    subscriber = OtelSubscriber(provider)
    after: list[int] = []

    @tool
    def inner() -> str:
        """A tool of the sub-agent."""
        return "in"

    sub = Agent(
        ScriptedModel([[tool_call("inner", {})], "sub done"]),
        [inner],
        hooks=Hooks(on_event=subscriber),
    )

    @tool
    async def delegate() -> str:
        """Run a sub-agent, then look at the current span again."""
        answer = (await sub.arun("go")).answer
        after.append(trace.get_current_span().get_span_context().span_id)
        return answer

    model = ScriptedModel([[tool_call("delegate", {})], "done"])
    Agent(model, [delegate], hooks=Hooks(on_event=subscriber)).run("go")
    assert subscriber.flush()
    spans = _finished(exporter)
    outer_run, sub_run = sorted(_by_name(spans, "invoke_agent"), key=lambda s: s.start_time)
    (call,) = _by_name(spans, "execute_tool delegate")
    (inner_call,) = _by_name(spans, "execute_tool inner")
    assert call.parent.span_id == outer_run.context.span_id  # type: ignore[union-attr]
    assert sub_run.parent.span_id == call.context.span_id  # type: ignore[union-attr]
    assert inner_call.parent.span_id == sub_run.context.span_id  # type: ignore[union-attr]
    # the sub-run's own tool call ended: the outer call's span is current again
    assert after == [call.context.span_id]  # type: ignore[union-attr]


def test_a_tracer_whose_span_ids_cannot_be_chosen_keeps_tools_in_the_run_span(
    exporter: InMemorySpanExporter,
) -> None:
    """The API's proxy tracer (no SDK provider given or set) has no id generator to
    preset: nothing fails, and the tool's context is the run span's."""
    subscriber = OtelSubscriber(trace.NoOpTracerProvider())
    seen = []

    @tool
    def probe() -> str:
        """Record the current span."""
        seen.append(trace.get_current_span())
        return "ok"

    model = ScriptedModel([[tool_call("probe", {})], "done"])
    assert Agent(model, [probe], hooks=Hooks(on_event=subscriber)).run("go").answer == "done"
    assert subscriber.flush()
    assert not seen[0].get_span_context().is_valid  # the no-op run span


class _TwoVotes(Strategy):
    """Two concurrent model calls, then a vote (a minimal self-consistency)."""

    name = "self_consistency"

    def __init__(self, model: FunctionModel) -> None:
        super().__init__()
        self.model = model

    async def _solve(self, ctx, prompt):  # type: ignore[no-untyped-def]
        a, b = await asyncio.gather(ctx.ask(self.model, prompt), ctx.ask(self.model, prompt))
        ctx.step("vote", answers=[a, b], winner=a)
        return a, {}


def test_a_strategy_run_with_concurrent_calls(
    provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from loopwright.tracing import JsonlRecorder, fanout
    from loopwright.tracing.spans import load_trace

    model = FunctionModel(lambda messages, request: Reply("42", delay=0.01), name="openai:gpt-4o")
    recorder = JsonlRecorder(tmp_path)
    result = _TwoVotes(model).run("6 * 7?", on_event=fanout(OtelSubscriber(provider), recorder))
    recorder.close()
    assert result.answer == "42"

    spans = _finished(exporter)
    (run,) = _by_name(spans, "invoke_agent")
    chats = _by_name(spans, "chat")
    assert len(chats) == 2 and len(spans) == 3  # both overlapping calls ended
    assert all(c.parent is not None and c.parent.span_id == run.context.span_id for c in chats)
    assert chats[0].start_time < chats[1].end_time and chats[1].start_time < chats[0].end_time
    assert run.attributes["loopwright.strategy"] == "self_consistency"
    (vote,) = [e for e in run.events if e.name == "loopwright.strategy.vote"]
    assert json.loads(vote.attributes["loopwright.detail"])["winner"] == "42"

    trace_ = load_trace(recorder.paths[0])
    assert [s.kind for s in trace_.spans] == ["run", "chat", "chat", "step"]
    assert trace_.spans[-1].name == "self_consistency vote"
    assert trace_.totals.model_calls == 2


def test_subscribers_of_one_provider_share_one_id_generator_wrapper(
    provider: TracerProvider,
) -> None:
    """The SDK caches the tracer per provider and name: a second subscriber must not wrap
    the first one's id generator again (each call would go through every wrapper)."""
    first, second = OtelSubscriber(provider), OtelSubscriber(provider)
    assert first._ids is not None and first._ids is second._ids
    assert not isinstance(first._ids.inner, type(first._ids))
