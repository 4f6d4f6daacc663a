"""Run a model's own plan step by step (the chaining planner of the embedded model).

A model that can write a whole plan at once (the embedded model's *plan line*, see
``docs/providers.md``) returns the plan as a reasoning part whose
``provider_meta["local_plan"]["steps"]`` lists every step as
``{"tool": name, "arguments": {...}}``; an argument equal to :data:`RESULT_JSON` takes
the previous step's result. The model's reply also carries the plan's first call.

:class:`FollowPlan` wraps such a model: while the plan has steps left and every step so
far succeeded, it returns the next step as a tool call *without calling the model*
(the steps are the model's own; this only moves each result into the next call); once
every step has run it asks the model for the answer only (``tool_choice="none"``). A
failed step abandons the plan: the model decides again from the error. Everything goes
through :class:`~loopwright.core.protocols.Model`, so any model that writes that
reasoning part can be wrapped.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from loopwright.core.events import ModelEvent, ResponseDone, ToolCallDelta
from loopwright.core.messages import Message, ReasoningPart, StopReason, ToolCallPart, Usage
from loopwright.core.protocols import ModelRequest, NamedTool
from loopwright.strategies.wrapper import ModelWrapper

PLAN_META_KEY = "local_plan"
RESULT_JSON: Mapping[str, str] = {"$ref": "previous_result"}


@dataclass(frozen=True, slots=True)
class Step:
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Progress:
    """Where the plan written since the last user message stands: ``next_step`` (its
    arguments already carry the previous result) is ``None`` when every step ran."""

    total: int
    done: int
    next_step: Step | None


def plan_steps(message: Message) -> list[Step] | None:
    """The plan a message carries, or ``None``."""
    for part in message.parts:
        if not isinstance(part, ReasoningPart):
            continue
        meta = part.provider_meta.get(PLAN_META_KEY)
        steps = meta.get("steps") if isinstance(meta, Mapping) else None
        if isinstance(steps, list) and steps:
            parsed = [
                Step(str(s["tool"]), dict(s["arguments"]))
                for s in steps
                if isinstance(s, Mapping) and isinstance(s.get("arguments"), Mapping)
            ]
            return parsed if len(parsed) == len(steps) else None
    return None


def _value(result: str) -> Any:
    """A result as the next call's argument: its JSON scalar when it is one, else the
    text itself."""
    text = result.strip()
    try:
        decoded = json.loads(text)
    except ValueError:
        return text
    return decoded if isinstance(decoded, int | float | str | bool) else text


def progress(messages: Sequence[Message]) -> Progress | None:
    """The active plan's progress; ``None`` when there is none or a step failed."""
    start, steps = None, None
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            break
        if messages[i].role == "assistant" and (found := plan_steps(messages[i])):
            start, steps = i, found
            break
    if start is None or steps is None:
        return None
    done, last = 0, ""
    for message in messages[start:]:
        if message.role == "assistant" and message.tool_calls:
            done += 1
        for result in message.tool_results_parts:
            if result.is_error:
                return None
            last = result.content
    if done >= len(steps):
        return Progress(len(steps), done, None)
    step = steps[done]
    args = {k: (_value(last) if v == RESULT_JSON else v) for k, v in step.arguments.items()}
    return Progress(len(steps), done, Step(step.tool, args))


class FollowPlan(ModelWrapper):
    """A :class:`~loopwright.core.protocols.Model` running ``model``'s plans (see the
    module docstring). Other attributes (``context_window``, ``count_tokens``,
    ``load``) are the wrapped model's."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        state = progress(request.messages)
        choice = request.settings.tool_choice
        if state is not None and state.next_step is not None and choice != "none":
            offered = {t.name for t in request.tools}
            step = state.next_step
            named = not isinstance(choice, NamedTool) or choice.name == step.tool
            if step.tool in offered and named:
                for event in self._step(step, state.done + 1):
                    yield event
                return
        if state is not None and state.next_step is None and choice == "auto":
            settings = replace(request.settings, tool_choice="none")
            request = replace(request, settings=settings)
        async for event in self.model.stream(request):
            yield event

    def _step(self, step: Step, number: int) -> list[ModelEvent]:
        raw = json.dumps(step.arguments, ensure_ascii=False)
        call = ToolCallPart(f"call_{uuid.uuid4().hex[:12]}", step.tool, step.arguments, raw)
        message = Message("assistant", (call,), {PLAN_META_KEY: {"plan_step": number}})
        return [
            ToolCallDelta(0, call.id, call.name, raw, dict(step.arguments)),
            ResponseDone(message, StopReason.TOOL_USE, Usage(), self.name),
        ]


__all__ = ["RESULT_JSON", "FollowPlan", "Progress", "Step", "plan_steps", "progress"]
