"""Hold a small model's arithmetic to the formula the request itself states.

Asked "Subtract 199 from 1024." a 270M model writes the calculator call ``199 - 1024``;
asked "What is 17% of 250?" it writes ``17 / 250``; asked "What is (9 * 3) + 6?" with
``add``/``multiply`` tools it plans ``multiply(9, 6)``. In each case the request states
the whole computation, in symbols or in the common written forms the calculator reads
(:func:`loopwright.tools.builtin.calculator.from_words`: "subtract A from B", "A% of B",
"square root of A", "A to the power of B", ...). The model's job there is only to copy
it, and that is where it goes wrong: it keeps the request's number order and guesses
the operator.

:func:`request_formula` reads that formula from the request: one arithmetic span
holding every number the request gives (otherwise ``None``: the request is not a
formula, or it is ambiguous). :func:`held_to_formula` checks the model's calls against
it, by value (:class:`loopwright.strategies.embedded.HoldToRequest` applies it to the
model's first calls after a request):

* a string argument that is itself arithmetic (a formula parameter of any tool) and
  shares a number with the formula, but evaluates to something else or not at all, is
  replaced by the formula in symbols (``1024 - 199``);
* a plan (see :mod:`.plan_steps`) over tools whose descriptions give their notation
  (``Returns a + b.``) is run on paper with that notation; when its value differs from
  the formula's, the plan is rebuilt from the formula: one step per operation, inner
  operations first, each taking the previous step's result, each operation on the one
  tool whose notation writes its sign. A formula that needs two independent partial
  results, or a sign no tool (or more than one) writes, leaves the plan as it is.

Nothing here knows a tool: the value of a formula is the calculator's exact arithmetic
(the phrase vocabulary is the calculator's), and a tool's operation is what its own
description says. Every change is recorded in the message's ``provider_meta`` under
``"formula"`` (what the model wrote, and the formula it was replaced by).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from loopwright.core.grounding import NUMBER_WORDS, TENS_WORDS, canonical_number
from loopwright.core.messages import Message, ReasoningPart, ToolCallPart
from loopwright.core.tools import ToolSpec
from loopwright.strategies.embedded.plan_steps import PLAN_META_KEY, RESULT_JSON
from loopwright.tools.builtin.calculator import CalculatorError, binop, evaluate, symbols

META_KEY = "formula"
# The formula a plan computes, for the answer to quote (read by the embedded model's
# answer grounding, ``providers.local_answer``): set when the request writes it in
# words, so the answer has the symbols to state ("(12 + 8) / 4 = 5.").
REQUEST_FORMULA_KEY = "request_formula"
PLAN_PREFIX = "Plan: "
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]\d)")
# A run of arithmetic: numbers, operators, parentheses and spaces.
_SPAN = re.compile(r"[\d.()+\-*/%\s]+")
_OPERATOR = re.compile(r"[\d)]\s*(?:\*\*|//|[-+*/%])\s*[(\d-]")
# An operator written as one (spaced, or a sign dates and codes do not use): "2024-11-24",
# "11/24" and "555-1234" are not formulas.
_SPACED = re.compile(r"\s(?:\*\*|//|[-+*/%])|(?:\*\*|//|[-+*/%])\s|[+*%]")
_WORD = re.compile(r"[a-z]+|\d+(?:\.\d+)?")
_MAX_COPIED = 4  # words of a copied phrase; a longer text is something else (a query)
_NOTATION = re.compile(r"\bReturns (\w+) (\*\*|//|[-+*/%]) (\w+)\.")
_SIGNS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}


@dataclass(frozen=True, slots=True)
class Formula:
    """The computation a request states: ``text`` in symbols, its exact ``value``."""

    text: str
    value: Fraction
    numbers: frozenset[str]
    worded: bool = False  # the request writes it in words only ("add 12 and 8, then ...")
    # the words of the request that states it (lower case): an argument made of them
    # only is the request's phrase copied, not a computation ("15 minutes")
    words: frozenset[str] = frozenset()


def _numbers(text: str) -> set[str]:
    return {canonical_number(n) for n in _NUMBER.findall(text)}


def _balanced(span: str) -> str:
    """``span`` without the unmatched parentheses at its ends."""
    span = span.strip()
    while span and (span.count("(") != span.count(")")):
        if span.startswith("(") and span.count("(") > span.count(")"):
            span = span[1:].strip()
        elif span.endswith(")") and span.count(")") > span.count("("):
            span = span[:-1].strip()
        else:
            return ""
    return span


def arithmetic(text: str) -> Formula | None:
    """``text`` as a formula when the whole of it is arithmetic (symbols or the
    calculator's written forms), else ``None``."""
    try:
        value = evaluate(text)
        tree = ast.parse(symbols(text), mode="eval")
    except (CalculatorError, SyntaxError, ValueError):
        return None
    return Formula(ast.unparse(tree), value, frozenset(_numbers(text)))


_UNITS = NUMBER_WORDS
_TENS = TENS_WORDS
_WORD_NUMBER = re.compile(
    rf"\b(?:({'|'.join(_TENS)})(?:[- ]({'|'.join(_UNITS[1:10])}))?|({'|'.join(_UNITS[2:])}))\b",
    re.IGNORECASE,
)


def in_digits(request: str) -> str:
    """``request`` with its number words in digits ("seven plus five": ``7 plus 5``,
    "twenty-five": 25), from two to ninety-nine ("one" is as often a pronoun). The
    model wrote ``(7 + 5) * 7`` for "What is seven plus five?": read in digits, the
    request states the formula it means."""

    def digits(m: re.Match[str]) -> str:
        if m.group(3):
            return str(_UNITS.index(m.group(3).lower()))
        tens = 20 + 10 * _TENS.index(m.group(1).lower())
        return str(tens + (_UNITS.index(m.group(2).lower()) if m.group(2) else 0))

    return _WORD_NUMBER.sub(digits, request)


def request_formula(request: str) -> Formula | None:
    """The formula ``request`` states (see the module docstring; number words read
    as digits, :func:`in_digits`), or ``None``."""
    request = in_digits(request)
    given = _numbers(request)
    if len(given) < 1 or len(request) > 300:
        return None
    written = symbols(" ".join(request.split()))
    spans = [
        _balanced(m.group(0).rstrip(". "))
        for m in _SPAN.finditer(written)
        if _OPERATOR.search(m.group(0))
    ]
    spans = [s for s in spans if s and _OPERATOR.search(s) and _SPACED.search(s)]
    if len(spans) != 1 or not given <= _numbers(spans[0]):
        return None
    found = arithmetic(spans[0])
    if found is None:
        return None
    found = replace(found, words=frozenset(_WORD.findall(request.lower())))
    if _OPERATOR.search(request):
        return found
    return replace(found, worded=True)


def repaired_arguments(
    arguments: Mapping[str, Any], formula: Formula
) -> tuple[dict[str, Any], str] | None:
    """``arguments`` with a string argument that means to compute ``formula`` but does
    not (it shares a number with it; its value differs or it does not parse) replaced
    by ``formula``; with the replaced text. ``None`` when nothing is replaced."""
    for key, value in arguments.items():
        if not isinstance(value, str) or not _numbers(value) & formula.numbers:
            continue
        written = arithmetic(value)
        if written is None and re.search(r"[A-Za-z]{2}", value) and not _copied(value, formula):
            continue  # not arithmetic (a name, a query): only a formula is compared
        if written is not None and written.value == formula.value:
            return None
        return {**arguments, key: formula.text}, value
    return None


def _copied(value: str, formula: Formula) -> bool:
    """Whether ``value`` is a short phrase of the request's own words: asked "How many
    seconds are in 15 minutes?", the model wrote the expression ``15 minutes``, the
    request's quantity without the computation the request states."""
    words = _WORD.findall(value.lower())
    return 0 < len(words) <= _MAX_COPIED and set(words) <= formula.words


# ------------------------------------------------------------------ plans


@dataclass(frozen=True, slots=True)
class Notation:
    """A tool's operation as its description writes it: ``Returns a + b.``"""

    tool: str
    sign: str
    first: str
    second: str


def notations(tools: Sequence[ToolSpec]) -> dict[str, Notation]:
    """Each tool's notation by tool name (tools whose description gives one whose
    names are two of its parameters)."""
    found = {}
    for spec in tools:
        match = _NOTATION.search(spec.description)
        props = spec.parameters.get("properties") or {}
        if match and match.group(1) in props and match.group(3) in props:
            found[spec.name] = Notation(spec.name, match.group(2), match.group(1), match.group(3))
    return found


def _operator(sign: str) -> ast.operator:
    return next(op() for op, s in _SIGNS.items() if s == sign)


def plan_value(
    steps: Sequence[Mapping[str, Any]], known: Mapping[str, Notation]
) -> Fraction | None:
    """What ``steps`` (``{"tool", "arguments"}``) compute when each tool does what its
    notation says; ``None`` when a step's tool has no notation or its arguments are
    not numbers (or the previous result)."""
    result: Fraction | None = None
    for step in steps:
        notation = known.get(str(step.get("tool")))
        args = step.get("arguments")
        if notation is None or not isinstance(args, Mapping):
            return None
        values = []
        for name in (notation.first, notation.second):
            value = args.get(name)
            if value == RESULT_JSON and result is not None:
                values.append(result)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                values.append(Fraction(str(value)))
            else:
                return None
        try:
            result = binop(_operator(notation.sign), values[0], values[1])
        except CalculatorError:
            return None
    return result


def _operand(node: ast.expr) -> float | int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float)
    ):
        return -node.operand.value
    return None


def formula_plan(
    formula: Formula, known: Mapping[str, Notation]
) -> tuple[list[dict[str, Any]], str] | None:
    """The steps computing ``formula`` with the tools of ``known`` (see the module
    docstring) and the plan line that writes them, or ``None``."""
    steps: list[dict[str, Any]] = []
    texts: list[str] = []

    def visit(node: ast.expr) -> ast.expr | None:
        if _operand(node) is not None:
            return node
        if not isinstance(node, ast.BinOp):
            return None
        sign = _SIGNS.get(type(node.op))
        tools = [n for n in known.values() if n.sign == sign]
        inner = [c for c in (node.left, node.right) if _operand(c) is None]
        if len(tools) != 1 or len(inner) > 1:
            return None
        sides = []
        for child in (node.left, node.right):
            shown = visit(child)
            if shown is None:
                return None
            sides.append(shown)
        notation = tools[0]
        args: dict[str, Any] = {}
        for name, child in zip((notation.first, notation.second), sides, strict=True):
            args[name] = dict(RESULT_JSON) if isinstance(child, ast.Name) else _operand(child)
        steps.append({"tool": notation.tool, "arguments": args})
        expr = ast.unparse(ast.BinOp(sides[0], node.op, sides[1]))
        shown_args = ", ".join(
            "result" if v == RESULT_JSON else json.dumps(v) for v in args.values()
        )
        texts.append(f"{expr} = {notation.tool}({shown_args})")
        return ast.Name("result")

    tree = ast.parse(formula.text, mode="eval").body
    if visit(tree) is None or not steps:
        return None
    return steps, PLAN_PREFIX + ", then ".join(texts)


# ------------------------------------------------------------------ a message


def held_to_formula(message: Message, formula: Formula, tools: Sequence[ToolSpec]) -> Message:
    """``message`` (the model's calls) held to ``formula`` (see the module docstring):
    the same object when nothing changes."""
    plan = _plan_part(message)
    if plan is not None:
        return _held_plan(message, plan, formula, notations(tools))
    parts: list[Any] = []
    changed: list[dict[str, str]] = []
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            fixed = repaired_arguments(part.arguments, formula)
            if fixed is not None:
                args, wrote = fixed
                changed.append({"wrote": wrote, "formula": formula.text})
                part = ToolCallPart(part.id, part.name, args, json.dumps(args), part.provider_meta)
        parts.append(part)
    if not changed:
        return message
    meta = {**message.provider_meta, META_KEY: changed}
    return Message(message.role, tuple(parts), meta)


def question_formula(messages: Sequence[Message]) -> Formula | None:
    """The formula of the last user message, while no tool has answered it yet."""
    for message in reversed(messages):
        if message.role == "user":
            return request_formula(message.text)
        if message.tool_results_parts:
            return None
    return None


def _plan_part(message: Message) -> ReasoningPart | None:
    for part in message.parts:
        if isinstance(part, ReasoningPart) and isinstance(
            part.provider_meta.get(PLAN_META_KEY), Mapping
        ):
            return part
    return None


def _held_plan(
    message: Message, plan: ReasoningPart, formula: Formula, known: Mapping[str, Notation]
) -> Message:
    meta = plan.provider_meta[PLAN_META_KEY]
    steps = meta.get("steps") if isinstance(meta, Mapping) else None
    if not isinstance(steps, list):
        return message
    if plan_value(steps, known) != formula.value:
        message = _rebuilt_plan(message, plan, formula, known)
    if formula.worded and plan_value(_steps(message), known) == formula.value:
        quoted = {**message.provider_meta, REQUEST_FORMULA_KEY: formula.text}
        return Message(message.role, message.parts, quoted)
    return message


def _steps(message: Message) -> list[Any]:
    plan = _plan_part(message)
    meta = plan.provider_meta.get(PLAN_META_KEY) if plan is not None else None
    steps = meta.get("steps") if isinstance(meta, Mapping) else None
    return steps if isinstance(steps, list) else []


def _rebuilt_plan(
    message: Message, plan: ReasoningPart, formula: Formula, known: Mapping[str, Notation]
) -> Message:
    meta = plan.provider_meta[PLAN_META_KEY]
    rebuilt = formula_plan(formula, known)
    if rebuilt is None or not isinstance(meta, Mapping):
        return message
    new_steps, text = rebuilt
    first = next(p for p in message.parts if isinstance(p, ToolCallPart))
    args = dict(new_steps[0]["arguments"])
    parts = (
        ReasoningPart(text, {**plan.provider_meta, PLAN_META_KEY: {**meta, "steps": new_steps}}),
        ToolCallPart(first.id, new_steps[0]["tool"], args, json.dumps(args), first.provider_meta),
    )
    record = {"wrote": plan.text, "formula": formula.text}
    return Message(message.role, parts, {**message.provider_meta, META_KEY: [record]})


__all__ = [
    "Formula",
    "Notation",
    "arithmetic",
    "formula_plan",
    "held_to_formula",
    "notations",
    "plan_value",
    "question_formula",
    "repaired_arguments",
    "request_formula",
]
