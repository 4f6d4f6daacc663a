"""The shared adapter contract: the same scenarios against every wire protocol.

HOW TO ADD AN ADAPTER
=====================
Create ``tests/providers/kit_<protocol>.py`` exposing ``KITS = [YourKit()]``; it is
discovered automatically (see :func:`load_kits`). A kit is a small object satisfying
:class:`WireKit`:

* ``name``: the snapshot folder (``tests/providers/snapshots/<name>/``).
* ``model(base_url, on_payload, call_limits)``: the adapter under test, pointed at the fake
  server (``base_url`` is ``http://127.0.0.1:PORT``; add ``/v1`` etc. as the SDK needs).
* ``reply(answer, cut_after=None, noise=False)``: a :class:`~fakeserver.Reply` that speaks
  your protocol's wire format for the neutral :class:`Answer` (streamed, the default mode).
  ``cut_after=n`` cuts the connection after n wire events; ``noise=True`` adds lines a
  correct client must ignore (SSE comments, ``retry:`` fields, keep-alives).
* ``error(kind)``: a Reply for each :data:`ERROR_KINDS` entry, modelled on the vendor's
  documented error bodies (``html`` may just return ``Reply.html()``).
* ``garbage()``: a 200 stream whose payload cannot be parsed (non-JSON ``data:`` line ...).
* ``snapshot(request)``: what to snapshot of a recorded request (usually its JSON body).
* ``check_request(body)``: protocol invariants of an outgoing body (ids pair up, names
  valid, roles alternate ...), used by the cross-provider handoff test.
* flags: ``native_ids`` (False for Gemini: ids are synthesised, pairing is by order),
  ``reasoning`` (the protocol can return reasoning).

Then run ``LOOPWRIGHT_UPDATE_SNAPSHOTS=1 pytest tests/providers`` once, review the new
JSON files under ``snapshots/<name>/`` and commit them. Without the variable, snapshots are
compared exactly and a missing snapshot fails.

Canonical expectations every adapter must meet: ``Usage.input_tokens`` counts *all*
prompt tokens (cached included), ``cached_tokens`` is the cached share; tool-call
arguments arrive parsed; failures are a final ``StreamError`` of the right
``ProviderError`` subclass, keeping the partial message.
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fakeserver import FakeServer, Recorded, Reply

from loopwright.core.events import ModelEvent, ResponseDone, StreamError, ToolCallDelta
from loopwright.core.messages import Message, ReasoningPart, ToolResultPart
from loopwright.core.protocols import Model, ModelRequest, ModelSettings, PayloadHook
from loopwright.core.tools import ToolSpec
from loopwright.providers.transport import CallLimits

HERE = Path(__file__).parent
SNAPSHOTS = HERE / "snapshots"
UPDATE = os.environ.get("LOOPWRIGHT_UPDATE_SNAPSHOTS") == "1"

ERROR_KINDS = ("rate_limited", "server_error", "auth", "bad_request", "context_overflow", "html")


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: dict[str, Any]
    raw: str | None = None  # wire arguments override (e.g. JSON that never closes)

    @property
    def wire_arguments(self) -> str:
        return self.raw if self.raw is not None else json.dumps(self.arguments)


@dataclass(frozen=True)
class Answer:
    """A neutral model answer; kits render it in their wire format.

    ``stop`` is ``"final" | "tool_use" | "max_tokens"`` or any other string, which kits
    send verbatim as the protocol's stop/finish value (the unknown-reason scenario).
    ``fragment`` is the size of streamed text/argument pieces.
    """

    text: str = ""
    reasoning: str = ""
    calls: tuple[Call, ...] = ()
    stop: str = "final"
    usage: tuple[int, int, int, int] = (20, 5, 0, 0)  # input, output, cached, reasoning
    fragment: int = 4


class WireKit(Protocol):
    name: str
    native_ids: bool
    reasoning: bool

    def model(
        self,
        base_url: str,
        on_payload: PayloadHook | None = None,
        call_limits: CallLimits | None = None,
    ) -> Model: ...

    def reply(self, answer: Answer, cut_after: int | None = None, noise: bool = False) -> Reply: ...

    def error(self, kind: str) -> Reply: ...

    def garbage(self) -> Reply: ...

    def snapshot(self, request: Recorded) -> Any: ...

    def check_request(self, body: Any) -> None: ...


def load_kits() -> list[WireKit]:
    """Every ``KITS`` list from ``tests/providers/kit_*.py`` (sorted by file name)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    kits: list[WireKit] = []
    for path in sorted(HERE.glob("kit_*.py")):
        module = importlib.import_module(path.stem)
        kits.extend(getattr(module, "KITS", []))
    return kits


# ----------------------------------------------------------------- fixtures of the suite

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CALCULATE = ToolSpec(
    "calculate",
    "Evaluate an arithmetic expression.",
    {
        "type": "object",
        "properties": {"expression": {"type": "string"}, "precision": {"type": "integer"}},
        "required": ["expression"],
    },
)
DOTTED = ToolSpec(
    "files.read",
    "Read a file (a name outside the portable character set).",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
TOOLS = (WEATHER, CALCULATE, DOTTED)
SYSTEM = "You are a terse assistant."
SETTINGS = ModelSettings(temperature=0.0, max_tokens=256)


def request(messages: Sequence[Message], **settings: Any) -> ModelRequest:
    merged = ModelSettings(**{**_settings_dict(SETTINGS), **settings})
    return ModelRequest(tuple(messages), SYSTEM, TOOLS, merged)


def _settings_dict(s: ModelSettings) -> dict[str, Any]:
    return {k: getattr(s, k) for k in s.__slots__}  # type: ignore[attr-defined]


async def collect(model: Model, req: ModelRequest) -> list[ModelEvent]:
    return [event async for event in model.stream(req)]


def final(events: list[ModelEvent]) -> ResponseDone | StreamError:
    assert events, "the stream yielded nothing"
    last = events[-1]
    assert isinstance(last, ResponseDone | StreamError), f"last event is {last!r}"
    finals = [e for e in events if isinstance(e, ResponseDone | StreamError)]
    assert len(finals) == 1, f"expected exactly one final event, got {finals!r}"
    return last


def done(events: list[ModelEvent]) -> ResponseDone:
    last = final(events)
    assert isinstance(last, ResponseDone), f"expected ResponseDone, got {last!r}"
    return last


def failed(events: list[ModelEvent]) -> StreamError:
    last = final(events)
    assert isinstance(last, StreamError), f"expected StreamError, got {last!r}"
    return last


# ----------------------------------------------------------------- snapshots


def check_snapshot(kit: WireKit, scenario: str, requests: Sequence[Recorded]) -> None:
    """Compare the outgoing payloads of a scenario with the stored snapshot, exactly."""
    got = [kit.snapshot(r) for r in requests]
    path = SNAPSHOTS / kit.name / f"{scenario}.json"
    text = json.dumps(got, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), (
        f"missing snapshot {path.relative_to(HERE)}; run with LOOPWRIGHT_UPDATE_SNAPSHOTS=1"
    )
    expected = json.loads(path.read_text())
    assert got == expected, f"payload differs from {path.relative_to(HERE)}"


# ----------------------------------------------------------------- scenarios


def expect_id(kit: WireKit, call: Call, got: str) -> None:
    if kit.native_ids:
        assert got == call.id
    else:
        assert got, "synthesised ids must not be empty"


def assert_calls(kit: WireKit, message: Message, calls: Sequence[Call]) -> None:
    got = message.tool_calls
    assert [c.name for c in got] == [c.name for c in calls]
    assert [dict(c.arguments) for c in got] == [c.arguments for c in calls]
    for call, part in zip(calls, got, strict=True):
        expect_id(kit, call, part.id)
    assert len({c.id for c in got}) == len(got), "tool-call ids must be unique"


@dataclass
class Run:
    """A scenario's context: the server, the kit, the model, and recorded payloads."""

    kit: WireKit
    server: FakeServer
    payloads: list[tuple[str, Any]] = field(default_factory=list)

    def model(self) -> Model:
        def hook(direction: str, payload: Any) -> None:
            self.payloads.append((direction, payload))

        return self.kit.model(self.server.url, hook)

    def script(self, *replies: Reply) -> None:
        self.server.push(*replies)


Scenario = Callable[[Run], Any]

USER = Message.user("What is the weather in Paris?")
PLAIN = Answer(text="It is sunny and 18 degrees in Paris today.", usage=(20, 11, 8, 0))
ONE_CALL = Answer(calls=(Call("call_w1", "get_weather", {"city": "Paris"}),), stop="tool_use")
PARALLEL = Answer(
    text="Checking both.",
    calls=(
        Call("call_p1", "get_weather", {"city": "Paris"}),
        Call("call_p2", "calculate", {"expression": "18*9/5+32", "precision": 1}),
    ),
    stop="tool_use",
)
STREAMED = Answer(
    calls=(
        Call(
            "call_s1",
            "files.read",
            {"path": "/var/log/some/rather/long/path/name.log"},
        ),
    ),
    stop="tool_use",
    fragment=3,
)
THINKING = Answer(
    reasoning="The user wants weather; I should call the tool.",
    calls=(Call("call_r1", "get_weather", {"city": "Paris"}),),
    stop="tool_use",
    usage=(30, 40, 0, 25),
)


async def plain_answer(run: Run) -> None:
    run.script(run.kit.reply(PLAIN))
    events = await collect(run.model(), request([USER]))
    result = done(events)
    assert result.message.text == PLAIN.text
    assert "".join(e.text for e in events if e.type == "text_delta") == PLAIN.text
    assert result.stop_reason == "final_answer"
    assert (result.usage.input_tokens, result.usage.output_tokens) == PLAIN.usage[:2]
    assert result.usage.cached_tokens == PLAIN.usage[2]
    assert [d for d, _ in run.payloads] == ["request", "response"]
    check_snapshot(run.kit, "plain_answer", run.server.requests)


async def one_tool_call(run: Run) -> None:
    run.script(run.kit.reply(ONE_CALL))
    result = done(await collect(run.model(), request([USER])))
    assert result.stop_reason == "tool_use"
    assert_calls(run.kit, result.message, ONE_CALL.calls)
    check_snapshot(run.kit, "one_tool_call", run.server.requests)


async def parallel_tool_calls(run: Run) -> None:
    run.script(run.kit.reply(PARALLEL))
    req = request([USER], tool_choice="required", parallel_tool_calls=True)
    result = done(await collect(run.model(), req))
    assert result.stop_reason == "tool_use"
    assert result.message.text == PARALLEL.text
    assert_calls(run.kit, result.message, PARALLEL.calls)
    check_snapshot(run.kit, "parallel_tool_calls", run.server.requests)


async def streamed_tool_call(run: Run) -> None:
    run.script(run.kit.reply(STREAMED))
    events = await collect(run.model(), request([USER]))
    result = done(events)
    assert_calls(run.kit, result.message, STREAMED.calls)
    assert result.message.tool_calls[0].name == "files.read"  # mapped back from the wire
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    partials = [e.partial_arguments for e in deltas if e.partial_arguments]
    if not getattr(run.kit, "streams_arguments", True):  # Gemini sends whole calls
        assert partials == [STREAMED.calls[0].arguments]
        check_snapshot(run.kit, "streamed_tool_call", run.server.requests)
        return
    assert len(partials) >= 3, "arguments must parse as they grow"
    paths = [p.get("path", "") for p in partials]
    assert all(b.startswith(a) for a, b in itertools.pairwise(paths)), paths
    assert partials[-1] == STREAMED.calls[0].arguments
    assert "".join(e.arguments_delta for e in deltas) == STREAMED.calls[0].wire_arguments
    check_snapshot(run.kit, "streamed_tool_call", run.server.requests)


async def reasoning_round_trip(run: Run) -> None:
    if not run.kit.reasoning:
        return
    run.script(run.kit.reply(THINKING), run.kit.reply(PLAIN))
    model = run.model()
    first = done(await collect(model, request([USER], reasoning="high")))
    parts = [p for p in first.message.parts if isinstance(p, ReasoningPart)]
    assert parts and parts[0].text == THINKING.reasoning
    if getattr(run.kit, "reasoning_tokens", True):  # Bedrock Converse reports no count
        assert first.usage.reasoning_tokens == THINKING.usage[3]
    history = [USER, first.message, _results(first.message)]
    done(await collect(model, request(history, reasoning="high")))
    check_snapshot(run.kit, "reasoning_round_trip", run.server.requests)


def _results(message: Message, content: str = "18C, sunny") -> Message:
    return Message.tool_results([ToolResultPart(c.id, c.name, content) for c in message.tool_calls])


async def two_turn_tool_loop(run: Run) -> None:
    run.script(run.kit.reply(PARALLEL), run.kit.reply(PLAIN))
    model = run.model()
    first = done(await collect(model, request([USER])))
    history = [USER, first.message, _results(first.message)]
    second = done(await collect(model, request(history)))
    assert second.message.text == PLAIN.text
    assert len(run.server.requests) == 2
    run.kit.check_request(run.server.requests[1].json)
    check_snapshot(run.kit, "two_turn_tool_loop", run.server.requests)


async def stream_cut_midway(run: Run) -> None:
    answer = Answer(text="The weather in Paris is", fragment=5)
    run.script(run.kit.reply(answer, cut_after=4))
    events = await collect(run.model(), request([USER]))
    err = failed(events)
    assert err.error.kind == "transient", err.error
    assert err.error.retryable
    assert err.partial is not None and err.partial.text, "the partial message must be kept"
    assert answer.text.startswith(err.partial.text)
    assert len(run.server.requests) == 1, "no retry once events were yielded"


async def noisy_stream(run: Run) -> None:
    run.script(run.kit.reply(PLAIN, noise=True))
    result = done(await collect(run.model(), request([USER])))
    assert result.message.text == PLAIN.text


async def garbage_stream(run: Run) -> None:
    run.script(run.kit.garbage())
    err = failed(await collect(run.model(), request([USER])))
    assert err.error.kind == "malformed_response", err.error
    assert err.error.raw, "the raw snippet must be attached"


async def unknown_stop_reason(run: Run) -> None:
    run.script(run.kit.reply(Answer(text="Hmm.", stop="brand_new_reason")))
    events = await collect(run.model(), request([USER]))
    last = final(events)
    assert isinstance(last, StreamError), "an unknown stop reason is reported, not guessed"
    assert "brand_new_reason" in (last.error.raw or "") + str(last.error)
    assert last.partial is not None and last.partial.text == "Hmm."


async def arguments_never_close(run: Run) -> None:
    """Arguments cut off by max_tokens are a malformed response (never run on a guess)."""
    bad = Call("call_x", "get_weather", {}, raw='{"city": "Par')
    run.script(run.kit.reply(Answer(calls=(bad,), stop="max_tokens")))
    err = failed(await collect(run.model(), request([USER])))
    assert err.error.kind == "malformed_response"
    if getattr(run.kit, "streams_arguments", True):  # Gemini: the whole chunk is unparseable
        # the same request would be cut at the same max_tokens: the loop must not resend
        # it (with its backoff and tokens) model_retries times
        assert err.error.retryable is False
        assert err.error.raw and '{"city": "Par' in err.error.raw
        assert "max_tokens" in str(err.error)
        assert err.partial is not None and err.partial.tool_calls


async def sloppy_arguments_reach_the_dispatcher(run: Run) -> None:
    """Arguments that are not strict JSON (a model's fault, not the wire's) arrive as a tool
    call with ``arguments={}`` and the exact ``raw_arguments``, for the dispatcher to repair
    or to answer ``invalid_arguments``; the turn does not fail."""
    sloppy = "{'expression': '1+1',}"
    bad = Call("call_y", "calculate", {}, raw=sloppy)
    run.script(run.kit.reply(Answer(calls=(bad,), stop="tool_use")))
    last = final(await collect(run.model(), request([USER])))
    if not getattr(run.kit, "streams_arguments", True):
        # Gemini's arguments are JSON inside the chunk itself: the chunk is unparseable.
        assert isinstance(last, StreamError) and last.error.kind == "malformed_response"
        return
    assert isinstance(last, ResponseDone), last
    (call,) = last.message.tool_calls
    assert call.name == "calculate" and call.arguments == {} and call.raw_arguments == sloppy
    assert last.stop_reason == "tool_use"


async def max_tokens_stop(run: Run) -> None:
    run.script(run.kit.reply(Answer(text="It is sunny and", stop="max_tokens")))
    result = done(await collect(run.model(), request([USER])))
    assert result.stop_reason == "max_tokens"
    assert result.message.text == "It is sunny and"


EXPECTED_ERRORS = {
    "rate_limited": "rate_limited",
    "server_error": "transient",
    "auth": "auth",
    "bad_request": "bad_request",
    "context_overflow": "context_overflow",
    "html": "malformed_response",
}


async def error_kind(run: Run, kind: str) -> None:
    """Each error kind maps to its class, and one ``stream()`` is one request whatever the
    kind: adapters (and the SDK clients they build) never retry; the loop owns retries."""
    run.script(run.kit.error(kind), run.kit.reply(PLAIN))
    err = failed(await collect(run.model(), request([USER])))
    assert err.error.kind == EXPECTED_ERRORS[kind], err.error
    assert err.error.raw, "the raw body must be attached"
    if kind == "html":
        assert "<html" in (err.error.raw or "").lower()
    assert len(run.server.requests) == 1, "an adapter must not retry (nor let its SDK retry)"
    assert run.server.pending == 1, "the scripted success must still be unused"


async def retry_after_reported(run: Run) -> None:
    """A 429's Retry-After travels on the error for the retry owner (the loop)."""
    run.script(run.kit.error("rate_limited"))
    err = failed(await collect(run.model(), request([USER])))
    assert err.error.kind == "rate_limited" and err.error.retryable
    assert err.error.retry_after == 2.0, err.error.retry_after
    assert len(run.server.requests) == 1


SCENARIOS: dict[str, Scenario] = {
    "plain_answer": plain_answer,
    "one_tool_call": one_tool_call,
    "parallel_tool_calls": parallel_tool_calls,
    "streamed_tool_call": streamed_tool_call,
    "reasoning_round_trip": reasoning_round_trip,
    "two_turn_tool_loop": two_turn_tool_loop,
    "stream_cut_midway": stream_cut_midway,
    "noisy_stream": noisy_stream,
    "garbage_stream": garbage_stream,
    "unknown_stop_reason": unknown_stop_reason,
    "arguments_never_close": arguments_never_close,
    "sloppy_arguments_reach_the_dispatcher": sloppy_arguments_reach_the_dispatcher,
    "max_tokens_stop": max_tokens_stop,
    "retry_after_reported": retry_after_reported,
}
"""Scenario name -> coroutine function. Error kinds run through :func:`error_kind`
(every kit's ``error(kind)`` must use ``Retry-After: 2`` for ``rate_limited``)."""
