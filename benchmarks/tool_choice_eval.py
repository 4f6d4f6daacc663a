"""Tool-choice accuracy of the embedded model on simple single-tool questions.

All four tools (calculator, get_weather, read_file, sql_query) are offered; the model's
first turn must call the expected tool. Prints misses, then ONE JSON line.

``QUESTIONS`` is the test set (reported figure); ``DEV`` is a separate set of questions,
written apart from it, on which prompt/tool-description variants are compared (the test
set is run once per variant kept, never tuned on).
Run: python benchmarks/tool_choice_eval.py [--set test|dev|all]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from loopwright.core.events import ResponseDone
from loopwright.core.messages import Message
from loopwright.core.protocols import ModelRequest
from loopwright.providers.local import LocalModel
from loopwright.tools.builtin import make_tools

TOOLS = ["calculator", "get_weather", "read_file", "sql_query"]
QUESTIONS: list[tuple[str, str]] = [
    ("What is 45 * 12?", "calculator"),
    ("Calculate 1024 / 16", "calculator"),
    ("How much is 250 + 175?", "calculator"),
    ("What is (7 - 2) * 9?", "calculator"),
    ("Compute 3 ** 5", "calculator"),
    ("What's 99 minus 33?", "calculator"),
    ("What is 18 % 5?", "calculator"),
    ("Evaluate 2.5 * 4.2", "calculator"),
    ("What is the temperature in Madrid?", "get_weather"),
    ("Is it sunny in Sydney right now?", "get_weather"),
    ("What's the weather like in Toronto?", "get_weather"),
    ("Will I need an umbrella in Seattle today?", "get_weather"),
    ("How windy is it in Chicago?", "get_weather"),
    ("Weather in Nairobi please", "get_weather"),
    ("Is it snowing in Moscow?", "get_weather"),
    ("Tell me the weather in Lima", "get_weather"),
    ("Read the file docs/intro.md", "read_file"),
    ("Show me what is in todo.txt", "read_file"),
    ("Open report.csv and show its contents", "read_file"),
    ("What does the file src/main.py contain?", "read_file"),
    ("Print the contents of config.yaml", "read_file"),
    ("Read notes/meeting.txt for me", "read_file"),
    ("Display the file CHANGELOG.md", "read_file"),
    ("Get the text of letter.txt", "read_file"),
    ("How many rows are in the orders table?", "sql_query"),
    ("List the names of all customers in the database", "sql_query"),
    ("Select every product with price above 100 from the products table", "sql_query"),
    ("Query the database for the five newest orders", "sql_query"),
    ("From the employees table, show the ones in the sales department", "sql_query"),
    ("Count the users in the users table", "sql_query"),
    ("Run a SQL query to find the average salary in the staff table", "sql_query"),
    ("Which customers in the database live in Berlin?", "sql_query"),
]

# Development set: prompt variants are tuned on these only (no overlap with QUESTIONS).
DEV: list[tuple[str, str]] = [
    ("What is 12 * 34?", "calculator"),
    ("Work out 81 / 9", "calculator"),
    ("How much is 7 + 8 + 9?", "calculator"),
    ("What's 100 - 37?", "calculator"),
    ("Compute (4 + 6) / 2", "calculator"),
    ("What's the weather in Oslo?", "get_weather"),
    ("Is it raining in Dublin?", "get_weather"),
    ("How hot is it in Cairo today?", "get_weather"),
    ("Forecast for Rome please", "get_weather"),
    ("Do I need a jacket in Boston?", "get_weather"),
    ("Read the file setup.py", "read_file"),
    ("Show me the contents of data/input.json", "read_file"),
    ("What is written in notes.md?", "read_file"),
    ("Open the file logs/app.log", "read_file"),
    ("Cat README.rst for me", "read_file"),
    ("How many customers are in the customers table?", "sql_query"),
    ("List all orders placed in 2023 from the database", "sql_query"),
    ("Find the employee with the highest salary", "sql_query"),
    ("Show the ten most expensive products in the database", "sql_query"),
    ("What is the total revenue from the orders table?", "sql_query"),
    ("Which employees work in the marketing department?", "sql_query"),
]


async def choose(model: LocalModel, specs, question: str) -> tuple[str | None, dict]:
    async for event in model.stream(ModelRequest([Message.user(question)], tools=specs)):
        if isinstance(event, ResponseDone):
            calls = event.message.tool_calls
            return (calls[0].name, dict(calls[0].arguments)) if calls else (None, {})
    return None, {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", choices=["test", "dev", "all"], default="test")
    which = parser.parse_args().set
    questions = {"test": QUESTIONS, "dev": DEV, "all": QUESTIONS + DEV}[which]
    model = LocalModel()
    model.load()
    specs = [t.spec for t in make_tools(TOOLS)]
    per_tool: dict[str, list[int]] = {t: [0, 0] for t in TOOLS}
    correct, times = 0, []
    for question, want in questions:
        start = time.perf_counter()
        got, args = asyncio.run(choose(model, specs, question))
        times.append(time.perf_counter() - start)
        per_tool[want][1] += 1
        if got == want:
            correct += 1
            per_tool[want][0] += 1
        else:
            print(f"MISS {question!r}: expected {want}, got {got} {json.dumps(args)}")
    times.sort()
    out = {
        "set": which,
        "questions": len(questions),
        "correct": correct,
        "accuracy": round(correct / len(questions), 3),
        "per_tool": {k: f"{v[0]}/{v[1]}" for k, v in per_tool.items()},
        "median_turn_s": round(times[len(times) // 2], 3),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
