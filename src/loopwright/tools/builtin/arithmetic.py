"""``add`` / ``multiply`` / ``divide``: one-operation tools for multi-step tasks.

They exist so that "What is (3 + 5) * 8?" can be solved in two tool steps (the
calculator toy agent in docs/graph.md binds them the same way). Arithmetic goes through the
calculator's exact, size-checked core, so results are exact and never blow up.
"""

from __future__ import annotations

import ast
from fractions import Fraction

from loopwright.core.tools import ToolSpec
from loopwright.tools.builtin.calculator import CalculatorError, Number, binop, to_number


def _operands_schema(a_examples: list[Number], b_examples: list[Number]) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": "first number", "examples": a_examples},
            "b": {"type": "number", "description": "second number", "examples": b_examples},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }


ADD_SPEC = ToolSpec(
    name="add",
    description="Add two numbers. Returns a + b.",
    parameters=_operands_schema([12, 14, 21], [30, 6, 4]),
    idempotent=True,
    timeout=5.0,
)
MULTIPLY_SPEC = ToolSpec(
    name="multiply",
    description="Multiply two numbers. Returns a * b.",
    parameters=_operands_schema([6, 8, 3], [7, 5, 2]),
    idempotent=True,
    timeout=5.0,
)
DIVIDE_SPEC = ToolSpec(
    name="divide",
    description="Divide two numbers. Returns a / b.",
    parameters=_operands_schema([45, 36, 40], [9, 4, 8]),
    idempotent=True,
    timeout=5.0,
)


def _exact(value: object, field: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalculatorError(f"{field} must be a number, got {type(value).__name__}")
    try:
        # str() keeps the decimal the caller wrote (0.1 stays 1/10, not its binary float).
        return Fraction(str(value)) if isinstance(value, float) else Fraction(value)
    except (ValueError, OverflowError) as exc:
        raise CalculatorError(f"{field} must be a finite number") from exc


def add(a: float, b: float) -> Number:
    """Return ``a + b`` exactly (whole results are ints)."""
    return to_number(binop(ast.Add(), _exact(a, "a"), _exact(b, "b")))


def multiply(a: float, b: float) -> Number:
    """Return ``a * b`` exactly (whole results are ints)."""
    return to_number(binop(ast.Mult(), _exact(a, "a"), _exact(b, "b")))


def divide(a: float, b: float) -> Number:
    """Return ``a / b``; dividing by zero is a :class:`CalculatorError`."""
    return to_number(binop(ast.Div(), _exact(a, "a"), _exact(b, "b")))
