"""The calculator's refusals stay short whatever size of number caused them: the model
reads the message and retries from it."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.tools.builtin.calculator import CalculatorError, calculator, symbols


@pytest.mark.parametrize("expr", ["2**0.5**-1000", "4 ** 0.5 ** 2 ** 1000", "2 ** 10**1000"])
def test_a_huge_exponent_is_refused_without_writing_it_out(expr: str) -> None:
    # the message wrote the exponent's 302 digits (or 1001) in full
    with pytest.raises(CalculatorError) as err:
        calculator(expr)
    assert len(str(err.value)) < 200, str(err.value)
    assert "10000" in str(err.value)


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 9), st.integers(4, 400))
def test_every_exponent_refusal_is_short(base: int, digits: int) -> None:
    with pytest.raises(CalculatorError) as err:
        calculator(f"{base} ** 1{'0' * digits}")
    assert len(str(err.value)) < 200


def test_written_operators_are_read_in_time_linear_in_the_text() -> None:
    # the trailing-punctuation pattern backtracked over every run of "?": 30,000 of them
    # took 27 s (a long prompt goes through symbols() whole in the embedded strategy)
    text = "1 plus 1" + "?" * 30_000 + "x"
    started = time.perf_counter()
    symbols(text)
    assert time.perf_counter() - started < 5.0


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("What is 3 plus 4 for me?", "3 + 4"),
        ("calculate 6 times 7 please!!", "6 * 7"),
        ("2 plus 2...", "2 + 2"),
        ("what is 5 minus 1 please", "5 - 1"),
    ],
)
def test_question_words_and_trailing_punctuation_are_dropped(text: str, want: str) -> None:
    assert symbols(text) == want
