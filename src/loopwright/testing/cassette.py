"""Record and replay a model's exchanges: deterministic agent tests with no network.

A cassette works at the :class:`~loopwright.core.protocols.Model` level: it stores each
:class:`~loopwright.core.protocols.ModelRequest` the loop made (canonical messages, system
prompt, tool definitions, settings) and the exact stream of events the model answered
with (text/reasoning/tool-call deltas, then ``ResponseDone`` or ``StreamError``). Why this
level and not HTTP:

* one format for every protocol -- OpenAI Chat and Responses, Anthropic, Gemini, Bedrock
  (whose SDK speaks AWS event-stream over botocore, not httpx) -- and for the embedded
  GGUF model, which has no HTTP at all;
* the recorded request is canonical, so a mismatch diff reads like the conversation
  ("the second user message changed"), not like a vendor's JSON;
* replay needs no SDK, no API key and no server: a cassette recorded against OpenAI
  replays on a machine with none of the vendor packages installed.

What it does not cover: the adapters' own wire conversion (encoding the request, parsing
the stream), which the provider contract suite tests against recorded wire responses.

Usage::

    cassette = Cassette("tests/cassettes/weather.json", mode="auto")
    agent = Agent(cassette.model("openai:gpt-4o"), tools=[get_weather])
    result = agent.run("Weather in Paris?")
    cassette.finish()          # record/auto: write the file; replay: check every call

Modes: ``replay`` (the default: play the file, never call a model), ``record`` (call the
real model and write the file), ``auto`` (replay when the file exists, else record).
Requests are compared in order; the first one that differs from the recording ends that
model call with a :class:`CassetteMismatch` (a non-retryable ``StreamError``, so the run
stops with ``model_error``) and :meth:`Cassette.finish` raises it with a unified diff.
Everything written is redacted (:mod:`loopwright.tracing.redact`).

For pytest, see :mod:`loopwright.testing.cassette_pytest` (a ``cassette`` fixture and a
``cassette`` marker).
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Literal

from loopwright.core.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    MalformedResponse,
    ModelTimeout,
    ProviderError,
    RateLimited,
    ResponseTooLarge,
    TransientProviderError,
)
from loopwright.core.events import (
    ModelEvent,
    ReasoningDelta,
    ResponseDone,
    StreamError,
    TextDelta,
    ToolCallDelta,
)
from loopwright.core.messages import JSONValue, StopReason, Usage, message_from_dict
from loopwright.core.protocols import Model, ModelRequest
from loopwright.tracing.redact import redact
from loopwright.tracing.serialize import model_event_to_dict

Mode = Literal["replay", "record", "auto"]
MODES: tuple[Mode, ...] = ("replay", "record", "auto")
MODE_ENV = "LOOPWRIGHT_CASSETTE_MODE"
CASSETTE_FORMAT = 1
MATCH_FIELDS = ("messages", "system", "tools", "settings")

_ERRORS: dict[str, type[ProviderError]] = {
    cls.kind: cls
    for cls in (
        RateLimited,
        TransientProviderError,
        ModelTimeout,
        ResponseTooLarge,
        ContextOverflow,
        AuthError,
        BadRequest,
        MalformedResponse,
    )
}


class CassetteMismatch(ProviderError, AssertionError):
    """A request differs from the recorded one (or there is no recording left).

    ``str(err)`` holds a unified diff of the canonical requests."""

    kind = "cassette_mismatch"


def request_to_dict(
    request: ModelRequest, fields: Collection[str] = MATCH_FIELDS
) -> dict[str, JSONValue]:
    """The canonical, JSON-able form of a request (what is stored and compared)."""
    out: dict[str, JSONValue] = {}
    if "messages" in fields:
        out["messages"] = [m.to_dict() for m in request.messages]
    if "system" in fields:
        out["system"] = None if request.system is None else str(request.system)
    if "tools" in fields:
        out["tools"] = [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in request.tools
        ]
    if "settings" in fields:
        s = request.settings
        choice = s.tool_choice if isinstance(s.tool_choice, str) else {"name": s.tool_choice.name}
        out["settings"] = {
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "stop": list(s.stop),
            "tool_choice": choice,
            "parallel_tool_calls": s.parallel_tool_calls,
            "strict_tools": s.strict_tools,
            "reasoning": s.reasoning,
            "seed": s.seed,
            "extra": dict(s.extra),
        }
    # a JSON round trip: tuples become lists, odd values strings, as in the file
    return json.loads(json.dumps(redact(out), default=str))


def event_from_dict(data: Mapping[str, JSONValue]) -> ModelEvent:
    kind = data.get("type")
    if kind == "text_delta":
        return TextDelta(str(data["text"]))
    if kind == "reasoning_delta":
        return ReasoningDelta(str(data["text"]))
    if kind == "tool_call_delta":
        return ToolCallDelta(
            int(data["index"]),
            data.get("id"),
            data.get("name"),
            str(data.get("arguments_delta", "")),
            data.get("partial_arguments"),
        )
    if kind == "response_done":
        return ResponseDone(
            message_from_dict(data["message"]),
            StopReason(data["stop_reason"]),
            Usage.from_dict(data.get("usage") or {}),
            str(data.get("model", "")),
        )
    if kind == "stream_error":
        return StreamError(
            _error_from_dict(data.get("error") or {}),
            None,
            Usage.from_dict(data.get("usage") or {}),
        )
    raise ValueError(f"unknown event type {kind!r} in cassette")


def _error_from_dict(data: Mapping[str, JSONValue]) -> ProviderError:
    kind = str(data.get("kind", "provider_error"))
    cls = _ERRORS.get(kind, ProviderError)
    error = cls(
        str(data.get("message", "")),
        status=data.get("status"),
        retry_after=data.get("retry_after"),
    )
    if cls is ProviderError:  # a kind this version does not know: keep its name and flag
        error.kind = kind
        error.retryable = bool(data.get("retryable", False))
    return error


def _event_dict(event: ModelEvent) -> dict[str, JSONValue]:
    out = model_event_to_dict(event)
    if isinstance(event, ToolCallDelta) and event.partial_arguments is not None:
        out["partial_arguments"] = dict(event.partial_arguments)
    return out


def _diff(expected: object, got: object, index: int) -> str:
    a = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    b = json.dumps(got, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    lines = difflib.unified_diff(
        a, b, f"recorded request #{index + 1}", f"actual request #{index + 1}", lineterm=""
    )
    return "\n".join(lines)


class Cassette:
    """One cassette file (see the module docstring).

    ``match``: which parts of a request must equal the recording (default: messages,
    system, tools and settings). ``mode=None`` reads ``$LOOPWRIGHT_CASSETTE_MODE``
    (default ``replay``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: Mode | None = None,
        *,
        match: Collection[str] = MATCH_FIELDS,
    ) -> None:
        mode = mode or os.environ.get(MODE_ENV, "replay")  # type: ignore[assignment]
        if mode not in MODES:
            raise ValueError(f"cassette mode {mode!r}: use one of {', '.join(MODES)}")
        unknown = set(match) - set(MATCH_FIELDS)
        if unknown:
            raise ValueError(f"cassette match fields {sorted(unknown)}: use {MATCH_FIELDS}")
        self.path = Path(path)
        self.match = tuple(match)
        if mode == "auto":
            mode = "replay" if self.path.exists() else "record"
        self.mode: Literal["replay", "record"] = mode  # type: ignore[assignment]
        self.interactions: list[dict[str, Any]] = []
        self.model_name = ""
        self.used = 0
        self.mismatches: list[CassetteMismatch] = []
        if self.mode == "replay":
            self._load()

    @property
    def recording(self) -> bool:
        return self.mode == "record"

    def _load(self) -> None:
        if not self.path.exists():
            raise FileNotFoundError(
                f"cassette {self.path} does not exist; record it with "
                f"{MODE_ENV}=record (or mode='record'/'auto') against the real model"
            )
        data = json.loads(self.path.read_text(encoding="utf-8"))
        if data.get("format") != CASSETTE_FORMAT:
            raise ValueError(f"cassette {self.path}: unsupported format {data.get('format')!r}")
        self.interactions = list(data.get("interactions", []))
        self.model_name = str(data.get("model", ""))

    # -- models --------------------------------------------------------------------------
    def model(self, spec: str, factory: Callable[[], Model] | None = None) -> Model:
        """The model to give the agent: in replay mode a player named ``spec`` (no SDK,
        no key); when recording, the real model -- ``factory()``, or
        ``resolve_model(spec)`` -- wrapped to record."""
        if not self.recording:
            return _Player(self, spec)
        if factory is None:
            from loopwright.providers.registry import resolve_model

            return self.wrap(resolve_model(spec))
        return self.wrap(factory())

    def wrap(self, model: Model) -> Model:
        """Record ``model`` (record mode), or replay in its place (replay mode: ``model``
        is never called)."""
        if self.recording:
            return _Recorder(self, model)
        return _Player(self, model.name)

    # -- results -------------------------------------------------------------------------
    def finish(self) -> None:
        """Record mode: write the file. Replay mode: raise the first mismatch, or a
        :class:`CassetteMismatch` when recorded calls were never made."""
        if self.recording:
            self.save()
            return
        if self.mismatches:
            raise self.mismatches[0]
        left = len(self.interactions) - self.used
        if left:
            raise CassetteMismatch(
                f"cassette {self.path}: {left} recorded model call(s) were never made "
                f"(made {self.used} of {len(self.interactions)}); the agent now stops "
                "earlier -- re-record if that is intended"
            )

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "format": CASSETTE_FORMAT,
            "model": self.model_name,
            "match": list(self.match),
            "interactions": self.interactions,
        }
        text = json.dumps(data, indent=1, ensure_ascii=False, default=str)
        self.path.write_text(text + "\n", encoding="utf-8")

    # -- used by the models --------------------------------------------------------------
    def _next(self, request: ModelRequest) -> list[ModelEvent] | CassetteMismatch:
        index = self.used
        got = request_to_dict(request, self.match)
        if index >= len(self.interactions):
            error = CassetteMismatch(
                f"cassette {self.path}: model call #{index + 1} was not recorded (the "
                f"cassette holds {len(self.interactions)}); request:\n"
                + json.dumps(got, indent=2, ensure_ascii=False)[:4000]
            )
            self.mismatches.append(error)
            return error
        expected = {k: v for k, v in self.interactions[index]["request"].items() if k in self.match}
        if expected != got:
            error = CassetteMismatch(
                f"cassette {self.path}: request #{index + 1} differs from the recording\n"
                + _diff(expected, got, index)
            )
            self.mismatches.append(error)
            return error
        self.used += 1
        return [event_from_dict(e) for e in self.interactions[index]["events"]]

    def _record(self, model_name: str, request: ModelRequest, events: list[ModelEvent]) -> None:
        self.model_name = self.model_name or model_name
        self.interactions.append(
            {
                "request": request_to_dict(request, self.match),
                "events": redact([_event_dict(e) for e in events]),
            }
        )


class _Player:
    """Replays a cassette as a :class:`Model`."""

    def __init__(self, cassette: Cassette, name: str) -> None:
        self._cassette = cassette
        self._name = name or cassette.model_name

    @property
    def name(self) -> str:
        return self._name

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self._play(self._cassette._next(request))

    @staticmethod
    async def _play(events: list[ModelEvent] | CassetteMismatch) -> AsyncIterator[ModelEvent]:
        if isinstance(events, CassetteMismatch):
            yield StreamError(events)
            return
        for event in events:
            yield event


class _Recorder:
    """Passes a real model's stream through, keeping a copy of every event."""

    def __init__(self, cassette: Cassette, model: Model) -> None:
        self._cassette = cassette
        self._model = model

    @property
    def name(self) -> str:
        return self._model.name

    def __getattr__(self, name: str) -> Any:
        # context_window, load() ...: whatever else the real model offers
        return getattr(self._model, name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        # the canonical request is taken before the call: the loop reuses its history list
        events: list[ModelEvent] = []
        snapshot = ModelRequest(
            list(request.messages), request.system, request.tools, request.settings
        )
        async for event in self._model.stream(request):
            events.append(event)
            yield event
        self._cassette._record(self._model.name, snapshot, events)
