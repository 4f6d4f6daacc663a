"""The answer check of benchmarks/answers_eval.py (``answers_check``): what it passes and what
it fails."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from loopwright.core.messages import Message, ToolCallPart, ToolResultPart, Usage
from loopwright.core.run import RunResult, RunStop
from loopwright.core.untrusted import wrap_tool_result

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> SimpleNamespace:
    """The question helpers of ``answers_sets`` and the check of ``answers_check``."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        sets = importlib.import_module("answers_sets")
        checks = importlib.import_module("answers_check")
    finally:
        sys.path.remove(str(BENCHMARKS))
    return SimpleNamespace(**(vars(sets) | vars(checks)))


def _run(question: str, tool: str, args: dict[str, object], content: str, answer: str) -> RunResult:
    messages = (
        Message.user(question),
        Message("assistant", (ToolCallPart("c1", tool, args, "{}"),)),
        Message.tool_results((ToolResultPart("c1", tool, content),)),
        Message.assistant(answer),
    )
    return RunResult(answer, RunStop.FINAL_ANSWER, 2, Usage(), messages)


def _weather(bench: SimpleNamespace, question: str, city: str, asked: str, answer: str) -> dict:
    from loopwright.tools.builtin.weather import get_weather

    case = bench.weather(question, city, asked)
    content = json.dumps(get_weather(city))
    return bench.check(case, _run(question, "get_weather", {"city": city}, content, answer))


def _sql(bench: SimpleNamespace, question: str, value: str, rows: str, answer: str) -> dict:
    case = bench.sql(question, value)
    return bench.check(case, _run(question, "sql_query", {"query": "SELECT"}, rows, answer))


def _read(bench: SimpleNamespace, question: str, name: str, fact: str, answer: str) -> dict:
    case = bench.read(question, name, fact)
    content = wrap_tool_result(bench.FILES[name], "read_file")
    return bench.check(case, _run(question, "read_file", {"path": name}, content, answer))


def test_a_plain_answer_passes(bench: SimpleNamespace) -> None:
    verdict = _weather(
        bench,
        "How cold is it in Stockholm?",
        "Stockholm",
        "temperature",
        "It is 14 degrees Celsius in Stockholm.",
    )
    assert verdict["pass"], verdict


def test_a_word_cut_at_its_front_fails(bench: SimpleNamespace) -> None:
    rows = '{"columns": ["city", "n"], "rows": [["Paris", 1], ["London", 1]]}'
    verdict = _sql(
        bench, "How many customers live in Paris?", "1", rows, "Paris has 1, ondon has 1."
    )
    assert not verdict["pass"] and "fragment ondon" in verdict["bad"], verdict
    whole = _sql(bench, "How many customers live in Paris?", "1", rows, "Paris has 1 customer.")
    assert whole["pass"], whole


def test_a_bare_run_of_numbers_fails(bench: SimpleNamespace) -> None:
    verdict = _weather(
        bench,
        "What's the weather forecast for Prague?",
        "Prague",
        "any",
        "The weather forecast for Prague is: 9, 72, 10, 72c, sunny.",
    )
    assert "number run" in verdict["bad"] and not verdict["pass"], verdict


def test_one_quantity_stated_twice_fails(bench: SimpleNamespace) -> None:
    from loopwright.tools.builtin.weather import get_weather

    wind = get_weather("Oslo")["wind_kph"]
    verdict = _weather(
        bench, "How windy is it in Oslo?", "Oslo", "wind", f"It is {wind} kph and {wind}kph."
    )
    assert "quantity repeated" in verdict["bad"] and not verdict["pass"], verdict
    once = _weather(bench, "How windy is it in Oslo?", "Oslo", "wind", f"The wind is {wind} kph.")
    assert once["pass"], once


def test_the_whole_file_for_one_value_fails(bench: SimpleNamespace) -> None:
    dump = bench.FILES["notes.txt"]
    verdict = _read(
        bench, "What time does the meeting start? See notes.txt.", "notes.txt", "10 am", dump
    )
    assert "result dump" in verdict["bad"] and not verdict["pass"], verdict
    short = _read(
        bench,
        "What time does the meeting start? See notes.txt.",
        "notes.txt",
        "10 am",
        "The meeting starts at 10 am.",
    )
    assert short["pass"], short
    # Asked what the file says, the whole of it is the answer.
    whole = _read(bench, "What does notes.txt say?", "notes.txt", "Tuesday", dump)
    assert whole["pass"], whole


def test_a_short_word_inside_another_is_not_a_fragment(bench: SimpleNamespace) -> None:
    assert bench._fluency("It is humid today, all day.", "How humid is it today?", []) == []


def test_a_number_written_with_a_decimal_zero_states_it(bench: SimpleNamespace) -> None:
    rows = '{"columns": ["SUM(total)"], "rows": [[280.0]]}'
    question = "What is the sum of all order totals in the orders table?"
    verdict = _sql(bench, question, "280", rows, "The sum of all order totals is 280.0.")
    assert verdict["pass"], verdict
    wrong = _sql(bench, question, "280", rows, "The sum of all order totals is 2800.")
    assert not wrong["states"], wrong


CHAIR_ROW = json.dumps({"columns": ["name", "price", "stock"], "rows": [["chair", 85, 12]]})


@pytest.mark.parametrize(
    ("answer", "passes"),
    [
        # 12 is the chair's stock; "cost" is the column holding the asked 85 (price)
        ("The chair cost is $12. The price is $85 and the stock is 12.", False),
        ("The chair costs $85.", True),
        ("The price of the chair is $85 and the stock is 12.", True),
        ("The stock of the chair is 85.", False),
    ],
)
def test_a_number_about_a_row_is_that_rows_value_of_the_named_column(
    bench: SimpleNamespace, answer: str, passes: bool
) -> None:
    question = "How much does the chair cost? Check the products table."
    case = bench.sql(question, "85", "chair")
    run = _run(question, "sql_query", {"query": "SELECT"}, CHAIR_ROW, answer)
    assert bench.check(case, run)["pass"] is passes
    # the check before this rule passed each of them (the figures' old column)
    assert bench.check(case, run, strict=False)["pass"] is True


def test_a_formula_the_call_sent_may_be_restated(bench: SimpleNamespace) -> None:
    question = "What is 30% of 250?"
    case = bench.calc(question, "75")
    call = {"expression": "30 / 100 * 250"}
    run = _run(question, "calculator", call, "75", "30 / 100 * 250 = 75.")
    assert bench.check(case, run)["pass"], bench.check(case, run)
    # a number neither the call, the question nor the result holds still fails
    wrong = _run(question, "calculator", call, "75", "30 / 100 * 250 = 75, about 80.")
    assert "number 80" in bench.check(case, wrong)["bad"]


BO_ROW = json.dumps({"columns": ["id", "name", "city"], "rows": [[2, "Bo", "Paris"]]})
ALL_ROWS = json.dumps(
    {
        "columns": ["id", "name", "city"],
        "rows": [[1, "Ana", "Berlin"], [2, "Bo", "Paris"], [4, "Dana", "Oslo"]],
    }
)


@pytest.mark.parametrize(
    ("rows", "answer", "passes"),
    [
        (BO_ROW, "The customer is in Paris.", True),
        (BO_ROW, "Bo lives in Paris.", True),
        (ALL_ROWS, "The customer is in Paris.", True),
        # other rows named, the asked one not: which row is Paris's is left open
        (ALL_ROWS, "Ana is in Berlin and the customer is in Paris.", False),
        (ALL_ROWS, "Bo is in Paris, Ana is in Berlin.", True),
    ],
)
def test_the_asked_row_is_named_when_the_answer_names_other_rows(
    bench: SimpleNamespace, rows: str, answer: str, passes: bool
) -> None:
    question = "Where does Bo live? Check the customers table."
    case = bench.sql(question, "Paris", "Bo")
    run = _run(question, "sql_query", {"query": "SELECT"}, rows, answer)
    assert bench.check(case, run)["pass"] is passes, bench.check(case, run)


@pytest.mark.parametrize(
    ("question", "name", "fact", "answer", "passes"),
    [
        (
            "What is the first ingredient in recipe.txt?",
            "recipe.txt",
            "flour",
            "The first ingredient in recipe is pancakes: 200 g flour, 2 eggs, 300 ml milk.",
            False,
        ),
        (
            "What is the first ingredient in recipe.txt?",
            "recipe.txt",
            "flour",
            "200 g flour.",
            True,
        ),
        (
            "What needs to be bought according to todo.txt?",
            "todo.txt",
            "milk",
            "Buy milk, call the plumber and renew the passport.",
            False,
        ),
        ("What needs to be bought according to todo.txt?", "todo.txt", "milk", "Buy milk.", True),
        # the whole list is the answer to a question about the whole file
        ("What does todo.txt say?", "todo.txt", "milk", "Buy milk, call the plumber.", True),
    ],
)
def test_one_item_asked_is_answered_without_the_others(
    bench: SimpleNamespace, question: str, name: str, fact: str, answer: str, passes: bool
) -> None:
    verdict = _read(bench, question, name, fact, answer)
    assert verdict["pass"] is passes, verdict


def test_a_word_inside_another_states_nothing(bench: SimpleNamespace) -> None:
    assert bench._states("It is raining in Lima.", "rain")
    assert bench._states("Light rain today.", "rain")
    assert not bench._states("Lima is a rainier place than Lima.", "rain")


def test_a_recorded_run_is_rescored_without_the_model(tmp_path: Path) -> None:
    """``answers_eval.py --record`` / ``--replay``: a recorded answer goes through the
    current check again; a recorded question no chosen set holds is unmatched."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        runner = importlib.import_module("answers_eval")
        sets = importlib.import_module("answers_sets")
    finally:
        sys.path.remove(str(BENCHMARKS))
    question = "What is 30% of 250?"
    case = sets.calc(question, "75")
    run = _run(question, "calculator", {"expression": "30 / 100 * 250"}, "75", "It is 75.")
    # recorded as a miss (as a check that refused it would have): the replay passes it
    kept = runner._record("dev_6", case, run, {"pass": False}, 1.0, 0.5)
    gone = {**kept, "question": "A question since removed?"}
    path = tmp_path / "run.json"
    path.write_text(json.dumps([kept, gone]))
    out = runner.replay(path, {"dev_6": [case]})
    assert out["sets"]["dev_6"] == {
        "questions": 1,
        "passed": 1,
        "passed_old_check": 1,
        "recorded_pass": 0,
    }
    assert out["records"] == 2 and out["unmatched"] == 1
