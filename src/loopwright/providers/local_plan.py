"""Plan-then-execute for the embedded model: the first turn writes every call it needs.

Measured on Gemma 3 270M (``benchmarks/multistep_eval.py``): asked "What is (3 + 5) * 8?"
with ``add``/``multiply``/``divide`` tools, the model maps the question to the right
*sequence* of calls far more often when it writes them all at once, each after the part
of the request it serves, than when it picks one call per turn (it then loses track of
what is left and copies numbers from the question instead of the result). So the first
model turn after a user message is a grammar-constrained **plan line**::

    Plan: 3 + 5 = add(3, 5), then result * 8 = multiply(result, 8)

* each step is ``<what it does, in the request's words> = <tool>(<arguments>)``;
  arguments are positional in the order of the tool's required parameters, as JSON
  values, and in every step after the first an argument may be the bare word
  ``result``: the previous step's result;
* the reply is the plan (a reasoning part listing the parsed steps, see
  :func:`plan_part`) and the plan's first call. Running the later steps, each after the
  previous one returned, is a strategy's job
  (:class:`loopwright.strategies.embedded.FollowPlan`); without it the model simply
  decides each later turn itself, with its plan in view.

This module owns the plan grammar (GBNF), parsing and worked examples generated from
the tool schemas. Worked examples
use the tool's description: a ``Returns <expression>.`` sentence that names parameters
(``Returns a + b.``) yields examples in that notation ("12 + 30"), and two such tools
compose into a two-step example ("(12 + 30) * 7"); other tools get the generic
"<summary>: <values>" request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.core.messages import Message, ReasoningPart
from loopwright.core.tools import ToolSpec

PLAN_PREFIX = "Plan:"
RESULT_WORD = "result"
PLAN_META_KEY = "local_plan"
MAX_STEPS = 3
MAX_EXPR_CHARS = 60


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One step: ``expr`` (free text), the tool and its named arguments; an argument
    whose value is :data:`RESULT_REF` takes the previous step's result."""

    expr: str
    tool: str
    arguments: dict[str, Any]


class _ResultRef:
    def __repr__(self) -> str:
        return "RESULT_REF"


RESULT_REF: Any = _ResultRef()


# ------------------------------------------------------------------ schema helpers


def positional_params(spec: ToolSpec) -> list[str]:
    """The parameters a plan step passes, in order: the required ones (all when none
    is required)."""
    props: Mapping[str, Any] = spec.parameters.get("properties") or {}
    required = [k for k in spec.parameters.get("required") or () if k in props]
    return required or list(props)


def _param_schema(spec: ToolSpec, name: str) -> Mapping[str, Any]:
    props: Mapping[str, Any] = spec.parameters.get("properties") or {}
    sub = props.get(name)
    return sub if isinstance(sub, Mapping) else {}


def _kind(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "enum"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return str(kind or "any")


# ------------------------------------------------------------------ grammar


def _literal(text: str) -> str:
    return json.dumps(text)


def _arg_rule(schema: Mapping[str, Any], max_chars: int) -> str:
    kind = _kind(schema)
    if kind == "enum":
        return " | ".join(_literal(json.dumps(v)) for v in schema["enum"]) or "jvalue"
    if kind == "integer":
        return "int"
    if kind == "number":
        return "num"
    if kind == "boolean":
        return '"true" | "false"'
    if kind == "string":
        limit = min(int(schema.get("maxLength", max_chars)), max_chars)
        return f'"\\"" schar{{0,{limit}}} "\\""'
    return "jvalue"


def plan_grammar(tools: Sequence[ToolSpec], max_string_chars: int = 200) -> str:
    """GBNF for one plan line (see the module docstring). Later steps may use ``result``
    for any argument; the first may not (there is no previous result)."""
    rules: list[str] = [
        f"root ::= {_literal(PLAN_PREFIX + ' ')} first"
        + ' (", then " later' * (MAX_STEPS - 1)
        + ")?" * (MAX_STEPS - 1),
        f'first ::= expr " = " ({" | ".join(f"f{i}" for i in range(len(tools)))})',
        f'later ::= expr " = " ({" | ".join(f"l{i}" for i in range(len(tools)))})',
        f'expr ::= [^=\\n"] [^=\\n"]{{0,{MAX_EXPR_CHARS - 1}}}',
        'int ::= "-"? [0-9] [0-9]{0,14}',
        'num ::= int ("." [0-9] [0-9]{0,9})?',
        'schar ::= [^"\\\\\\n] | "\\\\" ["\\\\/bfnrt]',
        'jstr ::= "\\"" schar{0,200} "\\""',
        'jvalue ::= jstr | num | "true" | "false" | "null" | "[" (jvalue (", " jvalue){0,7})? "]"'
        ' | "{" (jstr ": " jvalue (", " jstr ": " jvalue){0,7})? "}"',
    ]
    for i, spec in enumerate(tools):
        params = positional_params(spec)
        for prefix, with_ref in (("f", False), ("l", True)):
            parts = []
            for j, name in enumerate(params):
                rule = f"{prefix}{i}a{j}"
                alt = _arg_rule(_param_schema(spec, name), max_string_chars)
                rules.append(f"{rule} ::= " + (f'"{RESULT_WORD}" | {alt}' if with_ref else alt))
                parts.append(rule)
            args = ' ", " '.join(parts) if parts else ""
            body = f'{_literal(spec.name + "(")} {args} ")"' if args else _literal(spec.name + "()")
            rules.append(f"{prefix}{i} ::= {body}")
    return "\n".join(rules) + "\n"


# ------------------------------------------------------------------ parsing

_DECODER = json.JSONDecoder()


def parse_plan(text: str, tools: Sequence[ToolSpec]) -> list[PlanStep] | None:
    """Parse a plan line; ``None`` when it is incomplete or malformed."""
    rest = text.strip()
    if not rest.startswith(PLAN_PREFIX):
        return None
    rest = rest[len(PLAN_PREFIX) :].lstrip()
    by_name = {t.name: t for t in tools}
    names = sorted(by_name, key=len, reverse=True)
    steps: list[PlanStep] = []
    while rest:
        cut = rest.find(" = ")
        if cut < 1:
            return None
        expr, rest = rest[:cut].strip(), rest[cut + 3 :]
        name = next((n for n in names if rest.startswith(n + "(")), None)
        if name is None:
            return None
        parsed = _parse_args(rest[len(name) + 1 :], by_name[name])
        if parsed is None:
            return None
        arguments, rest = parsed
        steps.append(PlanStep(expr, name, arguments))
        if not rest:
            break
        if not rest.startswith(", then "):
            return None
        rest = rest[len(", then ") :]
    return steps or None


def _parse_args(text: str, spec: ToolSpec) -> tuple[dict[str, Any], str] | None:
    arguments: dict[str, Any] = {}
    rest = text
    for i, name in enumerate(positional_params(spec)):
        if i:
            if not rest.startswith(", "):
                return None
            rest = rest[2:]
        if rest.startswith(RESULT_WORD):
            arguments[name] = RESULT_REF
            rest = rest[len(RESULT_WORD) :]
            continue
        try:
            value, end = _DECODER.raw_decode(rest)
        except ValueError:
            return None
        arguments[name] = value[1:] if isinstance(value, str) and value[:1] == " " else value
        rest = rest[end:]
    if not rest.startswith(")"):
        return None
    return arguments, rest[1:]


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def agreed(steps: Sequence[PlanStep]) -> list[PlanStep]:
    """``steps`` with number arguments that drop digits of their own step's expression
    restored from it. The model writes each step's expression in the request's words
    first and copies its numbers into the call after it; copying, it sometimes drops a
    digit ("result + 14 = add(result, 4)"). A number argument the expression does not
    state, contained in exactly one number the expression states and no argument uses,
    is that number. Nothing else changes: an argument that is no part of a stated number
    is the model's choice."""
    return [_agreed(step) for step in steps]


def _agreed(step: PlanStep) -> PlanStep:
    stated = _NUMBER.findall(step.expr)
    numbers = {k: _written(v) for k, v in step.arguments.items() if _is_number(v)}
    unused = [n for n in stated if n not in numbers.values()]
    arguments = dict(step.arguments)
    for name, text in numbers.items():
        if text in stated:
            continue
        holders = [n for n in unused if text in n]
        if len(holders) == 1:
            arguments[name] = float(holders[0]) if "." in holders[0] else int(holders[0])
            unused.remove(holders[0])
    return step if arguments == step.arguments else PlanStep(step.expr, step.tool, arguments)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _written(value: float) -> str:
    """A number as a plan's expression would write it (``4.0`` as ``4``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ------------------------------------------------------------------ rendering


def _shown(value: Any) -> str:
    """An argument as written in a plan line (strings get one leading space, see
    ``local_prompt._spaced``; the parser strips it)."""
    if value is RESULT_REF:
        return RESULT_WORD
    if isinstance(value, str):
        return json.dumps(" " + value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def render_call(step: PlanStep, spec: ToolSpec) -> str:
    args = ", ".join(_shown(step.arguments.get(p)) for p in positional_params(spec))
    return f"{step.tool}({args})"


def render_plan(steps: Sequence[PlanStep], tools: Sequence[ToolSpec]) -> str:
    by_name = {t.name: t for t in tools}
    body = ", then ".join(f"{s.expr} = {render_call(s, by_name[s.tool])}" for s in steps)
    return f"{PLAN_PREFIX} {body}"


RESULT_JSON: dict[str, str] = {"$ref": "previous_result"}


def plan_part(text: str, steps: Sequence[PlanStep] = ()) -> ReasoningPart:
    """The plan as it is kept in the history: a reasoning part whose
    ``provider_meta["local_plan"]["steps"]`` lists each step as
    ``{"tool": name, "arguments": {...}}``, an argument that takes the previous step's
    result being :data:`RESULT_JSON`. That list is the contract a plan-running strategy
    reads (``loopwright.strategies.embedded``); the text is what the model wrote."""
    listed = [
        {
            "tool": step.tool,
            "arguments": {
                k: (dict(RESULT_JSON) if v is RESULT_REF else v) for k, v in step.arguments.items()
            },
        }
        for step in steps
    ]
    return ReasoningPart(text, {PLAN_META_KEY: {"steps": listed}})


def plan_text(message: Message) -> str | None:
    for part in message.parts:
        if isinstance(part, ReasoningPart) and part.provider_meta.get(PLAN_META_KEY):
            return part.text
    return None


# ------------------------------------------------------------------ examples


def result_expression(spec: ToolSpec, arguments: Mapping[str, Any]) -> str | None:
    """The description's ``Returns <expression>.`` with parameters replaced by the given
    values (``RESULT_REF`` becomes ``result``), or ``None`` when there is none."""
    match = re.search(r"\bReturns ([^.]+(?:\.\d[^.]*)?)\.", spec.description)
    if match is None:
        return None
    expr = match.group(1).strip()
    params = positional_params(spec)
    pattern = re.compile(r"\b(" + "|".join(re.escape(p) for p in params) + r")\b")
    if not params or not pattern.search(expr):
        return None

    def value(m: re.Match[str]) -> str:
        v = arguments.get(m.group(1))
        if v is RESULT_REF:
            return RESULT_WORD
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)

    return pattern.sub(value, expr)


# A step's text up to its " = " (the space may come with the tool's token: " divide").
_STEP_HEAD = re.compile(r"(?:" + re.escape(PLAN_PREFIX) + r" |, then )([^=\n\"]+) =( ?)$")


def _symbols(text: str) -> frozenset[str]:
    """The signs of ``text``: characters that are neither letters, digits, spaces,
    parentheses nor separators."""
    return frozenset(ch for ch in text if not (ch.isalnum() or ch.isspace() or ch in "()[],.'_"))


@dataclass(frozen=True, slots=True)
class StepToolGuard:
    """Refuses, right after a plan step's ``<expr> = ``, the tools whose notation (the
    description's ``Returns a + b.``) shares no sign with ``expr`` when another tool's
    does, when ``expr`` is the request's own text. The 270M model copies the request's
    part correctly ("6 * 4 =") and then picks among tools whose names are nearly tied
    in its logits (``divide``); the notation it was shown for each tool settles it.
    Tools without a notation are never refused; nothing here knows what a sign means. Called by the sampler with
    the text decoded so far and a candidate token's text; ``True`` refuses it."""

    notations: tuple[tuple[str, frozenset[str]], ...]  # (tool name, its signs)
    request: str  # the user's request: only a step restating its text is guarded

    def __call__(self, text: str, piece: str) -> bool:
        head = _STEP_HEAD.search(text)
        if head is None or not (head.group(2) or piece.startswith(" ")):
            return False
        if " ".join(head.group(1).split()) not in " ".join(self.request.split()):
            # The model's own restatement ("result + 8" for "* 8") is wrong more often
            # than its tool choice; the request's own text is not.
            return False
        name = piece.lstrip(" ")
        if not name:
            return False
        signs = _symbols(head.group(1))
        fitting = {n for n, own in self.notations if own & signs}
        if not fitting:
            return False
        refused = {n for n, own in self.notations if n not in fitting}
        return any(_starts(n, name) for n in refused) and not any(_starts(n, name) for n in fitting)


def _starts(name: str, piece: str) -> bool:
    """Whether ``piece`` (a token's text) starts ``name`` or runs past its end."""
    return name.startswith(piece) or piece.startswith(name)


def step_tool_guard(tools: Sequence[ToolSpec], request: str) -> StepToolGuard | None:
    """The :class:`StepToolGuard` of ``tools`` for ``request``; ``None`` when fewer than
    two of the tools write a notation with signs."""
    notations = []
    for spec in tools:
        shown = result_expression(spec, {p: p for p in positional_params(spec)})
        signs = _symbols(shown or "")
        if signs:
            notations.append((spec.name, signs))
    return StepToolGuard(tuple(notations), request) if len(notations) > 1 else None


def first_numeric(spec: ToolSpec) -> str | None:
    """The first positional parameter that can take a previous numeric result."""
    for name in positional_params(spec):
        if _kind(_param_schema(spec, name)) in ("number", "integer"):
            return name
    return None


def can_chain(tools: Sequence[ToolSpec]) -> bool:
    """Whether one tool's (numeric) result can feed another tool's numeric parameter:
    the case plan lines were measured to help (two-step arithmetic)."""
    return any(a is not b and first_numeric(b) is not None for a in tools for b in tools)


__all__ = [
    "MAX_STEPS",
    "can_chain",
    "PLAN_PREFIX",
    "RESULT_JSON",
    "RESULT_REF",
    "PlanStep",
    "StepToolGuard",
    "first_numeric",
    "agreed",
    "parse_plan",
    "plan_grammar",
    "plan_part",
    "plan_text",
    "positional_params",
    "render_call",
    "render_plan",
    "result_expression",
    "step_tool_guard",
]
