"""The calculator's refusals stay short whatever size of number caused them: the model
reads the message and retries from it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.tools.builtin.calculator import CalculatorError, calculator


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
