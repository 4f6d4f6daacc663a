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

from jsonschema import Draft202012Validator, ValidationError

from loopwright.core.errors import LoopwrightError
from loopwright.core.messages import JSONValue
from loopwright.core.schemacheck import Check as SchemaCheck
from loopwright.core.schemacheck import compile_fast_check, format_checker, format_hint
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


def _no_constant(name: str) -> object:
    # Python's JSON accepts NaN / Infinity; a value carrying them could be neither stored
    # (PostgreSQL's JSON refuses them) nor sent on to a provider
    raise ValueError(f"{name} is not a JSON number: write a number or a string")


STRICT_JSON: Final = json.JSONDecoder(parse_constant=_no_constant)
"""The decoder of JSON in model replies (strict: no NaN / Infinity). Shared: building a
decoder (its scanner) costs more than decoding a small reply, and every planner,
reflector and router reply -- and every text-protocol tool call -- is decoded with it."""
_DECODER: Final = STRICT_JSON


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
    decoder = _DECODER
    last_error: str | None = None
    whole = len(candidates) - 1
    for index, chunk in enumerate(candidates):
        start = chunk.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(chunk, start)
            except (ValueError, RecursionError) as exc:  # nested deeper than Python recurses
                last_error = str(exc)
                if index != whole:
                    # A tag or fence holds one object from its first brace; a brace after
                    # a failed start is inside that object (a fence cut short by ``` in
                    # one of its strings leaves the nested {} of a key), so the next
                    # candidate is tried instead.
                    break
                start = chunk.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value, None
            start = chunk.find("{", start + 1)
    return None, last_error or "no JSON object found"


def _pointer(path: Iterable[Any]) -> str:
    return "/" + "/".join(str(p) for p in path) if path else "/"


_MAX_PROBLEMS: Final = 5
_MAX_SHOWN: Final = 60


def _describe(error: ValidationError) -> str:
    """One schema violation, short enough to send back to a model: the limit it broke and
    never the whole offending value (a 12-step plan is not quoted back in full)."""
    where = f"at {_pointer(error.absolute_path)}"
    instance, limit = error.instance, error.validator_value
    if error.validator in ("maxItems", "minItems") and isinstance(instance, list):
        bound = "at most" if error.validator == "maxItems" else "at least"
        change = abs(len(instance) - int(limit))
        fix = f"remove {change}" if error.validator == "maxItems" else f"add {change}"
        return f"{where}: has {len(instance)} items; {bound} {limit} are allowed ({fix})"
    if error.validator in ("maxLength", "minLength") and isinstance(instance, str):
        bound = "at most" if error.validator == "maxLength" else "at least"
        return f"{where}: has {len(instance)} characters; {bound} {limit} are allowed"
    message = error.message
    shown = repr(instance)
    if len(shown) > _MAX_SHOWN and message.startswith(shown):
        message = shown[: _MAX_SHOWN - 1] + "…" + message[len(shown) :]
    if error.validator == "format":
        message += format_hint(limit)
    return f"{where}: {message[:300]}"


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
    # "certainly valid" without entering jsonschema (~1 ms per reply for the planner and
    # reflector schemas); any doubt runs the full validator, which also words the errors
    _fast: SchemaCheck | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        Draft202012Validator.check_schema(self.schema)
        # the same asserted formats as the fast check (a bad date is refused on both paths)
        validator = Draft202012Validator(self.schema, format_checker=format_checker())
        object.__setattr__(self, "_validator", validator)
        object.__setattr__(self, "_fast", compile_fast_check(self.schema))

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
        problems = [] if self._fast is not None and self._fast(value) else self._violations(value)
        if not problems:
            for check in self.checks:
                problems.extend(check(value, context))
        if problems:
            shown = problems[:_MAX_PROBLEMS]
            if len(problems) > _MAX_PROBLEMS:
                shown.append(f"and {len(problems) - _MAX_PROBLEMS} more")
            raise self._error("; ".join(shown), text)
        tags = {m.group(1).lower(): m.group(2).strip() for m in _TAG.finditer(text)}
        return Parsed(value, tags.get("scratchpad"))

    def _violations(self, value: dict[str, JSONValue]) -> list[str]:
        errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        return [_describe(e) for e in errors]

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


_STEP_REF: Final = re.compile(r"\$step_(\d+)_result")


def _refs(value: object) -> set[int]:
    """The step numbers ``$step_N_result`` names anywhere in a tool input."""
    if isinstance(value, str):
        return {int(n) for n in _STEP_REF.findall(value)}
    if isinstance(value, dict):
        return set().union(*(_refs(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value)) if value else set()
    return set()


def _cycle(deps: Mapping[int, Sequence[int]]) -> tuple[int, ...]:
    """One dependency cycle among the steps (``(1, 2, 1)``), or ``()``."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done

    def visit(node: int, path: list[int]) -> list[int] | None:
        state[node] = 1
        for dep in deps.get(node, ()):
            if state.get(dep) == 1:  # on the current path: a cycle back to it
                return [*path[path.index(dep) :], dep]
            if dep in deps and state.get(dep) is None:
                found = visit(dep, [*path, dep])
                if found:
                    return found
        state[node] = 2
        return None

    for start in deps:
        if state.get(start) is None:
            found = visit(start, [start])
            if found:
                return tuple(found)
    return ()


@dataclass(frozen=True, slots=True)
class _PlanView:
    """A plan's step ids (in order), their dependencies and a cycle among them."""

    ids: tuple[int, ...]
    deps: Mapping[int, Sequence[int]]
    cycle: tuple[int, ...]

    @property
    def listed(self) -> str:
        return ", ".join(map(str, self.ids))


def _check_plan(value: dict[str, JSONValue], context: Mapping[str, object]) -> list[str]:
    """Step ids unique; every dependency and every ``$step_N_result`` names an existing,
    earlier step (so the steps can run in the order listed); no cycles; known tools."""
    if value.get("action") != "plan":
        return []
    steps = [s for s in value.get("plan") or [] if isinstance(s, dict)]
    ids = tuple(int(s["step_id"]) for s in steps)  # type: ignore[call-overload]
    deps = {int(s["step_id"]): [int(d) for d in s["depends_on"]] for s in steps}  # type: ignore[call-overload, union-attr]
    plan = _PlanView(ids, deps, _cycle(deps))
    problems: list[str] = []
    if plan.cycle:
        problems.append(
            f"at /plan: steps {' -> '.join(map(str, plan.cycle))} depend on each other in a "
            "cycle; a step may depend only on steps listed before it: remove one of these "
            "dependencies or reorder the steps"
        )
    allowed = _allowed(context)
    seen: set[int] = set()
    for i, step in enumerate(steps):
        sid = ids[i]
        if sid in seen:
            problems.append(f"at /plan/{i}/step_id: {sid} is used twice; step ids must be unique")
        problems.extend(_dependency_problems(plan, i, sid, seen))
        problems.extend(_reference_problems(plan, i, step, seen))
        if allowed is not None and step["tool_name"] not in allowed:
            problems.append(
                f"at /plan/{i}/tool_name: {step['tool_name']!r} is not an available tool; "
                f"use one of: {', '.join(sorted(allowed))}"
            )
        seen.add(sid)
    return problems


def _dependency_problems(plan: _PlanView, i: int, sid: int, seen: set[int]) -> list[str]:
    out = []
    for dep in plan.deps[sid]:
        if dep not in plan.ids:
            out.append(
                f"at /plan/{i}/depends_on: step {sid} depends on step {dep}, but the plan "
                f"has no step {dep} (its steps are {plan.listed})"
            )
        elif dep not in seen and not (sid in plan.cycle and dep in plan.cycle):
            out.append(
                f"at /plan/{i}/depends_on: step {sid} depends on step {dep}, which is not "
                f"an earlier step; list step {dep} before step {sid}"
            )
    return out


def _reference_problems(
    plan: _PlanView, i: int, step: Mapping[str, JSONValue], seen: set[int]
) -> list[str]:
    sid = plan.ids[i]
    out = []
    for ref in sorted(_refs(step.get("tool_input"))):
        name = f"$step_{ref}_result"
        if ref not in plan.ids:
            out.append(
                f"at /plan/{i}/tool_input: {name} names step {ref}, but the plan has no "
                f"step {ref} (its steps are {plan.listed})"
            )
        elif ref not in seen:
            out.append(
                f"at /plan/{i}/tool_input: {name} is the result of step {ref}, which does "
                f"not run before step {sid}; a step can use only earlier steps' results"
            )
        elif ref not in plan.deps[sid]:
            out.append(
                f"at /plan/{i}/depends_on: step {sid} uses {name}, so its depends_on must "
                f"include {ref}"
            )
    return out


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
    """The built-in prompts as a registry (``local/`` and ``loop/`` hold fragments the
    embedded model and the loop render themselves)."""
    return PromptRegistry(templates_dir(), exclude=("local", "loop"))


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
