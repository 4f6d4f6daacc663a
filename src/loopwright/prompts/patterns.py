"""The four agent prompt patterns and the scratchpad, with output parsers.

Each pattern is a built-in template file (``prompts/templates/<name>/v<version>.txt``)
plus the JSON Schema of its output (``schema.json``) and a few semantic checks. Every
pattern keeps a safe exit, so a model that cannot comply has a valid answer to give:

========== ===================================== =====================================
pattern    output                                safe exit
========== ===================================== =====================================
router     tool_name, tool_input, confidence     ``tool_name: "none"`` + ``question``
planner    action=plan, plan[steps]              ``clarify`` (question) / ``refuse``
executor   action=call, tool_call                ``refuse`` (reason)
reflector  scores, overall_pass, action          ``escalate``
scratchpad <scratchpad> + <action>{json}          ``tool_name: "none"`` + ``question``
========== ===================================== =====================================

:func:`extract_json` finds the JSON object in what a model actually writes (a code
fence, an ``<action>`` tag, prose before or after); :meth:`Pattern.parse` validates it and
raises :class:`OutputParseError` whose :attr:`~OutputParseError.retry_message` tells
the model precisely what to fix, to send back on a retry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final

from jsonschema import Draft202012Validator

from loopwright.core.errors import LoopwrightError
from loopwright.core.messages import JSONValue
from loopwright.core.untrusted import wrap_untrusted
from loopwright.prompts.registry import PromptRegistry
from loopwright.prompts.template import PromptTemplate, PromptText

_FENCE: Final = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_TAG: Final = re.compile(r"<(action|scratchpad)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)


class OutputParseError(LoopwrightError):
    """A model's output did not match a pattern's contract.

    ``retry_message`` is addressed to the model: what was wrong, where, and the shape
    to reply with. ``raw`` is the output as received.
    """

    def __init__(self, message: str, *, retry_message: str, raw: str) -> None:
        super().__init__(message)
        self.retry_message = retry_message
        self.raw = raw


@dataclass(frozen=True, slots=True)
class Parsed:
    """A validated pattern output: the object, and the scratchpad text if there was one."""

    value: dict[str, JSONValue]
    scratchpad: str | None = None


def extract_json(text: str) -> tuple[dict[str, JSONValue] | None, str | None]:
    """The first JSON object in ``text`` (action tag, then code fence, then anywhere).

    Returns ``(object, None)`` or ``(None, reason it failed)``.
    """
    tags = {m.group(1).lower(): m.group(2) for m in _TAG.finditer(text)}
    candidates: list[str] = []
    if "action" in tags:
        candidates.append(tags["action"])
    candidates.extend(m.group(1) for m in _FENCE.finditer(text))
    candidates.append(text)
    decoder = json.JSONDecoder()
    last_error: str | None = None
    for chunk in candidates:
        start = chunk.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(chunk, start)
            except ValueError as exc:
                last_error = str(exc)
                start = chunk.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value, None
            start = chunk.find("{", start + 1)
    return None, last_error or "no JSON object found"


def _pointer(path: Iterable[Any]) -> str:
    return "/" + "/".join(str(p) for p in path) if path else "/"


Check = Callable[[dict[str, JSONValue], Mapping[str, object]], list[str]]


@dataclass(frozen=True)
class Pattern:
    """A prompt pattern: template + output schema + semantic checks + safe exit."""

    name: str
    template: PromptTemplate
    schema: Mapping[str, JSONValue]
    safe_exit: str
    untrusted: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()
    _validator: Draft202012Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        Draft202012Validator.check_schema(self.schema)
        object.__setattr__(self, "_validator", Draft202012Validator(self.schema))

    @property
    def fingerprint(self) -> str:
        return self.template.fingerprint

    def render(self, values: Mapping[str, object] | None = None, /, **kwargs: object) -> PromptText:
        """Render the template; variables named in ``untrusted`` are wrapped as data."""
        merged: dict[str, object] = dict(values or {})
        merged.update(kwargs)
        for name in self.untrusted:
            if isinstance(merged.get(name), str):
                merged[name] = wrap_untrusted(str(merged[name]), "user input")
        return self.template.render(merged)

    def parse(self, text: str, **context: object) -> Parsed:
        """Extract, validate and check the output; :class:`OutputParseError` otherwise.

        ``context`` feeds the semantic checks (``allowed_tools=[...]`` for router,
        planner and scratchpad; ``tool_name=...`` for executor).
        """
        value, reason = extract_json(text)
        if value is None:
            raise self._error(f"no JSON object could be read ({reason})", text)
        problems = [
            f"at {_pointer(e.absolute_path)}: {e.message}"
            for e in sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        ]
        if not problems:
            for check in self.checks:
                problems.extend(check(value, context))
        if problems:
            raise self._error("; ".join(problems), text)
        tags = {m.group(1).lower(): m.group(2).strip() for m in _TAG.finditer(text)}
        return Parsed(value, tags.get("scratchpad"))

    def _error(self, what: str, raw: str) -> OutputParseError:
        required = self.schema.get("required", [])
        retry = (
            f"Your reply could not be used: {what}. Reply again with exactly one JSON object "
            f"(required fields: {', '.join(map(str, required))}) and nothing else. {self.safe_exit}"
        )
        return OutputParseError(
            f"{self.name} output rejected: {what}", retry_message=retry, raw=raw
        )


# -- semantic checks -------------------------------------------------------------------


def _allowed(context: Mapping[str, object]) -> set[str] | None:
    names = context.get("allowed_tools")
    if names is None:
        return None
    return {str(n) for n in names} if isinstance(names, Iterable) else None  # type: ignore[arg-type]


def _check_tool_name(value: dict[str, JSONValue], context: Mapping[str, object]) -> list[str]:
    allowed = _allowed(context)
    name = value.get("tool_name")
    if allowed is None or name == "none" or name in allowed:
        return []
    return [
        f"at /tool_name: {name!r} is not an available tool; use one of: "
        f"{', '.join(sorted(allowed))}, or none"
    ]


def _check_plan(value: dict[str, JSONValue], context: Mapping[str, object]) -> list[str]:
    if value.get("action") != "plan":
        return []
    problems: list[str] = []
    seen: set[int] = set()
    allowed = _allowed(context)
    for i, step in enumerate(value.get("plan") or []):
        sid = step["step_id"]
        if sid in seen:
            problems.append(f"at /plan/{i}/step_id: {sid} is used twice; step ids must be unique")
        for dep in step["depends_on"]:
            if dep not in seen:
                problems.append(
                    f"at /plan/{i}/depends_on: step {sid} depends on {dep}, which is not an "
                    "earlier step"
                )
        if allowed is not None and step["tool_name"] not in allowed:
            problems.append(
                f"at /plan/{i}/tool_name: {step['tool_name']!r} is not an available tool; "
                f"use one of: {', '.join(sorted(allowed))}"
            )
        seen.add(sid)
    return problems


def _check_executor(value: dict[str, JSONValue], context: Mapping[str, object]) -> list[str]:
    expected = context.get("tool_name")
    call = value.get("tool_call")
    if value.get("action") != "call" or expected is None or not isinstance(call, dict):
        return []
    if call.get("name") != expected:
        return [
            f"at /tool_call/name: must be {expected!r} (the task's tool), got {call.get('name')!r}"
        ]
    return []


def _check_reflector(value: dict[str, JSONValue], context: Mapping[str, object]) -> list[str]:
    evaluation = value["evaluation"]
    assert isinstance(evaluation, dict)
    correctness = evaluation["correctness"]["score"]
    if value["action"] == "accept" and correctness <= 2:
        return [f"at /action: 'accept' is not allowed when correctness is {correctness} (<= 2)"]
    return []


_SPECS: Final[dict[str, tuple[str, tuple[str, ...], tuple[Check, ...]]]] = {
    "router": (
        'If you cannot route, reply {"tool_name": "none", "tool_input": {}, '
        '"confidence": 0, "question": "<what you need to know>"}.',
        ("user_input",),
        (_check_tool_name,),
    ),
    "planner": (
        'If the request is unclear reply {"action": "clarify", "question": "..."}; if it must '
        'not be done reply {"action": "refuse", "reason": "..."}.',
        ("user_request",),
        (_check_plan,),
    ),
    "executor": (
        'If the task cannot be done reply {"action": "refuse", "reason": "..."}.',
        (),
        (_check_executor,),
    ),
    "reflector": (
        'If you cannot judge the result reply with "action": "escalate".',
        (),
        (_check_reflector,),
    ),
    "scratchpad": (
        "Put the JSON inside <action></action>. If you need more information use "
        '"tool_name": "none" with a "question".',
        ("user_request",),
        (_check_tool_name,),
    ),
}

PATTERN_NAMES: Final = tuple(_SPECS)


def templates_dir() -> Path:
    """The folder of built-in prompt files (``loopwright/prompts/templates``)."""
    return Path(str(resources.files("loopwright.prompts").joinpath("templates")))


@cache
def builtin_registry() -> PromptRegistry:
    """The built-in prompts as a registry (``local/`` holds the local model's fragments)."""
    return PromptRegistry(templates_dir(), exclude=("local",))


def load_pattern(
    name: str, version: str = "latest", registry: PromptRegistry | None = None
) -> Pattern:
    """A built-in pattern (``router``, ``planner``, ``executor``, ``reflector``,
    ``scratchpad``) at a version; ``registry`` may supply your own edited copies."""
    if name not in _SPECS:
        raise LookupError(f"unknown pattern {name!r}; expected one of: {', '.join(PATTERN_NAMES)}")
    if registry is None:
        return _builtin_pattern(name, version)
    return _make_pattern(name, version, registry)


@cache
def _builtin_pattern(name: str, version: str) -> Pattern:
    return _make_pattern(name, version, builtin_registry())


def _make_pattern(name: str, version: str, reg: PromptRegistry) -> Pattern:
    schema = reg.schema(name)
    if schema is None:
        raise LookupError(f"pattern {name!r} has no schema.json in {reg.root}")
    safe_exit, untrusted, checks = _SPECS[name]
    return Pattern(name, reg.get(name, version), schema, safe_exit, untrusted, checks)


def tool_descriptions(tools: Sequence[object]) -> str:
    """A numbered tool list for the ``{tool_descriptions}`` variable (ToolSpec-like objects)."""
    lines = []
    for i, t in enumerate(tools, 1):
        name = getattr(t, "name", str(t))
        desc = getattr(t, "description", "")
        lines.append(f"{i}. {name}: {desc}".rstrip(": "))
    return "\n".join(lines)
