"""``calculator``: a safe arithmetic evaluator (no ``eval``).

The expression is parsed with :mod:`ast` and walked node by node; only numbers, the
operators ``+ - * / // % **``, unary ``+``/``-`` and parentheses are accepted. Arithmetic
is exact (:class:`fractions.Fraction`), so ``0.1 + 0.2`` is ``0.3``.

Why it never hangs: every intermediate value is checked against a size budget
(:data:`MAX_BITS`) and every power is checked *before* it is computed (the size of
``a ** b`` is estimated from ``bit_length(a) * b``), so no single operation can take
long. The expression text itself is capped at :data:`MAX_EXPRESSION_CHARS`.
Every failure is a :class:`CalculatorError` (a ``ToolError`` of kind
``invalid_arguments``) with a message that says what to change.

Common written operators are accepted too (:func:`from_words`): "12 squared", "3 to the
power of 5", "15% of 80", "subtract 199 from 1024", "7 times 8", "13 x 7", "half of 50",
"the cube root of 27", "add 12 and 8, then divide by 4", "a quarter of 96", "triple 64",
"split 126 into 3 equal parts", "what must be added to 37 to make 100", "add 19, 23 and
58", "I have 250 euros and spend 85", "three quarters of 200", "15% off 80", "2 to the
10th power", numbers with thousands separators ("1,200"), and unit conversions of time,
mass, length and volume ("15 minutes in seconds", "how many hours are in 3 days":
:mod:`.calc_units`). People type them, and a small model asked such a question copies
its words into the expression far more reliably than it translates them: "subtract 199
from 1024" came out as ``199 - 1024``.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from fractions import Fraction

from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.core.tools import ToolSpec
from loopwright.tools.builtin.calc_units import conversions

MAX_EXPRESSION_CHARS = 500
MAX_BITS = 4096  # about 1233 decimal digits, numerator or denominator
MAX_EXPONENT = 10_000

# Symbols people (and small models) type that Python spells differently.
_ALIASES = {"×": "*", "÷": "/", "−": "-", "^": "**", "–": "-"}

Number = int | float

SPEC = ToolSpec(
    name="calculator",
    description=(
        "Evaluate an arithmetic expression and return the number. "
        "Supports + - * / // % ** and parentheses, and words such as plus, minus, times, "
        "divided by, squared, to the power of, percent of, subtract ... from."
    ),
    parameters={
        "type": "object",
        "properties": {
            "expression": {
                "type": "string",
                "description": "the arithmetic expression, e.g. (2 + 3) * 4",
                "examples": ["(2 + 3) * 4", "20% of 50 plus 2 to the power of 3"],
                "maxLength": MAX_EXPRESSION_CHARS,
            }
        },
        "required": ["expression"],
        "additionalProperties": False,
    },
    idempotent=True,
    timeout=5.0,
)


class CalculatorError(ToolError):
    """The expression cannot be evaluated; the message names the reason and the fix."""

    kind = ToolErrorKind.INVALID_ARGUMENTS


def calculator(expression: str) -> Number:
    """Evaluate ``expression`` and return an ``int`` when the value is whole, else a
    ``float``. Raises :class:`CalculatorError` for anything else."""
    return to_number(evaluate(expression))


def evaluate(expression: str) -> Fraction:
    """Evaluate exactly. Raises :class:`CalculatorError` only."""
    if not isinstance(expression, str):
        raise CalculatorError("expression must be a string such as '(2 + 3) * 4'")
    text = symbols(expression)
    if not text:
        raise CalculatorError("expression is empty; pass an arithmetic expression like '2 + 2'")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(
            f"expression is {len(text)} characters; the limit is {MAX_EXPRESSION_CHARS}"
        )
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CalculatorError(
            f"cannot parse {text!r}: use numbers, + - * / // % ** and parentheses"
            " (or plus, minus, times, divided by, squared, to the power of, percent of)"
        ) from exc
    try:
        return _eval(tree.body)
    except RecursionError as exc:
        raise CalculatorError("expression is nested too deeply; simplify it") from exc


_N = r"(-?\d+(?:\.\d+)?|\([^()]*\))"  # a number or a parenthesized group
# What may follow "split 126 into 3": "equal parts", "pieces", "ways", "people".
_SHARES = r"(?: (?:equal |even )?(?:parts|pieces|portions|shares|ways|groups|people))?"
# The question words before "be added to ...": "what must", "how much do I need to".
_ASKED = (
    r"(?:(?:what|how much)(?: (?:must|should|would|has to|needs? to|do (?:i|you|we) need to))? )?"
)
# What takes an amount away from what one has.
_SPENT = (
    r"(?:spend|spent|give away|gave away|use|used|lose|lost|eat|ate|sell|sold|pay|paid"
    r"|take away|took away)"
)
# "add 19, 23 and 58", "the sum of 4, 5 and 6" (commas are spaces by then): every term.
_LIST = rf"({_N}(?: {_N})+ and {_N})"
# Whole-phrase forms, operator first: "subtract 199 from 1024" is 1024 - 199.


def _terms(sign: str) -> Callable[[re.Match[str]], str]:
    """A replacement joining every number of a :data:`_LIST` match with ``sign``."""

    def joined(m: re.Match[str]) -> str:
        return f" {sign} ".join(f"({t})" for t in re.findall(_N, m.group(1)))

    return joined


_NUMERATORS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
}
_DENOMINATORS = {"thirds": 3, "quarters": 4, "fourths": 4, "fifths": 5, "sixths": 6}
_DENOMINATORS |= {"sevenths": 7, "eighths": 8, "ninths": 9, "tenths": 10}
_NUMERATOR = "(" + "|".join(_NUMERATORS) + ")"
_PARTS = "(" + "|".join(_DENOMINATORS) + ")"


def _fraction_of(m: re.Match[str]) -> str:
    """ "three quarters of 200" -> ``3 / 4 * (200)``."""
    return f"{_NUMERATORS[m.group(1)]} / {_DENOMINATORS[m.group(2)]} * ({m.group(3)})"


_PHRASES: list[tuple[str, str | Callable[[re.Match[str]], str]]] = [
    (rf"(?:add|(?:the )?sum of|(?:the )?total of) {_LIST}", _terms("+")),
    (rf"(?:multiply|(?:the )?product of) {_LIST}", _terms("*")),
    (rf"(?:subtract|deduct) {_N} from {_N}", r"(\2) - (\1)"),
    (rf"take {_N} (?:away )?from {_N}", r"(\2) - (\1)"),
    (rf"add {_N} (?:and|to) {_N}", r"(\1) + (\2)"),
    (rf"multiply {_N} (?:by|and|with) {_N}", r"(\1) * (\2)"),
    (rf"divide {_N} by {_N}", r"(\1) / (\2)"),
    (rf"(?:the )?sum of {_N} and {_N}", r"(\1) + (\2)"),
    (rf"(?:the )?product of {_N} and {_N}", r"(\1) * (\2)"),
    (rf"(?:the )?difference (?:between|of) {_N} and {_N}", r"(\1) - (\2)"),
    (rf"(?:the )?quotient of {_N} (?:and|by) {_N}", r"(\1) / (\2)"),
    (rf"(?:the )?square root of {_N}", r"(\1) ** (1 / 2)"),
    (rf"(?:the )?cube root of {_N}", r"(\1) ** (1 / 3)"),
    (rf"(?:one )?half of {_N}", r"(\1) / 2"),
    (rf"(?:a|one) third of {_N}", r"(\1) / 3"),
    (rf"(?:a|one) quarter of {_N}", r"(\1) / 4"),
    (rf"(?:a|one) fifth of {_N}", r"(\1) / 5"),
    (rf"(?:a|one) tenth of {_N}", r"(\1) / 10"),
    # "three quarters of 200", "two thirds of 90", "3/4 of 200": a fraction of a number
    (rf"{_NUMERATOR} {_PARTS} of {_N}", _fraction_of),
    (rf"(\d+) ?/ ?(\d+) of {_N}", r"(\1) / (\2) * (\3)"),
    (rf"(?:double|twice) {_N}", r"2 * (\1)"),
    (rf"(?:triple|treble|thrice) {_N}", r"3 * (\1)"),
    # "split 126 into 3 equal parts", "share 60 between 4 people": equal shares
    (
        rf"(?:split|divide|share|cut) {_N} (?:equally )?(?:into|among|between) {_N}{_SHARES}",
        r"(\1) / (\2)",
    ),
    # "I have 250 euros and spend 85", "had 120 apples and gave away 35": what is left
    (
        rf"(?:(?:have|had|got|start with|started with) )?{_N}(?: [a-z]+)?,? (?:and )?(?:then )?"
        rf"(?:i |we |you |they |she |he )?{_SPENT} {_N}",
        r"(\1) - (\2)",
    ),
    # "what must be added to 37 to make 100": the difference
    (rf"{_ASKED}(?:be )?add(?:ed)? to {_N} to (?:make|get|reach|give|equal) {_N}", r"(\2) - (\1)"),
    (
        rf"{_ASKED}(?:be )?(?:subtracted|taken) from {_N} to (?:make|get|reach|leave) {_N}",
        r"(\1) - (\2)",
    ),
    (rf"(?:the )?square of {_N}", r"(\1) ** 2"),
    (rf"(?:the )?cube of {_N}", r"(\1) ** 3"),
    # "15% off 80": the price after the discount
    (rf"(?:take )?{_N} ?(?:%|percent|per cent) off {_N}", r"(\2) - (\2) * (\1) / 100"),
    (rf"{_N} ?(?:%|percent|per cent) of\b", r"\1 / 100 *"),
]
# Operator words between operands.
_WORDS = [
    (r"(?:raised )?to the power of|raised to", "**"),
    (r"(?<=\d) to the (\d+)(?:st|nd|rd|th) power", r"** \1"),
    (r"squared", "** 2"),
    (r"cubed", "** 3"),
    (r"multiplied by|times|(?<=\d)\s?x(?=\s?\d)", "*"),
    (r"divided by|over", "/"),
    (r"plus", "+"),
    (r"minus", "-"),
    (r"modulo|mod", "%"),
]
# A step after "then" that works on what came before: "..., then divide by 4".
_PREVIOUS = r"(?: (?:it|that|this|the result|the sum|the product|the answer))?"
_THEN = re.compile(r",? (?:and )?then ")
_STEPS = re.compile(r", (?:and )?")
_NEXT_STEPS = [
    (rf"(?:divide{_PREVIOUS}|divided) by {_N}", r"/ (\1)"),
    (rf"(?:multiply{_PREVIOUS}|multiplied) by {_N}", r"* (\1)"),
    (rf"(?:times|multiply{_PREVIOUS} with) {_N}", r"* (\1)"),
    (rf"(?:add|plus) {_N}(?: to{_PREVIOUS})?", r"+ (\1)"),
    (rf"(?:subtract|minus|take away) {_N}(?: from{_PREVIOUS})?", r"- (\1)"),
    (rf"square{_PREVIOUS}", r"** 2"),
]
# What a copied question may wrap around the expression.
_LEAD = re.compile(
    r"^(?:(?:what|how much) (?:is|are|does|do)(?: it make)?|calculate|compute|evaluate|"
    r"work out|find|tell me|please|the (?:result|value|answer) of)\b ?"
)
_TAIL_WORDS = (" for me", " please")


def _without_tail(text: str) -> str:
    """``text`` without trailing ``?.!`` and the " for me" / " please" before them. Not
    a pattern ending in ``[?.!]*$``: searched for, it backtracked over every run of
    "?" in the text (quadratic: 30,000 of them took 27 s)."""
    text = text.rstrip("?.!")
    for words in _TAIL_WORDS:
        if text.endswith(words):
            return text[: -len(words)]
    return text


# "1,200" and "12,500.75": digits grouped in threes by commas (not "19,23" or "1,2000")
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?!,?\d)")


def symbols(text: str) -> str:
    """``text`` with the symbols people type for operators (``×``, ``÷``, ``^``), numbers
    written with thousands separators ("1,200") and the written operators
    (:func:`from_words`) in Python's spelling."""
    text = text.strip()
    for alias, op in _ALIASES.items():
        text = text.replace(alias, op)
    text = _GROUPED.sub(lambda m: m.group(0).replace(",", ""), text)
    return from_words(text)


def from_words(text: str) -> str:
    """``text`` with the written operators of the module docstring turned into symbols
    (``"3 to the power of 5"`` -> ``"3 ** 5"``), and the question words a copied
    question wraps around them dropped ("What is 15% of 80?"). Text without such an
    operator is returned as it is; whatever is left unknown the parser reports."""
    if not re.search(r"[A-Za-z%]", text):
        return text
    steps = _THEN.split(" ".join(text.lower().split()))
    if len(steps) > 1:
        return _chained(steps) or text
    # "Take 90, divide it by 3, and add 12": steps after commas, when each is one
    steps = _STEPS.split(" ".join(text.lower().split()))
    chained = _chained(steps) if len(steps) > 1 else ""
    if chained:
        return chained
    out = " ".join(text.lower().replace(",", " ").split())
    out, found = conversions(out)
    for pattern, symbol in _PHRASES:
        out, n = re.subn(rf"\b{pattern}", symbol, out)
        found += n
    for pattern, symbol in _WORDS:
        out, n = re.subn(rf"\b(?:{pattern})\b", symbol, out)
        found += n
    if not found:
        return text
    for _ in range(3):
        out = _without_tail(_LEAD.sub("", out)).strip()
    return out


def _chained(steps: list[str]) -> str:
    """``"add 12 and 8"``, ``"divide by 4"`` -> ``"((12) + (8)) / (4)"``: each step after
    the first works on the value so far; "" when a step is not one of
    ``_NEXT_STEPS``."""
    # The first step's leading words are the question's ("what do you get if you add
    # 4 and 9"), not arithmetic.
    out = re.sub(r"^[a-z' ]+(?=[\d(-])", "", from_words(steps[0])).strip()
    for step in steps[1:]:
        step = _without_tail(step).strip()
        for pattern, symbol in _NEXT_STEPS:
            match = re.fullmatch(pattern, step)
            if match:
                out = f"({out}) {match.expand(symbol)}"
                break
        else:
            return ""
    return out


def to_number(value: Fraction) -> Number:
    """The JSON-friendly form of an exact value (whole → int, else float)."""
    if value.denominator == 1:
        return value.numerator
    try:
        return float(value)
    except OverflowError as exc:  # pragma: no cover - bounded by MAX_BITS
        raise CalculatorError("result is too large to show as a decimal") from exc


def _eval(node: ast.expr) -> Fraction:
    match node:
        case ast.Constant(value=bool()):
            raise CalculatorError("booleans are not numbers here; use digits")
        case ast.Constant(value=int() | float() as value):
            if isinstance(value, float) and not math.isfinite(value):
                raise CalculatorError("number literal is too large")
            # repr() is the shortest decimal that round-trips: 0.1 becomes exactly 1/10.
            return _checked(Fraction(repr(value)) if isinstance(value, float) else Fraction(value))
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            return -_eval(operand)
        case ast.UnaryOp(op=ast.UAdd(), operand=operand):
            return _eval(operand)
        case ast.BinOp(left=left, op=op, right=right):
            return binop(op, _eval(left), _eval(right))
        case ast.Constant():
            raise CalculatorError("only numbers are allowed (no strings or complex numbers)")
        case ast.Name(id=name):
            raise CalculatorError(f"unknown name {name!r}: only numbers and operators are allowed")
        case _:
            raise CalculatorError(
                f"{type(node).__name__} is not allowed: use numbers, + - * / // % ** and ()"
            )


def binop(op: ast.operator, a: Fraction, b: Fraction) -> Fraction:
    """Apply one binary operator exactly, with the size and zero-division checks."""
    match op:
        case ast.Add():
            return _checked(a + b)
        case ast.Sub():
            return _checked(a - b)
        case ast.Mult():
            return _checked(a * b)
        case ast.Div() | ast.FloorDiv() | ast.Mod():
            if b == 0:
                raise CalculatorError("division by zero; change the divisor")
            if isinstance(op, ast.Div):
                return _checked(a / b)
            if isinstance(op, ast.FloorDiv):
                return _checked(Fraction(a // b))
            return _checked(a % b)
        case ast.Pow():
            return _power(a, b)
        case _:
            raise CalculatorError(
                f"operator {type(op).__name__} is not allowed: use + - * / // % **"
            )


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        return _float_power(base, exponent)
    e = exponent.numerator
    if base == 0 and e < 0:
        raise CalculatorError("zero cannot be raised to a negative power")
    if base in (0, 1):
        return base
    if base == -1:
        return Fraction(-1 if e % 2 else 1)
    if abs(e) > MAX_EXPONENT:
        # the exponent may have hundreds of digits ("2**0.5**-1000"): its size, not it
        raise CalculatorError(f"exponent {_short(e)} is too large; the limit is {MAX_EXPONENT}")
    size = max(base.numerator.bit_length(), base.denominator.bit_length())
    if (size - 1) * abs(e) > MAX_BITS:
        raise CalculatorError("result is too large; use a smaller base or exponent")
    return _checked(base**e)


def _short(n: int) -> str:
    """``n`` as written when short, else its digit count ("a 302-digit number")."""
    text = str(n) if n.bit_length() < 64 else ""
    return text or f"a {len(str(abs(n)))}-digit number"


def _float_power(base: Fraction, exponent: Fraction) -> Fraction:
    if base < 0:
        raise CalculatorError("a negative number to a fractional power is not a real number")
    try:
        value = float(base) ** float(exponent)
    except (OverflowError, ZeroDivisionError) as exc:
        raise CalculatorError("result is too large or undefined; change the exponent") from exc
    if not math.isfinite(value):
        raise CalculatorError("result is too large; use a smaller base or exponent")
    return _checked(Fraction(value))


def _checked(value: Fraction) -> Fraction:
    if value.numerator.bit_length() > MAX_BITS or value.denominator.bit_length() > MAX_BITS:
        raise CalculatorError(
            f"a value exceeds {MAX_BITS} bits (about 1200 digits); use smaller numbers"
        )
    return value
