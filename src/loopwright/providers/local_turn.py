"""A prepared turn of the embedded model (:class:`TurnPlan`) and the events its decoded
text becomes (:func:`finish`: a plan line, a tool call, an answer or a truncated answer)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from loopwright.core.events import (
    ModelEvent,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
)
from loopwright.core.grounding import is_json
from loopwright.core.messages import Message, StopReason, TextPart, ToolCallPart, Usage
from loopwright.core.tools import ToolSpec
from loopwright.providers import local_answer as la
from loopwright.providers import local_args as lar
from loopwright.providers import local_ground as lgr
from loopwright.providers import local_output as lo
from loopwright.providers import local_plan as lpl
from loopwright.providers import local_prompt as lp
from loopwright.providers import local_templates as lt
from loopwright.providers import local_veto as lv


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """One turn, prepared: the prompt's tokens, what may be decoded and what it is
    grounded in (built by ``LocalModel._plan``, narrowed by ``LocalModel._narrow``)."""

    tokens: list[int]
    schema: dict[str, Any]
    max_tokens: int
    trimmed: int
    tool_names: tuple[str, ...]
    plan_grammar: str | None = None  # GBNF of a plan line (replaces ``schema``)
    tools: tuple[ToolSpec, ...] = ()
    mode: lp.Mode = "both"
    choices: tuple[ToolSpec, ...] = ()  # the tools ``schema`` offers
    answer_gbnf: str | None = None  # the grounded-answer grammar (answer turns)
    answer_guide: la.AnswerGuide | None = None
    answer_veto: lv.AnswerVeto | None = None
    ground: lgr.Grounding | None = None  # what the arguments are grounded in
    structured: bool = False  # the answer is JSON under the request's output schema
    guard: lar.ArgumentGuard | None = None  # refuses copied example values in calls
    decided: lp.Mode | None = None  # a first turn's kind, decided from the request's words
    prefix_len: int = 0  # tokens of the prompt before the conversation (tools, examples)


def _finish_plan(text: str, plan: TurnPlan, usage: Usage, model: str) -> list[ModelEvent] | None:
    """A decoded plan line: the plan (kept as a reasoning part) plus its first call."""
    steps = lpl.parse_plan(text, plan.tools)
    if not steps:
        return None
    steps = lpl.agreed(steps)
    first = steps[0]
    raw = json.dumps(first.arguments, ensure_ascii=False)
    call = ToolCallPart(f"call_{uuid.uuid4().hex[:12]}", first.tool, first.arguments, raw)
    line = text.strip()
    meta: dict[str, Any] = {"local": {"trimmed_blocks": plan.trimmed}} if plan.trimmed else {}
    message = Message("assistant", (lpl.plan_part(line, steps), call), meta)
    return [
        ReasoningDelta(line),
        ToolCallDelta(0, call.id, call.name, raw, dict(first.arguments)),
        ResponseDone(message, StopReason.TOOL_USE, usage, model),
    ]


def _filled(parsed: lo.ParsedCall, plan: TurnPlan) -> dict[str, Any]:
    """The call's arguments with their placeholders filled (``local_templates``)."""
    spec = next((s for s in plan.choices if s.name == parsed.name), None)
    if spec is None:
        return parsed.arguments
    request = plan.ground.request if plan.ground is not None else ""
    return lt.fill_templates(spec.parameters, parsed.arguments, request)


def finish(text: str, plan: TurnPlan, usage: Usage, model: str) -> list[ModelEvent]:
    if plan.structured:  # cut short only by the token cap
        stop = StopReason.FINAL_ANSWER if is_json(text) else StopReason.MAX_TOKENS
        return [TextDelta(text), ResponseDone(Message.assistant(text), stop, usage, model)]
    if plan.plan_grammar is not None:
        planned = _finish_plan(text, plan, usage, model)
        if planned is not None:
            return planned
    parsed = lo.parse_output(text, plan.tool_names)
    meta = {"local": {"trimmed_blocks": plan.trimmed}} if plan.trimmed else {}
    if isinstance(parsed, lo.ParsedAnswer):
        message = Message("assistant", (TextPart(parsed.text),), meta)
        return [ResponseDone(message, StopReason.FINAL_ANSWER, usage, model)]
    if isinstance(parsed, lo.ParsedCall):
        arguments = _filled(parsed, plan)
        raw = json.dumps(arguments, ensure_ascii=False)
        call = ToolCallPart(f"call_{uuid.uuid4().hex[:12]}", parsed.name, arguments, raw)
        delta = ToolCallDelta(0, call.id, call.name, raw, dict(arguments))
        message = Message("assistant", (call,), meta)
        return [delta, ResponseDone(message, StopReason.TOOL_USE, usage, model)]
    # The token cap ended the object early: keep what decoded as a truncated answer.
    partial = lo.partial_answer(text) or text
    message = Message("assistant", (TextPart(partial),))
    return [ResponseDone(message, StopReason.MAX_TOKENS, usage, model)]


__all__ = ["TurnPlan", "finish"]
